"""Hardware backends for setfit_lite's single training loop (CPU, CUDA, Intel Gaudi, Graphcore IPU).

>>> from trainers import get_backend
>>> backend = get_backend("auto", precision="bf16")     # doctest: +SKIP

Device SDKs (habana_frameworks, poptorch, intel_extension_for_pytorch, oneccl_bindings_for_pytorch)
are imported only by the backend that needs them, when it is built.
"""

from .base import PRECISIONS, Backend
from .cpu import CpuBackend
from .cuda import CudaBackend
from .gaudi import GaudiBackend, GaudiConfig
from .ipu import IpuBackend, IpuConfig
from .registry import NAMES, available_backends, backend_class, get_backend, resolve_auto

__all__ = [
    "NAMES",
    "PRECISIONS",
    "Backend",
    "CpuBackend",
    "CudaBackend",
    "GaudiBackend",
    "GaudiConfig",
    "IpuBackend",
    "IpuConfig",
    "available_backends",
    "backend_class",
    "get_backend",
    "resolve_auto",
]
