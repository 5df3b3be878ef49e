"""Registry, CPU backend and CUDA checks that run on a plain CPU machine."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from torch import nn

import trainers
from trainers import base, cpu, get_backend, names, resolve_auto
from trainers.cpu import CpuBackend, detect_cpu_features, parse_cpuinfo_flags
from trainers.distributed import DistEnv, detect_env

CPUINFO_SPR = """processor\t: 0
vendor_id\t: GenuineIntel
flags\t\t: fpu vme sse2 avx2 avx512f avx512bw avx512_bf16 amx_bf16 amx_tile amx_int8
processor\t: 1
flags\t\t: fpu vme sse2 avx2 avx512f avx512bw avx512_bf16 amx_bf16 amx_tile amx_int8
"""
CPUINFO_OLD = """processor\t: 0
flags\t\t: fpu vme sse2 avx avx2 fma
"""
CPUINFO_ARM = """processor\t: 0
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics bf16 i8mm
"""


class TinyRegressor(nn.Module):
    """forward(**batch) returns the scalar loss, as the training loop expects."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 1)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return nn.functional.mse_loss(self.linear(x).squeeze(-1).float(), y)


def _batch() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return {"x": torch.randn(8, 4, generator=g), "y": torch.randn(8, generator=g)}


@pytest.fixture(autouse=True)
def _single_process(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in names.TORCHRUN_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(base, "_WARNED", set())


@pytest.fixture
def no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setitem(sys.modules, "habana_frameworks", None)


@pytest.fixture
def fake_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "Fake GPU")
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)


# ---- registry ---------------------------------------------------------------------------------
def test_auto_picks_cpu_here(no_gpu: None) -> None:
    backend = get_backend("auto")
    assert isinstance(backend, CpuBackend)
    assert backend.reason == "auto: chose cpu (no CUDA device, no Gaudi SDK)"
    assert backend.describe().startswith("cpu: fp32")


def test_auto_prefers_cuda_when_present(no_gpu: None, fake_gpu: None) -> None:
    name, reason = resolve_auto()
    assert name == "cuda"
    assert reason.startswith("auto: chose cuda (2 CUDA device(s)")


def test_unknown_backend_lists_names() -> None:
    with pytest.raises(ValueError, match="unknown backend 'tpu'") as info:
        get_backend("tpu")
    for name in ("auto", "cpu", "cuda", "hpu", "ipu"):
        assert repr(name) in str(info.value)


def test_backend_instance_passes_through() -> None:
    backend = CpuBackend()
    assert get_backend(backend) is backend
    with pytest.raises(ValueError, match="cannot be combined"):
        get_backend(backend, num_threads=2)


def test_precision_errors_on_cpu() -> None:
    with pytest.raises(ValueError, match="'fp16' is not supported by the 'cpu' backend"):
        get_backend("cpu", precision="fp16")
    with pytest.raises(ValueError, match="precision must be one of"):
        get_backend("cpu", precision="int8")


def test_unknown_option_is_an_error() -> None:
    with pytest.raises(TypeError, match=r"the 'cpu' backend has no option\(s\) 'no_such_option'; its options: "
                                        r"compile_options, cpuinfo, .*num_threads"):
        get_backend("cpu", no_such_option=1)


def test_public_api() -> None:
    assert trainers.NAMES == ("auto", "cpu", "cuda", "hpu", "ipu") == ("auto", *names.BACKENDS)
    assert trainers.PRECISIONS == ("fp32", "bf16", "fp16")
    assert {name: trainers.backend_class(name).name for name in names.BACKENDS} == {n: n for n in names.BACKENDS}


@pytest.mark.parametrize("cuda", [False, True])
def test_available_backends_says_which_get_backend_builds(no_gpu: None, monkeypatch: pytest.MonkeyPatch,
                                                          cuda: bool) -> None:
    """A backend is listed available exactly when ``get_backend`` builds it (no SDK, no GPU here)."""
    monkeypatch.setitem(sys.modules, "poptorch", None)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    available = trainers.available_backends()
    assert available == {"cpu": True, "cuda": cuda, "hpu": False, "ipu": False}
    for name, yes in available.items():
        if yes and name == "cpu":
            assert get_backend(name).name == name
        elif not yes:
            with pytest.raises((ImportError, RuntimeError)):
                get_backend(name)


