"""The Ray Train integration's checks that need no Ray cluster: ``check_train_loop_config`` in the driver (before
Ray starts the workers), the workers' refusal of relative folders, and what ``RayTrainReportCallback`` reports.

Nothing here starts Ray (tests/test_ray_train.py trains on a local Ray cluster).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from conftest import make_sentences

from setfit_lite.integrations import ray_train
from setfit_lite.integrations.ray_train import RayTrainReportCallback, build_trainer, check_train_loop_config

ROOT = Path(__file__).resolve().parents[1]


def _config(**extra: Any) -> dict[str, Any]:
    texts, labels = make_sentences(12, seed=0)
    return {"model": "no-such-model-anywhere", "train_dataset": {"text": texts, "label": labels}, **extra}


@pytest.mark.parametrize(("extra", "workers", "error", "match"), [
    ({"modle": "x"}, 2, TypeError, r"unknown key\(s\) 'modle'"),
    ({"args": {"num_epochs": -1}}, 2, ValueError, "num_epochs"),
    ({"args": {"calibration": "temperature"}}, 2, ValueError, r"calibration='temperature'.*2 Ray Train workers"),
    ({"args": ["num_epochs", 1]}, 2, TypeError, r"train_loop_config\['args'\] must be a dict"),
    ({"save_to": 3}, 2, TypeError, "save_to must be a non-empty path"),
    ({}, 0, ValueError, "num_workers must be a positive integer"),
], ids=["unknown-key", "bad-args", "temperature-distributed", "args-not-dict", "save_to-type", "no-workers"])
def test_check_train_loop_config_refuses_before_ray_starts(extra: dict, workers: int, error: type,
                                                           match: str) -> None:
    with pytest.raises(error, match=match):
        check_train_loop_config(_config(**extra), workers)


def test_check_train_loop_config_refuses_missing_model_and_data() -> None:
    with pytest.raises(ValueError, match="needs 'model' and 'train_dataset'"):
        check_train_loop_config({"args": {}}, 1)


def test_temperature_calibration_on_one_worker_passes() -> None:
    config = check_train_loop_config(_config(args={"calibration": "temperature"}), 1)
    assert config["args"]["calibration"] == "temperature"


def test_check_train_loop_config_makes_relative_paths_absolute(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "body").mkdir()
    given = _config(model="body", save_to="rel_model",
                    args={"save_strategy": "steps", "save_steps": 2, "output_dir": Path("rel_ckpt"),
                          "logging_dir": "logs"})
    config = check_train_loop_config(given, 2)
    assert config["save_to"] == str(tmp_path / "rel_model")
    assert config["args"]["output_dir"] == str(tmp_path / "rel_ckpt")
    assert config["args"]["logging_dir"] == str(tmp_path / "logs")
    assert config["model"] == str(tmp_path / "body")  # a folder that exists here
    assert config["args"]["save_steps"] == 2 and config["train_dataset"] is given["train_dataset"]
    assert given["save_to"] == "rel_model" and given["args"]["output_dir"] == Path("rel_ckpt")  # not changed
    # the default output_dir ("checkpoints") too; a model name that is no folder here stays a name
    default = check_train_loop_config(_config(), 2)
    assert default["args"]["output_dir"] == str(tmp_path / "checkpoints")
    assert default["model"] == "no-such-model-anywhere" and "save_to" not in default
    assert check_train_loop_config(config, 2) == config  # absolute paths are kept


@pytest.mark.parametrize(("extra", "match"), [
    ({"save_to": "rel_model"}, r"save_to='rel_model' is relative"),
    ({"args": {"save_strategy": "steps", "save_steps": 2, "output_dir": "rel_ckpt"}},
     r"args\['output_dir'\]='rel_ckpt' is relative"),
    ({"args": {"save_strategy": "epoch"}}, r"args\['output_dir'\]='checkpoints' is relative"),
], ids=["save_to", "output_dir", "default-output_dir"])
def test_worker_refuses_relative_folders_it_writes(extra: dict, match: str) -> None:
    # refused before the model is loaded (there is none of that name)
    with pytest.raises(ValueError, match=match + r".*check_train_loop_config"):
        build_trainer(_config(**extra))


def test_worker_applies_the_distributed_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ray_train, "_world_size", lambda: 2)
    with pytest.raises(ValueError, match="calibration='temperature'"):  # before the model is loaded
        build_trainer(_config(args={"calibration": "temperature"}))


def test_worker_builds_the_trainer_from_a_checked_config(tiny_body_path: str, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    # output_dir's default is relative, but nothing is written there without checkpoints or report_to
    trainer = build_trainer(_config(model=tiny_body_path, args={"num_epochs": 1}))
    assert trainer.args.output_dir == "checkpoints"
    assert any(isinstance(c, RayTrainReportCallback) for c in trainer._callbacks)
    checked = check_train_loop_config(_config(model=tiny_body_path, save_to="out",
                                              args={"save_strategy": "steps", "save_steps": 2}), 2)
    trainer = build_trainer(checked)
    assert Path(trainer.args.output_dir) == tmp_path / "checkpoints" and trainer.args.save_steps == 2


def test_report_callback_reports_the_metrics_logged_since_the_last_checkpoint(
        monkeypatch: pytest.MonkeyPatch) -> None:
    reports: list[tuple[dict, Any]] = []
    monkeypatch.setattr(ray_train, "_report", lambda metrics, folder: reports.append((dict(metrics), folder)))
    callback = RayTrainReportCallback()
    args = SimpleNamespace(output_dir="ckpt")

    def save(step: int, zero: bool = True) -> None:
        callback.on_save(args, SimpleNamespace(global_step=step, is_world_process_zero=zero), None)

    callback.on_log(args, None, None, logs={"embedding_loss": 0.5, "eval_accuracy": 0.75, "note": "text"})
    callback.on_log(args, None, None, logs={"embedding_loss": 0.25})
    save(2)
    save(4)  # nothing logged since step 2: neither the loss nor the evaluation of step 2 is reported again
    callback.on_log(args, None, None, logs={"embedding_loss": 0.125})
    save(6, zero=False)
    assert reports == [({"embedding_loss": 0.25, "eval_accuracy": 0.75, "step": 2}, Path("ckpt") / "checkpoint-2"),
                       ({"step": 4}, Path("ckpt") / "checkpoint-4"),
                       ({"embedding_loss": 0.125, "step": 6}, None)]


def test_example_checks_the_config_before_ray_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("ray.train.torch", reason="Ray Train is not installed: pip install 'ray[train]'")
    spec = importlib.util.spec_from_file_location("ray_train_example", ROOT / "examples" / "ray_train.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)

    def no_ray(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("Ray was started before the config was checked")

    monkeypatch.setattr(example.ray, "init", no_ray)
    monkeypatch.setattr(sys, "argv", ["ray_train.py", "--workers", "0"])
    with pytest.raises(ValueError, match="num_workers must be a positive integer"):
        example.main()


def test_docs_check_the_config_before_the_trainer() -> None:
    for text in ((ROOT / "docs" / "ray_train.md").read_text(encoding="utf-8"),
                 (ROOT / "examples" / "ray_train.py").read_text(encoding="utf-8")):
        assert -1 < text.index("config = check_train_loop_config(") < text.index("TorchTrainer(\n")


def test_the_training_function_returns_nothing_ray_must_pickle(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ray Train pickles a training function's return value: `train_loop_per_worker` returns None (it returned the
    Trainer, whose model held a weak reference once it had predicted in bf16), `train_on_worker` the trainer."""
    done = object()
    monkeypatch.setattr(ray_train, "train_on_worker", lambda config: done)
    assert ray_train.train_loop_per_worker({"model": "m"}) is None


def test_a_model_that_predicted_in_bf16_pickles(tiny_body_path: str, toy_data: dict) -> None:
    """The bf16 prediction copy (a weak reference to the body) is left out of a pickle and made again on use."""
    import pickle

    from setfit_lite import SetFitModel, Trainer, TrainingArguments
    from setfit_lite.modeling import bf16_copy

    model = SetFitModel.from_pretrained(tiny_body_path)
    Trainer(model, TrainingArguments(max_steps=2, num_epochs=(1, 1), show_progress_bar=False),
            train_dataset=toy_data).train()
    model._bf16_cache = bf16_copy(model.model_body, None)
    copy = pickle.loads(pickle.dumps(model))
    assert "_bf16_cache" in vars(model) and "_bf16_cache" not in vars(copy)
    texts = toy_data["text"][:4]
    assert copy.predict(texts) == model.predict(texts)
