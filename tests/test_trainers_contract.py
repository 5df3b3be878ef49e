"""Gaudi and IPU backends against fake SDK modules (habana_frameworks, poptorch) that record calls."""

from __future__ import annotations

import importlib.machinery
import json
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

from trainers import base, get_backend
from trainers.cpu import CpuBackend
from trainers.gaudi import FP32_LIST_VARS, LOWER_LIST_VARS, GaudiBackend, declare_autocast_ops
from trainers.ipu import IpuBackend, assign_layers, find_layer_list
from trainers.names import TORCHRUN_VARS


class Tiny(nn.Module):
    """A BERT-shaped toy: embeddings, ``encoder.layer`` list, head; forward returns the loss."""

    def __init__(self, calls: list | None = None, num_layers: int = 4) -> None:
        super().__init__()
        self.calls = calls if calls is not None else []
        self.embeddings = nn.Linear(4, 8)
        self.encoder = nn.Module()
        self.encoder.layer = nn.ModuleList(nn.Linear(8, 8) for _ in range(num_layers))
        self.head = nn.Linear(8, 1)
        self.head.weight.register_hook(self._on_backward)

    def _on_backward(self, grad: torch.Tensor) -> None:
        self.calls.append("backward")

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        self.calls.append("forward")
        h = self.embeddings(x)
        for layer in self.encoder.layer:
            h = torch.tanh(layer(h))
        return nn.functional.mse_loss(self.head(h).squeeze(-1).float(), y.float())


class RecordingSGD(torch.optim.SGD):
    def __init__(self, params: Any, calls: list, lr: float = 0.1) -> None:
        super().__init__(params, lr=lr)
        self.calls = calls

    def step(self, closure: Any = None) -> Any:
        self.calls.append("optimizer.step")
        return super().step(closure)


def _batch() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return {"x": torch.randn(6, 4, generator=g), "y": torch.randn(6, generator=g)}


def _groups(model: nn.Module) -> list[dict[str, Any]]:
    return [
        {"params": list(model.embeddings.parameters()), "lr": 1e-3},
        {"params": [p for n, p in model.named_parameters() if not n.startswith("embeddings")], "lr": 1e-2},
    ]


def _two_groups(model: nn.Module) -> torch.optim.AdamW:
    return torch.optim.AdamW(_groups(model), weight_decay=0.0)


def _install(monkeypatch: pytest.MonkeyPatch, modules: dict[str, types.ModuleType]) -> None:
    for name, module in modules.items():
        # a spec, as importlib.util.find_spec (transformers' set_seed asks it about habana_frameworks) requires
        module.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=hasattr(module, "__path__"))
        monkeypatch.setitem(sys.modules, name, module)
        parent, _, child = name.rpartition(".")
        if parent in modules:
            setattr(modules[parent], child, module)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in TORCHRUN_VARS:
        monkeypatch.delenv(var, raising=False)
    for var in (*LOWER_LIST_VARS, *FP32_LIST_VARS, "PT_HPU_LAZY_MODE"):
        monkeypatch.setenv(var, "")  # so that monkeypatch restores (removes) what the backend exports
        monkeypatch.delenv(var)
    monkeypatch.setattr(base, "_WARNED", set())
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


