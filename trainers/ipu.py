"""Graphcore IPU backend through PopTorch (imported only when this backend is built).

``ipu_config.json`` follows the spirit of optimum-graphcore's ``IPUConfig``:

    {"layers_per_ipu": [4, 4], "replication_factor": 2, "gradient_accumulation_steps": 16,
     "device_iterations": 1, "enable_half_partials": true, "executable_cache_dir": "./exe_cache"}

and becomes ``poptorch.Options``. ``prepare`` wraps the module with ``poptorch.trainingModel``: one call
runs forward, backward and the optimizer step on the IPUs, so the loss must be computed inside the
module (``module(**batch)`` returns it, as everywhere in setfit_lite). One call consumes
``batch_multiplier`` = device_iterations x replication_factor x gradient_accumulation_steps micro-batches
stacked along the first dimension.

Pipelining: with ``layers_per_ipu`` of length N > 1 the module's encoder layers (the longest
``nn.ModuleList`` named ``layer``/``layers``/``h``/``block(s)``, e.g. BERT's ``encoder.layer``) are
split across N IPUs with ``poptorch.BeginBlock``: IPU 0 also holds the embeddings, the last IPU the
pooling and loss. ``-1`` entries share the remaining layers.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from .base import Backend, DeviceConfig, import_sdk, warn_once
from .distributed import DistributedMixin

logger = logging.getLogger(__name__)

IPU_CONFIG_NAME = "ipu_config.json"
SDK_HINT = (
    "The 'ipu' backend needs Graphcore's poptorch (Poplar SDK): install the Poplar SDK, enable it "
    "(source poplar/enable.sh) and pip install the poptorch wheel shipped with it, on a machine with IPUs"
)
_LAYER_LIST_NAMES = ("layer", "layers", "h", "block", "blocks")
_TORCH_IMPL_KEYS = ("foreach", "maximize", "capturable", "differentiable", "fused", "decoupled_weight_decay", "amsgrad")


@dataclass
class IpuConfig(DeviceConfig):
    """The `ipu_config.json` keys the IPU backend understands (others are logged and ignored).

    `IpuConfig.load(source)` reads a dict, a JSON file or a folder holding one.

    Args:
        layers_per_ipu: The transformer layers on each IPU of a replica (-1: the rest); one IPU per entry.
        replication_factor: The replicas (data parallelism).
        gradient_accumulation_steps: The micro-batches accumulated per optimizer step.
        device_iterations: The steps run on the device per host call.
        enable_half_partials: Whether matmul partials are fp16.
        executable_cache_dir: A folder caching compiled executables; None for none.
        max_grad_norm: Gradient clipping on the device (the training argument is ignored on IPUs); None for none.
        loss_scaling: The fp16 loss scale; None for PopTorch's.
        random_seed: PopTorch's seed; None leaves PopTorch's.

    Raises:
        ValueError: `layers_per_ipu` or a count out of range.
    """

    filename, kind = IPU_CONFIG_NAME, "IPU config"

    layers_per_ipu: list[int] = field(default_factory=lambda: [-1])
    replication_factor: int = 1
    gradient_accumulation_steps: int = 1
    device_iterations: int = 1
    enable_half_partials: bool = False
    executable_cache_dir: str | None = None
    max_grad_norm: float | None = None
    loss_scaling: float | None = None
    random_seed: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.layers_per_ipu, int):
            self.layers_per_ipu = [self.layers_per_ipu]
        if not self.layers_per_ipu or not all(isinstance(n, int) and (n >= 0 or n == -1) for n in self.layers_per_ipu):
            raise ValueError(f"ipu_config: layers_per_ipu must be a list of ints >= 0 or -1, got {self.layers_per_ipu}")
        for name in ("replication_factor", "gradient_accumulation_steps", "device_iterations"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError(f"ipu_config: {name} must be an int >= 1, got {getattr(self, name)!r}")

    @property
    def ipus_per_replica(self) -> int:
        return len(self.layers_per_ipu)


def assign_layers(num_layers: int, layers_per_ipu: list[int]) -> list[int]:
    """The IPU id of each of ``num_layers`` layers; ``-1`` entries share what the others leave."""
    fixed = sum(n for n in layers_per_ipu if n >= 0)
    auto = [i for i, n in enumerate(layers_per_ipu) if n == -1]
    remaining = num_layers - fixed
    if remaining < 0 or (not auto and remaining != 0):
        raise ValueError(f"layers_per_ipu {layers_per_ipu} does not add up to the model's {num_layers} layers")
    counts = list(layers_per_ipu)
    for j, i in enumerate(auto):  # later IPUs take the extra layers: IPU 0 also holds the embeddings
        counts[i] = remaining // len(auto) + (1 if j >= len(auto) - remaining % len(auto) else 0)
    return [ipu for ipu, count in enumerate(counts) for _ in range(count)]


def find_layer_list(module: torch.nn.Module) -> tuple[str, torch.nn.ModuleList]:
    """The encoder's layer list: the longest ``nn.ModuleList`` named layer/layers/h/block(s)."""
    best: tuple[str, torch.nn.ModuleList] | None = None
    for name, sub in module.named_modules():
        is_layers = isinstance(sub, torch.nn.ModuleList) and name.rsplit(".", 1)[-1] in _LAYER_LIST_NAMES
        if is_layers and len(sub) and (best is None or len(sub) > len(best[1])):
            best = (name, sub)
    if best is None:
        raise ValueError(
            "could not find the encoder layers (an nn.ModuleList named layer/layers/h/block) to pipeline "
            "across IPUs; use a single IPU per replica (layers_per_ipu: [-1])"
        )
    return best


