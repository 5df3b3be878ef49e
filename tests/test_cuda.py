"""The cuda backend on a real GPU (marker ``cuda``; skipped without one). ``scripts/gpu_check.sh`` runs them
(``pytest -m cuda``) on a CUDA machine; elsewhere the backend's contract is tested on mocks
(``tests/test_trainers_contract.py``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

pytestmark = [pytest.mark.cuda,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (torch.cuda.is_available())")]

ARGS = {"num_epochs": (3, 4), "body_learning_rate": 1e-2, "show_progress_bar": False, "seed": 3}


def _train(body: str, data: Any, **arguments: Any) -> Any:
    from setfit_lite import SetFitModel, Trainer, TrainingArguments

    model = SetFitModel.from_pretrained(body)
    trainer = Trainer(model=model, args=TrainingArguments(**ARGS, **arguments), train_dataset=data)
    trainer.train()
    return trainer


def _accuracy(model: Any, evaluation: dict[str, list[str]]) -> float:
    return float(np.mean([p == y for p, y in zip(model.predict(evaluation["text"]), evaluation["label"])]))


@pytest.mark.parametrize("precision", ["fp32", "fp16", "bf16"])
def test_trains_on_the_gpu(tiny_body_path: str, toy_data: Any, toy_eval: Any, precision: str) -> None:
    if precision == "bf16" and not torch.cuda.is_bf16_supported():
        pytest.skip("this GPU has no bf16 (the ValueError is tested below)")
    trainer = _train(tiny_body_path, toy_data, backend="cuda", precision=precision)
    described = trainer.model.training_info["backend"]
    assert described.startswith("cuda: cuda:0") and {"fp32": "fp32", "fp16": "GradScaler",
                                                      "bf16": "bf16 autocast"}[precision] in described
    assert (trainer.backend.scaler is not None) == (precision == "fp16")
    assert trainer.state.global_step > 0
    assert _accuracy(trainer.model, toy_eval) >= 0.8


def test_bf16_is_refused_where_the_gpu_lacks_it(tiny_body_path: str, toy_data: Any) -> None:
    if torch.cuda.is_bf16_supported():
        pytest.skip("this GPU has bf16")
    with pytest.raises(ValueError, match="bf16"):
        _train(tiny_body_path, toy_data, backend="cuda", precision="bf16")


def test_auto_picks_the_gpu(tiny_body_path: str, toy_data: Any) -> None:
    trainer = _train(tiny_body_path, toy_data)  # backend="auto", precision="auto"
    expected = "bf16 autocast" if torch.cuda.is_bf16_supported() else "fp32"
    assert trainer.model.training_info["backend"].startswith("cuda:") and expected in trainer.model.training_info[
        "backend"]


def test_gpu_fp32_trains_the_model_the_cpu_trains(tiny_body_path: str, toy_data: Any, toy_eval: Any) -> None:
    """Same seed and arguments on the GPU and the CPU in fp32: nearly the same model (GPU kernels sum in another
    order, so bit equality is not expected, and a few steps at lr 1e-2 can drift)."""
    gpu = _train(tiny_body_path, toy_data, backend="cuda", precision="fp32").model
    cpu = _train(tiny_body_path, toy_data, backend="cpu", precision="fp32").model
    agree = np.mean([a == b for a, b in zip(gpu.predict(toy_eval["text"]), cpu.predict(toy_eval["text"]))])
    assert agree >= 0.9
    gap = gpu.predict_proba(toy_eval["text"], as_numpy=True) - cpu.predict_proba(toy_eval["text"], as_numpy=True)
    assert float(np.abs(gap).mean()) <= 0.05