# ---- fake habana_frameworks -------------------------------------------------------------------
@pytest.fixture
def habana(monkeypatch: pytest.MonkeyPatch) -> types.SimpleNamespace:
    rec = types.SimpleNamespace(calls=[], available=True, fused_adam=[], clip=[])
    names = [
        "habana_frameworks",
        "habana_frameworks.torch",
        "habana_frameworks.torch.core",
        "habana_frameworks.torch.hpu",
        "habana_frameworks.torch.hpex",
        "habana_frameworks.torch.hpex.optimizers",
        "habana_frameworks.torch.hpex.normalization",
    ]
    mods = {name: types.ModuleType(name) for name in names}
    for name in names[:2] + names[4:5]:
        mods[name].__path__ = []  # packages
    mods["habana_frameworks.torch.core"].mark_step = lambda: rec.calls.append("mark_step")
    mods["habana_frameworks.torch.hpu"].is_available = lambda: rec.available
    rec.rng = torch.tensor([7, 7], dtype=torch.uint8)
    mods["habana_frameworks.torch.hpu"].get_rng_state = lambda: rec.rng.clone()
    mods["habana_frameworks.torch.hpu"].set_rng_state = lambda state: setattr(rec, "rng", state.clone())

    class FusedAdamW(torch.optim.AdamW):
        def __init__(
            self, params: Any, lr: float = 1e-3, betas: Any = (0.9, 0.999), eps: float = 1e-6, weight_decay: float = 0.0
        ) -> None:
            rec.fused_adam.append({"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay})
            super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)

        def step(self, closure: Any = None) -> Any:
            rec.calls.append("optimizer.step")
            return super().step(closure)

    class FusedClipNorm:
        def __init__(self, parameters: Any, max_norm: float) -> None:
            self.max_norm = max_norm

        def clip_norm(self, parameters: Any) -> None:
            rec.calls.append("clip_norm")
            rec.clip.append(self.max_norm)
            torch.nn.utils.clip_grad_norm_(list(parameters), self.max_norm)

    mods["habana_frameworks.torch.hpex.optimizers"].FusedAdamW = FusedAdamW
    mods["habana_frameworks.torch.hpex.normalization"].FusedClipNorm = FusedClipNorm
    rec.FusedAdamW = FusedAdamW
    _install(monkeypatch, mods)
    return rec


def _gaudi_step(backend: GaudiBackend, calls: list, **kwargs: Any) -> torch.Tensor:
    model = Tiny(calls)
    module, optimizer = backend.prepare(model, RecordingSGD(model.parameters(), calls))
    return backend.training_step(module, optimizer, _batch(), **kwargs)


def _no_move(monkeypatch: pytest.MonkeyPatch, backend: GaudiBackend) -> None:
    """CPU torch cannot hold hpu tensors: keep the module on the CPU for the step itself."""
    monkeypatch.setattr(backend, "move_module", lambda module, optimizer=None: module)


def test_gaudi_device_and_lazy_mark_step_order(habana: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    backend = get_backend("hpu")
    assert isinstance(backend, GaudiBackend) and backend.lazy_mode
    assert backend.device == torch.device("hpu") and backend.device.type == "hpu"
    _no_move(monkeypatch, backend)
    loss = _gaudi_step(backend, habana.calls)
    assert torch.isfinite(loss)
    assert habana.calls == ["forward", "backward", "mark_step", "optimizer.step", "mark_step"]
    assert backend.describe() == "hpu: fp32, lazy mode"


def test_gaudi_eager_mode_has_no_mark_step(habana: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PT_HPU_LAZY_MODE", "0")
    backend = GaudiBackend()
    assert not backend.lazy_mode and "eager mode" in backend.describe()
    _no_move(monkeypatch, backend)
    _gaudi_step(backend, habana.calls)
    assert habana.calls == ["forward", "backward", "optimizer.step"]


def test_gaudi_compile_needs_eager_mode(habana: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="PT_HPU_LAZY_MODE=0"):
        GaudiBackend(compile=True)
    monkeypatch.setenv("PT_HPU_LAZY_MODE", "0")
    assert GaudiBackend(compile=True).compile_options == {"backend": "hpu_backend"}


def test_gaudi_config_json(habana: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    config = {
        "use_torch_autocast": True,
        "autocast_bf16_ops": ["linear", "matmul"],
        "autocast_fp32_ops": ["softmax"],
        "use_fused_adam": True,
        "use_fused_clip_norm": True,
        "use_habana_mixed_precision": False,
    }
    (tmp_path / "gaudi_config.json").write_text(json.dumps(config))
    with pytest.warns(UserWarning, match="SDK may ignore them"):  # the fake core module is already imported
        backend = get_backend("hpu", gaudi_config=tmp_path)  # a folder holding gaudi_config.json
    assert backend.precision == "bf16"
    ctx = backend.autocast()
    assert isinstance(ctx, torch.autocast) and ctx.device == "hpu" and ctx.fast_dtype == torch.bfloat16
    for var in LOWER_LIST_VARS:
        assert Path(sys.modules["os"].environ[var]).read_text() == "linear\nmatmul\n"
    for var in FP32_LIST_VARS:
        assert Path(sys.modules["os"].environ[var]).read_text() == "softmax\n"
    assert declare_autocast_ops(backend.gaudi_config) == backend.exported_op_lists  # idempotent
    assert "FusedAdamW" in backend.describe() and "bf16 autocast" in backend.describe()

    _no_move(monkeypatch, backend)
    model = Tiny(habana.calls)
    fused = backend.make_optimizer(_groups(model), weight_decay=0.0)
    module, optimizer = backend.prepare(model, fused)
    assert optimizer is fused and isinstance(optimizer, habana.FusedAdamW)
    assert [g["lr"] for g in optimizer.param_groups] == [1e-3, 1e-2]
    assert [len(g["params"]) for g in optimizer.param_groups] == [2, 10]
    assert habana.fused_adam == [{"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.0}]
    before = model.head.weight.detach().clone()
    backend.training_step(module, optimizer, _batch(), max_grad_norm=0.5)
    assert habana.calls == ["forward", "backward", "mark_step", "clip_norm", "optimizer.step", "mark_step"]
    assert habana.clip == [0.5]
    assert not torch.equal(before, model.head.weight)


def test_gaudi_config_dict_and_errors(habana: Any, tmp_path: Path) -> None:
    backend = GaudiBackend(precision="bf16", gaudi_config={"use_fused_adam": False})
    assert backend.gaudi_config.use_fused_adam is False and backend.exported_op_lists == {}
    with pytest.raises(FileNotFoundError, match="missing.json"):
        GaudiBackend(gaudi_config=tmp_path / "missing.json")
    with pytest.raises(ValueError, match="autocast_bf16_ops must be a list"):
        GaudiBackend(gaudi_config={"autocast_bf16_ops": "linear"})
    with pytest.raises(ValueError, match="'fp16' is not supported by the 'hpu' backend"):
        GaudiBackend(precision="fp16")


def test_the_optimizer_is_the_backends_choice(habana: Any, poptorch: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """torch's fused AdamW on cpu (and cuda), torch's per-tensor one on hpu unless gaudi_config asks for
    FusedAdamW, PopTorch's on ipu; the loop never looks at parameter devices."""
    model = Tiny()
    cpu = CpuBackend().make_optimizer(_groups(model), weight_decay=0.01)
    assert type(cpu) is torch.optim.AdamW and cpu.defaults["fused"] is True and cpu.defaults["weight_decay"] == 0.01
    plain = GaudiBackend().make_optimizer(_groups(model), weight_decay=0.01)
    assert type(plain) is torch.optim.AdamW and not plain.defaults["fused"] and habana.fused_adam == []
    _no_move(monkeypatch, backend := GaudiBackend())
    sgd = torch.optim.SGD(model.parameters(), lr=0.1)
    assert backend.prepare(model, sgd)[1] is sgd  # prepare no longer swaps optimizers
    ipu = IpuBackend().make_optimizer(_groups(model), weight_decay=0.01)
    assert isinstance(ipu, poptorch.AdamW) and [g["lr"] for g in ipu.param_groups] == [1e-3, 1e-2]
    assert poptorch.optimizers == [{"lr": 1e-3, "weight_decay": 0.01, "max_grad_norm": float("inf")}]


def test_device_rng_state_goes_through_the_backend(habana: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    backend = GaudiBackend()
    state = backend.rng_state()
    assert set(state) == {"hpu"} and state["hpu"].tolist() == [7, 7]
    backend.set_rng_state({"hpu": torch.tensor([1, 2], dtype=torch.uint8), "python": None})
    assert habana.rng.tolist() == [1, 2]
    assert CpuBackend().rng_state() == {}  # torch's CPU generator is checkpointed with python's and numpy's

    from trainers.cuda import CudaBackend

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "get_rng_state_all", lambda: [torch.tensor([3], dtype=torch.uint8)])
    restored: list = []
    monkeypatch.setattr(torch.cuda, "set_rng_state_all", restored.append)
    cuda = CudaBackend(precision="fp32")
    assert cuda.rng_state()["cuda"][0].tolist() == [3]
    cuda.set_rng_state(cuda.rng_state())
    assert restored[0][0].tolist() == [3]


def test_backend_options_are_checked_by_name(habana: Any) -> None:
    with pytest.raises(TypeError, match=r"the 'cpu' backend has no option\(s\) 'num_thread'; its options: .*num_thr"):
        get_backend("cpu", num_thread=2)
    with pytest.raises(TypeError, match=r"the 'hpu' backend has no option\(s\) 'ipu_config'"):
        get_backend("hpu", ipu_config={})
    with pytest.raises(TypeError, match=r"the 'hpu' backend has no option\(s\) dist_timout"):
        GaudiBackend(dist_timout=3)  # the distributed options are checked by the backend too
    assert get_backend("hpu", dist_timeout=5.0).dist_timeout == 5.0


def test_gaudi_without_device(habana: Any) -> None:
    habana.available = False
    with pytest.raises(RuntimeError, match="no Gaudi device"):
        GaudiBackend()
    backend = get_backend("auto")
    assert isinstance(backend, CpuBackend)
    assert backend.reason == "auto: chose cpu (no CUDA device, Gaudi SDK installed but no Gaudi device)"


def test_auto_picks_hpu(habana: Any) -> None:
    backend = get_backend("auto", precision="bf16")
    assert isinstance(backend, GaudiBackend)
    assert backend.reason.startswith("auto: chose hpu")


def test_gaudi_several_cards_uses_hccl(habana: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("LOCAL_RANK", "1")
    backend = GaudiBackend()
    assert backend.dist_backend == "hccl" and backend.ddp_device_ids() is None
    assert not backend.is_main_process and backend.rank == 1
    assert "hccl rank 1/2" in backend.describe()


def test_missing_sdks_name_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "habana_frameworks", None)
    monkeypatch.setitem(sys.modules, "poptorch", None)
    with pytest.raises(ImportError, match=r"'hpu' backend needs Habana's SDK: install habana-frameworks"):
        get_backend("hpu")
    with pytest.raises(ImportError, match=r"'ipu' backend needs Graphcore's poptorch \(Poplar SDK\)"):
        get_backend("ipu")


# ---- fake poptorch ----------------------------------------------------------------------------
class FakeOptions:
    def __init__(self, log: list) -> None:
        self.log = log
        self.Training = types.SimpleNamespace(gradientAccumulation=lambda n: log.append(("gradientAccumulation", n)))
        self.Precision = types.SimpleNamespace(setPartialsType=lambda t: log.append(("setPartialsType", t)))

    def deviceIterations(self, n: int) -> FakeOptions:  # noqa: N802 - poptorch's name
        self.log.append(("deviceIterations", n))
        return self

    def replicationFactor(self, n: int) -> FakeOptions:  # noqa: N802
        self.log.append(("replicationFactor", n))
        return self

    def enableExecutableCaching(self, path: str) -> FakeOptions:  # noqa: N802
        self.log.append(("enableExecutableCaching", path))
        return self

    def randomSeed(self, n: int) -> FakeOptions:  # noqa: N802
        self.log.append(("randomSeed", n))
        return self


class FakeExecutor:
    """Stands in for poptorch's PoplarExecutor; training runs the whole step on the CPU."""

    def __init__(self, rec: Any, model: nn.Module, options: FakeOptions, optimizer: Any = None) -> None:
        self.rec, self.model, self.options, self.optimizer = rec, model, options, optimizer
        self.attached = False
        self.compiled = False

    def __call__(self, **batch: torch.Tensor) -> torch.Tensor:
        self.rec.calls.append("executor")
        self.rec.batch_rows.append(len(next(iter(batch.values()))))
        self.attached = self.compiled = True
        loss = self.model(**batch)
        if self.optimizer is not None:
            loss.backward()
            self.optimizer.step()
            self.optimizer.zero_grad()
        return loss.detach().repeat(2)  # one loss per replica, as PopTorch may return

    def setOptimizer(self, optimizer: Any) -> None:  # noqa: N802
        self.rec.calls.append(("setOptimizer", [g["lr"] for g in optimizer.param_groups]))

    def isAttachedToDevice(self) -> bool:  # noqa: N802
        return self.attached

    def detachFromDevice(self) -> None:  # noqa: N802
        self.rec.calls.append("detachFromDevice")
        self.attached = False

    def isCompiled(self) -> bool:  # noqa: N802
        return self.compiled

    def copyWeightsToHost(self) -> None:  # noqa: N802
        self.rec.calls.append("copyWeightsToHost")


@pytest.fixture
def poptorch(monkeypatch: pytest.MonkeyPatch) -> types.SimpleNamespace:
    rec = types.SimpleNamespace(calls=[], options=[], blocks=[], optimizers=[], executors=[], batch_rows=[])
    mod = types.ModuleType("poptorch")
    mod.__path__ = []
    optim = types.ModuleType("poptorch.optim")

    def options() -> FakeOptions:
        log: list = []
        rec.options.append(log)
        return FakeOptions(log)

    def training_model(model: nn.Module, options: Any = None, optimizer: Any = None) -> FakeExecutor:
        rec.calls.append("trainingModel")
        rec.executors.append(FakeExecutor(rec, model, options, optimizer))
        return rec.executors[-1]

    def begin_block(layer: nn.Module, user_id: str | None = None, ipu_id: int | None = None) -> nn.Module:
        rec.blocks.append((user_id, ipu_id))
        return layer

    class AdamW(torch.optim.AdamW):
        def __init__(
            self,
            params: Any,
            lr: float = 1e-3,
            betas: Any = (0.9, 0.999),
            eps: float = 1e-8,
            weight_decay: float = 0.01,
            amsgrad: bool = False,
            loss_scaling: float = 1.0,
            max_grad_norm: float = float("inf"),
        ) -> None:
            rec.optimizers.append({"lr": lr, "weight_decay": weight_decay, "max_grad_norm": max_grad_norm})
            super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)

    AdamW.__module__ = "poptorch.optim"
    optim.AdamW, optim.Adam, optim.SGD = AdamW, AdamW, AdamW
    mod.Options, mod.trainingModel, mod.BeginBlock = options, training_model, begin_block
    rec.AdamW = AdamW
    _install(monkeypatch, {"poptorch": mod, "poptorch.optim": optim})
    return rec


IPU_CONFIG = {
    "layers_per_ipu": [1, 3],
    "replication_factor": 2,
    "gradient_accumulation_steps": 8,
    "device_iterations": 3,
    "enable_half_partials": True,
    "executable_cache_dir": "./exe_cache",
    "max_grad_norm": 1.0,
    "embedding_serialization_factor": 2,  # an optimum-graphcore key this backend ignores
}


def test_ipu_options_from_json(poptorch: Any, tmp_path: Path) -> None:
    path = tmp_path / "ipu_config.json"
    path.write_text(json.dumps(IPU_CONFIG))
    backend = get_backend("ipu", ipu_config=path)
    assert isinstance(backend, IpuBackend)
    [training] = poptorch.options  # training options only: inference runs on the host, as predict does
    assert training == [
        ("deviceIterations", 3),
        ("replicationFactor", 2),
        ("gradientAccumulation", 8),
        ("setPartialsType", torch.float16),
        ("enableExecutableCaching", "./exe_cache"),
    ]
    assert backend.batch_multiplier == 3 * 2 * 8
    assert backend.describe().startswith("ipu: fp32, 2 IPU(s) per replica x 2 replica(s), gradient accumulation 8")


def test_ipu_training_model_and_lr_changes(poptorch: Any) -> None:
    backend = IpuBackend(ipu_config=IPU_CONFIG)
    backend.setup()
    model = Tiny()
    module, optimizer = backend.prepare(model, backend.make_optimizer(_groups(model), weight_decay=0.0))
    executor = poptorch.executors[0]
    assert poptorch.calls == ["trainingModel"] and module is executor
    assert executor.model is model and executor.options is backend.options and executor.optimizer is optimizer
    assert isinstance(optimizer, poptorch.AdamW) and [g["lr"] for g in optimizer.param_groups] == [1e-3, 1e-2]
    assert poptorch.optimizers == [{"lr": 1e-3, "weight_decay": 0.0, "max_grad_norm": 1.0}]
    assert poptorch.blocks == [("encoder.layer.0", 0), ("encoder.layer.1", 1)]

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 0.5**step)
    before = model.head.weight.detach().clone()
    loss = backend.training_step(module, optimizer, _batch())
    assert loss.dim() == 0 and torch.isfinite(loss)
    assert not torch.equal(before, model.head.weight)

    scheduler.step()
    backend.on_lr_change(optimizer)
    assert poptorch.calls[-1] == ("setOptimizer", [5e-4, 5e-3])

    assert backend.unwrap(module) is model and poptorch.calls[-1] == "copyWeightsToHost"
    backend.teardown()
    assert poptorch.calls[-1] == "detachFromDevice"


def test_ipu_fp16_halves_the_model_and_rejects_bf16(poptorch: Any) -> None:
    backend = IpuBackend(precision="fp16")
    model = Tiny()
    backend.prepare(model, torch.optim.AdamW(model.parameters()))
    assert all(p.dtype == torch.float16 for p in model.parameters())
    assert poptorch.blocks == []  # one IPU per replica: no pipelining
    with pytest.raises(ValueError, match="'bf16' is not supported on IPUs"):
        IpuBackend(precision="bf16")
    with pytest.raises(ValueError, match="compile=True is not supported on IPUs"):
        IpuBackend(compile=True)


def test_ipu_clipping_argument_warns(poptorch: Any) -> None:
    backend = IpuBackend()
    model = Tiny()
    module, optimizer = backend.prepare(model, torch.optim.AdamW(model.parameters()))
    with pytest.warns(UserWarning, match="ipu_config.max_grad_norm"):
        backend.training_step(module, optimizer, _batch(), max_grad_norm=1.0)


def test_ipu_runs_in_one_process(poptorch: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(RuntimeError, match="replication_factor"):
        IpuBackend().setup()


def test_auto_never_picks_ipu(poptorch: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "habana_frameworks", None)
    assert isinstance(get_backend("auto"), CpuBackend)


def test_layer_assignment() -> None:
    assert assign_layers(4, [1, 3]) == [0, 1, 1, 1]
    assert assign_layers(5, [-1, -1]) == [0, 0, 1, 1, 1]
    assert assign_layers(6, [2, -1, -1]) == [0, 0, 1, 1, 2, 2]
    assert assign_layers(3, [-1]) == [0, 0, 0]
    with pytest.raises(ValueError, match="does not add up"):
        assign_layers(4, [1, 2])
    assert find_layer_list(Tiny(num_layers=3))[0] == "encoder.layer"
    with pytest.raises(ValueError, match="could not find the encoder layers"):
        find_layer_list(nn.Linear(2, 2))


# ---- rank 0 only ------------------------------------------------------------------------------
@pytest.mark.parametrize(("rank", "main"), [("0", True), ("1", False)])
def test_is_main_process_follows_rank(monkeypatch: pytest.MonkeyPatch, rank: str, main: bool) -> None:
    monkeypatch.setenv("RANK", rank)
    monkeypatch.setenv("LOCAL_RANK", rank)
    monkeypatch.setenv("WORLD_SIZE", "2")
    backend = CpuBackend()
    assert backend.is_main_process is main and backend.rank == int(rank) and backend.world_size == 2
    assert list(backend.iter_shard(list(range(6)))) == list(range(int(rank), 6, 2))
    with pytest.raises(RuntimeError, match="call backend.setup"):
        backend.gather_object(1)
    with pytest.raises(RuntimeError, match="MASTER_ADDR/MASTER_PORT are not set"):
        backend.setup()


@pytest.mark.parametrize("bf16_supported, expected", [(True, "bf16"), (False, "fp32")])
def test_cuda_auto_precision_follows_bf16_support(monkeypatch: pytest.MonkeyPatch, bf16_supported: bool,
                                                  expected: str) -> None:
    from trainers.cuda import CudaBackend

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: bf16_supported)
    backend = CudaBackend(precision="auto")
    assert backend.precision == expected and backend.scaler is None
    assert CudaBackend(precision="fp32").precision == "fp32"


# ---- Trainer(...).train() end to end on the faked SDKs ----------------------------------------
@pytest.fixture
def hpu_on_cpu(monkeypatch: pytest.MonkeyPatch) -> list:
    """CPU torch has no hpu tensors: the Gaudi backend's moves are recorded and leave tensors where they are."""
    moved: list = []
    monkeypatch.setattr(GaudiBackend, "move_module", lambda self, module, optimizer=None: moved.append(module) or
                        module)
    monkeypatch.setattr(GaudiBackend, "to_device", lambda self, batch: dict(batch))
    return moved


def _trainer_args(**kwargs: Any) -> Any:
    from setfit_lite import TrainingArguments

    return TrainingArguments(show_progress_bar=False, num_epochs=(1, 2), **kwargs)


def test_trainer_trains_end_to_end_on_hpu(habana: Any, hpu_on_cpu: list, tiny_body_path: str, toy_data: dict,
                                          toy_eval: dict) -> None:
    from setfit_lite import SetFitModel, Trainer

    model = SetFitModel.from_pretrained(tiny_body_path)
    args = _trainer_args(backend="hpu", backend_options={"gaudi_config": {"use_fused_adam": True}},
                         eval_strategy="epoch")
    trainer = Trainer(model=model, args=args, train_dataset=toy_data, eval_dataset=toy_eval)
    trainer.train()
    assert isinstance(trainer.backend, GaudiBackend) and model.training_info["backend"].startswith("hpu: fp32")
    steps = trainer.state.global_step
    assert steps > 0 and len(habana.fused_adam) == 1  # the backend's optimizer: FusedAdamW
    assert habana.calls.count("optimizer.step") == steps and habana.calls.count("mark_step") == 2 * steps
    assert hpu_on_cpu[0] is model.model_body  # the body placed by the backend, then the prepared module
    assert [type(m).__name__ for m in hpu_on_cpu[1:]] == ["EmbeddingModule"]
    assert [sorted(e) for e in trainer.state.log_history] == [["eval_accuracy", "step"],  # evaluated mid-training
                                                              ["head_converged", "head_n_iter", "step"]]
    assert 0 <= trainer.evaluate()["accuracy"] <= 1


def test_gaudi_trainer_end_to_end_with_a_differentiable_head(habana: Any, hpu_on_cpu: list, tiny_body_path: str,
                                                             toy_data: dict) -> None:
    from setfit_lite import GaudiTrainer, SetFitModel

    model = SetFitModel.from_pretrained(tiny_body_path, use_differentiable_head=True)
    trainer = GaudiTrainer(model=model, args=_trainer_args(end_to_end=True), train_dataset=toy_data,
                           gaudi_config={"use_fused_clip_norm": True})
    assert trainer.args.backend == "hpu" and trainer.args.backend_options == {"gaudi_config": trainer.device_config}
    trainer.train()
    assert isinstance(trainer.backend, GaudiBackend) and trainer.backend.gaudi_config.use_fused_clip_norm
    assert [type(m).__name__ for m in hpu_on_cpu[1:]] == ["EmbeddingModule", "ClassifierModule"]
    assert hpu_on_cpu[2].head is model.model_head and model.model_head.fitted  # back on the host after training
    assert "clip_norm" in habana.calls and set(model.predict(toy_data["text"][:4])) <= {"positive", "negative"}
    with pytest.raises(ValueError, match="GaudiTrainer trains on backend 'hpu', but its TrainingArguments ask for "
                                         "backend='cpu'"):
        GaudiTrainer(model=model, args=_trainer_args(backend="cpu"), train_dataset=toy_data)
    with pytest.raises(ValueError, match="gaudi_config given both"):
        GaudiTrainer(model=model, args=_trainer_args(backend_options={"gaudi_config": {}}), gaudi_config={})


def test_ipu_trainer_stacks_batch_multiplier_batches_per_step(poptorch: Any, tiny_body_path: str,
                                                              toy_data: dict) -> None:
    from setfit_lite import IPUTrainer, SetFitModel

    model = SetFitModel.from_pretrained(tiny_body_path)
    config = {"gradient_accumulation_steps": 2}
    trainer = IPUTrainer(model=model, args=_trainer_args(), train_dataset=toy_data, ipu_config=config)
    trainer.train()
    backend = trainer.backend
    assert isinstance(backend, IpuBackend) and backend.batch_multiplier == 2
    sampler_batches, batch_size = 5, 16  # 24 texts: the steps floor gives 5 sentence batches of 16 per epoch
    assert trainer.state.global_step == sampler_batches // 2 == poptorch.calls.count("executor")
    anchors = 2  # the label texts ("negative", "positive") ride at the end of every micro-batch
    assert poptorch.batch_rows == [2 * (batch_size + anchors)] * 2  # two micro-batches stacked per PopTorch call
    assert isinstance(poptorch.executors[0].optimizer, poptorch.AdamW)
    calls = [c if isinstance(c, str) else c[0] for c in poptorch.calls]
    assert calls.count("setOptimizer") == 2 and calls[-2:] == ["copyWeightsToHost", "detachFromDevice"]
    assert set(model.predict(toy_data["text"][:4])) <= {"positive", "negative"}


def test_ipu_batch_multiplier_errors(poptorch: Any, tiny_body_path: str, toy_data: dict) -> None:
    from setfit_lite import IPUTrainer, SetFitModel

    model = SetFitModel.from_pretrained(tiny_body_path)
    too_many = IPUTrainer(model=model, args=_trainer_args(), train_dataset=toy_data,
                          ipu_config={"gradient_accumulation_steps": 8})
    with pytest.raises(ValueError, match="the ipu backend trains on 8 batches per step, but the embedding phase has "
                                         "5 per epoch"):
        too_many.train()
    pairs = IPUTrainer(model=model, args=_trainer_args(objective="pairs", batch_size=(8, 2)), train_dataset=toy_data,
                       ipu_config={"gradient_accumulation_steps": 2})
    with pytest.raises(ValueError, match=r"stacks 2 batches per step and needs them of one size, got \(sentences, "
                                         r"pairs\)"):
        pairs.train()
    assert poptorch.calls.count("detachFromDevice") == 0 and poptorch.calls.count("executor") == 0


class RecordingCpuBackend(CpuBackend):
    def __init__(self) -> None:
        super().__init__(precision="fp32")
        self.events: list[str] = []

    def setup(self) -> None:
        self.events.append("setup")

    def teardown(self) -> None:
        self.events.append("teardown")


def test_backend_is_torn_down_when_training_fails(tiny_body_path: str, toy_data: dict) -> None:
    from transformers import TrainerCallback

    from setfit_lite import SetFitModel, Trainer

    class Fail(TrainerCallback):
        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            raise RuntimeError("boom at step end")

    backend = RecordingCpuBackend()
    trainer = Trainer(model=SetFitModel.from_pretrained(tiny_body_path), args=_trainer_args(backend=backend),
                      train_dataset=toy_data, callbacks=[Fail()])
    with pytest.raises(RuntimeError, match="boom at step end"):
        trainer.train()
    assert backend.events == ["setup", "teardown"]


def test_gaudi_op_lists_outlive_the_call_and_go_when_the_process_exits() -> None:
    import subprocess

    code = ("import os\n"
            "from pathlib import Path\n"
            "from trainers.gaudi import GaudiConfig, declare_autocast_ops\n"
            "paths = declare_autocast_ops(GaudiConfig(autocast_bf16_ops=['linear'], autocast_fp32_ops=['softmax']))\n"
            "assert paths and all(Path(p).read_text() in ('linear\\n', 'softmax\\n') for p in paths.values())\n"
            "print(Path(next(iter(paths.values()))).parent)\n")
    root = Path(__file__).resolve().parent.parent
    run = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    folder = Path(run.stdout.strip().splitlines()[-1])
    assert folder.name.startswith("setfit_lite_hpu_") and not folder.exists()


def test_ipu_fp16_casts_the_host_model_back(poptorch: Any) -> None:
    """fp16 halves the host model for the IPUs; unwrap (after copying the weights) and teardown cast it back."""
    backend = IpuBackend(precision="fp16")
    model = Tiny()
    model.register_buffer("scale", torch.ones(2, dtype=torch.float64))  # a floating buffer of its own dtype
    model.register_buffer("count", torch.zeros(1, dtype=torch.int64))
    params = list(model.parameters())
    module, optimizer = backend.prepare(model, backend.make_optimizer(_groups(model), weight_decay=0.0))
    assert {p.dtype for p in model.parameters()} == {torch.float16} and model.scale.dtype == torch.float16
    backend.training_step(module, optimizer, {k: v.half() for k, v in _batch().items()})
    assert backend.unwrap(module) is model and poptorch.calls[-1] == "copyWeightsToHost"
    assert {p.dtype for p in model.parameters()} == {torch.float32} and list(model.parameters()) == params
    assert (model.scale.dtype, model.count.dtype) == (torch.float64, torch.int64)
    halved = model.head.weight.detach().clone()
    backend.training_step(module, optimizer, {k: v.half() for k, v in _batch().items()})  # trains half again
    assert model.head.weight.dtype == torch.float16 and not torch.equal(model.head.weight.float(), halved)
    backend.teardown()  # training ended without unwrap (a failure): the model is given its dtypes back
    assert {p.dtype for p in model.parameters()} == {torch.float32} and model.scale.dtype == torch.float64
    fp32 = IpuBackend()
    other = Tiny()
    fp32.unwrap(fp32.prepare(other, fp32.make_optimizer(_groups(other), weight_decay=0.0))[0])
    assert {p.dtype for p in other.parameters()} == {torch.float32}


def test_ipu_trainer_fp16_fits_the_head_on_and_saves_the_models_dtype(poptorch: Any, tiny_body_path: str,
                                                                       toy_data: dict, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from safetensors import safe_open

    from setfit_lite import IPUTrainer, SetFitModel

    # forward only on the "IPU" (the weights stay as they are), so that the embeddings can be compared
    monkeypatch.setattr(FakeExecutor, "__call__", lambda self, **batch: self.model(**batch).detach().repeat(2))
    model = SetFitModel.from_pretrained(tiny_body_path)
    rounded = SetFitModel.from_pretrained(tiny_body_path)
    rounded.model_body.half().float()  # the weights as the IPUs hold them, in fp32
    reference = rounded.encode(toy_data["text"][:4])
    trainer = IPUTrainer(model=model, args=_trainer_args(precision="fp16"),
                         train_dataset=toy_data, ipu_config={})
    trainer.train()
    assert trainer.backend.precision == "fp16" and trainer.state.global_step > 0
    assert {p.dtype for p in model.model_body.parameters()} == {torch.float32}
    np.testing.assert_allclose(model.encode(toy_data["text"][:4]), reference, atol=1e-6)
    model.save_pretrained(tmp_path / "model")
    saved = list((tmp_path / "model").rglob("model.safetensors"))
    assert saved
    for file in saved:
        with safe_open(str(file), "pt") as tensors:
            assert {tensors.get_tensor(k).dtype for k in tensors.keys()} == {torch.float32}


def test_device_trainers_take_their_own_backend_instance(habana: Any, hpu_on_cpu: list, poptorch: Any,
                                                         tiny_body_path: str, toy_data: dict) -> None:
    from setfit_lite import GaudiTrainer, IPUTrainer, SetFitModel

    model = SetFitModel.from_pretrained(tiny_body_path)
    gaudi = GaudiBackend(gaudi_config={"use_fused_clip_norm": True})
    trainer = GaudiTrainer(model=model, args=_trainer_args(backend=gaudi), train_dataset=toy_data)
    assert trainer.args.backend is gaudi and trainer.args.backend_options is None
    trainer.train()
    assert trainer.backend is gaudi and trainer.state.global_step > 0 and "clip_norm" in habana.calls
    ipu = IpuBackend(ipu_config={"gradient_accumulation_steps": 2})
    assert IPUTrainer(model=model, args=_trainer_args(backend=ipu), train_dataset=toy_data).args.backend is ipu
    with pytest.raises(ValueError, match=r"GaudiTrainer trains on backend 'hpu', but its TrainingArguments hold a "
                                         r"CpuBackend \(backend 'cpu'\): use setfit_lite.Trainer"):
        GaudiTrainer(model=model, args=_trainer_args(backend=CpuBackend()), train_dataset=toy_data)
    with pytest.raises(ValueError, match=r"IPUTrainer trains on backend 'ipu', but its TrainingArguments hold a "
                                         r"GaudiBackend \(backend 'hpu'\)"):
        IPUTrainer(model=model, args=_trainer_args(backend=gaudi), train_dataset=toy_data)
    with pytest.raises(ValueError, match="gaudi_config was given to GaudiTrainer with a GaudiBackend instance, which "
                                         "keeps the config it was built with"):
        GaudiTrainer(model=model, args=_trainer_args(backend=gaudi), train_dataset=toy_data, gaudi_config={})
    trainer = GaudiTrainer(model=model, args=_trainer_args(), train_dataset=toy_data)
    with pytest.raises(ValueError, match="hold a CpuBackend"):  # train(args) is checked the same way
        trainer.train(_trainer_args(backend=CpuBackend()))


def test_ipu_checkpoints_hold_the_weights_trained_on_the_device(poptorch: Any, tiny_body_path: str, toy_data: dict,
                                                                tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """PopTorch trains the weights on the IPUs; a checkpoint saves them after copying them back to the host."""
    import copy

    from safetensors.torch import load_file

    from setfit_lite import IPUTrainer, SetFitModel

    def on_device(self: FakeExecutor, **batch: torch.Tensor) -> torch.Tensor:
        if not self.compiled:  # the IPUs get a copy of the weights, trained there
            self.device, self.compiled = copy.deepcopy(self.model), True
            device_params = dict(self.device.named_parameters())
            self.optimizer = torch.optim.SGD([device_params[n] for n, _ in self.model.named_parameters()], lr=0.05)
        loss = self.device(**batch)
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad()
        return loss.detach().repeat(2)

    def copy_weights_to_host(self: FakeExecutor) -> None:
        self.rec.calls.append("copyWeightsToHost")
        self.model.load_state_dict(self.device.state_dict())

    monkeypatch.setattr(FakeExecutor, "__call__", on_device)
    monkeypatch.setattr(FakeExecutor, "copyWeightsToHost", copy_weights_to_host)
    model = SetFitModel.from_pretrained(tiny_body_path)
    before = {k: v.clone() for k, v in model.model_body.state_dict().items()}
    args = _trainer_args(max_steps=2, save_strategy="steps", save_steps=1, output_dir=str(tmp_path),
                         save_total_limit=None)
    trainer = IPUTrainer(model=model, args=args, train_dataset=toy_data, ipu_config={})
    trainer.train()
    assert trainer.state.global_step == 2
    first, last = (load_file(str(tmp_path / f"checkpoint-{step}" / "body.safetensors")) for step in (1, 2))
    trained = model.model_body.state_dict()
    assert any(not torch.equal(first[k], before[k]) for k in first)  # step 1's weights, not the initial ones
    assert any(not torch.equal(first[k], last[k]) for k in first)
    assert all(torch.equal(last[k], trained[k]) for k in last)
