"""torch.distributed plumbing shared by every backend.

torchrun environment detection, process-group creation (gloo / nccl / hccl / ccl), DDP wrapping
and object collectives. Backends get all of it through `DistributedMixin`; in a single
process (no ``WORLD_SIZE`` > 1) every collective is a no-op. A process group that a launcher has already
initialised (Ray Train's ``TorchTrainer`` workers, a user's script) is joined as it is: its rank and size are
taken from it, and it is left for its creator to destroy.
"""

from __future__ import annotations

import datetime
import importlib
import logging
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict

import torch

from .names import TORCHRUN_VARS

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack from Python 3.11

logger = logging.getLogger(__name__)

PROCESS_GROUP_BACKENDS = ("gloo", "nccl", "hccl", "ccl")


@dataclass(frozen=True)
class DistEnv:
    """Process coordinates as set by ``torchrun`` (defaults: one process)."""

    rank: int = 0
    local_rank: int = 0
    world_size: int = 1
    master_addr: str | None = None
    master_port: str | None = None


def _int_var(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"environment variable {name}={raw!r} is not an integer") from None


def detect_env(environ: Mapping[str, str] | None = None) -> DistEnv:
    """This process's coordinates from torchrun's variables (`trainers.names.TORCHRUN_VARS`) in ``environ``
    (default: ``os.environ``); none set means one process."""
    env = os.environ if environ is None else environ
    world_size = _int_var(env, "WORLD_SIZE", 1)
    rank = _int_var(env, "RANK", 0)
    local_rank = _int_var(env, "LOCAL_RANK", rank if world_size > 1 else 0)
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(f"inconsistent torchrun environment: RANK={rank}, WORLD_SIZE={world_size}")
    return DistEnv(rank, local_rank, world_size, env.get("MASTER_ADDR"), env.get("MASTER_PORT"))


def ray_train_context() -> Any:
    """Ray Train's ``TrainContext`` when this process is a Ray Train worker, else None.

    Ray is never imported here: a Ray Train worker has imported it before it runs the training function.
    """
    if "ray.train" not in sys.modules:
        return None
    import ray.train

    try:
        return ray.train.get_context()
    except RuntimeError:  # "get_context cannot be used outside of a Ray Train training function"
        return None


def ray_train_device() -> torch.device | None:
    """The device Ray Train gave this worker (``ray.train.torch.get_device()``), or None outside Ray Train."""
    if ray_train_context() is None:
        return None
    from ray.train.torch import get_device

    return get_device()


def group_env(env: DistEnv) -> DistEnv:
    """The coordinates of the process group already initialised in this process: its rank and world size; the
    local rank from Ray Train's context, else from ``env`` (torchrun's variables) when they describe this group,
    else 0."""
    import torch.distributed as dist

    rank, world_size = dist.get_rank(), dist.get_world_size()
    ray_context = ray_train_context()
    if ray_context is not None:
        local_rank = ray_context.get_local_rank()
    elif (env.rank, env.world_size) == (rank, world_size):
        local_rank = env.local_rank
    else:
        local_rank = 0
    return DistEnv(rank, local_rank, world_size, env.master_addr, env.master_port)


def existing_group_backend() -> str | None:
    """The backend name ("gloo", "nccl"...) of the process group already initialised in this process; None when
    there is none, or when it mixes backends per device (then the backend's own choice stands)."""
    if not is_initialized():
        return None
    import torch.distributed as dist

    name = str(dist.get_backend())
    return name if name in PROCESS_GROUP_BACKENDS else None


def current_env() -> DistEnv:
    """This process's coordinates: those of the process group already initialised (by Ray Train, a user's script,
    another backend), else torchrun's variables."""
    env = detect_env()
    return group_env(env) if is_initialized() else env


