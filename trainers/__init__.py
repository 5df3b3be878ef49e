"""Hardware backends for setfit_lite's single training loop (CPU, CUDA, Intel Gaudi, Graphcore IPU).

>>> from trainers import get_backend
>>> backend = get_backend("auto", precision="bf16")     # doctest: +SKIP

Device SDKs (habana_frameworks, poptorch, intel_extension_for_pytorch, oneccl_bindings_for_pytorch)
are imported only by the backend that needs them, when it is built.

``GaudiTrainer(..., gaudi_config=...)`` and ``IPUTrainer(..., ipu_config=...)`` are setfit_lite's Trainer on those
devices (:mod:`trainers.named`, loaded when first used: it sits above ``setfit_lite.trainer``).
"""

import importlib
from typing import Any

from .base import PRECISIONS, Backend
from .cpu import CpuBackend
from .cuda import CudaBackend
from .gaudi import GaudiBackend, GaudiConfig
from .ipu import IpuBackend, IpuConfig
from .registry import NAMES, available_backends, backend_class, get_backend, resolve_auto

_NAMED_TRAINERS = ("GaudiTrainer", "IPUTrainer")

__all__ = [
    "NAMES",
    "PRECISIONS",
    "Backend",
    "CpuBackend",
    "CudaBackend",
    "GaudiBackend",
    "GaudiConfig",
    "GaudiTrainer",
    "IPUTrainer",
    "IpuBackend",
    "IpuConfig",
    "available_backends",
    "backend_class",
    "get_backend",
    "resolve_auto",
]


def __getattr__(name: str) -> Any:
    if name in _NAMED_TRAINERS:
        return getattr(importlib.import_module("trainers.named"), name)
    raise AttributeError(f"module 'trainers' has no attribute {name!r}")
