"""Labels: validate the user's label values and map them to class ids (single-label ids or a multi-hot matrix)."""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from .checks import is_listlike, is_missing, short_repr

__all__ = ["check_label_names", "check_trainable", "encode_labels", "index_in", "is_int_text", "is_multi_hot",
           "kind_name", "normalize_labels", "relabelled"]

logger = logging.getLogger(__name__)

_INT_TEXT = re.compile(r"0|-?[1-9][0-9]*")
_INT_MIN, _INT_MAX = -(2**63), 2**63 - 1  # int labels are int64 wherever they are arrays


def is_int_text(value: Any) -> bool:
    """Whether ``value`` is a str that is an integer as ``str(int)`` writes it ("2", "-3"; not "02", "+2", " 2",
    "-0")."""
    return isinstance(value, str) and _INT_TEXT.fullmatch(value) is not None


def _warn_if_positions_differ(values: Iterable[int], known: Sequence[str]) -> None:
    """A warning where int labels, taken as positions among str names (setfit's rule), name another class than the
    name that writes them ("2" is the fourth of ``["0", "1", "10", "2"]``, position 2 is "10"): a file read as
    numbers (a CSV's 2) against a model trained on the same labels as text."""
    names = set(known)  # not the list: a scan of every name for every row is rows x classes
    differ = sorted({v for v in set(values) if str(v) in names and known[v] != str(v)})
    if differ:
        logger.warning("int labels are class positions among the label names %s (setfit's rule): %s; the names "
                       "are integers written as text, so if the labels mean those names, give them as strings "
                       "(a CSV file's numbers are read as ints)", short_repr(list(known)),
                       ", ".join(f"{v} is {known[v]!r}, not {str(v)!r}" for v in differ[:5]))


def _scalar(value: Any, row: int, *, in_list: bool = False) -> tuple[Any, str]:
    """Normalize one label value to a Python int or str; return it and its kind ("int" or "str")."""
    where = f"row {row}: label" + (" list item" if in_list else "")
    if is_missing(value):
        raise ValueError(f"{where} is missing ({'None' if value is None else repr(value)})")
    if isinstance(value, (bool, np.bool_)):
        if in_list:  # multi-hot vectors of booleans are fine
            return int(value), "int"
        raise TypeError(f"{where} {value!r} is a bool; bool labels are not ints, use 0/1 or strings")
    if isinstance(value, (int, np.integer)):
        return _int64(int(value), where), "int"
    if isinstance(value, str):
        return str(value), "str"
    if isinstance(value, (float, np.floating)):
        if float(value).is_integer():
            return _int64(int(value), where), "int"
        raise TypeError(f"{where} {value!r} is a non-integer float; labels must be int or str")
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return _scalar(value.item(), row, in_list=in_list)
    raise TypeError(f"{where} has unsupported type {type(value).__name__}; labels must be int or str")


def _int64(value: int, where: str) -> int:
    """``value``, or ValueError (naming ``where``) when it does not fit in 64 bits: predictions give int labels
    as int64 arrays, so a larger one would train and then fail every prediction."""
    if not _INT_MIN <= value <= _INT_MAX:
        raise ValueError(f"{where} {value} does not fit in 64 bits: int labels must be in [-2**63, 2**63 - 1]; "
                         "give larger ids as strings")
    return value