class IpuBackend(DistributedMixin, Backend):
    """Train on Graphcore IPUs with PopTorch (one host process; data parallelism through `replication_factor`).

    Args:
        precision: `"fp32"` or `"fp16"` (the model is cast to half for training, and back to its own dtypes by
            `unwrap` and `teardown`); bf16 is not available on IPUs.
        compile: Refused: PopTorch compiles the whole graph itself.
        ipu_config: An [`IpuConfig`][trainers.ipu.IpuConfig], a dict, a JSON path or a folder holding
            `ipu_config.json`; None for the defaults.

    Raises:
        ValueError: bf16, or `compile=True`.
        ImportError: PopTorch is not installed.
    """

    name = "ipu"
    supported_precisions = ("fp32", "fp16")

    def __init__(
        self,
        precision: str = "fp32",
        compile: bool = False,
        *,
        ipu_config: IpuConfig | Mapping[str, Any] | str | os.PathLike | None = None,
    ) -> None:
        if precision == "bf16":
            raise ValueError("precision 'bf16' is not supported on IPUs; use precision='fp16' or 'fp32'")
        if compile:
            raise ValueError("compile=True is not supported on IPUs: PopTorch compiles the whole graph itself")
        super().__init__(precision, compile, device="cpu")  # tensors stay on the host; PopTorch streams them
        self.ipu_config = IpuConfig.load(ipu_config)
        self.poptorch = import_sdk("poptorch", SDK_HINT)
        self._init_distributed()
        self.options = self.build_options()
        self.training_model: Any = None
        self._hosts: dict[int, _HostModule] = {}  # by id of the PopTorch executor: the host module behind it

    # ---- options ---------------------------------------------------------------------------
    def build_options(self) -> Any:
        """``poptorch.Options`` of the training model from the IPU config."""
        cfg = self.ipu_config
        opts = self.poptorch.Options()
        opts.deviceIterations(cfg.device_iterations)
        opts.replicationFactor(cfg.replication_factor)
        opts.Training.gradientAccumulation(cfg.gradient_accumulation_steps)
        if cfg.enable_half_partials:
            opts.Precision.setPartialsType(torch.float16)
        if cfg.executable_cache_dir:
            opts.enableExecutableCaching(str(cfg.executable_cache_dir))
        if cfg.random_seed is not None:
            opts.randomSeed(cfg.random_seed)
        return opts

    @property
    def batch_multiplier(self) -> int:
        cfg = self.ipu_config
        return cfg.device_iterations * cfg.replication_factor * cfg.gradient_accumulation_steps

    def autocast(self) -> contextlib.AbstractContextManager:
        """No autocast on IPUs: fp16 means a half model (``prepare`` casts it)."""
        return contextlib.nullcontext()

    # ---- lifecycle -------------------------------------------------------------------------
    def setup(self) -> None:
        if self.world_size > 1:
            raise RuntimeError(
                "the 'ipu' backend runs in one process (WORLD_SIZE must be 1): use replication_factor in "
                "ipu_config.json for data parallelism instead of torchrun"
            )

    def teardown(self) -> None:
        """Detach from the IPUs; a host module still cast to half (training failed before `unwrap`) gets its own
        dtypes back."""
        model = self.training_model
        if model is not None and _call(model, "isAttachedToDevice", default=False):
            model.detachFromDevice()
        for host in self._hosts.values():
            host.restore()
        super().teardown()

    # ---- wrapping --------------------------------------------------------------------------
    def pipeline(self, module: torch.nn.Module) -> torch.nn.Module:
        """Annotate encoder layers with ``poptorch.BeginBlock`` when several IPUs per replica."""
        if self.ipu_config.ipus_per_replica <= 1:
            return module
        name, layers = find_layer_list(module)
        ipu_of = assign_layers(len(layers), self.ipu_config.layers_per_ipu)
        for i, ipu in enumerate(ipu_of):
            if i == 0 or ipu != ipu_of[i - 1]:
                layers[i] = self.poptorch.BeginBlock(layers[i], user_id=f"{name}.{i}", ipu_id=ipu)
        if self.ipu_config.gradient_accumulation_steps < 2 * self.ipu_config.ipus_per_replica - 1:
            warn_once(
                "pipelined training over several IPUs usually needs gradient_accumulation_steps >= "
                "2 x ipus_per_replica - 1; PopTorch may refuse to compile"
            )
        logger.info("pipelined %s over %d IPUs: %s", name, self.ipu_config.ipus_per_replica, ipu_of)
        return module

    def make_optimizer(self, groups: list[dict[str, Any]], weight_decay: float) -> torch.optim.Optimizer:
        """PopTorch's AdamW with the groups and learning rates of torch's."""
        return self.convert_optimizer(super().make_optimizer(groups, weight_decay))

    def convert_optimizer(self, optimizer: torch.optim.Optimizer) -> torch.optim.Optimizer:
        """The PopTorch optimizer equivalent to ``optimizer`` (same groups and learning rates)."""
        optim = self.poptorch.optim
        if type(optimizer).__module__.startswith("poptorch"):
            return optimizer
        if isinstance(optimizer, torch.optim.AdamW):
            cls, keys = optim.AdamW, ("lr", "betas", "eps", "weight_decay")
        elif isinstance(optimizer, torch.optim.Adam):
            cls, keys = optim.Adam, ("lr", "betas", "eps", "weight_decay")
        elif isinstance(optimizer, torch.optim.SGD):
            cls, keys = optim.SGD, ("lr", "momentum", "dampening", "weight_decay", "nesterov")
        else:
            raise TypeError(
                f"the 'ipu' backend cannot convert {type(optimizer).__name__}; use AdamW, Adam or SGD "
                "(or pass a poptorch.optim optimizer)"
            )
        if any(g.get("amsgrad") for g in optimizer.param_groups):
            raise ValueError("amsgrad is not supported by PopTorch optimizers")
        kwargs = {k: optimizer.defaults[k] for k in keys if k in optimizer.defaults}
        accepted = _parameters(cls)
        for key, value in (
            ("max_grad_norm", self.ipu_config.max_grad_norm),
            ("loss_scaling", self.ipu_config.loss_scaling),
        ):
            if value is not None:
                if accepted is not None and key not in accepted:
                    raise ValueError(f"ipu_config.{key} is not supported by this poptorch version's {cls.__name__}")
                kwargs[key] = value
        groups = [{k: v for k, v in g.items() if k not in _TORCH_IMPL_KEYS} for g in optimizer.param_groups]
        return cls(groups, **kwargs)

    def prepare(
        self, module: torch.nn.Module, optimizer: torch.optim.Optimizer
    ) -> tuple[torch.nn.Module, torch.optim.Optimizer]:
        module.train()
        host = _HostModule(module, half=self.precision == "fp16")
        host.to_half()
        module = self.pipeline(module)
        optimizer = self.convert_optimizer(optimizer)
        self.training_model = self.poptorch.trainingModel(module, options=self.options, optimizer=optimizer)
        self._hosts[id(self.training_model)] = host
        return self.training_model, optimizer

    def unwrap(self, module: torch.nn.Module) -> torch.nn.Module:
        """The host module behind a PopTorch executor, with the trained weights copied back and, after fp16
        training, cast back to its own dtypes (the head is fitted on, and the model saved with, those)."""
        host = self._hosts.get(id(module))
        if host is None:
            return super().unwrap(module)
        if _call(module, "isCompiled", default=False):
            module.copyWeightsToHost()
        host.restore()
        return host.module

    # ---- one optimisation step -------------------------------------------------------------
    def training_step(
        self,
        module: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        batch: Mapping[str, Any],
        max_grad_norm: float | None = None,
    ) -> torch.Tensor:
        """One PopTorch call: forward, backward and optimizer step on the IPUs; returns the mean loss."""
        if max_grad_norm and max_grad_norm != self.ipu_config.max_grad_norm:
            warn_once(
                "on IPUs gradient clipping is set with ipu_config.max_grad_norm; the max_grad_norm argument is ignored"
            )
        host = self._hosts.get(id(module))
        if host is not None:
            host.to_half()  # after an evaluation's `unwrap`: the half model again (the same values, cast exactly)
        loss = module(**batch)
        optimizer._opt_called = True  # the step ran on the IPU: keeps LR schedulers from warning
        if isinstance(loss, (tuple, list)):
            loss = loss[0]
        return loss.detach().float().mean()

    def on_lr_change(self, optimizer: torch.optim.Optimizer) -> None:
        if self.training_model is not None:
            self.training_model.setOptimizer(optimizer)

    def describe(self) -> str:
        cfg = self.ipu_config
        mode = "fp16 (half model)" if self.precision == "fp16" else "fp32"
        parts = [
            mode,
            f"{cfg.ipus_per_replica} IPU(s) per replica x {cfg.replication_factor} replica(s)",
            f"gradient accumulation {cfg.gradient_accumulation_steps}",
            f"device iterations {cfg.device_iterations}",
        ]
        if cfg.enable_half_partials:
            parts.append("half partials")
        if cfg.executable_cache_dir:
            parts.append(f"executable cache {cfg.executable_cache_dir}")
        return "ipu: " + ", ".join(parts)