# ---- CUDA (checked without a GPU) -------------------------------------------------------------
def test_cuda_missing_is_a_clear_error(no_gpu: None) -> None:
    with pytest.raises(RuntimeError, match=r"needs a CUDA GPU .*torch.cuda.is_available\(\) is False"):
        get_backend("cuda")


def test_cuda_bf16_unsupported(fake_gpu: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)
    with pytest.raises(ValueError, match="'bf16' is not supported on Fake GPU"):
        get_backend("cuda", precision="bf16")


def test_cuda_fp16_uses_local_rank_and_grad_scaler(fake_gpu: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCAL_RANK", "1")
    backend = get_backend("cuda", precision="fp16")
    assert backend.device == torch.device("cuda", 1)
    assert isinstance(backend.scaler, torch.amp.GradScaler)
    assert backend.dist_backend == "nccl"
    assert backend.ddp_device_ids() == [1]
    assert backend.describe().startswith("cuda: cuda:1 (Fake GPU), fp16 autocast + GradScaler")
    with pytest.raises(ValueError, match="dist_backend 'hccl'"):
        get_backend("cuda", dist_backend="hccl")


def test_cuda_local_rank_beyond_devices(fake_gpu: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCAL_RANK", "5")
    monkeypatch.setenv("RANK", "5")
    monkeypatch.setenv("WORLD_SIZE", "8")
    with pytest.raises(RuntimeError, match="LOCAL_RANK=5 but only 2 CUDA device"):
        get_backend("cuda")


# ---- CPU feature detection --------------------------------------------------------------------
def test_parse_cpuinfo_flags() -> None:
    assert {"amx_bf16", "avx512_bf16", "avx512f"} <= parse_cpuinfo_flags(CPUINFO_SPR)
    assert "avx512f" not in parse_cpuinfo_flags(CPUINFO_OLD)
    assert "bf16" in parse_cpuinfo_flags(CPUINFO_ARM)
    assert parse_cpuinfo_flags("") == frozenset()


def test_detect_cpu_features() -> None:
    spr = detect_cpu_features(CPUINFO_SPR)
    assert spr.amx_bf16 and spr.avx512_bf16 and spr.avx512f and spr.native_bf16
    old = detect_cpu_features(CPUINFO_OLD)
    assert not (old.amx_bf16 or old.avx512_bf16 or old.avx512f) and old.native_bf16 is False
    assert detect_cpu_features(CPUINFO_ARM).native_bf16 is True
    assert spr.mkldnn == torch.backends.mkldnn.is_available()


def test_detect_cpu_features_reads_cpuinfo_or_says_unknown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "cpuinfo"
    path.write_text(CPUINFO_SPR)
    monkeypatch.setattr(cpu, "CPUINFO_PATH", path)
    read = detect_cpu_features()
    assert read.known and read.flags == parse_cpuinfo_flags(CPUINFO_SPR) and read.native_bf16
    monkeypatch.setattr(cpu, "CPUINFO_PATH", tmp_path / "missing")
    missing = detect_cpu_features()
    assert not missing.known and missing.flags == frozenset() and missing.native_bf16 is None
    assert missing.summary().startswith(f"CPU flags unknown (no {tmp_path / 'missing'})")


def test_describe_native_bf16() -> None:
    text = CpuBackend(precision="bf16", cpuinfo=CPUINFO_SPR).describe()
    assert text.startswith("cpu: bf16 autocast")
    assert "AMX: yes, AVX512-BF16: yes, AVX512F: yes" in text
    assert "emulated" not in text


def test_auto_precision_is_bf16_only_where_the_cpu_computes_it_natively() -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "auto" never picks an emulated bf16, so never warns
        assert CpuBackend(precision="auto", cpuinfo=CPUINFO_SPR).precision == "bf16"
        assert CpuBackend(precision="auto", cpuinfo=CPUINFO_OLD).precision == "fp32"
        assert CpuBackend(precision="fp32", cpuinfo=CPUINFO_SPR).precision == "fp32"  # explicit wins
    assert CpuBackend(precision="auto", cpuinfo=CPUINFO_SPR).autocast_dtype == torch.bfloat16
    with pytest.raises(ValueError, match="'auto'"):
        CpuBackend(precision="int4")


def test_bf16_without_native_support_warns_once() -> None:
    with pytest.warns(RuntimeWarning, match="bf16 runs emulated"):
        backend = CpuBackend(precision="bf16", cpuinfo=CPUINFO_OLD)
    assert "AMX: no, AVX512-BF16: no" in backend.describe()
    assert backend.describe().endswith("(bf16 runs emulated, may be slower)")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        CpuBackend(precision="bf16", cpuinfo=CPUINFO_OLD)  # second time: silent


# ---- CPU training ---------------------------------------------------------------------------
def test_bf16_training_step_changes_params() -> None:
    backend = get_backend("cpu", precision="bf16", cpuinfo=CPUINFO_SPR)
    backend.setup()
    model = TinyRegressor()
    before = [p.detach().clone() for p in model.parameters()]
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.05)
    module, optimizer = backend.prepare(model, optimizer)
    assert module is model  # one process, no compile: no wrapper
    with backend.autocast():
        assert torch.get_autocast_dtype("cpu") == torch.bfloat16
    losses = [
        backend.training_step(module, optimizer, backend.to_device(_batch()), max_grad_norm=1.0) for _ in range(3)
    ]
    assert all(torch.isfinite(loss) and not loss.requires_grad for loss in losses)
    assert all(p.dtype == torch.float32 for p in model.parameters())
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters()))
    assert all(p.grad is None for p in model.parameters())  # zeroed after the step
    backend.teardown()


