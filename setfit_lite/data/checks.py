"""Shared input checks: recognising the containers users pass, and texts that are non-empty strings.

Error messages name the offending row, column or value; helpers here keep them short.
"""

from __future__ import annotations

import functools
import math
import re
import sys
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

__all__ = [
    "MAX_LISTED",
    "check_ordered_rows",
    "check_text_collection",
    "is_dataframe",
    "is_dataset",
    "is_dataset_dict",
    "is_listlike",
    "is_missing",
    "pick_split_error",
    "short_repr",
    "text_key",
    "validate_texts",
]

MAX_LISTED = 20  # how many offending values an error message lists


@functools.cache
def _invisible() -> re.Pattern[str]:
    """A pattern of the characters a BERT-style tokenizer deletes and NFKC keeps: Unicode format (Cf: BOM,
    zero-width space, soft hyphen, word joiner, direction marks) and control (Cc: NUL) characters that are not
    whitespace, as ranges of code points. Built on first use (a scan of every code point, a fraction of a second)."""
    codes = [code for code in range(sys.maxunicode + 1)
             if unicodedata.category(chr(code)) in ("Cf", "Cc") and not chr(code).isspace()]
    ranges, start = [], codes[0]
    for previous, code in zip(codes, codes[1:] + [-1]):
        if code != previous + 1:
            ranges.append(re.escape(chr(start)) + ("-" + re.escape(chr(previous)) if previous > start else ""))
            start = code
    return re.compile("[" + "".join(ranges) + "]+")


def text_key(text: str) -> str:
    """What two texts must share to count as the same text wherever texts are compared (the unlabeled pool against
    the labelled and the evaluated texts, the texts `suggest_labels` picks): without Unicode format and control
    characters (a zero-width space, a BOM, a soft hyphen, NUL: a BERT-style tokenizer deletes them), then
    NFKC-normalised, case-folded, runs of whitespace as one space, no leading or trailing whitespace. A model reads
    ``"Good  film"``, ``" good film"``, ``"ＧＯＯＤ film"`` and ``"good\u200b film"`` as (nearly) the same text, so
    none of them may be pseudo-labelled and then scored on. The key is wider than any one model's reading on
    purpose: a cased model reads case, and a SentencePiece tokenizer (multilingual-e5's) reads a zero-width joiner or
    non-joiner; a text that differs from another only by them is a near-copy of it all the same (the Persian
    ``"می‌خواهم"`` and ``"میخواهم"``), and counts as that text.

    Args:
        text: A text.

    Returns:
        Its key: two texts are the same text when their keys are equal.
    """
    # every format and control character is non-printable, and so are line breaks and no-break spaces: a text
    # whose only non-printable characters are whitespace skips the pattern
    if not text.isprintable() and not "".join(text.split()).isprintable():
        text = _invisible().sub("", text)
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def _is_instance(obj: Any, module: str, name: str) -> bool:
    """``isinstance(obj, module.name)`` if ``module`` is imported (data of its types cannot exist otherwise)."""
    loaded = sys.modules.get(module)
    return loaded is not None and isinstance(obj, getattr(loaded, name))


def is_dataset(obj: Any) -> bool:
    """Whether ``obj`` is a ``datasets.Dataset`` (without importing datasets)."""
    return _is_instance(obj, "datasets", "Dataset")


def is_dataset_dict(obj: Any) -> bool:
    """Whether ``obj`` is a ``datasets.DatasetDict`` (without importing datasets)."""
    return _is_instance(obj, "datasets", "DatasetDict")


def is_dataframe(obj: Any) -> bool:
    """Whether ``obj`` is a ``pandas.DataFrame`` (without importing pandas)."""
    return _is_instance(obj, "pandas", "DataFrame")


def is_series(obj: Any) -> bool:
    """Whether ``obj`` is a ``pandas.Series`` (without importing pandas)."""
    return _is_instance(obj, "pandas", "Series")


def is_dataset_column(obj: Any) -> bool:
    """A column of a ``datasets.Dataset`` (``ds["text"]`` is a lazy ``Column`` in datasets 4+, not a list)."""
    return type(obj).__name__ == "Column" and type(obj).__module__.startswith("datasets")


def is_listlike(obj: Any) -> bool:
    """Whether ``obj`` is a list, tuple, non-scalar array, Series or Dataset column (a row of values)."""
    if isinstance(obj, np.ndarray):
        return obj.ndim > 0
    return isinstance(obj, (list, tuple)) or is_series(obj) or is_dataset_column(obj)


def is_missing(value: Any) -> bool:
    """Whether ``value`` is None, NaN or pandas' NA/NaT."""
    if value is None:
        return True
    if isinstance(value, (float, np.floating)):
        return math.isnan(value)
    return type(value).__name__ in ("NAType", "NaTType")  # pandas.NA / pandas.NaT


def short_repr(values: Sequence) -> str:
    """``repr`` of a list, cut after ``MAX_LISTED`` items (with the count of the rest)."""
    values = list(values)
    if len(values) <= MAX_LISTED:
        return repr(values)
    return repr(values[:MAX_LISTED])[:-1] + f", ... ({len(values) - MAX_LISTED} more)]"