class _HostModule:
    """The host module behind a PopTorch executor and, for fp16 training (``half``), the dtypes of its floating
    parameters and buffers before it was cast to half, so that it can be cast back after training."""

    def __init__(self, module: torch.nn.Module, half: bool) -> None:
        self.module = module
        self.half = half
        self.dtypes = [(owner, kind, name, tensor.dtype) for owner in module.modules()
                       for kind, tensors in (("param", owner._parameters), ("buffer", owner._buffers))
                       for name, tensor in tensors.items() if tensor is not None and tensor.is_floating_point()]
        self.is_half = False

    def to_half(self) -> None:
        """Cast the module to half for fp16 training (once; nothing for fp32 training)."""
        if self.half and not self.is_half:
            self.module.half()
            self.is_half = True

    def restore(self) -> None:
        """Cast each floating parameter and buffer back to its dtype before `to_half` (the same Parameter objects:
        the optimizer's references stay valid)."""
        if not self.is_half:
            return
        with torch.no_grad():
            for owner, kind, name, dtype in self.dtypes:
                if kind == "param":
                    param = owner._parameters[name]
                    if param is not None:
                        param.data = param.data.to(dtype)
                        if param.grad is not None:
                            param.grad = param.grad.to(dtype)
                elif owner._buffers.get(name) is not None:
                    owner._buffers[name] = owner._buffers[name].to(dtype)
        self.is_half = False


def _call(obj: Any, method: str, default: Any = None) -> Any:
    fn = getattr(obj, method, None)
    return fn() if callable(fn) else default


def _parameters(cls: type) -> set[str] | None:
    """Keyword names ``cls`` accepts (None when unknown or ``**kwargs``)."""
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return None
    return set(params)
