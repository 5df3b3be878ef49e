"""Readers: turn any supported input (Dataset, DataFrame, rows, columns, texts, a file) into `LabeledData`."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
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
from .labels import is_int_text, normalize_labels

__all__ = ["LabeledData", "MissingColumnError", "as_table", "check_unique_columns", "column_renames", "json_lines",
           "numbered_lines", "read_utf8", "to_labeled_data"]

#: the table files `to_labeled_data` reads by path (a text column, and labels)
TABLE_SUFFIXES = (".csv", ".json", ".jsonl", ".parquet")


@dataclass
class LabeledData:
    """Validated texts, their raw (user-facing) labels or None, and the remaining columns by name; read from a file
    whose rows are lines (CSV, JSON lines), the file line each row starts on (``lines``, else None)."""

    texts: list[str]
    labels: list | None
    columns: dict[str, list] = field(default_factory=dict)
    lines: list[int] | None = None

    def __len__(self) -> int:
        return len(self.texts)


class MissingColumnError(ValueError):
    """Data without the column a parameter names: ``parameter`` (``"text_column"``, ``"label_column"``) asked for
    ``column``; ``columns`` are every column the data has (None: the data is texts without columns, such as a
    JSON array of strings). A command line names its own option from these rather than the parameter."""

    def __init__(self, message: str, *, parameter: str, column: str, columns: list | None) -> None:
        super().__init__(message)
        self.parameter, self.column, self.columns = parameter, column, columns


def _read_file(path: str | os.PathLike, text_source: str) -> tuple[dict[str, list] | list, list[int] | None]:
    """The content of a data file, and the file line each of its rows starts on (None where rows are not lines: a
    JSON document, a Parquet file)."""
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix not in TABLE_SUFFIXES:
        if isinstance(path, str) and not p.exists():
            raise ValueError(
                f"got a str that is not a path to a {'/'.join(TABLE_SUFFIXES)} file: {path[:60]!r}; "
                "to pass texts, pass a list of strings"
            )
        raise ValueError(f"unsupported file type {suffix or '(none)'!r} for {str(p)!r}; use .csv, .json, .jsonl "
                         "or .parquet")
    if not p.is_file():
        raise FileNotFoundError(f"no such file: {str(p)!r}")
    if suffix == ".parquet":  # typed columns: read as they are
        import pandas as pd
        import pyarrow.parquet as pq  # what pandas reads Parquet with

        try:
            check_unique_columns(pq.read_schema(p).names)  # pyarrow's own error would say "Multiple matches"
            return pd.read_parquet(p).to_dict(orient="list"), None
        except (OSError, ValueError) as err:  # pyarrow's ArrowInvalid is a ValueError
            raise ValueError(f"{str(p)!r} is not a readable Parquet file: {err}") from None
    if suffix == ".csv":
        table, lines = _read_csv(p)
        return {name: _integers(values) if name != text_source else values for name, values in table.items()}, lines
    content = read_utf8(p)
    if suffix == ".json":
        try:
            return _json_value(content), None
        except json.JSONDecodeError as err:
            if "Extra data" not in err.msg:  # otherwise: JSON lines in a .json file
                raise ValueError(f"{str(p)!r} is not valid JSON: {err}") from None
        except ValueError as err:  # a repeated key
            raise ValueError(f"{str(p)!r}: {err}") from None
    rows, lines = [], []
    for number, line in enumerate(json_lines(content), start=1):
        if line.strip():
            try:
                rows.append(_json_value(line))
            except json.JSONDecodeError as err:
                raise ValueError(f"{str(p)!r} line {number} is not valid JSON: {err}") from None
            except ValueError as err:  # a repeated key
                raise ValueError(f"{str(p)!r} line {number}: {err}") from None
            lines.append(number)
    return rows, lines


def _json_value(text: str) -> Any:
    """``text`` parsed as JSON; ValueError (not a JSONDecodeError) for an object that names a key twice, of which
    ``json.loads`` would keep the last value silently."""

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        check_unique_columns([key for key, _ in pairs], what="key")
        return dict(pairs)

    return json.loads(text, object_pairs_hook=unique)


def check_unique_columns(names: Iterable, what: str = "column") -> None:
    """ValueError naming the first column name that ``names`` (a table's columns, in order) holds more than once:
    which column a reader would take is a guess (pandas renames the second ``text.1``, ``json.loads`` keeps the
    last value)."""
    first: dict[Any, int] = {}
    for position, name in enumerate(names, start=1):
        if name in first:
            raise ValueError(f"the {what} {name!r} appears twice ({what}s {first[name]} and {position}); give each "
                             f"{what} its own name")
        first[name] = position


def json_lines(content: str) -> list[str]:
    """The lines of JSON lines text: split at ``\\n`` only (a ``\\r`` before it is JSON whitespace). A JSON
    string may hold U+2028, U+2029 or U+0085 unescaped (``json.dumps(..., ensure_ascii=False)`` writes them so),
    which ``str.splitlines`` would split at."""
    return content.split("\n")


_TEXT_BREAK = re.compile(rb"\r\n|\r|\n")


def numbered_lines(handle: Iterable[bytes], name: str) -> Iterator[tuple[int, str]]:
    """Each line of a binary stream of UTF-8 text with its number (from 1), its line break removed, read lazily.

    Lines end at ``\\n``, ``\\r\\n`` or ``\\r`` (Python's universal newlines) and nowhere else: a form feed, U+2028
    or U+0085 is part of a line's text. A byte-order mark opening the stream is dropped. ``handle`` yields the
    stream in pieces that end at a ``\\n`` (a file opened in binary mode, ``sys.stdin.buffer``), so that no
    ``\\r\\n`` is cut in two.

    Raises:
        ValueError: A line that is not UTF-8, naming ``name``, the line and the byte of the line where decoding
            failed.
    """
    number = 0
    for piece in handle:
        parts = _TEXT_BREAK.split(piece)
        if not parts[-1]:  # the piece ended with a line break: no line starts after it
            parts.pop()
        for raw in parts:
            number += 1
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise ValueError(f"{name}: line {number} is not valid UTF-8 (byte {err.start} of the line is "
                                 f"{raw[err.start:err.start + 1]!r}): convert it to UTF-8") from None
            yield number, line[1:] if number == 1 and line.startswith("\ufeff") else line


def read_utf8(path: Path) -> str:
    """The text of a UTF-8 file, without a byte-order mark (not part of the first row); ValueError naming the file,
    the line and the byte where it is not UTF-8."""
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as err:
        raise ValueError(f"{str(path)!r} is not UTF-8 text{_non_utf8_line(path)}: {err}") from None


def _read_csv(path: Path) -> tuple[dict[str, list], list[int]]:
    """The columns of a CSV file (every cell as the file's text, a blank cell None) and the file line each data row
    starts on.

    The first non-blank line is the header; a blank line holds no row, a quoted cell may span lines. A row with
    more fields than the header is refused (pandas took its first field as an index, shifting every column by one);
    a row with fewer leaves the last columns missing. Raises ValueError naming the file and the line for a file
    that is not UTF-8, malformed quoting, a repeated column name or a row that is too long.
    """
    name = repr(str(path))
    try:
        with path.open(encoding="utf-8-sig", newline="") as handle:
            records = _csv_records(handle, name)
            header_line, header = next(records, (0, []))
            if not header:
                raise ValueError(f"{name} is empty: a CSV file starts with a header line naming its columns")
            header = [column or f"Unnamed: {i}" for i, column in enumerate(header)]  # pandas' name
            try:
                check_unique_columns(header)
            except ValueError as err:
                raise ValueError(f"{name} line {header_line} (the header): {err}") from None
            rows, lines = [], []
            for line, record in records:
                if len(record) > len(header):
                    raise ValueError(
                        f"{name} line {line} has {len(record)} fields but the header (line {header_line}) has "
                        f"{len(header)} ({header}): field {len(header) + 1} ({record[len(header)]!r:.40}) has no "
                        "column. Remove the extra fields (a comma ending each line?) or name the column in the "
                        "header")
                rows.append(record)
                lines.append(line)
    except UnicodeDecodeError as err:
        raise ValueError(f"{name} is not a readable UTF-8 CSV file{_non_utf8_line(path)}: {err.reason}; convert it "
                         "to UTF-8") from None
    columns = {column: [(row[i] or None) if i < len(row) else None for row in rows]
               for i, column in enumerate(header)}
    return columns, lines


_CSV_FIELD_LIMIT = 2**31 - 1  # the csv module's own limit, 128 KiB, is no limit on a text; a C long on every system


def _csv_records(handle: Iterable[str], name: str) -> Iterator[tuple[int, list[str]]]:
    """The line each record of a CSV stream (opened with ``newline=""``) starts on, and the record; a blank or
    whitespace-only line holds none (as in a JSON lines file). ValueError naming ``name`` and the line for malformed
    quoting."""
    import csv

    # raised for good, never lowered: restoring it after the read would race a CSV read on another thread
    csv.field_size_limit(max(csv.field_size_limit(), _CSV_FIELD_LIMIT))
    reader = csv.reader(handle, strict=True)
    start = 1
    try:
        for record in reader:
            if record and (len(record) > 1 or record[0].strip()):  # a line of spaces alone is a blank line
                yield start, record
            start = reader.line_num + 1
    except csv.Error as err:
        raise ValueError(f"{name} line {start}: the row starting on this line is not valid CSV: {err} (a quote "
                         "that is never closed, or text after a closing quote?)") from None


def _integers(values: list) -> list:
    """A CSV column whose every non-blank cell is an integer as ``str(int)`` writes it, as ints (JSON files give
    such labels as ints); any other column as the strings it holds ("01" and "1" stay two values)."""
    cells = [v for v in values if isinstance(v, str)]
    if not cells or not all(is_int_text(v) for v in cells):
        return values
    return [int(v) if isinstance(v, str) else v for v in values]


def _is_json_list(cell: Any) -> bool:
    """Whether a CSV cell is a JSON list of ints or strs, as multi-label labels are written (``"[1, 0, 1]"``,
    ``'["acting", "plot"]'``, ``"[]"``)."""
    if not isinstance(cell, str):
        return False
    cell = cell.strip()
    if not (cell.startswith("[") and cell.endswith("]")):
        return False
    try:
        value = json.loads(cell)
    except ValueError:
        return False
    return isinstance(value, list) and all(isinstance(v, (int, str)) and not isinstance(v, bool) for v in value)


def _check_csv_label_lists(path: str | os.PathLike, column: str, cells: list | None, lines: list[int] | None
                           ) -> None:
    """Refuse a CSV file whose every non-blank label cell is a JSON list (`_is_json_list`): a CSV cell is read as
    text, so each distinct list would silently become one class of a single-label model.

    Args:
        path: The file, for the message.
        column: The label column's name in the file.
        cells: The column's cells (None: the file has no such column, nothing to check).
        lines: The file line each row starts on.

    Raises:
        ValueError: Naming the file, the first such row and its line, and the formats that hold multi-label labels.
    """
    given = [(row, cell) for row, cell in enumerate(cells or []) if cell is not None]
    if not given or not all(_is_json_list(cell) for _, cell in given):
        return
    row, cell = given[0]
    where = f"row {row}" + (f" (line {lines[row]})" if lines and row < len(lines) else "")
    raise ValueError(
        f"{str(path)!r} {where}: the label {cell!r} is a list, as is every label in column {column!r}, but a CSV "
        "cell is read as text: each distinct list would train as one class of a single-label model. Give "
        "multi-label data in a JSON lines (.jsonl), JSON or Parquet file, each label a list of label ids or names "
        '(a JSON lines row: {"text": "...", "label": [1, 0, 1]})')


def _with_file_lines(message: str, lines: list[int] | None) -> str:
    """``message`` with each "row N" it names followed by the file line that row starts on (rows count from 0;
    ``lines`` is None where rows are not lines)."""
    if not lines:
        return message

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
        check_unique_columns(data.columns)  # data[name] of a repeated name is a DataFrame
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
    Raises ValueError/TypeError naming the problem (row index, column, type; for a file, the file and the line of
    the row) for invalid data, a column name given twice among them. With ``read_labels=False`` (texts to predict)
    a label column is kept unread among ``columns``.

    Files: a CSV file's first non-blank line names its columns; a blank line holds no row, and a row with more
    fields than the header is an error (never a shift of the columns). Every cell is read as its text, a blank one
    as missing; a column other than the text column whose every cell is an integer as ``str(int)`` writes it gives
    ints. A JSON lines file (.jsonl, or a .json file of one object per line) holds a row per non-blank line, split
    at ``\\n`` only. Every row of a file is kept, in order: ``lines`` holds the line each starts on.
    """
    if isinstance(data, (str, os.PathLike)):
        text_source = text_column
        if column_mapping:
            text_source = next((src for src, dst in column_mapping.items() if dst == text_column), text_column)
        content, lines = _read_file(data, text_source)
        if read_labels and isinstance(content, dict) and Path(data).suffix.lower() == ".csv":
            label_source = next((src for src, dst in (column_mapping or {}).items() if dst == label_column),
                                label_column)
            _check_csv_label_lists(data, label_source, content.get(label_source), lines)
        try:
            read = _labeled_from(content, labels, text_column, label_column, column_mapping, require_labels,
                                 read_labels)
        except MissingColumnError as err:  # name the file
            raise MissingColumnError(f"{str(data)!r}: {err}", parameter=err.parameter, column=err.column,
                                     columns=err.columns) from None
        except (ValueError, TypeError) as err:  # name the file, and the line of each row the message names
            message = _with_file_lines(str(err), lines)
            raise (TypeError if isinstance(err, TypeError) else ValueError)(f"{str(data)!r}: {message}") from None
        read.lines = lines  # every row is kept: row i starts on lines[i]
        return read
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
        available = list(table)
        if text_column not in table:
            raise MissingColumnError(f"no text column {text_column!r}; available columns: {available}{hint}",
                                     parameter="text_column", column=text_column, columns=available)
        if require_labels and read_labels and label_column == text_column:
            raise ValueError(f"label_column {label_column!r} is the text_column too: the labels need a column of "
                             f"their own (the columns: {available})")
        texts = table.pop(text_column)
        raw_labels = table.pop(label_column, None) if read_labels else None
        if raw_labels is None and require_labels:
            raise MissingColumnError(f"no label column {label_column!r}; available columns: {available}{hint}",
                                     parameter="label_column", column=label_column, columns=available)
        columns = table
    texts = validate_texts(texts)
    if raw_labels is None:
        if require_labels:
            raise MissingColumnError("labels are required: got texts without labels; pass (texts, labels) or labels=",
                                     parameter="label_column", column=label_column, columns=None)
        return LabeledData(texts, None, columns)
    if isinstance(raw_labels, (str, bytes)) or not isinstance(raw_labels, Iterable):
        raise TypeError(f"labels must be a list, got {type(raw_labels).__name__}")
    raw_labels = list(raw_labels)
    if len(raw_labels) != len(texts):  # sklearn's check_consistent_length would not say which is texts, which labels
        raise ValueError(f"got {len(texts)} texts but {len(raw_labels)} labels; they must have the same length")
    values, _ = normalize_labels(raw_labels)
    return LabeledData(texts, values, columns)