def normalize_labels(raw_labels: Any) -> tuple[list, str]:
    """Validate labels; return them as Python values and their kind: "int", "str" or "multi" (lists). Ints must
    fit in 64 bits (ValueError naming the row otherwise)."""
    if isinstance(raw_labels, (str, bytes, Mapping)):
        raise TypeError(f"labels must be a list, got {type(raw_labels).__name__}")
    if isinstance(raw_labels, np.ndarray) and raw_labels.ndim == 0:
        raise TypeError("labels must be a list, got a 0-d array")
    # Not sklearn's type_of_target: it classifies the whole column ("multiclass", "unknown", ...) and cannot say
    # which row is missing, a bool, a float or of another type than the rest; these checks name the row.
    values = list(raw_labels)
    if not values:
        raise ValueError("no labels: the dataset is empty")
    out: list = []
    first_row: dict[str, int] = {}  # kind -> first row that has it
    item_row: dict[str, int] = {}  # item kind inside lists -> first row
    for i, value in enumerate(values):
        if is_listlike(value):
            items = []
            for item in list(value):
                if is_listlike(item):
                    raise TypeError(f"row {i}: label list is nested; use a flat list of label ids or a 0/1 vector")
                item, item_kind = _scalar(item, i, in_list=True)
                item_row.setdefault(item_kind, i)
                items.append(item)
            out.append(items)
            kind = "multi"
        else:
            value, kind = _scalar(value, i)
            out.append(value)
        first_row.setdefault(kind, i)
    if len(first_row) > 1:
        shown = ", ".join(f"row {r} is {kind_name(k)}" for k, r in sorted(first_row.items(), key=lambda kv: kv[1]))
        raise TypeError(f"labels mix types: {shown}; use one label type for the whole column")
    if len(item_row) > 1:
        shown = ", ".join(f"row {r} has {k}" for k, r in sorted(item_row.items(), key=lambda kv: kv[1]))
        raise TypeError(f"label lists mix item types: {shown}; use one type")
    return out, next(iter(first_row))


def kind_name(kind: str) -> str:
    """A label kind of `normalize_labels` in words, for messages."""
    return {"int": "int", "str": "str", "multi": "a list (multi-label)"}[kind]


def check_label_names(labels: Any, what: str = "labels") -> list:
    """The classes of a model (``labels``) or of an encoding (``known_labels``) as a list of Python ints or strs:
    a non-empty list (any iterable but a str, bytes, mapping or set) of distinct values of one kind. ``TypeError`` or
    ``ValueError`` naming ``what`` otherwise."""
    if isinstance(labels, (str, bytes, Mapping)) or not isinstance(labels, Iterable):
        raise TypeError(f"{what} must be a list of label names, e.g. ['negative', 'positive'], got "
                        f"{type(labels).__name__} {labels!r:.80}")
    if isinstance(labels, (set, frozenset)):  # the classes' order is the model's (int labels are positions in it)
        raise TypeError(f"{what} is a {type(labels).__name__}, whose order changes from one Python process to the "
                        "next (and with it which class an int label or a probability column means): pass a list "
                        "in a fixed order, e.g. sorted(...)")
    known = []
    kinds = set()
    for i, label in enumerate(labels):
        if is_listlike(label):
            raise TypeError(f"{what}[{i}] is a {type(label).__name__}; each label must be an int or str")
        try:
            label, kind = _scalar(label, i)
        except (TypeError, ValueError) as err:
            raise type(err)(f"{what}: {err}") from None
        if isinstance(label, str) and not label.strip():
            raise ValueError(f"{what}[{i}] is {label!r}: a class needs a name (it is what predict returns and "
                             "the text its label anchor is made of)")
        known.append(label)
        kinds.add(kind)
    if not known:
        raise ValueError(f"{what} is empty: give the names of the classes, e.g. ['negative', 'positive']")
    if len(kinds) > 1:
        raise TypeError(f"{what} mix int and str: {short_repr(known)}")
    duplicates = sorted(label for label, count in Counter(known).items() if count > 1)
    if duplicates:
        raise ValueError(f"{what} has duplicates: {short_repr(duplicates)}")
    return known


def _normalize_known(known_labels: Any) -> list | None:
    return None if known_labels is None else check_label_names(known_labels, "known_labels")


def index_in(values: Sequence, known: list) -> list[int]:
    """The index of each value in ``known``: of the label equal to it or, for a str value and int labels, of the
    int the str writes ("2" is 2; "02" is nothing), so that a JSON file's "2" names the class 2 of a model trained
    on a CSV file's ints (an int value against str labels is setfit's class position, `encode_labels`, and never
    comes here). ValueError listing the values that are not in it."""
    return _index_with(values, _label_index(known), known)


