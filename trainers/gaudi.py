"""Intel Gaudi (HPU) backend: lazy or eager mode, bf16 autocast, fused AdamW / clip-norm, hccl + DDP.

The Habana SDK (``habana_frameworks.torch``) is imported only when this backend is built.
``gaudi_config.json`` is read like optimum-habana's ``GaudiConfig``:

    {"use_torch_autocast": true, "autocast_bf16_ops": ["linear", "matmul"], "autocast_fp32_ops": ["softmax"],
     "use_fused_adam": true, "use_fused_clip_norm": true}

Autocast op lists are handed to the SDK the way optimum-habana does it: written to text files
whose paths go in ``LOWER_LIST`` / ``FP32_LIST`` (older SDKs) and
``PT_HPU_AUTOCAST_LOWER_PRECISION_OPS_LIST`` / ``PT_HPU_AUTOCAST_FP32_OPS_LIST`` (newer SDKs),
before ``habana_frameworks.torch.core`` is imported; ``torch.autocast("hpu", torch.bfloat16)``
then applies them.
"""

from __future__ import annotations

import atexit
import importlib
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack from Python 3.11

from .base import Backend, DeviceConfig, import_sdk, warn_once
from .distributed import DistOptions, DistributedMixin

logger = logging.getLogger(__name__)

GAUDI_CONFIG_NAME = "gaudi_config.json"
LOWER_LIST_VARS = ("LOWER_LIST", "PT_HPU_AUTOCAST_LOWER_PRECISION_OPS_LIST")
FP32_LIST_VARS = ("FP32_LIST", "PT_HPU_AUTOCAST_FP32_OPS_LIST")
SDK_HINT = (
    "The 'hpu' backend needs Habana's SDK: install habana-frameworks (habana_frameworks.torch, shipped as "
    "habana-torch-plugin with the Intel Gaudi software stack / PyTorch container) on a machine with Gaudi cards"
)


@dataclass
class GaudiConfig(DeviceConfig):
    """The `gaudi_config.json` keys the Gaudi backend understands (others are logged and ignored).

    `GaudiConfig.load(source)` reads a dict, a JSON file or a folder holding one.

    Args:
        use_torch_autocast: Whether to train with bf16 autocast (with `precision` fp32 or auto).
        autocast_bf16_ops: The ops autocast runs in bf16; None for the SDK's list.
        autocast_fp32_ops: The ops autocast keeps in fp32; None for the SDK's list.
        use_fused_adam: Whether to use Habana's fused AdamW.
        use_fused_clip_norm: Whether to use Habana's fused gradient clipping.

    Raises:
        ValueError: Op lists that are not lists of names.
    """

    filename, kind = GAUDI_CONFIG_NAME, "Gaudi config"
    unsupported = {"use_habana_mixed_precision": "gaudi_config: use_habana_mixed_precision (HMP) is not supported; "
                                                 "use use_torch_autocast"}

    use_torch_autocast: bool = False
    autocast_bf16_ops: list[str] | None = None
    autocast_fp32_ops: list[str] | None = None
    use_fused_adam: bool = False
    use_fused_clip_norm: bool = False

    def __post_init__(self) -> None:
        for name in ("autocast_bf16_ops", "autocast_fp32_ops"):
            ops = getattr(self, name)
            if ops is not None and (not isinstance(ops, list) or not all(isinstance(op, str) for op in ops)):
                raise ValueError(f"gaudi_config: {name} must be a list of op names, got {ops!r}")


