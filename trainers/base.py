"""The backend interface: every device decision the training loop needs, in one small object."""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import json
import logging
import os
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import torch

if TYPE_CHECKING:
    from typing_extensions import Self  # typing.Self from Python 3.11

from .names import AUTO_PRECISION, PRECISIONS

logger = logging.getLogger(__name__)

_DTYPES = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}
_WARNED: set[str] = set()


def warn_once(message: str, category: type[Warning] = UserWarning) -> None:
    """Emit ``message`` as a warning once per process."""
    if message in _WARNED:
        return
    _WARNED.add(message)
    warnings.warn(message, category, stacklevel=3)


def import_sdk(module: str, hint: str) -> Any:
    """Import a device SDK module; an ImportError carries ``hint`` (what to install) and the original error."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise ImportError(f"{hint} ({err})") from err


class DeviceConfig:
    """Base of the vendor configs (``gaudi_config.json``, ``ipu_config.json``), each a dataclass of the keys its
    backend understands: ``filename`` (looked for in a folder), ``kind`` (for messages), ``unsupported`` (keys that
    warn with their message when truthy)."""

    filename: ClassVar[str]
    kind: ClassVar[str]
    unsupported: ClassVar[Mapping[str, str]] = {}

    @classmethod
    def load(cls, source: Self | Mapping[str, Any] | str | os.PathLike | None) -> Self:
        """From a dict, a JSON file, or a folder holding `filename`; ``None`` gives the defaults, a config is
        returned as is. Other keys are logged and dropped."""
        if source is None:
            return cls()
        if isinstance(source, cls):
            return source
        if isinstance(source, Mapping):
            data = dict(source)
        else:
            path = Path(source)
            if path.is_dir():
                path = path / cls.filename
            if not path.is_file():
                raise FileNotFoundError(f"{cls.kind} not found: {path}")
            data = json.loads(path.read_text())
            if not isinstance(data, dict):
                raise TypeError(f"{path} must hold a JSON object")
        for key, message in cls.unsupported.items():
            if data.get(key):
                warn_once(message)
        known = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        ignored = sorted(set(data) - known)
        if ignored:
            logger.info("%s: ignoring keys %s", cls.filename.removesuffix(".json"), ", ".join(ignored))
        return cls(**{k: v for k, v in data.items() if k in known})


class Backend:
    """Device placement, mixed precision, wrapping and process-group handling for one device kind.

    The default implementation runs on ``self.device`` with optional autocast and no process
    group; subclasses override only what differs. The training loop (``setfit_lite.training``)
    never branches on the device: it calls these methods.

    Args:
        precision: `"fp32"`, `"bf16"`, `"fp16"`, or `"auto"` (the backend's `auto_precision`).
        compile: Whether modules are compiled with `torch.compile`.
        device: The device; None for the CPU.
        compile_options: Keyword arguments of `torch.compile`.

    Raises:
        ValueError: A precision the backend does not support.
    """

    name: str = "base"
    supported_precisions: tuple[str, ...] = ("fp32",)

    def __init__(
        self,
        precision: str = "fp32",
        compile: bool = False,
        device: str | torch.device | None = None,
        compile_options: Mapping[str, Any] | None = None,
    ) -> None:
        if precision == AUTO_PRECISION:
            precision = self.auto_precision()
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS} or {AUTO_PRECISION!r}, got {precision!r}")
        if precision not in self.supported_precisions:
            raise ValueError(
                f"precision {precision!r} is not supported by the {self.name!r} backend "
                f"(supported: {', '.join(self.supported_precisions)})"
            )
        self.precision = precision
        self.compile = compile
        self.compile_options = dict(compile_options or {})
        self.device = torch.device(device or "cpu")
        self.rank = 0
        self.local_rank = 0
        self.world_size = 1
        self.scaler: Any = None
        #: Why this backend was chosen (set by ``trainers.get_backend``).
        self.reason = ""

    # ---- lifecycle -------------------------------------------------------------------------
    def setup(self) -> None:
        """Join a process group when launched by torchrun; otherwise do nothing."""

    def teardown(self) -> None:
        """Leave the process group, if any."""

    @property
    def is_main_process(self) -> bool:
        """True on rank 0 only: the one process that writes, logs and saves."""
        return self.rank == 0

    @property
    def is_distributed(self) -> bool:
        """True with several processes (torchrun); collectives are no-ops otherwise."""
        return self.world_size > 1

    @property
    def batch_multiplier(self) -> int:
        """How many micro-batches one ``training_step`` call consumes (IPU: iterations x replicas x accumulation).

        The loop stacks that many batches of the sampler along the first dimension for each call.
        """
        return 1

    def describe(self) -> str:
        return f"{self.name} ({self.device}, {self.precision})"

    # ---- precision -------------------------------------------------------------------------
    def auto_precision(self) -> str:
        """What ``precision="auto"`` means on this device: fp32 unless the backend knows bf16 is native and fast."""
        return "fp32"

    @property
    def autocast_dtype(self) -> torch.dtype | None:
        return _DTYPES[self.precision]

    def autocast(self) -> contextlib.AbstractContextManager:
        """Mixed-precision context of the training forward pass (`training_step`); prediction does not use
        it: embeddings for the head and for ``predict`` are computed in the model's ``inference_precision`` (see
        `trainers.registry.prediction_precision` and ``setfit_lite.training.head_fit``)."""
        dtype = self.autocast_dtype
        if dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=dtype)

    # ---- placement and wrapping ------------------------------------------------------------
    def to_device(self, batch: Mapping[str, Any]) -> dict[str, Any]:
        return {k: (v.to(self.device) if isinstance(v, torch.Tensor) else v) for k, v in batch.items()}

    def move_module(self, module: torch.nn.Module, optimizer: torch.optim.Optimizer | None = None) -> torch.nn.Module:
        """Move ``module`` to the device, keeping ``optimizer``'s parameter references valid.

        ``Module.to`` normally keeps the same ``Parameter`` objects; on devices where it swaps
        them, the optimizer's groups are re-pointed to the new parameters by name.
        """
        before = {id(p): name for name, p in module.named_parameters()}
        module.to(self.device)
        if optimizer is not None:
            after = dict(module.named_parameters())
            for group in optimizer.param_groups:
                group["params"] = [after.get(before.get(id(p), ""), p) for p in group["params"]]
        return module

    def compile_module(self, module: torch.nn.Module) -> torch.nn.Module:
        """``torch.compile`` with ``compile_options`` (when ``compile=True``)."""
        return torch.compile(module, **self.compile_options)

    def prepare(
        self, module: torch.nn.Module, optimizer: torch.optim.Optimizer
    ) -> tuple[torch.nn.Module, torch.optim.Optimizer]:
        """Move ``module`` (whose forward returns the loss) to the device and wrap it (DDP, compile...).

        Always use the returned optimizer (some backends replace it) and build the LR scheduler on it.
        """
        module = self.move_module(module, optimizer)
        if self.compile:
            module = self.compile_module(module)
        return module, optimizer

    def unwrap(self, module: torch.nn.Module) -> torch.nn.Module:
        """The user's module inside DDP / ``torch.compile`` wrappers, its trained weights readable on the host side.

        The loop calls it after each phase and before evaluating during training (IPU: copies the weights back).
        """
        from torch.nn.parallel import DistributedDataParallel

        while True:
            if isinstance(module, DistributedDataParallel):
                module = module.module
            elif isinstance(getattr(module, "_orig_mod", None), torch.nn.Module):
                module = module._orig_mod
            else:
                return module

    def to_host(self, module: torch.nn.Module) -> torch.nn.Module:
        """Move a trained module back to the host, where heads live (and are saved and broadcast from)."""
        return module.to("cpu")

    # ---- optimizer -------------------------------------------------------------------------
    #: Whether torch's fused AdamW kernel (one kernel for all tensors) runs on this backend's device.
    fused_adamw: bool = False

    def make_optimizer(self, groups: list[dict[str, Any]], weight_decay: float) -> torch.optim.Optimizer:
        """The loop's optimizer: AdamW over parameter groups (dicts with ``params`` and ``lr``).

        torch's fused kernel where `fused_adamw` says the device has it: on CPU the default per-tensor AdamW
        takes ~0.3 s a step for MiniLM (its 30k x 384 word embeddings), as long as the forward pass; the fused
        kernel ~0.06 s. Backends with an optimizer of their own (hpu FusedAdamW, ipu poptorch) override this.
        """
        params = [p for group in groups for p in group["params"]]
        fused = self.fused_adamw and bool(params) and all(p.is_floating_point() for p in params)
        return torch.optim.AdamW(groups, weight_decay=weight_decay, **({"fused": True} if fused else {}))

    # ---- one optimisation step -------------------------------------------------------------
    def backward(self, loss: torch.Tensor) -> None:
        if self.scaler is not None:
            self.scaler.scale(loss).backward()
        else:
            loss.backward()

    def after_backward(self) -> None:
        """Hook after ``backward`` (Gaudi lazy mode marks a step here)."""

    def optimizer_step(self, optimizer: torch.optim.Optimizer, max_grad_norm: float | None = None) -> None:
        if self.scaler is not None:
            if max_grad_norm:
                self.scaler.unscale_(optimizer)
                self.clip_grad_norm(optimizer, max_grad_norm)
            self.scaler.step(optimizer)
            self.scaler.update()
        else:
            if max_grad_norm:
                self.clip_grad_norm(optimizer, max_grad_norm)
            optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    def clip_grad_norm(self, optimizer: torch.optim.Optimizer, max_grad_norm: float) -> None:
        params = [p for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
        torch.nn.utils.clip_grad_norm_(params, max_grad_norm)

    def after_step(self) -> None:
        """Hook after the optimizer step (Gaudi lazy mode marks a step here)."""

    def training_step(
        self,
        module: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        batch: Mapping[str, Any],
        max_grad_norm: float | None = None,
    ) -> torch.Tensor:
        """Forward (the module returns the loss), backward and optimizer step; returns the detached loss."""
        with self.autocast():
            loss = module(**batch)
        self.backward(loss)
        self.after_backward()
        self.optimizer_step(optimizer, max_grad_norm)
        self.after_step()
        return loss.detach()

    def on_lr_change(self, optimizer: torch.optim.Optimizer) -> None:
        """Called after the scheduler changed the learning rate (IPU re-sends the optimizer)."""

    # ---- collectives (no-ops in one process) -----------------------------------------------
    def barrier(self) -> None:
        """Wait for every rank."""

    def gather_object(self, obj: Any) -> list[Any]:
        """Every rank's ``obj``, in rank order, on every rank."""
        return [obj]

    def broadcast_object(self, obj: Any, src: int = 0) -> Any:
        """Rank ``src``'s ``obj`` on every rank."""
        return obj

    def state_dict(self) -> dict[str, Any]:
        """State to checkpoint (the gradient scaler)."""
        return {"scaler": self.scaler.state_dict()} if self.scaler is not None else {}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        if self.scaler is not None and "scaler" in state:
            self.scaler.load_state_dict(state["scaler"])

    def rng_state(self) -> dict[str, Any]:
        """The device's random-generator states, saved in checkpoints next to python's, numpy's and torch's CPU
        state (none here: the CPU generator is torch's own)."""
        return {}

    def set_rng_state(self, state: Mapping[str, Any]) -> None:
        """Restore what `rng_state` returned (keys it does not know are ignored)."""

    def iter_shard(self, items: Sequence[Any]) -> Iterator[Any]:
        """This rank's share of ``items`` (every ``world_size``-th item from ``rank``)."""
        return iter(items[self.rank :: self.world_size])
