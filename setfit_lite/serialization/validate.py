"""Load-time checks of saved files: version fields, counts, shapes and indices against each other.

Every loader reads its folder's files, then checks each field it will use with these helpers before building a
model, so that a folder whose files disagree (labels for a head of another width, a head column out of range, a
tensor of another shape) or that a newer setfit_lite wrote is refused at load time, never at prediction. Each
error is a `ModelFormatError` (a ValueError) that names the file and the field.

Version fields: every setfit_lite has written its version fields (``config_version``, ``format_version``) since
the format's first release, so a file without one was not written by setfit_lite and is refused.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "ModelFormatError",
    "check_count",
    "check_float_dtype",
    "check_indices",
    "check_labels",
    "check_shape",
    "check_temperature",
    "check_type",
    "check_version",
    "field_of",
    "temperature_field",
    "same_labels",
]


class ModelFormatError(ValueError):
    """A saved file whose ``field`` is missing, of the wrong type, written by a newer setfit_lite, or inconsistent
    with another file of its folder."""

    def __init__(self, file: str | os.PathLike[str], field: str, problem: str) -> None:
        self.file, self.field = Path(file), field
        super().__init__(f"{file}: {field} {problem}")


_MISMATCH = "the folder's files do not match (edited, or assembled from different saves)"


def field_of(data: Any, field: str, file: str | os.PathLike[str]) -> Any:
    """``data[field]`` of a JSON object read from ``file``; ModelFormatError if it is not an object or lacks it."""
    if not isinstance(data, Mapping):
        raise ModelFormatError(file, field, f"cannot be read: the file holds a {type(data).__name__}, not an object")
    if field not in data:
        raise ModelFormatError(file, field, "is missing; setfit_lite always writes it (was the file edited?)")
    return data[field]


def check_type(data: Any, field: str, file: str | os.PathLike[str], types: type | tuple[type, ...], *,
               optional: bool = False, what: str | None = None) -> Any:
    """``data[field]``, checked to be of ``types`` (None allowed when ``optional``; a missing optional field is
    None); ``what`` describes the expected value in the error."""
    if optional and isinstance(data, Mapping) and data.get(field) is None:
        return None
    value = field_of(data, field, file)
    types = types if isinstance(types, tuple) else (types,)
    bool_ok = bool in types
    if not isinstance(value, types) or (isinstance(value, bool) and not bool_ok):
        expected = what or ("true or false" if types == (bool,) else " or ".join(t.__name__ for t in types))
        raise ModelFormatError(file, field, f"must be {expected}{' or null' if optional else ''}, got {value!r}")
    return value


TEMPERATURE_FIELD = "calibration_temperature"


def check_temperature(data: Any, file: str | os.PathLike[str]) -> float:
    """The calibration temperature ``data["calibration_temperature"]``: a finite number > 0; 1.0 when the field is
    absent (files written before calibration existed, and uncalibrated models, which do not write it)."""
    if not isinstance(data, Mapping) or data.get(TEMPERATURE_FIELD) is None:
        return 1.0
    value = check_type(data, TEMPERATURE_FIELD, file, (int, float), what="a finite number > 0")
    if not (np.isfinite(value) and value > 0):
        raise ModelFormatError(file, TEMPERATURE_FIELD, f"must be a finite number > 0, got {value!r}")
    return float(value)


def temperature_field(temperature: float) -> dict[str, float]:
    """What a config file records of a calibration temperature: nothing for 1.0 (such files stay unchanged)."""
    return {} if temperature == 1.0 else {TEMPERATURE_FIELD: float(temperature)}


def check_version(data: Any, field: str, supported: int, file: str | os.PathLike[str], *, oldest: int = 1,
                  older: str = "") -> int:
    """The version ``data[field]``: an int from ``oldest`` to ``supported`` (the version this setfit_lite writes).

    A newer one was written by a newer setfit_lite (upgrade); an older one than ``oldest`` is refused with
    ``older`` appended (what to do about it).
    """
    version = check_type(data, field, file, int, what="a positive int")
    if version > supported:
        raise ModelFormatError(file, field, f"is {version}: the file was written by a newer setfit_lite (this one "
                                            f"reads {field} up to {supported}); upgrade setfit_lite to load it")
    if version < oldest:
        reads = supported if oldest == supported else f"{oldest} to {supported}"
        raise ModelFormatError(file, field, f"{version}, this version reads {reads}{older}" if version >= 1
                               else f"must be a positive int, got {version!r}")
    return version


def check_count(file: str | os.PathLike[str], field: str, value: int, expected: int, expected_from: str) -> None:
    """``value`` (the size ``field`` of ``file`` gives) must equal ``expected`` (what ``expected_from`` says)."""
    if value != expected:
        raise ModelFormatError(file, field, f"gives {value} but {expected_from} gives {expected}: {_MISMATCH}")


def check_shape(file: str | os.PathLike[str], field: str, shape: Sequence[int],
                expected: Sequence[int | None], expected_from: str) -> None:
    """A tensor's ``shape`` against ``expected`` (None: any size on that axis), which ``expected_from`` implies."""
    shape = tuple(int(n) for n in shape)
    if len(shape) != len(expected) or any(e is not None and s != e for s, e in zip(shape, expected)):
        shown = tuple("any" if e is None else e for e in expected)
        raise ModelFormatError(file, field, f"has shape {shape}, expected {shown} from {expected_from}: {_MISMATCH}")