def declare_autocast_ops(config: GaudiConfig, directory: str | os.PathLike | None = None) -> dict[str, str]:
    """Write the autocast op lists to files and export their paths (before the SDK is imported).

    The files go to ``directory`` when given, else to a temporary folder removed when the process exits.

    Returns the environment variables set.
    """
    lists = [
        (ops, filename, names)
        for ops, filename, names in (
            (config.autocast_bf16_ops, "lower_list.txt", LOWER_LIST_VARS),
            (config.autocast_fp32_ops, "fp32_list.txt", FP32_LIST_VARS),
        )
        if ops is not None
    ]
    if not lists:
        return {}
    if all(_exported(names, ops) for ops, _, names in lists):  # already declared (e.g. by backend="auto")
        return {name: os.environ[name] for _, _, names in lists for name in names}
    if "habana_frameworks.torch.core" in sys.modules:
        warn_once(
            "gaudi_config autocast op lists are set after habana_frameworks.torch.core was imported; "
            "the SDK may ignore them (build the backend before importing habana_frameworks)"
        )
    if directory is not None:
        folder = Path(directory)
    else:  # the SDK reads the lists while the process runs: the folder goes when it exits
        folder = Path(tempfile.mkdtemp(prefix="setfit_lite_hpu_"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
    exported: dict[str, str] = {}
    for ops, filename, names in lists:
        path = folder / filename
        path.write_text("".join(op + "\n" for op in ops))
        for name in names:
            os.environ[name] = str(path)
            exported[name] = str(path)
    return exported


def _exported(names: tuple[str, ...], ops: list[str]) -> bool:
    """True when every variable in ``names`` points to a file listing exactly ``ops``."""
    for name in names:
        path = os.environ.get(name)
        try:
            if not path or Path(path).read_text().split() != ops:
                return False
        except OSError:
            return False
    return True


def hpu_available() -> bool:
    """True when the Habana SDK imports and reports a Gaudi device."""
    try:
        hpu = importlib.import_module("habana_frameworks.torch.hpu")
    except ImportError:
        return False
    try:
        return bool(hpu.is_available())
    except Exception:  # noqa: BLE001 - the SDK raises assorted errors without a device
        return False


def lazy_mode_enabled() -> bool:
    """Lazy mode unless ``PT_HPU_LAZY_MODE=0`` (when unset, ask the SDK, else assume lazy)."""
    value = os.environ.get("PT_HPU_LAZY_MODE")
    if value is not None:
        return value.strip() != "0"
    try:
        internal = importlib.import_module("habana_frameworks.torch.utils.internal")
        return bool(internal.is_lazy())
    except (ImportError, AttributeError):
        return True


class GaudiBackend(DistributedMixin, Backend):
    """Train on Intel Gaudi cards (device `hpu`), one card per process under torchrun.

    Args:
        precision: `"fp32"`, `"bf16"` or `"auto"`.
        compile: Whether modules are compiled with `torch.compile` (backend `"hpu_backend"`; needs eager mode,
            `PT_HPU_LAZY_MODE=0`).
        gaudi_config: A [`GaudiConfig`][trainers.gaudi.GaudiConfig], a dict, a JSON path or a folder holding
            `gaudi_config.json`; None for the defaults.
        compile_options: Keyword arguments of `torch.compile`.
        **dist_options: The process-group options: `dist_backend` (`"hccl"`), `find_unused_parameters`,
            `ddp_options`, `dist_timeout` (seconds).

    Raises:
        ImportError: The Gaudi SDK (`habana_frameworks`) is not installed.
        RuntimeError: No Gaudi device.
    """

    name = "hpu"
    supported_precisions = ("fp32", "bf16")
    default_dist_backend = "hccl"
    allowed_dist_backends = ("hccl",)

    def __init__(
        self,
        precision: str = "fp32",
        compile: bool = False,
        *,
        gaudi_config: GaudiConfig | Mapping[str, Any] | str | os.PathLike | None = None,
        compile_options: Mapping[str, Any] | None = None,
        **dist_options: Unpack[DistOptions],
    ) -> None:
        self.gaudi_config = GaudiConfig.load(gaudi_config)
        if self.gaudi_config.use_torch_autocast and precision in ("fp32", "auto"):
            logger.info("gaudi_config.use_torch_autocast=true: training with bf16 autocast")
            precision = "bf16"
        super().__init__(precision, compile, device="cpu", compile_options=compile_options)
        self.exported_op_lists = declare_autocast_ops(self.gaudi_config)
        self.htcore = import_sdk("habana_frameworks.torch.core", SDK_HINT)
        if not hpu_available():
            raise RuntimeError("Habana's SDK is installed but no Gaudi device (hpu) is available")
        self.device = torch.device("hpu")
        self.hpu = importlib.import_module("habana_frameworks.torch.hpu")
        self.lazy_mode = lazy_mode_enabled()
        if compile:
            if self.lazy_mode:
                raise ValueError("compile=True on Gaudi needs eager mode: set PT_HPU_LAZY_MODE=0")
            self.compile_options.setdefault("backend", "hpu_backend")
        self._init_distributed(**dist_options)
        self._fused_clip: Any = None
        self._fused_clip_norm_value: float | None = None

    # ---- lazy-mode graph breaks ------------------------------------------------------------
    def mark_step(self) -> None:
        """Flush the accumulated lazy graph to the device (no-op in eager mode)."""
        if self.lazy_mode:
            self.htcore.mark_step()

    def after_backward(self) -> None:
        self.mark_step()

    def after_step(self) -> None:
        self.mark_step()

    # ---- fused optimizer / clipping --------------------------------------------------------
    def make_optimizer(self, groups: list[dict[str, Any]], weight_decay: float) -> torch.optim.Optimizer:
        """torch's AdamW, or Habana's ``FusedAdamW`` with the same hyperparameters when ``use_fused_adam``."""
        adamw = super().make_optimizer([dict(g) for g in groups], weight_decay)  # torch fills in its group keys
        if not self.gaudi_config.use_fused_adam:
            return adamw
        fused_cls = importlib.import_module("habana_frameworks.torch.hpex.optimizers").FusedAdamW
        d = adamw.defaults
        return fused_cls(groups, lr=d["lr"], betas=d["betas"], eps=d["eps"], weight_decay=d["weight_decay"])

    def clip_grad_norm(self, optimizer: torch.optim.Optimizer, max_grad_norm: float) -> None:
        if not self.gaudi_config.use_fused_clip_norm:
            super().clip_grad_norm(optimizer, max_grad_norm)
            return
        params = [p for group in optimizer.param_groups for p in group["params"]]
        if self._fused_clip is None or self._fused_clip_norm_value != max_grad_norm:
            norm_cls = importlib.import_module("habana_frameworks.torch.hpex.normalization").FusedClipNorm
            self._fused_clip = norm_cls(params, max_grad_norm)
            self._fused_clip_norm_value = max_grad_norm
        self._fused_clip.clip_norm(params)

    # ---- checkpoints ---------------------------------------------------------------------
    def rng_state(self) -> dict[str, Any]:
        """The Gaudi generator's state (``habana_frameworks.torch.hpu.get_rng_state``)."""
        return {"hpu": self.hpu.get_rng_state()}

    def set_rng_state(self, state: Mapping[str, Any]) -> None:
        if "hpu" in state:
            self.hpu.set_rng_state(state["hpu"])

    def describe(self) -> str:
        mode = "bf16 autocast" if self.precision == "bf16" else "fp32"
        parts = [mode, "lazy mode" if self.lazy_mode else "eager mode"]
        if self.exported_op_lists:
            parts.append("custom autocast op lists")
        if self.gaudi_config.use_fused_adam:
            parts.append("FusedAdamW")
        if self.gaudi_config.use_fused_clip_norm:
            parts.append("FusedClipNorm")
        if self.compile:
            parts.append("torch.compile(hpu_backend)")
        return f"hpu: {', '.join(parts)}" + self.describe_distributed()
