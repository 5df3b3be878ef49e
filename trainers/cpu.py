"""CPU backend: fp32 or bf16 autocast, thread count, optional IPEX and torch.compile, gloo/ccl for torchrun."""

from __future__ import annotations

import importlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack from Python 3.11

from .base import Backend, warn_once
from .cpu_flags import CPUINFO_PATH, parse_cpuinfo_flags
from .distributed import DistOptions, DistributedMixin

logger = logging.getLogger(__name__)



@dataclass(frozen=True)
class CpuFeatures:
    """What the CPU (and this torch build) can do for bf16."""

    flags: frozenset[str]
    known: bool  # False when no cpuinfo could be read (non-Linux)
    mkldnn: bool

    @property
    def amx_bf16(self) -> bool:
        return "amx_bf16" in self.flags

    @property
    def avx512_bf16(self) -> bool:
        return "avx512_bf16" in self.flags

    @property
    def avx512f(self) -> bool:
        return "avx512f" in self.flags

    @property
    def arm_bf16(self) -> bool:
        return "bf16" in self.flags  # aarch64 "Features: ... bf16"

    @property
    def native_bf16(self) -> bool | None:
        """True with hardware bf16 math (AMX, AVX512-BF16, ARM BF16); None when unknown."""
        if not self.known:
            return None
        return self.amx_bf16 or self.avx512_bf16 or self.arm_bf16

    def summary(self) -> str:
        if not self.known:
            return f"CPU flags unknown (no {CPUINFO_PATH}), oneDNN: {_yes(self.mkldnn)}"
        parts = [f"AMX: {_yes(self.amx_bf16)}", f"AVX512-BF16: {_yes(self.avx512_bf16)}"]
        if self.arm_bf16:
            parts.append("ARM-BF16: yes")
        parts += [f"AVX512F: {_yes(self.avx512f)}", f"oneDNN: {_yes(self.mkldnn)}"]
        return ", ".join(parts)


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def detect_cpu_features(cpuinfo: str | None = None) -> CpuFeatures:
    """Parse ``cpuinfo`` (default: read ``/proc/cpuinfo``) and ask torch about oneDNN."""
    known = True
    if cpuinfo is None:
        try:
            cpuinfo = CPUINFO_PATH.read_text(errors="replace")
        except OSError:
            cpuinfo, known = "", False
    return CpuFeatures(parse_cpuinfo_flags(cpuinfo), known, bool(torch.backends.mkldnn.is_available()))


class CpuBackend(DistributedMixin, Backend):
    """Train on the CPU, alone or in several processes under torchrun.

    Args:
        precision: `"fp32"`, `"bf16"` or `"auto"` (bf16 where the CPU computes it natively: AMX or AVX512-BF16).
        compile: Whether modules are compiled with `torch.compile`.
        num_threads: The threads `torch.set_num_threads` sets at `setup`; None leaves torch's.
        use_ipex: Whether to apply Intel Extension for PyTorch's `ipex.optimize` to the model and optimizer, in
            place (an ImportError names the package when it is not installed).
        compile_options: Keyword arguments of `torch.compile`.
        cpuinfo: Text to parse instead of `/proc/cpuinfo` (for tests).
        **dist_options: The process-group options: `dist_backend` (`"gloo"`, or `"ccl"` with oneccl_bind_pt),
            `find_unused_parameters`, `ddp_options`, `dist_timeout` (seconds).

    Raises:
        ValueError: A precision the CPU cannot do, or an unknown process-group backend.
    """

    name = "cpu"
    supported_precisions = ("fp32", "bf16")
    default_dist_backend = "gloo"
    allowed_dist_backends = ("gloo", "ccl")
    fused_adamw = True

    def __init__(
        self,
        precision: str = "fp32",
        compile: bool = False,
        *,
        num_threads: int | None = None,
        use_ipex: bool = False,
        compile_options: Mapping[str, Any] | None = None,
        cpuinfo: str | None = None,
        **dist_options: Unpack[DistOptions],
    ) -> None:
        self.features = detect_cpu_features(cpuinfo)
        super().__init__(precision, compile, device="cpu", compile_options=compile_options)
        if num_threads is not None and num_threads < 1:
            raise ValueError(f"num_threads must be >= 1, got {num_threads}")
        self.num_threads = num_threads
        self.ipex: Any = None
        if use_ipex:
            try:
                self.ipex = importlib.import_module("intel_extension_for_pytorch")
            except ImportError as err:
                raise ImportError(
                    "use_ipex=True needs Intel Extension for PyTorch: install intel-extension-for-pytorch "
                    "(matching your torch version), or drop use_ipex"
                ) from err
        self._init_distributed(**dist_options)
        if self.precision == "bf16" and not self.features.native_bf16:
            how = "could not be confirmed" if self.features.native_bf16 is None else "is missing"
            warn_once(
                f"bf16 on this CPU: native bf16 support (AMX / AVX512-BF16) {how}; "
                "bf16 runs emulated and may be slower than fp32",
                RuntimeWarning,
            )

    def auto_precision(self) -> str:
        """bf16 autocast where the CPU computes bf16 natively (AMX or AVX512-BF16), else fp32.

        Measured on a 2-core Xeon with AMX (MiniLM-L6, one thread): training 1.3x (SST-2, 8 steps) to 1.8x
        (Emotion, 133 steps) as fast, accuracy unchanged (benchmarks/README.md).
        """
        return "bf16" if self.features.native_bf16 else "fp32"

    def setup(self) -> None:
        self._threads_before = torch.get_num_threads()  # put back by teardown: the count is the process's
        if self.num_threads is not None:
            torch.set_num_threads(self.num_threads)
        super().setup()

    def teardown(self) -> None:
        super().teardown()
        if self.num_threads is not None and getattr(self, "_threads_before", None) is not None:
            torch.set_num_threads(self._threads_before)

    def optimize_module(
        self, module: torch.nn.Module, optimizer: torch.optim.Optimizer
    ) -> tuple[torch.nn.Module, torch.optim.Optimizer]:
        """``ipex.optimize`` of ``module`` and ``optimizer`` in place (with ``use_ipex``); otherwise both as given."""
        if self.ipex is None:
            return module, optimizer
        module.train()
        dtype = torch.bfloat16 if self.precision == "bf16" else torch.float32
        # inplace=True: IPEX's default deep-copies the model and optimizer, and the copy would be trained while
        # the model the loop reads (and saves) stays untouched
        return self.ipex.optimize(module, optimizer=optimizer, dtype=dtype, inplace=True)

    def describe(self) -> str:
        mode = "bf16 autocast" if self.precision == "bf16" else "fp32"
        threads = self.num_threads or torch.get_num_threads()
        extras = [f"{threads} threads"]
        if self.ipex is not None:
            extras.append("IPEX")
        if self.compile:
            extras.append("torch.compile")
        text = f"cpu: {mode}, {', '.join(extras)}; {self.features.summary()}"
        if self.precision == "bf16" and not self.features.native_bf16:
            text += " (bf16 runs emulated, may be slower)"
        return text + self.describe_distributed()
