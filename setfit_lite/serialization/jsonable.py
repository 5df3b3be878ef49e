"""Nested Python values <-> JSON-serialisable values, with tensors split out into a dict (no torch import).

Used for estimator parameters in ``head_config.json`` and for training state in checkpoints. Plain JSON values
stay themselves: None, bool, int, str, finite floats, lists and dicts whose keys are all str. Everything else
becomes a tagged object:

- ``{"__tuple__": [...]}``: a tuple;
- ``{"__items__": [[key, value], ...]}``: a dict with a non-str key (or a key that is a tag), key types kept;
- ``{"__float__": "nan" | "inf" | "-inf"}``: a non-finite float (JSON has none);
- ``{"__ndarray__": [...], "dtype": "..."}``: a numpy array of bools, numbers or strings, inline;
- ``{"__tensor__": "name"}``: an instance of ``tensor_types``, stored in ``tensors`` under ``name``.

``decode`` also reads ``{"__dict__": [[key, value], ...]}``, the form older checkpoints
used for every dict.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["decode", "encode"]

_TUPLE, _ITEMS, _FLOAT, _NDARRAY, _TENSOR = "__tuple__", "__items__", "__float__", "__ndarray__", "__tensor__"
_LEGACY_DICT = "__dict__"
_TAGS = {_TUPLE, _ITEMS, _FLOAT, _NDARRAY, _TENSOR, _LEGACY_DICT}
_ARRAY_KINDS = "biufU"  # bool, int, uint, float, str


def encode(
    value: Any,
    tensors: dict[str, Any] | None = None,
    *,
    tensor_types: tuple[type, ...] = (),
    name: str = "",
) -> Any:
    """``value`` as JSON-serialisable data; instances of ``tensor_types`` go into ``tensors``.

    A tensor is stored under its path in ``value`` (``name`` plus ``.key`` per level; ``"value"`` at the
    top), made unique if two paths spell the same. Raises TypeError naming the path of a value that has no
    encoding (``tensor_types`` without a ``tensors`` dict counts as none).
    """
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {_FLOAT: repr(value)}
    if tensor_types and tensors is not None and isinstance(value, tensor_types):
        key = name or "value"
        while key in tensors:
            key += "'"
        tensors[key] = value
        return {_TENSOR: key}

    def inner(child: Any, key: Any) -> Any:
        return encode(child, tensors, tensor_types=tensor_types, name=f"{name}.{key}")

    if isinstance(value, np.ndarray) and value.dtype.kind in _ARRAY_KINDS:
        return {_NDARRAY: inner(value.tolist(), "data"), "dtype": str(value.dtype)}
    if isinstance(value, list):
        return [inner(v, i) for i, v in enumerate(value)]
    if isinstance(value, tuple):
        return {_TUPLE: [inner(v, i) for i, v in enumerate(value)]}
    if isinstance(value, Mapping):
        if all(isinstance(k, str) for k in value) and not _TAGS.intersection(value):
            return {k: inner(v, k) for k, v in value.items()}
        return {_ITEMS: [[inner(k, "key"), inner(v, k)] for k, v in value.items()]}
    where = f" at {name!r}" if name else ""
    raise TypeError(f"cannot encode a value of type {type(value).__name__}{where} as JSON")


def decode(value: Any, tensors: Mapping[str, Any] | None = None) -> Any:
    """The inverse of `encode`: ``value`` with tags resolved and tensors looked up in ``tensors``."""
    if isinstance(value, list):
        return [decode(v, tensors) for v in value]
    if not isinstance(value, dict):
        return value
    keys = set(value)
    if keys == {_TENSOR}:
        if tensors is None or value[_TENSOR] not in tensors:
            raise KeyError(f"tensor {value[_TENSOR]!r} is missing")
        return tensors[value[_TENSOR]]
    if keys == {_TUPLE}:
        return tuple(decode(v, tensors) for v in value[_TUPLE])
    if keys == {_FLOAT}:
        return float(value[_FLOAT])
    if keys == {_NDARRAY, "dtype"}:
        return np.asarray(decode(value[_NDARRAY], tensors), dtype=value["dtype"])
    if keys == {_ITEMS}:
        # older head files wrote tuple keys as lists: a list key is read back as a tuple
        pairs = ((decode(k, tensors), decode(v, tensors)) for k, v in value[_ITEMS])
        return {tuple(k) if isinstance(k, list) else k: v for k, v in pairs}
    if keys == {_LEGACY_DICT}:
        return {k: decode(v, tensors) for k, v in value[_LEGACY_DICT]}
    return {k: decode(v, tensors) for k, v in value.items()}
