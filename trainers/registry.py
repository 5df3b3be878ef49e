"""Pick and build a `Backend` by name ("auto", "cpu", "cuda", "hpu", "ipu")."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import logging
import sys
from collections.abc import Mapping
from typing import Any

import torch

from .base import Backend
from .distributed import DistOptions
from .names import AUTO_PRECISION, BACKENDS, NAMES

logger = logging.getLogger(__name__)

_CLASSES: dict[str, tuple[str, str]] = {  # name of trainers.names.BACKENDS: (module, class)
    "cpu": ("trainers.cpu", "CpuBackend"),
    "cuda": ("trainers.cuda", "CudaBackend"),
    "hpu": ("trainers.gaudi", "GaudiBackend"),
    "ipu": ("trainers.ipu", "IpuBackend"),
}


def backend_class(name: str) -> type[Backend]:
    """The backend class registered under a name, without importing any device SDK.

    Args:
        name: `"cpu"`, `"cuda"`, `"hpu"` or `"ipu"`.

    Returns:
        The [`Backend`][trainers.base.Backend] subclass.

    Raises:
        KeyError: An unknown name.
    """
    module, cls = _CLASSES[name]
    return getattr(importlib.import_module(module), cls)


def backend_options(cls: type[Backend]) -> list[str]:
    """The option names ``cls`` takes besides precision and compile: its keyword arguments, and the
    `DistOptions` of the backends that run under torchrun."""
    names = []
    for name, param in inspect.signature(cls).parameters.items():
        if param.kind is param.VAR_KEYWORD:
            names += list(DistOptions.__annotations__)
        elif name not in ("precision", "compile") and param.kind is not param.VAR_POSITIONAL:
            names.append(name)
    return sorted(names)


def _module_present(name: str) -> bool:
    if name in sys.modules:
        return sys.modules[name] is not None
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def resolve_auto(**options: Any) -> tuple[str, str]:
    """What `backend="auto"` chooses: hpu, else cuda, else cpu (ipu only when asked by name).

    Args:
        **options: The backend options (a `gaudi_config` is applied before the Gaudi SDK is imported).

    Returns:
        `(name, reason)`: the backend's name and why it was chosen.
    """
    notes = []
    if _module_present("habana_frameworks"):
        from .gaudi import GaudiConfig, declare_autocast_ops, hpu_available

        if options.get("gaudi_config") is not None:  # op lists must be exported before the SDK is imported
            declare_autocast_ops(GaudiConfig.load(options["gaudi_config"]))
        if hpu_available():
            return "hpu", "auto: chose hpu (Gaudi SDK installed, Gaudi device available)"
        notes.append("Gaudi SDK installed but no Gaudi device")
    else:
        notes.append("no Gaudi SDK")
    if torch.cuda.is_available():
        return "cuda", f"auto: chose cuda ({torch.cuda.device_count()} CUDA device(s); {', '.join(notes)})"
    return "cpu", f"auto: chose cpu (no CUDA device, {', '.join(notes)})"


def check_backend_instance(backend: Backend, precision: str | None = None, compile: bool = False,
                           options: Mapping[str, Any] | None = None) -> None:
    """Refuse arguments that a ready-built backend would silently ignore.

    A [`Backend`][trainers.base.Backend] instance is used as built: its options, precision and compile setting are
    its own. ``precision`` None or ``"auto"`` (`TrainingArguments`' default) and ``compile=False`` (the default)
    defer to the instance; anything else must be what the instance already does.

    Args:
        backend: The instance.
        precision: The precision asked for besides it.
        compile: Whether compilation was asked for besides it.
        options: The backend options given besides it.

    Raises:
        ValueError: Options given with an instance, a precision other than the instance's, or `compile=True` with
            an instance built without it.
    """
    kind = type(backend).__name__
    if options:
        raise ValueError(f"backend options ({', '.join(sorted(options))}) cannot be combined with a Backend "
                         f"instance: build the {kind} with them instead")
    if precision not in (None, AUTO_PRECISION) and precision != backend.precision:
        raise ValueError(f"precision={precision!r} was given with a {kind} built for precision "
                         f"{backend.precision!r}, which it keeps: build the {kind} with precision={precision!r}, or "
                         "leave precision to it ('auto')")
    if compile and not backend.compile:
        raise ValueError(f"compile=True was given with a {kind} built without compile: build the {kind} with "
                         "compile=True, or leave compile to it (False)")


def get_backend(
    name: str | Backend = "auto", precision: str | None = None, compile: bool = False, **options: Any
) -> Backend:
    """Build a training backend; it fails before any work, never falling back silently.

    The returned backend's `reason` says why it was chosen; `describe()` what it detected.

    Args:
        name: `"auto"`, `"cpu"`, `"cuda"`, `"hpu"` or `"ipu"`, or a [`Backend`][trainers.base.Backend] instance
            (returned as is; see `check_backend_instance`).
        precision: `"fp32"`, `"bf16"`, `"fp16"` or `"auto"` (each backend's choice); None: fp32 with a name, the
            instance's own with an instance.
        compile: Whether modules are compiled with `torch.compile`.
        **options: The backend's options (see [Backends and devices](../backends.md)), such as `num_threads`.

    Returns:
        The [`Backend`][trainers.base.Backend].

    Raises:
        ValueError: An unknown name, a precision the device cannot do, or, with a `Backend` instance, options, a
            precision other than its own or `compile=True` when it was built without.
        TypeError: An option the backend does not take (the message lists its options).
        ImportError: The device's SDK is not installed (the message names the package).
        RuntimeError: No device.

    Example:
        ```python
        from trainers import get_backend

        backend = get_backend("cpu", precision="fp32")
        print(backend.describe())
        ```
    """
    if isinstance(name, Backend):
        check_backend_instance(name, precision, compile, options)
        return name
    if precision is None:
        precision = "fp32"
    key = str(name).strip().lower()
    if key not in NAMES:
        listed = ", ".join(f"{n!r} ({BACKENDS[n]})" if n in BACKENDS else repr(n) for n in NAMES)
        raise ValueError(f"unknown backend {name!r}; choose one of {listed}")
    if key == "auto":
        key, reason = resolve_auto(**options)
    else:
        reason = f"requested {key!r}"
    cls = backend_class(key)
    unknown = sorted(set(options) - set(backend_options(cls)))
    if unknown:
        raise TypeError(f"the {key!r} backend has no option(s) {', '.join(map(repr, unknown))}; "
                        f"its options: {', '.join(backend_options(cls))}")
    backend = cls(precision=precision, compile=compile, **options)
    backend.reason = reason
    logger.info("backend: %s -> %s", reason, backend.describe())
    return backend


def available_backends() -> dict[str, bool]:
    """Which backends could be built here, without importing SDKs (a quick, approximate check).

    Returns:
        `{"cpu": True, "cuda": ..., "hpu": ..., "ipu": ...}`.
    """
    return {
        "cpu": True,
        "cuda": torch.cuda.is_available(),
        "hpu": _module_present("habana_frameworks"),
        "ipu": _module_present("poptorch"),
    }


#: device type -> the backend whose ``auto_precision`` is the rule for prediction on it (others: fp32)
_PREDICTION_BACKENDS = {"cpu": "cpu", "cuda": "cuda"}


def prediction_precision(device: str | torch.device = "cpu", precision: str = "auto") -> str:
    """The precision prediction runs in on ``device``: ``"fp32"`` or ``"bf16"``.

    ``precision="auto"`` is the training rule, asked of the backend of that device type
    (`auto_precision`): bf16 on CPUs that compute it natively (AMX, AVX512-BF16; never
    where it would run emulated) and on GPUs with bf16, fp32 elsewhere (other device types included). ``"fp32"`` is
    always fp32; ``"bf16"`` is checked by that backend as for training (a CPU without native bf16 warns that it
    runs emulated; a GPU without bf16 is a ``ValueError``).

    Args:
        device: where the body is (``model.device``).
        precision: ``"auto"``, ``"fp32"`` or ``"bf16"``.

    Returns:
        ``"fp32"`` or ``"bf16"``.

    Raises:
        ValueError: an unknown precision, or bf16 on a device that cannot run it.

    Examples:
        >>> prediction_precision("cpu", "fp32")
        'fp32'
    """
    if precision not in ("auto", "fp32", "bf16"):
        raise ValueError(f"prediction precision must be 'auto', 'fp32' or 'bf16', got {precision!r}")
    kind = torch.device(device).type
    if precision == "fp32":
        return "fp32"
    if kind not in _PREDICTION_BACKENDS:
        if precision == "bf16":
            raise ValueError(f"bf16 prediction runs on cpu and cuda, not on {kind!r}; use 'auto' or 'fp32'")
        return "fp32"
    return backend_class(_PREDICTION_BACKENDS[kind])(precision=precision).precision


#: texts per forward pass of ``predict``/``predict_proba``/``encode`` when the caller gives none
PREDICTION_BATCH_SIZE = 32
#: the same where the body runs bf16 on a CPU with AMX tiles: measured on validation texts (SST-2, Emotion) on a
#: 2-vCPU Xeon with AMX, 64 texts a pass ran 1.18x 32's; 128 no faster; fp32 there, and other CPUs, keep 32
AMX_BF16_BATCH_SIZE = 64


def prediction_batch_size(device: str | torch.device = "cpu", precision: str = "fp32",
                          cpuinfo: str | None = None) -> int:
    """The texts per forward pass prediction uses when the caller does not say: `AMX_BF16_BATCH_SIZE` where
    ``precision`` (resolved, `prediction_precision`) is bf16 on a CPU with AMX tiles (the ``amx_bf16`` flag),
    `PREDICTION_BATCH_SIZE` otherwise.

    Args:
        device: Where the body is (``model.device``).
        precision: The resolved precision, ``"fp32"`` or ``"bf16"``.
        cpuinfo: ``/proc/cpuinfo`` text to read the flags from instead of this machine's (tests).

    Returns:
        The batch size.

    Examples:
        >>> prediction_batch_size("cpu", "bf16", cpuinfo="flags : avx512f avx512_bf16 amx_bf16 amx_tile")
        64
        >>> prediction_batch_size("cpu", "bf16", cpuinfo="flags : avx512f avx512_bf16")
        32
    """
    from .cpu import detect_cpu_features  # the probe the precision rule reads

    if precision != "bf16" or torch.device(device).type != "cpu":
        return PREDICTION_BATCH_SIZE
    return AMX_BF16_BATCH_SIZE if detect_cpu_features(cpuinfo).amx_bf16 else PREDICTION_BATCH_SIZE