def test_num_threads_set_at_setup_and_put_back_at_teardown() -> None:
    """The thread count is the process's: a training that asked for one leaves the count it found (a later
    training with the same arguments and seed would otherwise give another model)."""
    old = torch.get_num_threads()
    other = 2 if old != 2 else 3
    try:
        torch.set_num_threads(other)
        backend = CpuBackend(num_threads=1)
        assert "1 threads" in backend.describe()
        backend.setup()
        assert torch.get_num_threads() == 1
        backend.teardown()
        assert torch.get_num_threads() == other
    finally:
        torch.set_num_threads(old)
    with pytest.raises(ValueError, match="num_threads"):
        CpuBackend(num_threads=0)


def test_compile_flag_wraps_and_unwraps() -> None:
    backend = get_backend("cpu", compile=True, compile_options={"backend": "eager"})
    assert "torch.compile" in backend.describe()
    model = TinyRegressor()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    module, optimizer = backend.prepare(model, optimizer)
    assert module is not model and backend.unwrap(module) is model
    before = model.linear.weight.detach().clone()
    loss = backend.training_step(module, optimizer, _batch())
    assert torch.isfinite(loss)
    assert not torch.equal(before, model.linear.weight)


def test_ipex_and_ccl_missing_name_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "intel_extension_for_pytorch", None)
    monkeypatch.setitem(sys.modules, "oneccl_bindings_for_pytorch", None)
    with pytest.raises(ImportError, match="install intel-extension-for-pytorch"):
        CpuBackend(use_ipex=True)
    with pytest.raises(ImportError, match="install oneccl_bind_pt"):
        CpuBackend(dist_backend="ccl")
    with pytest.raises(ValueError, match="dist_backend 'nccl' is not supported by the 'cpu' backend"):
        CpuBackend(dist_backend="nccl")