def _label_index(known: list) -> dict[Any, int]:
    """The lookup `index_in` matches values with: each label, and the text of each int label, to its index."""
    index: dict[Any, int] = {label: i for i, label in enumerate(known)}
    index.update({str(label): i for i, label in enumerate(known) if isinstance(label, int)})
    return index


def _index_with(values: Sequence, index: dict[Any, int], known: list) -> list[int]:
    """`index_in` with the lookup of ``known`` built once (`_label_index`), for matching many rows."""
    unknown = sorted({v for v in values if v not in index}, key=lambda v: (str(type(v)), v))
    if unknown:
        raise ValueError(f"labels not in the known labels: {short_repr(unknown)}; known labels: {short_repr(known)}")
    return [index[v] for v in values]


def is_multi_hot(rows: list[list]) -> bool:
    """Whether label lists (of ints or strs, as `normalize_labels` returns them) are 0/1 vectors of one
    length >= 2: scikit-learn's "multilabel-indicator" target type."""
    from sklearn.utils.multiclass import type_of_target  # not at the top: 1.5 s, and inference never needs it

    if len({len(r) for r in rows}) != 1:  # ragged rows are lists of label ids (type_of_target refuses them)
        return False
    return type_of_target(rows) == "multilabel-indicator"


def encode_labels(
    raw_labels: Iterable, known_labels: Sequence | None = None, multi_label: bool | None = None
) -> tuple[np.ndarray, list, bool]:
    """Map user labels to class ids; return ``(ids, labels, multi_label)``.

    ``ids`` is int64 of shape (n,) (single-label) or a multi-hot (n, K) matrix; ``labels`` is the list of K
    user-facing labels (``labels[id]``). ``multi_label=None`` infers it from the data (lists/vectors mean
    multi-label).

    Without ``known_labels``, the labels are the sorted unique values. With them, a label value is matched by
    value (`index_in`): equal values match, and a str matches the int label it writes ("1" for 1, not "01"), so a
    JSON file's "1" names the class 1 of a model trained on a CSV file's ints; a value matching no known label is an
    error. setfit's rule for int labels with str ``known_labels`` (names): they are class ids, positions among the
    names (``0 <= id < K``); where the names are integers written as text and a position names another class than
    the name that writes it (position 2 of ``["0", "1", "10", "2"]`` is "10"), a warning says so.

    Multi-label: equal-length 0/1 vectors (length >= 2) are multi-hot (K = length, which must equal
    ``len(known_labels)``); otherwise lists of label values, matched as single labels are (K = ``len(known_labels)``
    or the number of distinct values), or lists of class ids (K = ``len(known_labels)`` or max id + 1).
    """
    values, kind = normalize_labels(raw_labels)
    known = _normalize_known(known_labels)
    if multi_label is None:
        multi_label = kind == "multi"
    elif multi_label and kind != "multi":
        raise ValueError(
            f"multi_label=True but labels are single values (row 0: {values[0]!r}); "
            "pass lists of label ids or multi-hot vectors"
        )
    elif not multi_label and kind == "multi":
        raise ValueError(f"multi_label=False but labels are lists (row 0: {values[0]!r})")
    if multi_label:
        ids, labels = _encode_multi(values, known)
    else:
        ids, labels = _encode_single(values, kind, known)
    return ids, labels, bool(multi_label)


def _encode_single(values: list, kind: str, known: list | None) -> tuple[np.ndarray, list]:
    if known is None:
        labels = sorted(set(values))
        ids = index_in(values, labels)
    elif kind == "int" and isinstance(known[0], str):  # setfit's class ids: positions among the names
        for i, v in enumerate(values):
            if not 0 <= v < len(known):
                raise ValueError(
                    f"row {i}: label id {v} is out of range for {len(known)} label names {short_repr(known)}"
                    f" (ids must be 0..{len(known) - 1})"
                )
        _warn_if_positions_differ(values, known)
        labels, ids = known, values
    else:
        labels, ids = known, index_in(values, known)
    return np.asarray(ids, dtype=np.int64).reshape(len(values)), list(labels)


