"""``report_to``: transformers' TensorBoard and MLflow callbacks on the training loop, values read back offline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from setfit_lite import SetFitModel, Trainer, TrainingArguments
from setfit_lite.reporting import IntegrationCallback, reporting_callbacks


def _train(body: str, train: Any, evaluation: Any, **arguments: Any) -> Trainer:
    args = TrainingArguments(backend="cpu", num_epochs=(2, 16), logging_steps=2, eval_strategy="epoch",
                             show_progress_bar=False, seed=3, **arguments)
    trainer = Trainer(model=SetFitModel.from_pretrained(body), args=args, train_dataset=train,
                      eval_dataset=evaluation)
    trainer.train()
    return trainer


def _logged(trainer: Trainer, key: str) -> list[tuple[int, float]]:
    return [(entry["step"], entry[key]) for entry in trainer.state.log_history if key in entry]


def test_report_to_is_checked_when_the_arguments_are_made(monkeypatch: pytest.MonkeyPatch) -> None:
    assert TrainingArguments().report_to == ["none"]
    assert TrainingArguments(report_to="all").report_to == ["all"]
    assert TrainingArguments(report_to=["tensorboard", "mlflow"]).report_to == ["tensorboard", "mlflow"]
    with pytest.raises(ValueError, match=r"unknown integration\(s\) \['tensorbord'\].*'mlflow'"):
        TrainingArguments(report_to="tensorbord")
    with pytest.raises(ValueError, match="'none' cannot be combined with other integrations"):
        TrainingArguments(report_to=["none", "mlflow"])
    with pytest.raises(ValueError, match="report_to"):
        TrainingArguments().update({"report_to": ["nope"]})  # also when a search trial sets it
    import transformers.integrations.integration_utils as integrations

    monkeypatch.setattr(integrations, "get_available_reporting_integrations", lambda: ["mlflow"])
    with pytest.raises(ImportError, match=r"setfit_lite\[tensorboard\]"):
        TrainingArguments(report_to="tensorboard")


def test_all_is_every_installed_integration() -> None:
    from transformers.integrations import get_available_reporting_integrations

    callbacks = reporting_callbacks(TrainingArguments(report_to="all"))
    assert all(isinstance(cb, IntegrationCallback) for cb in callbacks)
    names = {type(cb.callback).__name__ for cb in callbacks}
    assert len(callbacks) == len(get_available_reporting_integrations())
    assert {"TensorBoardCallback", "MLflowCallback"} <= names  # the tensorboard and mlflow extras (dev installs them)
    assert reporting_callbacks(TrainingArguments()) == []


def test_tensorboard_receives_losses_learning_rate_and_metrics(tmp_path: Path, tiny_body_path: str, toy_data: Any,
                                                               toy_eval: Any) -> None:
    pytest.importorskip("tensorboard", reason='pip install "setfit_lite[tensorboard]"')
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    trainer = _train(tiny_body_path, toy_data, toy_eval, report_to="tensorboard", logging_dir=str(tmp_path / "tb"))
    events = EventAccumulator(str(tmp_path / "tb"))
    events.Reload()

    def scalars(tag: str) -> list[tuple[int, float]]:
        return [(e.step, e.value) for e in events.Scalars(tag)]

    for tag, key in (("train/embedding_loss", "embedding_loss"), ("train/learning_rate", "learning_rate"),
                     ("eval/accuracy", "eval_accuracy")):
        expected = _logged(trainer, key)
        assert len(expected) >= 2
        assert [s for s, _ in scalars(tag)] == [s for s, _ in expected]
        assert [v for _, v in scalars(tag)] == pytest.approx([v for _, v in expected], rel=1e-6)
    assert scalars("train/head_n_iter") == _logged(trainer, "head_n_iter")  # the head's fit, as logged
    (final,) = scalars("train/final_eval_accuracy")
    assert final == (trainer.state.global_step, pytest.approx(trainer.evaluate()["accuracy"]))
    assert scalars("train/train_runtime")[0][1] > 0
    assert {"args", "model_config"} <= {tag.split("/")[0] for tag in events.Tags()["tensors"]}


def test_mlflow_receives_params_losses_and_metrics(tmp_path: Path, tiny_body_path: str, toy_data: Any,
                                                   toy_eval: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("mlflow", reason='pip install "setfit_lite[mlflow]"')
    from mlflow.tracking import MlflowClient

    uri = (tmp_path / "mlruns").as_uri()  # the file store (sqlite:/// works too: ~25 s here to create its schema)
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 keeps the file store behind this switch
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "setfit-lite-test")
    trainer = _train(tiny_body_path, toy_data, toy_eval, report_to="mlflow", run_name="tiny-run")
    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("setfit-lite-test")
    (run,) = client.search_runs([experiment.experiment_id])
    assert run.info.run_name == "tiny-run" and run.info.status == "FINISHED"
    assert run.data.params["seed"] == "3" and run.data.params["report_to"] == "['mlflow']"
    assert run.data.params["hidden_size"] == "32"  # the body's transformers config

    def history(key: str) -> list[tuple[int, float]]:
        return sorted((m.step, m.value) for m in client.get_metric_history(run.info.run_id, key))

    for key in ("embedding_loss", "learning_rate", "eval_accuracy"):
        expected = _logged(trainer, key)
        assert len(expected) >= 2
        assert [s for s, _ in history(key)] == [s for s, _ in expected]
        assert [v for _, v in history(key)] == pytest.approx([v for _, v in expected], rel=1e-6)
    assert history("final_eval_accuracy") == [(trainer.state.global_step,
                                              pytest.approx(trainer.evaluate()["accuracy"]))]
    assert history("train_runtime")[0][1] > 0