def test_detect_env() -> None:
    env = detect_env({"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "MASTER_ADDR": "h", "MASTER_PORT": "1"})
    assert (env.rank, env.local_rank, env.world_size, env.master_addr, env.master_port) == (3, 1, 4, "h", "1")
    assert detect_env({"RANK": "1", "WORLD_SIZE": "2"}).local_rank == 1  # LOCAL_RANK defaults to RANK
    assert detect_env({}) == DistEnv(rank=0, local_rank=0, world_size=1)
    with pytest.raises(ValueError, match="inconsistent"):
        detect_env({"RANK": "2", "WORLD_SIZE": "2"})
    with pytest.raises(ValueError, match="not an integer"):
        detect_env({"WORLD_SIZE": "two"})


def test_single_process_collectives_are_noops() -> None:
    backend = CpuBackend()
    backend.setup()
    assert backend.is_main_process and backend.world_size == 1
    assert backend.gather_object({"a": 1}) == [{"a": 1}]
    assert backend.broadcast_object("x") == "x"
    backend.barrier()
    assert list(backend.iter_shard([1, 2, 3])) == [1, 2, 3]
    assert backend.state_dict() == {}
    backend.teardown()


def test_existing_process_group_is_taken_as_is(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A group someone else initialised (Ray Train, a user's script): rank, size and backend come from it, a
    different dist_backend is refused, and teardown leaves the group to its creator."""
    import torch.distributed as dist

    monkeypatch.setenv("WORLD_SIZE", "4")  # stale launcher variables: the group is the truth
    monkeypatch.setenv("RANK", "3")
    dist.init_process_group("gloo", store=dist.FileStore(str(tmp_path / "store"), 1), rank=0, world_size=1)
    try:
        backend = CpuBackend()
        assert (backend.rank, backend.world_size, backend.dist_backend) == (0, 1, "gloo")
        backend.setup()
        backend.teardown()
        assert dist.is_initialized()
        with pytest.raises(ValueError, match="process group already initialised in this process uses 'gloo'"):
            CpuBackend(dist_backend="ccl")
    finally:
        dist.destroy_process_group()


def test_cuda_takes_ray_train_device(fake_gpu: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Under Ray Train the GPU is the one Ray assigned (``ray.train.torch.get_device()``), not cuda:LOCAL_RANK."""
    import trainers.cuda

    monkeypatch.setattr(trainers.cuda, "ray_train_device", lambda: torch.device("cuda", 1))
    backend = get_backend("cuda")
    assert backend.local_rank == 0 and backend.device == torch.device("cuda", 1)
    assert backend.ddp_device_ids() == [1]


def test_backend_instance_refuses_arguments_it_would_ignore(tiny_body_path: str, toy_data: dict) -> None:
    """A Backend instance keeps its own precision and compile setting: asking for others is an error, not ignored."""
    backend = CpuBackend(precision="fp32")
    assert get_backend(backend, precision="auto") is backend  # "auto" (TrainingArguments' default) defers
    assert get_backend(backend, precision="fp32", compile=False) is backend  # what it already does
    with pytest.raises(ValueError, match=r"precision='bf16' was given with a CpuBackend built for precision 'fp32'"):
        get_backend(backend, precision="bf16")
    with pytest.raises(ValueError, match="compile=True was given with a CpuBackend built without compile"):
        get_backend(backend, compile=True)
    with pytest.raises(ValueError, match=r"backend options \(num_threads\) cannot be combined with a Backend"):
        get_backend(backend, num_threads=2)
    bf16 = CpuBackend(precision="bf16", cpuinfo=CPUINFO_SPR)
    assert get_backend(bf16) is bf16  # no precision given: the instance's
    compiled = CpuBackend(compile=True)
    assert get_backend(compiled) is compiled and get_backend(compiled, compile=True) is compiled
    assert get_backend("cpu").precision == "fp32"  # a name without precision: fp32, as before

    from setfit_lite import SetFitModel, Trainer, TrainingArguments

    with pytest.raises(ValueError, match="TrainingArguments: precision='bf16' was given with a CpuBackend"):
        TrainingArguments(backend=backend, precision="bf16")  # checked once, with the other arguments
    with pytest.raises(ValueError, match="TrainingArguments: compile=True was given with a CpuBackend"):
        TrainingArguments(backend=backend, compile=True)
    model = SetFitModel.from_pretrained(tiny_body_path)
    before = {k: v.clone() for k, v in model.model_body.state_dict().items()}
    args = TrainingArguments(backend=backend, show_progress_bar=False, num_epochs=(1, 1))
    args.precision = "bf16"  # set after the checks: train() still refuses it before any step
    trainer = Trainer(model=model, args=args, train_dataset=toy_data)
    with pytest.raises(ValueError, match="precision='bf16' was given with a CpuBackend"):
        trainer.train()
    assert trainer.state.global_step == 0
    assert all(torch.equal(before[k], v) for k, v in model.model_body.state_dict().items())


def _fake_ipex(calls: list) -> object:
    """A stand-in for intel_extension_for_pytorch whose ``optimize`` copies the model and optimizer, as IPEX's
    does, unless ``inplace=True``."""
    import copy
    import types

    def optimize(model: nn.Module, optimizer: torch.optim.Optimizer | None = None, dtype: torch.dtype | None = None,
                 inplace: bool = False, **kwargs: object) -> tuple[nn.Module, torch.optim.Optimizer | None]:
        calls.append({"dtype": dtype, "inplace": inplace, **kwargs})
        if inplace:
            return model, optimizer
        new_model = copy.deepcopy(model)
        new_optimizer = copy.deepcopy(optimizer)
        new_optimizer.state.clear()
        mapping = dict(zip(model.parameters(), new_model.parameters()))
        for old, new in zip(optimizer.param_groups, new_optimizer.param_groups):
            new["params"] = [mapping[p] for p in old["params"]]
        return new_model, new_optimizer

    module = types.ModuleType("intel_extension_for_pytorch")
    module.optimize = optimize
    return module


def test_use_ipex_trains_the_model_itself(tiny_body_path: str, toy_data: dict,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """ipex.optimize runs in place: the model the Trainer was given is the one trained."""
    from setfit_lite import SetFitModel, Trainer, TrainingArguments

    calls: list = []
    monkeypatch.setitem(sys.modules, "intel_extension_for_pytorch", _fake_ipex(calls))
    model = SetFitModel.from_pretrained(tiny_body_path)
    before = {k: v.clone() for k, v in model.model_body.state_dict().items()}
    args = TrainingArguments(show_progress_bar=False, num_epochs=(1, 1), backend="cpu", precision="fp32",
                             backend_options={"use_ipex": True})
    trainer = Trainer(model=model, args=args, train_dataset=toy_data)
    trainer.train()
    assert calls == [{"dtype": torch.float32, "inplace": True}]
    assert trainer.state.global_step > 0 and "IPEX" in model.training_info["backend"]
    changed = [k for k, v in model.model_body.state_dict().items() if not torch.equal(before[k], v)]
    assert len(changed) > len(before) // 2, changed


class CopyingBackend(CpuBackend):
    """A backend whose prepare trains a deep copy of the module (as ipex.optimize without inplace=True would)."""

    def prepare(self, module: nn.Module, optimizer: torch.optim.Optimizer) -> tuple[nn.Module,
                                                                                     torch.optim.Optimizer]:
        return _fake_ipex([]).optimize(module, optimizer)


def test_a_backend_that_would_train_a_copy_fails_before_any_step(tiny_body_path: str, toy_data: dict) -> None:
    from setfit_lite import SetFitModel, Trainer, TrainingArguments

    model = SetFitModel.from_pretrained(tiny_body_path)
    before = {k: v.clone() for k, v in model.model_body.state_dict().items()}
    args = TrainingArguments(show_progress_bar=False, num_epochs=(1, 1), backend=CopyingBackend())
    trainer = Trainer(model=model, args=args, train_dataset=toy_data)
    with pytest.raises(RuntimeError, match=r"CopyingBackend.prepare returned a module that does not unwrap to the "
                                           r"embedding phase's EmbeddingModule .*it would train a copy"):
        trainer.train()
    assert trainer.state.global_step == 0
    assert all(torch.equal(before[k], v) for k, v in model.model_body.state_dict().items())