def load_process_group_backend(name: str) -> str:
    """Import whatever registers ``name`` with torch.distributed; raise a clear error when it is missing."""
    import torch.distributed as dist

    if name not in PROCESS_GROUP_BACKENDS:
        raise ValueError(f"unknown process-group backend {name!r}; choose one of {PROCESS_GROUP_BACKENDS}")
    if not dist.is_available():
        raise RuntimeError("this PyTorch build has no torch.distributed support")
    if name == "ccl":
        try:
            importlib.import_module("oneccl_bindings_for_pytorch")
        except ImportError as err:
            raise ImportError(
                "dist_backend='ccl' needs Intel's oneCCL bindings: install oneccl_bind_pt "
                "(module oneccl_bindings_for_pytorch) matching your torch version, or use dist_backend='gloo'"
            ) from err
    elif name == "hccl":
        try:
            importlib.import_module("habana_frameworks.torch.distributed.hccl")
        except ImportError as err:
            raise ImportError(
                "the 'hccl' process group needs Habana's SDK: install habana-frameworks "
                "(habana_frameworks.torch.distributed.hccl)"
            ) from err
    elif name == "nccl" and not dist.is_nccl_available():
        raise RuntimeError("this PyTorch build has no NCCL support; install a CUDA build of torch")
    elif name == "gloo" and not dist.is_gloo_available():
        raise RuntimeError("this PyTorch build has no gloo support")
    return name


def init_process_group(backend: str, env: DistEnv, timeout_s: float | None = None) -> bool:
    """Join the torchrun process group; returns False when one already exists (then it is not ours)."""
    import torch.distributed as dist

    if dist.is_initialized():
        if dist.get_world_size() != env.world_size:
            raise RuntimeError(
                f"a process group of size {dist.get_world_size()} already exists but WORLD_SIZE={env.world_size}"
            )
        return False
    if not env.master_addr or not env.master_port:
        raise RuntimeError(
            f"WORLD_SIZE={env.world_size} but MASTER_ADDR/MASTER_PORT are not set: launch with "
            f"`torchrun --nproc_per_node=N ...` (or export {', '.join(TORCHRUN_VARS)})"
        )
    load_process_group_backend(backend)
    kwargs: dict[str, Any] = {}
    if timeout_s is not None:
        kwargs["timeout"] = datetime.timedelta(seconds=timeout_s)
    dist.init_process_group(backend=backend, init_method="env://", rank=env.rank, world_size=env.world_size, **kwargs)
    logger.info("joined %s process group: rank %d of %d", backend, env.rank, env.world_size)
    return True


def destroy_process_group() -> None:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def is_initialized() -> bool:
    import torch.distributed as dist

    return dist.is_available() and dist.is_initialized()


def wrap_ddp(module: torch.nn.Module, device_ids: list[int] | None = None, **ddp_kwargs: Any) -> torch.nn.Module:
    """``DistributedDataParallel(module, device_ids=...)`` (needs an initialised process group)."""
    from torch.nn.parallel import DistributedDataParallel

    return DistributedDataParallel(module, device_ids=device_ids, **ddp_kwargs)


def barrier(**kwargs: Any) -> None:
    import torch.distributed as dist

    dist.barrier(**kwargs)


def gather_object(obj: Any, world_size: int) -> list[Any]:
    """Every rank's picklable ``obj``, in rank order, on every rank."""
    import torch.distributed as dist

    out: list[Any] = [None] * world_size
    dist.all_gather_object(out, obj)
    return out


def broadcast_object(obj: Any, src: int = 0) -> Any:
    """Rank ``src``'s picklable ``obj`` on every rank."""
    import torch.distributed as dist

    box = [obj]
    dist.broadcast_object_list(box, src=src)
    return box[0]


class DistOptions(TypedDict, total=False):
    """The process-group options every backend that runs under torchrun accepts (cpu, cuda, hpu)."""

    dist_backend: str | None  # process-group backend; None: the backend's default (gloo, nccl, hccl)
    find_unused_parameters: bool  # DDP's, default True (bodies hold parameters the loss does not use)
    ddp_options: Mapping[str, Any] | None  # further DistributedDataParallel keyword arguments
    dist_timeout: float | None  # process-group timeout in seconds


