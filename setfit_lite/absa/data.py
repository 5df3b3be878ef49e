"""ABSA datasets (setfit's format: one row per aspect, columns ``text``, ``span``, ``label``, ``ordinal``): read
and checked once, before any work, then matched to spaCy tokens.

``ordinal`` is which occurrence of ``span``'s string in ``text`` the aspect is (0: the first).
"""

from __future__ import annotations

import logging
import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..data.checks import validate_texts
from ..data.labels import normalize_labels
from ..data.readers import as_table, column_renames

if TYPE_CHECKING:
    from spacy.tokens import Doc

logger = logging.getLogger(__name__)

TRAIN_COLUMNS = ("text", "span", "label", "ordinal")
PREDICT_COLUMNS = ("text", "span")


@dataclass
class AspectRows:
    """Checked ABSA rows, grouped by sentence (first appearance order); ``labels`` is None for unlabelled rows."""

    texts: list[str]
    spans: list[str]
    ordinals: list[int]
    labels: list[Any] | None

    def grouped(self) -> dict[str, list[int]]:
        """``{sentence: its row indices}``, sentences in the order they first appear."""
        groups: dict[str, list[int]] = {}
        for i, text in enumerate(self.texts):
            groups.setdefault(text, []).append(i)
        return groups


def read_aspect_rows(dataset: Any, column_mapping: Mapping[str, str] | None = None,
                     required: Sequence[str] = TRAIN_COLUMNS, what: str = "dataset") -> AspectRows:
    """The rows of an ABSA table (``datasets.Dataset``, pandas DataFrame, dict of lists, list of dicts), checked.

    Args:
        dataset: the table.
        column_mapping: ``{column in dataset: setfit's column name}``; other columns keep their names.
        required: the columns the table must have (after the mapping); ``ordinal`` missing from a prediction table
            means 0 for every row.
        what: the table's name in error messages.

    Returns:
        The rows: texts, spans, ordinals (ints >= 0) and labels (Python ints or strs; None unless ``label`` is
        required: a prediction table's labels are not read).

    Raises:
        ValueError: a required column is missing, a text or span is empty, an ordinal is not a whole number >= 0, a
            label is missing.
        TypeError: the data is not a table, a text or span is not a string, or a label is not an int or str or
            is of another type than the first.
    """
    table = as_table(dataset)
    if table is None:
        raise TypeError(f"the {what} must be a table with the columns {list(required)} (a datasets.Dataset, a "
                        f"pandas DataFrame, a dict of lists or a list of dicts), got {type(dataset).__name__}")
    if column_mapping:
        renames = column_renames(table, column_mapping)
        table = {renames[name]: values for name, values in table.items()}
    missing = [name for name in required if name not in table]
    if missing:
        raise ValueError(f"the {what} lacks the column(s) {missing}: an ABSA dataset has one row per aspect with the "
                         f"columns {list(required)} (found {sorted(table)}); rename columns with column_mapping")
    texts = validate_texts(table["text"], allow_empty=True)
    spans = table["span"]
    for i, span in enumerate(spans):
        if not isinstance(span, str):
            raise TypeError(f"row {i}: span must be a str, got {type(span).__name__}")
        if not span.strip():
            raise ValueError(f"row {i}: span is empty or whitespace-only")
    ordinals = [_ordinal(value, i) for i, value in enumerate(table.get("ordinal", [0] * len(texts)))]
    labels = _labels(table["label"]) if "label" in required else None
    return AspectRows(texts, list(spans), ordinals, labels)


def _ordinal(value: Any, row: int) -> int:
    """``value`` as an int: a whole number >= 0 (an int, or a float such as a pandas column's 2.0); ValueError
    naming ``row`` for anything else (a missing value, a str, a bool, a fraction, a negative number)."""
    if isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)) and math.isfinite(value) \
            and float(value).is_integer() and value >= 0:
        return int(value)
    raise ValueError(f"row {row}: ordinal must be a whole number >= 0 (which occurrence of the span in the text), "
                     f"got {value!r}")


def _labels(values: Sequence[Any]) -> list[Any]:
    """The aspects' polarity labels as Python ints or strs, all of one type (`normalize_labels`); ValueError naming
    the row of a missing one, TypeError naming the row of one of another type or of a list (a polarity model is
    single-label)."""
    if not len(values):
        return []
    labels, kind = normalize_labels(values)
    if kind == "multi":
        row = next(i for i, label in enumerate(labels) if isinstance(label, list))
        raise TypeError(f"row {row}: label must be one int or str (an aspect has one polarity), got a list")
    return labels


def occurrence(text: str, span: str, ordinal: int) -> tuple[int, int] | None:
    """The character offsets of the ``ordinal``-th occurrence of ``span`` in ``text`` (None if there are fewer)."""
    start = -1
    for _ in range(ordinal + 1):
        start = text.find(span, start + 1)
        if start < 0:
            return None
    return start, start + len(span)


def gold_slices(doc: Doc, rows: AspectRows, indices: Sequence[int]) -> tuple[list[slice], list[int]]:
    """The token slices of the gold aspects ``indices`` of ``rows`` in ``doc`` and the rows they come from; a span
    whose ordinal is too high or that does not fall on token boundaries is skipped, with a log line."""
    slices, kept = [], []
    for i in indices:
        offsets = occurrence(doc.text, rows.spans[i], rows.ordinals[i])
        if offsets is None:
            logger.info("The ordinal of %d for span %r in %r is too high. Skipping this sample.", rows.ordinals[i],
                        rows.spans[i], doc.text)
            continue
        span = doc.char_span(*offsets)
        if span is None:
            logger.warning("Aspect term %r with ordinal %d isn't a token in %r according to spaCy. Skipping this "
                           "sample.", rows.spans[i], rows.ordinals[i], doc.text)
            continue
        slices.append(slice(span.start, span.end))
        kept.append(i)
    return slices, kept


def overlaps(aspect: slice, others: Sequence[slice]) -> bool:
    """Whether the token slice ``aspect`` touches any of ``others`` (setfit's test: sharing or adjoining a token)."""
    return any(aspect.start <= other.stop and other.start <= aspect.stop for other in others)


def negative_candidates(candidates: Sequence[slice], gold: Sequence[slice]) -> list[slice]:
    """The candidates an aspect model learns as ``"no aspect"``: those that touch no gold aspect (`overlaps`),
    and, where candidates overlap, those that touch only gold aspects that are candidates themselves ("battery"
    beside the candidate "battery life"); a candidate touching a gold aspect that no candidate equals is left out,
    as setfit leaves it."""
    exact = {(span.start, span.stop) for span in candidates}
    golds = {(g.start, g.stop) for g in gold}
    return [span for span in candidates if (span.start, span.stop) not in golds
            and all((g.start, g.stop) in exact for g in gold if overlaps(span, [g]))]
