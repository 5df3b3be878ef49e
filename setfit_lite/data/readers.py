"""Readers: turn any supported input (Dataset, DataFrame, rows, columns, texts, a file) into `LabeledData`."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .checks import (
    is_dataframe,
    is_dataset,
    is_dataset_dict,
    is_listlike,
    pick_split_error,
    validate_texts,
)
from .labels import normalize_labels

__all__ = ["LabeledData", "as_table", "column_renames", "to_labeled_data"]

_FILE_SUFFIXES = (".csv", ".json", ".jsonl", ".parquet")


@dataclass
class LabeledData:
    """Validated texts, their raw (user-facing) labels or None, and the remaining columns by name."""

    texts: list[str]
    labels: list | None
    columns: dict[str, list] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.texts)


def _read_file(path: str | os.PathLike, text_source: str) -> dict[str, list] | list:
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix not in _FILE_SUFFIXES:
        if isinstance(path, str) and not p.exists():
            raise ValueError(
                f"got a str that is not a path to a {'/'.join(_FILE_SUFFIXES)} file: {path[:60]!r}; "
                "to pass texts, pass a list of strings"
            )
        raise ValueError(f"unsupported file type {suffix or '(none)'!r} for {str(p)!r}; use .csv, .json, .jsonl "
                         "or .parquet")
    if not p.is_file():
        raise FileNotFoundError(f"no such file: {str(p)!r}")
    if suffix == ".parquet":  # typed columns: read as they are
        import pandas as pd

        try:
            return pd.read_parquet(p).to_dict(orient="list")
        except (OSError, ValueError) as err:  # pyarrow's ArrowInvalid is a ValueError
            raise ValueError(f"{str(p)!r} is not a readable Parquet file: {err}") from None
    if suffix == ".csv":
        import pandas as pd

        # every cell as the file's text ("NA", "01", "True" stay strings; pandas' guess differed per chunk of a
        # large file); only blank cells are missing
        try:
            df = pd.read_csv(p, keep_default_na=False, na_values=[""], dtype=str)
        except ValueError as err:  # UnicodeDecodeError, pandas' ParserError and EmptyDataError
            where = _non_utf8_line(p) if isinstance(err, UnicodeDecodeError) else ""
            raise ValueError(f"{str(p)!r} is not a readable UTF-8 CSV file{where}: {err}") from None
        table = df.to_dict(orient="list")
        return {name: _integers(values) if name != text_source else values for name, values in table.items()}
    try:
        content = p.read_text(encoding="utf-8-sig")  # a byte-order mark is not part of the first row
    except UnicodeDecodeError as err:
        raise ValueError(f"{str(p)!r} is not UTF-8 text{_non_utf8_line(p)}: {err}") from None
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


_CANONICAL_INT = re.compile(r"-?(0|[1-9][0-9]*)")


def _integers(values: list) -> list:
    """A CSV column whose every non-blank cell is an integer as ``str(int)`` writes it, as ints (JSON files give
    such labels as ints); any other column as the strings it holds ("01" and "1" stay two values)."""
    cells = [v for v in values if isinstance(v, str)]
    if not cells or not all(_CANONICAL_INT.fullmatch(v) for v in cells):
        return values
    return [int(v) if isinstance(v, str) else v for v in values]


def _row_lines(path: Path) -> list[int]:
    """The file line each data row starts on (1-based), for a CSV or JSON lines file; [] for other files.

    A CSV row may span lines (a quoted cell with line breaks); blank lines hold no row, as for pandas' reader.
    """
    suffix = path.suffix.lower()
    try:
        content = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return []
    if suffix == ".csv":
        import csv
        import io

        reader = csv.reader(io.StringIO(content, newline=""))
        starts, line = [], 1
        for record in reader:
            if record:
                starts.append(line)
            line = reader.line_num + 1
        return starts[1:]  # the header is not a data row
    if suffix == ".jsonl" or (suffix == ".json" and content.lstrip()[:1] != "["):
        return [n for n, text in enumerate(content.splitlines(), start=1) if text.strip()]
    return []


def _with_file_lines(message: str, path: Path) -> str:
    """``message`` with each "row N" it names followed by the file line that row starts on (rows count from 0)."""
    if not re.search(r"\brow \d+", message):
        return message
    lines = _row_lines(path)

    def at_line(match: re.Match) -> str:
        row = int(match.group(1))
        return f"{match.group(0)} (line {lines[row]})" if row < len(lines) else match.group(0)

    return re.sub(r"\brow (\d+)", at_line, message)


def _non_utf8_line(path: Path) -> str:
    """Where a file first fails to decode as UTF-8, for an error message: ``" (line N, byte B of the line)"``."""
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as err:
                return f" (line {number}, byte {err.start} of the line is {raw[err.start:err.start + 1]!r})"
    return ""


def as_table(data: Any) -> dict[str, list] | None:
    """Columns of tabular data as a dict of lists, or None for plain sequences (texts or a (texts, labels) tuple)."""
    if is_dataset_dict(data):
        splits = list(data.keys())
        if len(splits) != 1:
            raise pick_split_error(splits)
        data = data[splits[0]]
    if is_dataset(data):
        return {name: list(data[name]) for name in data.column_names}
    if is_dataframe(data):
        return {name: data[name].tolist() for name in data.columns}
    if isinstance(data, Mapping):
        table = {}
        for name, values in data.items():
            if not is_listlike(values):
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


def column_renames(columns: Iterable[str], column_mapping: Mapping[str, str]) -> dict[str, str]:
    """``{column: its name under column_mapping}`` (``{source: target}``): a mapped column takes its target, an
    unmapped one keeps its name, unless a target takes it: then it is kept as ``feat_<name>`` (setfit's prefix)."""
    table = list(columns)
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
    return {name: column_mapping.get(name, f"feat_{name}" if name in targets else name) for name in table}


def _sequences(data: Any, labels: Any) -> tuple[Any, Any]:
    """Texts and labels from a (texts, labels) tuple or a list of texts plus ``labels``."""
    if (
        isinstance(data, tuple)
        and len(data) == 2
        and not isinstance(data[0], str)
        and is_listlike(data[0])
        and (data[1] is None or is_listlike(data[1]))
    ):
        if labels is not None:
            raise TypeError("got a (texts, labels) tuple and labels=; pass the labels once")
        return data
    if is_listlike(data) or (isinstance(data, Iterable) and not isinstance(data, (str, bytes, Mapping))):
        return data, labels
    raise TypeError(
        f"unsupported data type {type(data).__name__}; pass a datasets.Dataset, a pandas.DataFrame, a list of dicts, "
        "a dict of lists, a (texts, labels) tuple, a list of texts, or a path to a .csv/.json/.jsonl/.parquet file"
    )


def to_labeled_data(
    data: Any,
    labels: Sequence | None = None,
    *,
    text_column: str = "text",
    label_column: str = "label",
    column_mapping: Mapping[str, str] | None = None,
    require_labels: bool = True,
    read_labels: bool = True,
) -> LabeledData:
    """Validate user data and return it as `LabeledData`.

    ``data`` is a ``datasets.Dataset`` (or a single-split ``DatasetDict``), a ``pandas.DataFrame``, a list of
    dicts, a dict of lists, a ``(texts, labels)`` tuple, a list of texts (with ``labels=`` or unlabelled), or a
    path to a .csv/.json/.jsonl/.parquet file. ``column_mapping`` (setfit's) renames source columns, e.g.
    ``{"sentence": "text", "sentiment": "label"}``. Columns other than text and label are kept in ``columns``.
    Raises ValueError/TypeError naming the problem (row index, column, type; for a file, the file) for invalid
    data. With ``read_labels=False`` (texts to predict) a label column is kept unread among ``columns``.
    """
    if isinstance(data, (str, os.PathLike)):
        text_source = text_column
        if column_mapping:
            text_source = next((src for src, dst in column_mapping.items() if dst == text_column), text_column)
        content = _read_file(data, text_source)
        try:
            return _labeled_from(content, labels, text_column, label_column, column_mapping, require_labels,
                                 read_labels)
        except (ValueError, TypeError) as err:  # name the file, and the line of each row the message names
            message = _with_file_lines(str(err), Path(data))
            raise (TypeError if isinstance(err, TypeError) else ValueError)(f"{str(data)!r}: {message}") from None
    return _labeled_from(data, labels, text_column, label_column, column_mapping, require_labels, read_labels)


def _labeled_from(data: Any, labels: Sequence | None, text_column: str, label_column: str,
                  column_mapping: Mapping[str, str] | None, require_labels: bool,
                  read_labels: bool = True) -> LabeledData:
    """`to_labeled_data` on data already in memory (not a path)."""
    table = as_table(data)
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
            renames = column_renames(table, column_mapping)
            table = {renames[name]: values for name, values in table.items()}
        n_rows = len(next(iter(table.values()))) if table else 0
        if n_rows == 0:
            raise ValueError("the dataset is empty (0 rows)")
        hint = "; set text_column=/label_column= or column_mapping={source: target}"
        if text_column not in table:
            raise ValueError(f"no text column {text_column!r}; available columns: {list(table)}{hint}")
        texts = table.pop(text_column)
        raw_labels = table.pop(label_column, None) if read_labels else None
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
    if len(raw_labels) != len(texts):  # sklearn's check_consistent_length would not say which is texts, which labels
        raise ValueError(f"got {len(texts)} texts but {len(raw_labels)} labels; they must have the same length")
    values, _ = normalize_labels(raw_labels)
    return LabeledData(texts, values, columns)