class DistributedMixin:
    """torchrun support for a `Backend`: put it first in the bases.

    Call `_init_distributed` with the backend's `DistOptions` from ``__init__``; ``setup`` joins the
    process group when ``WORLD_SIZE`` > 1, ``prepare`` wraps in DDP, ``teardown`` destroys the group we created.
    """

    default_dist_backend: str = "gloo"
    allowed_dist_backends: tuple[str, ...] = ("gloo",)

    rank: int
    local_rank: int
    world_size: int

    def _init_distributed(self, **options: Unpack[DistOptions]) -> None:
        unknown = sorted(set(options) - set(DistOptions.__annotations__))
        if unknown:
            raise TypeError(f"the {getattr(self, 'name', '?')!r} backend has no option(s) {', '.join(unknown)}")
        dist_backend = options.get("dist_backend")
        self.dist_env = current_env()
        self.rank = self.dist_env.rank
        self.local_rank = self.dist_env.local_rank
        self.world_size = self.dist_env.world_size
        in_use = existing_group_backend()
        if in_use is not None and dist_backend not in (None, in_use):
            raise ValueError(f"dist_backend={dist_backend!r}, but the process group already initialised in this "
                             f"process uses {in_use!r}")
        dist_backend = in_use or dist_backend or self.default_dist_backend
        if dist_backend not in self.allowed_dist_backends:
            already = " (the process group already initialised in this process)" if dist_backend == in_use else ""
            raise ValueError(
                f"dist_backend {dist_backend!r}{already} is not supported by the {getattr(self, 'name', '?')!r} "
                f"backend (supported: {', '.join(self.allowed_dist_backends)})"
            )
        if dist_backend == "ccl":
            load_process_group_backend("ccl")  # fail before any work when asked but missing
        self.dist_backend = dist_backend
        self.dist_timeout = options.get("dist_timeout")
        self.ddp_options: dict[str, Any] = {"find_unused_parameters": options.get("find_unused_parameters", True),
                                            **(options.get("ddp_options") or {})}
        self._owns_process_group = False

    # ---- lifecycle -------------------------------------------------------------------------
    def setup(self) -> None:
        if self.world_size > 1 and not is_initialized():
            self._owns_process_group = init_process_group(self.dist_backend, self.dist_env, self.dist_timeout)

    def teardown(self) -> None:
        if self._owns_process_group:
            destroy_process_group()
            self._owns_process_group = False

    # ---- DDP -------------------------------------------------------------------------------
    def ddp_device_ids(self) -> list[int] | None:
        """``device_ids`` for DDP (``None`` except on CUDA)."""
        return None

    def wrap_distributed(self, module: torch.nn.Module) -> torch.nn.Module:
        """DDP-wrap ``module`` when running with several processes."""
        if self.world_size <= 1:
            return module
        self._require_group()
        return wrap_ddp(module, device_ids=self.ddp_device_ids(), **self.ddp_options)

    def prepare(
        self, module: torch.nn.Module, optimizer: torch.optim.Optimizer
    ) -> tuple[torch.nn.Module, torch.optim.Optimizer]:
        module = self.move_module(module, optimizer)  # type: ignore[attr-defined]
        module, optimizer = self.optimize_module(module, optimizer)
        module = self.wrap_distributed(module)
        if self.compile:  # type: ignore[attr-defined]
            module = self.compile_module(module)  # type: ignore[attr-defined]
        return module, optimizer

    def optimize_module(
        self, module: torch.nn.Module, optimizer: torch.optim.Optimizer
    ) -> tuple[torch.nn.Module, torch.optim.Optimizer]:
        """Device-specific rewrite between placement and DDP (IPEX, fused optimizers); default: none."""
        return module, optimizer

    # ---- collectives -----------------------------------------------------------------------
    def _require_group(self) -> None:
        if not is_initialized():
            raise RuntimeError(
                f"WORLD_SIZE={self.world_size} but no process group: call backend.setup() before training"
            )

    def barrier_kwargs(self) -> dict[str, Any]:
        return {}

    def barrier(self) -> None:
        if self.world_size > 1:
            self._require_group()
            barrier(**self.barrier_kwargs())

    def gather_object(self, obj: Any) -> list[Any]:
        if self.world_size <= 1:
            return [obj]
        self._require_group()
        return gather_object(obj, self.world_size)

    def broadcast_object(self, obj: Any, src: int = 0) -> Any:
        if self.world_size <= 1:
            return obj
        self._require_group()
        return broadcast_object(obj, src)

    def describe_distributed(self) -> str:
        if self.world_size <= 1:
            return ""
        return f"; {self.dist_backend} rank {self.rank}/{self.world_size} (local {self.local_rank})"