def pick_split_error(splits: list) -> ValueError:
    """The error for a ``DatasetDict`` where one split is needed."""
    hint = f"e.g. data[{splits[0]!r}]" if splits else ""
    return ValueError(f"got a DatasetDict with splits {splits}; pick one split, {hint}")


_BYTES = (bytes, bytearray, memoryview)
_DECODE = ": decode it to str first, e.g. data.decode('utf-8')"


def check_ordered_rows(values: Any, column: str = "text") -> None:
    """TypeError, saying what to pass, when iterating ``values`` would not give its rows in order: a pandas
    DataFrame gives its column names, a ``datasets.Dataset`` its rows as dicts, a ``DatasetDict`` its split names,
    a set (or frozenset) its items in an order that changes from one Python process to the next (so results
    would not line up with the values). The message names the table's ``column`` to pass instead."""
    if is_dataframe(values):
        raise TypeError(f"got a pandas DataFrame, whose iteration gives its column names, not its rows: pass its "
                        f"{column!r} column, e.g. df[{column!r}].tolist()")
    if is_dataset(values):
        raise TypeError(f"got a datasets.Dataset, whose iteration gives its rows as dicts: pass its {column!r} "
                        f"column, e.g. ds[{column!r}]")
    if is_dataset_dict(values):
        split = next(iter(values), "train")
        raise TypeError(f"got a DatasetDict of the splits {list(values)}: pass one split's {column!r} column, e.g. "
                        f"data[{split!r}][{column!r}]")
    if isinstance(values, (set, frozenset)):
        raise TypeError(f"got a {type(values).__name__}, which has no order (the results would not line up with "
                        "its items, and would change from one run to the next): pass a list in a fixed order, e.g. "
                        "sorted(...)")


def check_text_collection(texts: Any, single: str = "pass a list of strings, e.g. [text]") -> None:
    """TypeError, saying what to pass, unless ``texts`` is an iterable of texts in order: a bare ``str``
    (``single`` says what to pass instead), bytes, a table or a set (`check_ordered_rows`), a mapping (iterating
    it would give its keys), an array of other than one dimension or a non-iterable is refused. A list, tuple,
    1-D array, pandas Series, Dataset column or other iterable (a generator) passes."""
    if isinstance(texts, str):
        raise TypeError(f"got a single string; {single}")
    if isinstance(texts, _BYTES):
        raise TypeError(f"got {type(texts).__name__}{_DECODE}, and pass a list of texts")
    check_ordered_rows(texts)
    if isinstance(texts, np.ndarray) and texts.ndim != 1:
        raise TypeError(f"got a {texts.ndim}-D array of shape {texts.shape}: pass a 1-D array or a list of texts")
    if isinstance(texts, Mapping):
        raise TypeError(f"got a {type(texts).__name__}, whose iteration gives its keys: pass a list of texts, e.g. "
                        "list(d.values()) for its values")
    if not isinstance(texts, Iterable):
        raise TypeError(f"texts must be a list of strings, got {type(texts).__name__}: pass a list of texts")


def validate_texts(texts: Iterable[str], *, allow_empty: bool = False, first_row: int = 0,
                   allow_blank: bool = False) -> list[str]:
    """Check that ``texts`` is a list of non-empty strings and return it as a ``list[str]``.

    A bare ``str`` is refused (TypeError): wrap a single text in a list; so is what `check_text_collection` refuses
    (a DataFrame, a Dataset, a set, a mapping, ...). Raises ValueError for an empty
    collection (unless ``allow_empty``), for empty or whitespace-only texts (unless ``allow_blank``) and for texts
    that are not valid Unicode (a lone surrogate such as ``"\\ud800"``, which no tokenizer can encode), TypeError
    for non-string texts; both name the row index (counted from ``first_row``, for a chunk of a longer stream).
    """
    check_text_collection(texts)
    # Not sklearn's check_array: it checks an array's shape and dtype, not that each item is a non-blank str, and
    # its messages cannot name the row ("row 3: text is empty") the way users need to fix their data.
    texts = list(texts)
    if not texts and not allow_empty:
        raise ValueError("no texts: the dataset is empty")
    out = []
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            hint = " (a missing value)" if is_missing(text) else _DECODE if isinstance(text, _BYTES) else ""
            raise TypeError(f"row {first_row + i}: text must be a str, got {type(text).__name__}{hint}")
        if not (allow_blank or text.strip()):
            raise ValueError(f"row {first_row + i}: text is empty or whitespace-only")
        if not text.isascii():  # an ASCII text encodes: the check costs nothing on most texts
            _check_encodable(text, first_row + i)
        out.append(str(text))  # numpy.str_ -> str
    return out


def _check_encodable(text: str, row: int) -> None:
    """ValueError naming ``row`` unless ``text`` encodes to UTF-8: a lone surrogate (a half of a UTF-16 pair, as
    decoding with ``errors="surrogateescape"`` or a JSON ``"\\ud800"`` leaves) is not a character."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        raise ValueError(f"row {row}: text is not valid Unicode: it holds a lone surrogate {text[err.start]!r} at "
                         f"character {err.start}; remove it, or decode the source with errors='replace'") from None