def _encode_multi(rows: list[list], known: list | None) -> tuple[np.ndarray, list]:
    n = len(rows)
    if is_multi_hot(rows):
        k = len(rows[0])
        if known is not None and k != len(known):
            raise ValueError(
                f"multi-hot label vectors have length {k} but there are {len(known)} known labels {short_repr(known)}"
            )
        return np.asarray(rows, dtype=np.int64).reshape(n, k), list(known) if known is not None else list(range(k))

    from sklearn.preprocessing import MultiLabelBinarizer

    items = [v for r in rows for v in r]
    is_str = bool(items) and isinstance(items[0], str)
    if is_str or (known is not None and not isinstance(known[0], str)):  # label values
        labels = known if known is not None else sorted(set(items))
        # MultiLabelBinarizer would only warn about (and drop) unknown labels: name them instead
        index = _label_index(labels)
        rows = [_index_with(r, index, labels) for r in rows]
    else:  # integer label ids
        for i, r in enumerate(rows):
            for v in r:
                if v < 0:
                    raise ValueError(f"row {i}: label id {v} is negative")
                if known is not None and v >= len(known):
                    raise ValueError(
                        f"row {i}: label id {v} is out of range for {len(known)} label names {short_repr(known)}"
                    )
        if known is not None:
            labels = known
        else:
            if not items:
                raise ValueError("no row has any label: cannot tell the number of classes; pass known_labels")
            labels = list(range(max(items) + 1))
    ids = MultiLabelBinarizer(classes=list(range(len(labels)))).fit_transform(rows)
    return np.asarray(ids, dtype=np.int64).reshape(n, len(labels)), list(labels)


def check_trainable(ids: np.ndarray, multi_label: bool, labels: Sequence | None = None) -> None:
    """Raise ValueError if encoded training labels cannot train a classifier.

    Single-label needs at least 2 distinct classes; multi-label needs at least one positive label.
    """
    ids = np.asarray(ids)
    if ids.shape[0] == 0:
        raise ValueError("no training examples")
    if multi_label:
        if ids.ndim != 2 or ids.shape[1] < 1:
            raise ValueError(f"multi-label ids must be an (n, K) multi-hot matrix with K >= 1, got shape {ids.shape}")
        if not ids.any():
            raise ValueError("multi-label training data has no positive label in any row")
        return
    present = np.unique(ids)
    if len(present) < 2:
        names = [labels[i] for i in present] if labels is not None else present.tolist()
        raise ValueError(
            f"training needs at least 2 classes, but every example has the label {short_repr(names)}; "
            "add examples of another class"
        )


def relabelled(given: Sequence | None, saved: Sequence | None, where: Any) -> list | None:
    """The label names of a loaded model: the saved ones, or the names given for them (setfit's override, with its
    log line) when they are other names for as many classes.

    Args:
        given: The `labels=` of `from_pretrained` (checked), or None.
        saved: The saved names, or None.
        where: The file they were read from, for messages.

    Returns:
        The names the model keeps (None when neither gives any).

    Raises:
        ValueError: ``given`` names another number of classes, or the saved names in another order (the head's
            classes keep their order: that would rename classes silently).
    """
    if given is None or saved is None:
        return list(saved) if saved is not None else (list(given) if given is not None else None)
    given, saved = list(given), list(saved)
    if given == saved:
        return saved
    if len(given) != len(saved):
        raise ValueError(f"labels {short_repr(given)} name {len(given)} classes; the model saved in {where} has "
                         f"{len(saved)}: {short_repr(saved)}")
    if sorted(map(str, given)) == sorted(map(str, saved)):
        raise ValueError(f"labels {short_repr(given)} are the saved labels {short_repr(saved)} ({where}) in another "
                         "order: the head's classes keep theirs, so this would rename them; omit labels= or give "
                         "them in the saved order")
    logger.warning("Overriding labels in model configuration from %s to %s.", saved, given)
    return given
