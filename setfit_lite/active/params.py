"""The parameters of `suggest_labels`, checked before any model work.

`RULES` holds the rules of the numbers and names (built with `setfit_lite.config.rules`, shared by the API
and ``setfit-lite suggest`` through `setfit_lite.config.params.argument_type`); `check_pool` and
`check_exclude` check the texts and the excluded indices, naming the row or the value at fault.

Torch-free: this module imports only the standard library, numpy and torch-free setfit_lite modules.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from ..config.rules import Rule, check_rule, integer, is_integer, option
from ..config.training_rules import SEED
from ..data import check_label_names, validate_texts

__all__ = ["RULES", "STRATEGIES", "check_exclude", "check_k_left", "check_label_names_arg", "check_pool",
           "check_suggest_param"]

# "auto": cold_start_kmeans for a model without a fitted head, else the strategy benchmarks/suggest_choice.py chose
STRATEGIES = ("auto", "random", "cold_start_kmeans", "uncertainty", "margin_diverse", "typical", "class_typical",
              "mixed", "margin_typical")

RULES: dict[str, Rule] = {
    "k": integer(note="how many texts to suggest"),
    "strategy": option(STRATEGIES),
    "seed": SEED,
}


def check_suggest_param(name: str, value: Any) -> Any:
    """``value`` of the parameter ``name`` of `RULES`, or TypeError/ValueError naming it and what is allowed."""
    return check_rule(RULES[name], name, value)


def check_pool(texts: Any) -> list[str]:
    """The pool as a list of non-empty strings: TypeError for a bare string, a mapping or a non-str text,
    ValueError for an empty pool or an empty text (naming its row)."""
    try:
        return validate_texts(texts)
    except ValueError as error:
        if "no texts" in str(error):
            raise ValueError("texts is empty: give the pool of unlabelled texts to choose from") from None
        raise


def check_exclude(exclude: Any, size: int) -> np.ndarray:
    """The excluded indices as a sorted array of distinct ints in ``[0, size)``; TypeError for a non-integer (a
    bool included), ValueError for one out of range, both naming the value."""
    if isinstance(exclude, (str, bytes)) or not isinstance(exclude, Iterable):
        raise TypeError(f"exclude must be an iterable of indices of texts (ints), got {type(exclude).__name__}")
    values = list(exclude.tolist() if isinstance(exclude, np.ndarray) else exclude)
    for value in values:
        if not is_integer(value):
            raise TypeError(f"exclude must hold indices of texts (ints), got {value!r} ({type(value).__name__})")
        if not 0 <= value < size:
            raise ValueError(f"exclude holds {value}, out of range for {size} texts (indices 0..{size - 1})")
    return np.unique(np.asarray(values, dtype=np.int64))


def check_k_left(k: int, size: int, excluded: np.ndarray) -> int:
    """How many of ``size`` texts the ``excluded`` (distinct) indices leave: ValueError if fewer than ``k``."""
    left = size - len(excluded)
    if k > left:
        raise ValueError(f"k={k} but only {left} of the {size} texts are not excluded: ask for at most {left}")
    return left


def check_label_names_arg(label_names: Any) -> list[str] | None:
    """``label_names`` as a list of distinct non-empty strings, None for None, [] for an empty collection (no
    search by name); TypeError/ValueError otherwise."""
    if label_names is None:
        return None
    if isinstance(label_names, (set, frozenset)):
        check_label_names(label_names, what="label_names")  # refused: its order changes from process to process
    if not isinstance(label_names, (str, bytes)) and isinstance(label_names, Iterable):
        label_names = list(label_names)
        if not label_names:
            return []
    names = check_label_names(label_names, what="label_names")
    if not all(isinstance(name, str) and name.strip() for name in names):
        raise TypeError(f"label_names must be non-empty strings (the names of the classes), got {names!r:.120}")
    return names
