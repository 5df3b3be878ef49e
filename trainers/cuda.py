"""CUDA backend: cuda:LOCAL_RANK (or Ray Train's GPU), fp16 (with GradScaler) or bf16 autocast, nccl + DDP."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack from Python 3.11

from .base import Backend
from .distributed import DistOptions, DistributedMixin, ray_train_device

logger = logging.getLogger(__name__)


class CudaBackend(DistributedMixin, Backend):
    """Train on one NVIDIA (or ROCm) GPU per process.

    Args:
        precision: `"fp32"`, `"bf16"`, `"fp16"` or `"auto"` (bf16 where the GPU has it).
        compile: Whether modules are compiled with `torch.compile`.
        compile_options: Keyword arguments of `torch.compile`.
        **dist_options: The process-group options: `dist_backend` (`"nccl"`, or `"gloo"`),
            `find_unused_parameters`, `ddp_options`, `dist_timeout` (seconds).

    Raises:
        RuntimeError: No CUDA GPU, or a CPU build of torch.
        ValueError: A precision the GPU cannot do.
    """

    name = "cuda"
    supported_precisions = ("fp32", "bf16", "fp16")
    default_dist_backend = "nccl"
    allowed_dist_backends = ("nccl", "gloo")
    fused_adamw = True

    def __init__(
        self,
        precision: str = "fp32",
        compile: bool = False,
        *,
        compile_options: Mapping[str, Any] | None = None,
        **dist_options: Unpack[DistOptions],
    ) -> None:
        if not torch.cuda.is_available():
            raise RuntimeError(
                "The 'cuda' backend needs a CUDA GPU and a CUDA build of PyTorch, but torch.cuda.is_available() "
                f"is False (torch {torch.__version__}); use backend='cpu' or 'auto'"
            )
        super().__init__(precision, compile, device="cpu", compile_options=compile_options)
        self._init_distributed(**dist_options)
        given = ray_train_device()  # a Ray Train worker's GPU, as Ray assigned it
        if given is not None and given.type == "cuda":
            self.device = given
        else:
            count = torch.cuda.device_count()
            if self.local_rank >= count:
                raise RuntimeError(f"LOCAL_RANK={self.local_rank} but only {count} CUDA device(s) are visible")
            self.device = torch.device("cuda", self.local_rank)
        if self.precision == "bf16" and not torch.cuda.is_bf16_supported():
            raise ValueError(
                f"precision 'bf16' is not supported on {torch.cuda.get_device_name(self.local_rank)} "
                "(torch.cuda.is_bf16_supported() is False); use precision='fp16' or 'fp32'"
            )
        if self.precision == "fp16":
            self.scaler = torch.amp.GradScaler("cuda")

    def auto_precision(self) -> str:
        """bf16 autocast on GPUs that support it (Ampere and later), else fp32 (fp16 needs asking for)."""
        return "bf16" if torch.cuda.is_bf16_supported() else "fp32"

    def setup(self) -> None:
        torch.cuda.set_device(self.device)
        super().setup()

    def to_device(self, batch: Mapping[str, Any]) -> dict[str, Any]:
        return {
            k: (v.to(self.device, non_blocking=True) if isinstance(v, torch.Tensor) else v) for k, v in batch.items()
        }

    def rng_state(self) -> dict[str, Any]:
        """Every visible GPU's generator state (as ``torch.cuda.get_rng_state_all``)."""
        return {"cuda": torch.cuda.get_rng_state_all()}

    def set_rng_state(self, state: Mapping[str, Any]) -> None:
        if "cuda" in state:
            torch.cuda.set_rng_state_all(state["cuda"])

    def ddp_device_ids(self) -> list[int] | None:
        return [self.device.index]

    def barrier_kwargs(self) -> dict[str, Any]:
        return {"device_ids": [self.device.index]} if self.dist_backend == "nccl" else {}

    def describe(self) -> str:
        try:
            gpu = torch.cuda.get_device_name(self.device)
        except (RuntimeError, AssertionError):
            gpu = "unknown GPU"
        mode = {"fp32": "fp32", "bf16": "bf16 autocast", "fp16": "fp16 autocast + GradScaler"}[self.precision]
        extra = ", torch.compile" if self.compile else ""
        return f"cuda: {self.device} ({gpu}), {mode}{extra}" + self.describe_distributed()
