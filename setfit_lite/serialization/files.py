"""JSON and safetensors files: written atomically, read with errors that name the file."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from safetensors import SafetensorError

from .atomic import atomic_write_bytes, atomic_write_text

if TYPE_CHECKING:
    import torch

__all__ = ["load_json", "load_tensors", "save_json", "save_tensors"]


def save_json(path: str | os.PathLike[str], obj: Any) -> None:
    """Write ``obj`` as JSON (sorted keys, indent 2, trailing newline) atomically."""
    text = json.dumps(obj, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False)
    atomic_write_text(path, text + "\n")


def load_json(path: str | os.PathLike[str], *, what: str) -> Any:
    """Read a JSON file; a missing, unreadable or invalid file raises ValueError naming ``what`` and the path."""
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"{what} file {p} is missing")
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{what} file {p} is not valid JSON ({exc}); the file may be truncated or corrupt") from exc
    except OSError as exc:
        raise ValueError(f"{what} file {p} could not be read: {exc}") from exc


# ----------------------------------------------------------------------------------------------- tensors


def _to_cpu_tensor(name: str, value: np.ndarray | torch.Tensor) -> torch.Tensor:
    import torch  # here, not at the top: ONNX inference uses this module without torch

    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu").contiguous()
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            raise TypeError(f"tensor {name!r}: object arrays cannot be saved")
        return torch.from_numpy(np.require(value, requirements=["C", "W"]))
    raise TypeError(f"tensor {name!r}: expected a numpy array or torch tensor, got {type(value).__name__}")


def save_tensors(
    path: str | os.PathLike[str],
    tensors: Mapping[str, np.ndarray | torch.Tensor],
    metadata: Mapping[str, str] | None = None,
) -> None:
    """Save named arrays/tensors to a safetensors file atomically (tensors sharing memory are copied)."""
    from safetensors.torch import save as _st_save

    out: dict[str, torch.Tensor] = {}
    seen: set[tuple[int, int]] = set()
    for name, value in tensors.items():
        if not isinstance(name, str):
            raise TypeError(f"tensor names must be str, got {name!r}")
        tensor = _to_cpu_tensor(name, value)
        key = (tensor.untyped_storage().data_ptr(), tensor.untyped_storage().nbytes())
        if tensor.numel() and key in seen:
            tensor = tensor.clone()
        seen.add(key)
        out[name] = tensor
    meta = {"format": "pt", **(dict(metadata) if metadata else {})}
    atomic_write_bytes(path, _sorted_metadata(_st_save(out, metadata=meta)))


def _sorted_metadata(data: bytes) -> bytes:
    """``data``, a safetensors file, with its header's metadata in sorted key order: safetensors writes the
    metadata from a hash map, so with two keys or more the same tensors and metadata gave different bytes (and
    manifest checksums) from one save to the next. The tensors' entries keep their order and offsets (relative to
    the header's end); the header is padded with spaces to a multiple of 8 bytes, as safetensors pads it."""
    size = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + size])
    if len(header.get("__metadata__") or {}) < 2:
        return data
    header = {"__metadata__": dict(sorted(header["__metadata__"].items()))} | {
        name: entry for name, entry in header.items() if name != "__metadata__"}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return len(text).to_bytes(8, "little") + text + data[8 + size:]


def load_tensors(path: str | os.PathLike[str]) -> dict[str, torch.Tensor]:
    """Load a safetensors file onto the CPU; a missing, truncated or corrupt file raises ValueError naming it."""
    from safetensors.torch import load_file as _st_load_file

    p = Path(path)
    if not p.is_file():
        raise ValueError(f"tensor file {p} is missing")
    try:
        return _st_load_file(p, device="cpu")
    except (SafetensorError, OSError, RuntimeError, ValueError) as exc:
        raise ValueError(f"tensor file {p} is truncated or corrupt and cannot be loaded: {exc}") from exc
