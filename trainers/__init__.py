"""Hardware backends for setfit_lite's single training loop (CPU, CUDA, Intel Gaudi, Graphcore IPU).

>>> from trainers import get_backend
>>> backend = get_backend("auto", precision="bf16")     # doctest: +SKIP

Importing ``trainers`` (or `trainers.names`, the names of backends and precisions) imports no torch: each
name below loads its module when first used. Device SDKs (habana_frameworks, poptorch,
intel_extension_for_pytorch, oneccl_bindings_for_pytorch) are imported only by the backend that needs them, when
it is built. ``GaudiTrainer`` and ``IPUTrainer`` are Trainers: ``from setfit_lite import GaudiTrainer, IPUTrainer``.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "NAMES": "names",
    "PRECISIONS": "names",
    "Backend": "base",
    "CpuBackend": "cpu",
    "CudaBackend": "cuda",
    "GaudiBackend": "gaudi",
    "GaudiConfig": "gaudi",
    "IpuBackend": "ipu",
    "IpuConfig": "ipu",
    "available_backends": "registry",
    "backend_class": "registry",
    "get_backend": "registry",
    "resolve_auto": "registry",
}
_MOVED = {"GaudiTrainer": "setfit_lite", "IPUTrainer": "setfit_lite"}  # Trainers sit above the backends

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    """Import a backend module (and torch) only when one of its names is first used."""
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
        globals()[name] = value
        return value
    if name in _MOVED:
        raise AttributeError(f"{name} is a Trainer, not a backend: `from {_MOVED[name]} import {name}`")
    raise AttributeError(f"module 'trainers' has no attribute {name!r}")