def check_float_dtype(file: str | os.PathLike[str], field: str, dtype: Any) -> None:
    """A weight tensor must hold floating-point numbers (numpy or torch dtype)."""
    floating = dtype.is_floating_point if hasattr(dtype, "is_floating_point") else np.issubdtype(dtype, np.floating)
    if not floating:
        raise ModelFormatError(file, field, f"has dtype {dtype}; weights are floating point")


def check_indices(file: str | os.PathLike[str], field: str, values: Any, size: int, size_from: str,
                  *, count: int | None = None, count_from: str = "") -> list[int]:
    """``values``: a list of distinct ints in ``0..size-1`` (``size_from`` says where ``size`` comes from), of
    length ``count`` when given (``count_from`` says why)."""
    if not isinstance(values, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        raise ModelFormatError(file, field, f"must be a list of ints, got {values!r}")
    outside = [v for v in values if not 0 <= v < size]
    if outside:
        raise ModelFormatError(file, field, f"has {outside} outside 0..{size - 1} ({size_from}): {_MISMATCH}")
    if len(set(values)) != len(values):
        raise ModelFormatError(file, field, f"repeats an index: {values}")
    if count is not None:
        check_count(file, field, len(values), count, count_from)
    return values


def check_labels(data: Any, field: str, file: str | os.PathLike[str], *, optional: bool = False) -> list | None:
    """``data[field]``: a list of distinct labels (strings or numbers), the class ids ``0..n-1`` in order."""
    labels = check_type(data, field, file, list, optional=optional, what="a list of labels")
    if labels is None:
        return None
    if not all(isinstance(label, (str, int, float)) for label in labels):
        raise ModelFormatError(file, field, f"must hold strings or numbers, got {labels!r}")
    seen: set[str] = set()
    repeated = [label for label in labels if repr(label) in seen or seen.add(repr(label))]  # type: ignore[func-returns-value]
    if repeated:
        raise ModelFormatError(file, field, f"repeats {repeated}: each class id needs one label")
    if not labels:
        raise ModelFormatError(file, field, "is empty")
    return labels


def same_labels(file: str | os.PathLike[str], field: str, labels: Iterable | None, expected: Iterable | None,
                expected_from: str) -> None:
    """Two files' labels, when both give them, must be the same list."""
    if labels is not None and expected is not None and list(labels) != list(expected):
        raise ModelFormatError(file, field, f"is {list(labels)} but {expected_from} is {list(expected)}: {_MISMATCH}")
