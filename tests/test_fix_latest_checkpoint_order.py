"""The latest checkpoint is the one written last, not the one of the highest step: after a run resumed from an
earlier checkpoint is interrupted, ``resume_from_checkpoint=True`` continues that run, not the one it abandoned."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from transformers import TrainerCallback

from setfit_lite import SetFitModel, Trainer, TrainingArguments
from setfit_lite.serialization import write_manifest
from setfit_lite.trainer import TrainingInterrupted
from setfit_lite.training.checkpoints import CheckpointError, latest_checkpoint, resolve_checkpoint, verify_checkpoint

ARGS = {"num_epochs": (1, 1), "min_steps_per_epoch": 8, "max_steps": 6, "save_strategy": "steps", "save_steps": 2,
        "save_total_limit": None, "show_progress_bar": False, "backend": "cpu", "seed": 3}


class Steps(TrainerCallback):
    """Records each step that ends; sends SIGTERM at step ``stop`` (the trainer saves a checkpoint and stops)."""

    def __init__(self, stop: int | None = None) -> None:
        self.stop, self.steps = stop, []

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.steps.append(state.global_step)
        if state.global_step == self.stop:
            os.kill(os.getpid(), signal.SIGTERM)


def run(body: str, data: Any, out: Path, callbacks: list | None = None, resume: Any = None) -> Trainer:
    trainer = Trainer(SetFitModel.from_pretrained(body), args=TrainingArguments(**ARGS, output_dir=str(out)),
                      train_dataset=data, callbacks=callbacks)
    trainer.train(resume_from_checkpoint=resume)
    return trainer


def _names(out: Path) -> list[str]:
    return sorted(p.name for p in out.glob("checkpoint-*"))


def _strip_write_order(folder: Path) -> None:
    """Make ``folder`` a checkpoint as written before ``write_order`` existed (its manifest written again)."""
    info = json.loads((folder / "checkpoint.json").read_text())
    info.pop("write_order", None)
    (folder / "checkpoint.json").write_text(json.dumps(info))
    write_manifest(folder)


def test_resume_true_continues_the_run_resumed_from_an_earlier_checkpoint(tiny_body_path: str, toy_data: Any,
                                                                          tmp_path: Path) -> None:
    run(tiny_body_path, toy_data, tmp_path)
    assert _names(tmp_path) == ["checkpoint-2", "checkpoint-4", "checkpoint-6"]
    with pytest.raises(TrainingInterrupted, match="checkpoint-4"):
        run(tiny_body_path, toy_data, tmp_path, [Steps(stop=4)], resume=str(tmp_path / "checkpoint-2"))
    assert _names(tmp_path) == ["checkpoint-2", "checkpoint-4", "checkpoint-6"]  # 6: the abandoned run's
    assert latest_checkpoint(tmp_path) == tmp_path / "checkpoint-4"
    assert resolve_checkpoint(True, str(tmp_path)) == tmp_path / "checkpoint-4"
    steps = Steps()
    resumed = run(tiny_body_path, toy_data, tmp_path, [steps], resume=True)
    assert steps.steps == [5, 6] and resumed.state.global_step == 6  # from step 4, not the abandoned step 6
    assert latest_checkpoint(tmp_path) == tmp_path / "checkpoint-6"  # written again, now last


def test_checkpoints_without_a_write_order_come_first_by_step(tiny_body_path: str, toy_data: Any,
                                                              tmp_path: Path) -> None:
    run(tiny_body_path, toy_data, tmp_path)
    orders = [json.loads((tmp_path / f"checkpoint-{s}" / "checkpoint.json").read_text())["write_order"]
              for s in (2, 4, 6)]
    assert orders == [1, 2, 3]
    for step in (2, 4, 6):
        _strip_write_order(tmp_path / f"checkpoint-{step}")
        verify_checkpoint(tmp_path / f"checkpoint-{step}")  # still a valid checkpoint
    assert latest_checkpoint(tmp_path) == tmp_path / "checkpoint-6"  # by step, as before the field existed
    with pytest.raises(TrainingInterrupted, match="checkpoint-4"):
        run(tiny_body_path, toy_data, tmp_path, [Steps(stop=4)], resume=str(tmp_path / "checkpoint-2"))
    assert latest_checkpoint(tmp_path) == tmp_path / "checkpoint-4"  # written with a write_order: after the others

    info = json.loads((tmp_path / "checkpoint-4" / "checkpoint.json").read_text())
    (tmp_path / "checkpoint-4" / "checkpoint.json").write_text(json.dumps({**info, "write_order": "last"}))
    write_manifest(tmp_path / "checkpoint-4")
    with pytest.raises(CheckpointError, match="write_order.*'last', not a positive int"):
        verify_checkpoint(tmp_path / "checkpoint-4")
