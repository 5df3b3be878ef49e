"""bf16 prediction in the torch tier: ``inference_precision="auto"`` is bf16 only where the CPU computes bf16
natively (the training rule, ``trainers.registry.prediction_precision``), "fp32" is honoured everywhere, and bf16
embeddings and predictions stay close to fp32 ones."""

from __future__ import annotations

import copy
import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import make_sentences

import trainers.base
import trainers.cpu
from setfit_lite import SetFitModel
from setfit_lite.serialization.validate import ModelFormatError
from trainers.registry import prediction_precision

NATIVE = "processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512bw avx512_vnni avx512_bf16\n"  # AVX512-BF16, no AMX
AMX = "processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512_bf16 amx_tile amx_bf16 amx_int8\n"
EMULATED = "processor\t: 0\nflags\t\t: fpu sse2 avx2 fma avx512f avx512bw\n"  # AVX-512 without BF16: emulated


@pytest.fixture()
def cpu_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Make the capability probe (``trainers.cpu.CPUINFO_PATH``) read the given /proc/cpuinfo text (and let "auto"
    mean the rule, not the suite's pinned fp32)."""
    monkeypatch.delenv("SETFIT_LITE_INFERENCE_PRECISION", raising=False)

    def use(text: str) -> None:
        path = tmp_path / "cpuinfo"
        path.write_text(text)
        monkeypatch.setattr(trainers.cpu, "CPUINFO_PATH", path)

    return use


@pytest.fixture()
def fitted(tiny_body_path: str) -> tuple[SetFitModel, list[str]]:
    texts, labels = make_sentences(12, seed=0)
    model = SetFitModel.from_pretrained(tiny_body_path, labels=["positive", "negative"], inference_precision="fp32")
    head = model.new_head(2, multi_label=False)
    head.fit(model.encode(texts), model.label_ids(labels))
    model.model_head = head
    return model, texts


def linear_output_dtypes(model: SetFitModel, texts: list[str]) -> set[torch.dtype]:
    """The dtypes linear layers computed in while the model predicted ``texts``."""
    seen: set[torch.dtype] = set()

    def spy(module: torch.nn.Linear, inputs: tuple) -> None:
        seen.add(module.weight.dtype)

    hook = torch.nn.modules.module.register_module_forward_pre_hook(
        lambda m, i: spy(m, i) if isinstance(m, torch.nn.Linear) else None)
    try:
        model.predict(texts)
    finally:
        hook.remove()
    return seen


def test_auto_is_bf16_only_with_native_bf16(cpu_flags) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "auto" never picks emulated bf16, so never warns
        for text, expected in ((NATIVE, "bf16"), (AMX, "bf16"), (EMULATED, "fp32")):
            cpu_flags(text)
            assert prediction_precision("cpu", "auto") == expected, text
            assert prediction_precision("cpu", "fp32") == "fp32"


def test_unknown_cpu_flags_mean_fp32(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trainers.cpu, "CPUINFO_PATH", tmp_path / "missing")
    assert prediction_precision("cpu", "auto") == "fp32"


def test_forced_bf16_on_an_emulating_cpu_warns(cpu_flags, monkeypatch: pytest.MonkeyPatch) -> None:
    cpu_flags(EMULATED)
    monkeypatch.setattr(trainers.base, "_WARNED", set())
    with pytest.warns(RuntimeWarning, match="bf16 runs emulated"):
        assert prediction_precision("cpu", "bf16") == "bf16"
    with pytest.raises(ValueError, match="'auto', 'fp32' or 'bf16'"):
        prediction_precision("cpu", "fp16")


def test_model_runs_its_body_in_bf16_only_with_native_support(fitted, cpu_flags) -> None:
    model, texts = fitted
    model.inference_precision = "auto"
    cpu_flags(NATIVE)
    assert model.embedding_precision() == "bf16"
    assert linear_output_dtypes(model, texts) == {torch.bfloat16}
    model = SetFitModel(model.model_body, model.model_head, labels=model.labels)  # default "auto"
    cpu_flags(EMULATED)
    assert model.embedding_precision() == "fp32"
    assert linear_output_dtypes(model, texts) == {torch.float32}
    assert model.encode(texts[:3]).dtype == np.float32


def test_forced_fp32_is_honoured_and_saved(fitted, cpu_flags, tmp_path: Path) -> None:
    model, texts = fitted
    cpu_flags(AMX)
    assert model.inference_precision == "fp32"
    assert linear_output_dtypes(model, texts) == {torch.float32}
    model.save_pretrained(tmp_path / "m")
    config = json.loads((tmp_path / "m" / "config_setfit_lite.json").read_text())
    assert config["inference_precision"] == "fp32"
    loaded = SetFitModel.from_pretrained(tmp_path / "m")
    assert loaded.inference_precision == "fp32" and linear_output_dtypes(loaded, texts) == {torch.float32}
    again = SetFitModel.from_pretrained(tmp_path / "m", inference_precision="auto")  # the argument wins
    assert again.embedding_precision() == "bf16"


def test_bad_precision_is_a_clear_error(fitted, tmp_path: Path) -> None:
    model, _ = fitted
    with pytest.raises(ValueError, match="inference_precision.*'auto', 'fp32', 'bf16'"):
        model.inference_precision = "fp16"
    assert model.inference_precision == "fp32"  # unchanged
    model.save_pretrained(tmp_path / "m")
    config_path = tmp_path / "m" / "config_setfit_lite.json"
    config = json.loads(config_path.read_text())
    config["inference_precision"] = "int4"
    config_path.write_text(json.dumps(config))
    from setfit_lite.serialization import write_manifest

    write_manifest(tmp_path / "m")
    with pytest.raises(ModelFormatError, match="inference_precision"):
        SetFitModel.from_pretrained(tmp_path / "m")


def test_bf16_embeddings_and_predictions_match_fp32(fitted) -> None:
    model, texts = fitted
    fp32 = model.encode(texts)
    proba32 = model.predict_proba(texts, as_numpy=True)
    model.inference_precision = "bf16"  # forced: this test runs on any CPU
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # emulated on CPUs without bf16: slower, same numbers
        bf16 = model.encode(texts)
        proba16 = model.predict_proba(texts, as_numpy=True)
    assert bf16.dtype == np.float32 and not np.array_equal(bf16, fp32)  # it did run in another precision
    assert next(model.model_body.parameters()).dtype == torch.float32  # the body itself stays fp32 (a bf16 copy ran)
    cosine = (bf16 * fp32).sum(1) / np.linalg.norm(bf16, axis=1) / np.linalg.norm(fp32, axis=1)
    assert cosine.min() >= 0.99
    assert np.mean(proba16.argmax(1) == proba32.argmax(1)) >= 0.9


def _halve(body: torch.nn.Module, texts: list[str]) -> None:
    with torch.no_grad():
        for param in body.parameters():
            param.mul_(0.5)


def _fused_adamw_step(body: torch.nn.Module, texts: list[str]) -> None:
    """torch's fused AdamW (what the CPU and CUDA backends train with) updates weights in place without counting a
    version."""
    versions = [p._version for p in body.parameters()]
    optimizer = torch.optim.AdamW(body.parameters(), lr=1e-2, fused=True)
    body.train()
    torch.stack([out.sum() for out in body(body.tokenize(texts)).values()
                 if isinstance(out, torch.Tensor) and out.is_floating_point()]).sum().backward()
    optimizer.step()
    body.eval()
    assert [p._version for p in body.parameters()] == versions  # the step counted no version


@pytest.mark.parametrize("change", [_halve, _fused_adamw_step], ids=["in-place", "fused-adamw"])
def test_the_bf16_copy_follows_the_body(fitted, change) -> None:
    """A changed body (an in-place change, an optimizer step, fused or not) gets a new bf16 copy, equal to a fresh
    copy of the changed body; an unchanged one reuses it."""
    model, texts = fitted
    model.inference_precision = "bf16"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        first = model.encode(texts)
        copy_before = model._bf16_body()
        assert model._bf16_body() is copy_before
        change(model.model_body, texts)
        assert model._bf16_body() is not copy_before
        fresh = model.with_body(copy.deepcopy(model.model_body))
        np.testing.assert_allclose(model.encode(texts), fresh.encode(texts), atol=1e-6)
        assert not np.allclose(model.encode(texts), first, atol=1e-3)


def test_the_environment_pins_auto(fitted, cpu_flags, monkeypatch: pytest.MonkeyPatch) -> None:
    model, _ = fitted
    model.inference_precision = "auto"
    cpu_flags(NATIVE)
    assert model.embedding_precision() == "bf16"
    monkeypatch.setenv("SETFIT_LITE_INFERENCE_PRECISION", "fp32")
    assert model.embedding_precision() == "fp32"
    model.inference_precision = "bf16"  # a setting on the model wins over the environment
    assert model.embedding_precision() == "bf16"
    monkeypatch.setenv("SETFIT_LITE_INFERENCE_PRECISION", "half")
    model.inference_precision = "auto"
    with pytest.raises(ValueError, match="inference_precision"):
        model.embedding_precision()


def test_evaluation_during_training_leaves_no_stale_bf16_copy(tiny_body_path: str) -> None:
    """An evaluation between training steps embeds with a bf16 copy of the body; the steps after it (fused AdamW)
    must not leave the head fitted on, or prediction run by, that copy."""
    from setfit_lite import Trainer, TrainingArguments

    texts, labels = make_sentences(12, seed=0)
    model = SetFitModel.from_pretrained(tiny_body_path, labels=["positive", "negative"], inference_precision="bf16")
    args = TrainingArguments(max_steps=6, eval_strategy="steps", eval_steps=2, body_learning_rate=1e-2,
                             show_progress_bar=False, backend="cpu", seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        Trainer(model, args, train_dataset={"text": texts, "label": labels},
                eval_dataset={"text": texts[:6], "label": labels[:6]}).train()
        final = model.with_body(copy.deepcopy(model.model_body))
        np.testing.assert_allclose(model.encode(texts), final.encode(texts), atol=1e-6)


@pytest.mark.parametrize(("device", "precision", "cpuinfo", "expected"), [
    ("cpu", "bf16", AMX, 64),        # AMX tiles: 64 texts a pass (1.18x 32's on validation texts)
    ("cpu", "bf16", NATIVE, 32),     # AVX512-BF16 without AMX: not measured faster, stays 32
    ("cpu", "fp32", AMX, 32),        # fp32 on AMX: 64 was no faster
    ("cuda", "bf16", AMX, 32),       # the rule is the CPU's
])
def test_prediction_batch_size_is_larger_only_for_bf16_on_amx(device, precision, cpuinfo, expected) -> None:
    from trainers.registry import prediction_batch_size

    assert prediction_batch_size(device, precision, cpuinfo=cpuinfo) == expected


def test_predict_without_batch_size_uses_the_models_default(fitted, cpu_flags, monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    model, texts = fitted
    cpu_flags(AMX)
    model.inference_precision = "auto"
    assert model.embedding_precision() == "bf16" and model.default_batch_size() == 64
    model.inference_precision = "fp32"
    assert model.default_batch_size() == 32
    seen: list[int] = []
    original = SetFitModel._embed_windows

    def spy(self, token_ids, batch_size, show_progress_bar):
        seen.append(batch_size)
        return original(self, token_ids, batch_size, show_progress_bar)

    monkeypatch.setattr(SetFitModel, "_embed_windows", spy)
    monkeypatch.setattr(SetFitModel, "default_batch_size", lambda self: 5)
    model.predict_proba(texts)
    model.encode(texts)
    model.predict(texts, batch_size=3)  # an explicit batch size is honoured
    assert seen == [5, 5, 3]
    with pytest.raises(ValueError, match="batch_size"):
        model.predict(texts, batch_size=0)
