"""Checkpoints: an interrupted-and-resumed run ends with the same model as an uninterrupted one."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from transformers import TrainerCallback

from setfit_lite import SetFitModel, Trainer, TrainingArguments
from setfit_lite.trainer import TrainingInterrupted
from setfit_lite.training.checkpoints import (
    CheckpointError,
    _join,
    _split,
    latest_checkpoint,
    verify_checkpoint,
)
from trainers import CpuBackend

ARGS = {"num_epochs": (3, 4), "body_learning_rate": 1e-2, "show_progress_bar": False, "backend": "cpu", "seed": 3,
        "logging_steps": 4, "min_steps_per_epoch": 8}
TOTAL_STEPS = 24  # 3 epochs x 8 steps


def run(body: str, data: dict, out: Path, callbacks: list | None = None, resume=None, **kwargs) -> Trainer:
    model = SetFitModel.from_pretrained(body)
    args = TrainingArguments(**{**ARGS, "output_dir": str(out), **kwargs})
    trainer = Trainer(model=model, args=args, train_dataset=data, callbacks=callbacks)
    trainer.train(resume_from_checkpoint=resume)
    return trainer


def assert_same_model(a: Trainer, b: Trainer, texts: list[str]) -> None:
    sa, sb = a.model.model_body.state_dict(), b.model.model_body.state_dict()
    for key in sa:
        assert torch.equal(sa[key], sb[key]), key
    np.testing.assert_array_equal(a.model.predict_proba(texts), b.model.predict_proba(texts))


class SendSignal(TrainerCallback):
    def __init__(self, step: int, signum: int = signal.SIGTERM) -> None:
        self.step, self.signum = step, signum

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == self.step:
            # the trainer's handler must be in place: with the default one the signal would end this process
            handler = signal.getsignal(self.signum)
            assert callable(handler) and handler not in (signal.SIG_DFL, signal.SIG_IGN), handler
            os.kill(os.getpid(), self.signum)


@pytest.fixture(scope="module", autouse=True)
def two_threads() -> Any:
    """Resume tests run with at least 2 math threads (scripts/test.sh pins 1), as users' runs do."""
    previous = torch.get_num_threads()
    torch.set_num_threads(max(2, previous))
    yield
    torch.set_num_threads(previous)


@pytest.fixture(scope="module")
def reference(tiny_body_path: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Trainer, Path]:
    """The uninterrupted run, checkpointing every 5 steps, keeping them all."""
    from conftest import make_sentences

    texts, labels = make_sentences(12, seed=0)
    out = tmp_path_factory.mktemp("reference")
    return run(tiny_body_path, {"text": texts, "label": labels}, out, save_strategy="steps", save_steps=5,
               save_total_limit=None), out


def test_saving_does_not_change_training(reference, tiny_body_path, toy_data, toy_eval, tmp_path) -> None:
    trainer, out = reference
    assert sorted(p.name for p in out.iterdir()) == [f"checkpoint-{s}" for s in (10, 15, 20, 5)]
    plain = run(tiny_body_path, toy_data, tmp_path)  # save_strategy="no": same RNG stream, same model
    assert_same_model(trainer, plain, toy_eval["text"])
    assert not any(tmp_path.iterdir())


def test_sigterm_checkpoints_and_resume_gives_the_same_model(reference, tiny_body_path, toy_data, toy_eval,
                                                            tmp_path) -> None:
    with pytest.raises(TrainingInterrupted, match="checkpoint saved to .*checkpoint-7"):
        run(tiny_body_path, toy_data, tmp_path, [SendSignal(7)], save_strategy="steps", save_steps=5)
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # handlers restored
    assert (tmp_path / "checkpoint-7" / "checkpoint.json").exists()
    resumed = run(tiny_body_path, toy_data, tmp_path, resume=True, save_strategy="steps", save_steps=5)
    assert resumed.state.global_step == TOTAL_STEPS
    assert_same_model(reference[0], resumed, toy_eval["text"])
    # the loss log continues where it stopped, identical to the uninterrupted run
    assert resumed.state.log_history == reference[0].state.log_history


def test_resume_from_an_explicit_checkpoint_and_epoch_strategy(reference, tiny_body_path, toy_data, toy_eval,
                                                               tmp_path) -> None:
    resumed = run(tiny_body_path, toy_data, tmp_path, resume=reference[1] / "checkpoint-15")
    assert_same_model(reference[0], resumed, toy_eval["text"])
    by_epoch = run(tiny_body_path, toy_data, tmp_path / "epochs", save_strategy="epoch", save_total_limit=2)
    assert sorted(p.name for p in (tmp_path / "epochs").iterdir()) == ["checkpoint-16", "checkpoint-24"]
    again = run(tiny_body_path, toy_data, tmp_path / "epochs", resume=tmp_path / "epochs" / "checkpoint-16")
    assert_same_model(by_epoch, again, toy_eval["text"])


def test_broken_checkpoints_are_detected_and_skipped(reference, tmp_path, caplog) -> None:
    out = tmp_path / "out"
    shutil.copytree(reference[1], out)
    (out / ".tmp-checkpoint-25").mkdir()  # a save killed before the rename: never a candidate
    shutil.copytree(out / "checkpoint-20", out / "checkpoint-22")
    os.remove(out / "checkpoint-22" / "checkpoint.json")  # killed before the manifest
    shutil.copytree(out / "checkpoint-20", out / "checkpoint-21")
    weights = out / "checkpoint-21" / "body.safetensors"
    weights.write_bytes(weights.read_bytes()[:-100])  # truncated
    assert latest_checkpoint(out) == out / "checkpoint-20"
    assert "checkpoint-22" in caplog.text and "checkpoint-21" in caplog.text
    with pytest.raises(CheckpointError, match=r"checkpoint-21 is incomplete or modified: .* does not match "
                                              r"manifest.json; changed \(truncated or tampered\): body.safetensors"):
        verify_checkpoint(out / "checkpoint-21")
    os.remove(out / "checkpoint-21" / "rng_rank0.json")
    with pytest.raises(CheckpointError, match=r"missing: rng_rank0.json; changed \(truncated or tampered\): body"):
        verify_checkpoint(out / "checkpoint-21")
    with pytest.raises(CheckpointError, match="no checkpoint.json"):
        verify_checkpoint(out / "checkpoint-22")
    manifest = json.loads((out / "checkpoint-20" / "checkpoint.json").read_text())
    manifest["format_version"] = 1
    (out / "checkpoint-20" / "checkpoint.json").write_text(json.dumps(manifest))
    with pytest.raises(CheckpointError, match="format_version 1, this version reads 2 .written by an older"):
        verify_checkpoint(out / "checkpoint-20")


def test_one_manifest_format(reference) -> None:
    """Checkpoints carry serialization's manifest.json (SHA-256 of every file) and say what they hold."""
    from setfit_lite.serialization import verify_manifest

    folder = reference[1] / "checkpoint-10"
    verify_manifest(folder)
    listed = json.loads((folder / "manifest.json").read_text())["files"]
    assert set(listed) == {p.name for p in folder.iterdir()} - {"manifest.json"}
    info = verify_checkpoint(folder)
    assert info == {"format_version": 2, "step": 10, "world_size": 1,
                    "states": ["backend", "optimizer", "scheduler", "trainer_state"],
                    "write_order": 2}  # written second, after checkpoint-5


class RecordingRngBackend(CpuBackend):
    """A CPU backend with a device generator of its own, to show the loop saves and restores it."""

    def __init__(self) -> None:
        super().__init__(precision="fp32")
        self.device_rng, self.restored = torch.tensor([5, 6], dtype=torch.uint8), []

    def rng_state(self) -> dict:
        return {"fake_device": self.device_rng.clone()}

    def set_rng_state(self, state) -> None:
        self.restored.append(state["fake_device"].tolist())


def test_device_rng_is_saved_and_restored_through_the_backend(tiny_body_path, toy_data, tmp_path) -> None:
    run(tiny_body_path, toy_data, tmp_path, backend=RecordingRngBackend(), save_strategy="steps", save_steps=8,
        max_steps=8)
    saved = json.loads((tmp_path / "checkpoint-8" / "rng_rank0.json").read_text())
    assert "fake_device" in json.dumps(saved)
    backend = RecordingRngBackend()
    run(tiny_body_path, toy_data, tmp_path, backend=backend, resume=True, max_steps=10)
    assert backend.restored == [[5, 6]]


def test_resume_errors(tiny_body_path, toy_data, tmp_path) -> None:
    with pytest.raises(CheckpointError, match="no complete checkpoint"):
        run(tiny_body_path, toy_data, tmp_path, resume=True)
    with pytest.raises(TypeError, match="resume_from_checkpoint"):
        run(tiny_body_path, toy_data, tmp_path, resume=3)


def test_state_round_trip_without_pickle() -> None:
    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.1)
    model(torch.ones(1, 3)).sum().backward()
    optimizer.step()
    state = {"optimizer": optimizer.state_dict(), "rng": np.random.get_state(), "t": (1, None, "x")}
    tensors: dict = {}
    data = json.loads(json.dumps(_split(state, "", tensors)))
    back = _join(data, tensors)
    restored = torch.optim.AdamW(model.parameters(), lr=0.5)
    restored.load_state_dict(back["optimizer"])
    assert restored.state_dict()["param_groups"] == optimizer.state_dict()["param_groups"]
    assert torch.equal(restored.state_dict()["state"][0]["exp_avg"], optimizer.state_dict()["state"][0]["exp_avg"])
    assert back["rng"][0] == "MT19937" and np.array_equal(back["rng"][1], state["rng"][1])
    assert back["t"] == (1, None, "x")
    with pytest.raises(TypeError, match="cannot checkpoint"):
        _split({"f": object()}, "", {})


def test_a_users_folder_named_like_a_checkpoint_is_never_replaced(tiny_body_path, toy_data, tmp_path) -> None:
    mine = tmp_path / "checkpoint-5"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    with pytest.raises(CheckpointError, match=r"checkpoint-5 exists and is not a setfit_lite checkpoint"):
        run(tiny_body_path, toy_data, tmp_path, save_strategy="steps", save_steps=5)
    assert (mine / "notes.txt").read_text() == "mine" and sorted(p.name for p in mine.iterdir()) == ["notes.txt"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]  # no half-written staging left


def test_pruning_and_re_saving_never_remove_a_users_file_inside_a_checkpoint(tiny_body_path, toy_data, tmp_path,
                                                                             caplog) -> None:
    """save_total_limit removes the files a checkpoint's manifest lists; a note of the user's inside keeps its
    folder (with a warning). Re-saving a step whose folder holds such a note is refused, the note untouched."""
    run(tiny_body_path, toy_data, tmp_path, num_epochs=(1, 1), min_steps_per_epoch=6, save_strategy="steps",
        save_steps=2, save_total_limit=None)
    assert sorted(p.name for p in tmp_path.glob("checkpoint-*")) == ["checkpoint-2", "checkpoint-4", "checkpoint-6"]
    (tmp_path / "checkpoint-2" / "my_notes.txt").write_text("mine")
    (tmp_path / "checkpoint-4" / "my_notes.txt").write_text("also mine")
    with caplog.at_level("WARNING"):
        with pytest.raises(CheckpointError, match=r"checkpoint-4 holds my_notes\.txt, which setfit_lite did not"):
            run(tiny_body_path, toy_data, tmp_path, num_epochs=(1, 1), min_steps_per_epoch=6, save_strategy="steps",
                save_steps=4, save_total_limit=1, resume=str(tmp_path / "checkpoint-2"))
    assert (tmp_path / "checkpoint-4" / "my_notes.txt").read_text() == "also mine"
    (tmp_path / "checkpoint-4" / "my_notes.txt").unlink()
    with caplog.at_level("WARNING"):
        run(tiny_body_path, toy_data, tmp_path, num_epochs=(1, 1), min_steps_per_epoch=6, save_strategy="steps",
            save_steps=3, save_total_limit=1, resume=str(tmp_path / "checkpoint-2"))
    assert (tmp_path / "checkpoint-2" / "my_notes.txt").read_text() == "mine"  # pruned around it
    assert sorted(p.name for p in (tmp_path / "checkpoint-2").iterdir()) == ["my_notes.txt"]
    assert "kept" in caplog.text and "my_notes.txt" in caplog.text


SHORT = {"num_epochs": (1, 1), "min_steps_per_epoch": 8, "save_strategy": "steps"}  # 8 steps, checkpointed


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _checkpoint_names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("checkpoint-*"))


def test_a_new_run_refuses_an_output_dir_holding_an_earlier_runs_checkpoints(reference, tiny_body_path, toy_data,
                                                                             tmp_path, monkeypatch) -> None:
    """A run that saves checkpoints into an output_dir holding those of an earlier run, and does not continue that
    run, is refused before it trains (as ``setfit-lite train --save-steps`` is): save_total_limit would prune its
    checkpoints by theirs, and resume_from_checkpoint=True would pick the earlier run's of a higher step."""
    run(tiny_body_path, toy_data, tmp_path, **SHORT, max_steps=6, save_steps=6)
    before = _tree(tmp_path)

    def trained(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("training started")

    monkeypatch.setattr(Trainer, "train_embeddings", trained)
    with pytest.raises(CheckpointError, match=re.escape(f"output_dir {tmp_path} holds checkpoints of an earlier run "
                                                        "(checkpoint-6): ") + r".*resume_from_checkpoint=True\).*"
                                              r"another \(or an empty\) output_dir"):
        run(tiny_body_path, toy_data, tmp_path, **SHORT, max_steps=2, save_steps=2)
    elsewhere = reference[1] / "checkpoint-5"
    with pytest.raises(CheckpointError, match=re.escape(f"the checkpoint resumed, {elsewhere}, is not one of them")):
        run(tiny_body_path, toy_data, tmp_path, **SHORT, max_steps=6, save_steps=2, resume=elsewhere)
    assert _tree(tmp_path) == before
    for allowed in ({"resume": True}, {"resume": str(tmp_path / "checkpoint-6")}, {"save_strategy": "no"}):
        with pytest.raises(AssertionError, match="training started"):  # past the check
            run(tiny_body_path, toy_data, tmp_path, **{**SHORT, **allowed}, max_steps=6, save_steps=2)


class CheckpointsAtSave(TrainerCallback):
    """The checkpoint folders of ``output_dir`` at each ``on_save`` (after the new one's pruning)."""

    def __init__(self) -> None:
        self.seen: list[list[str]] = []

    def on_save(self, args, state, control, **kwargs):
        self.seen.append(_checkpoint_names(Path(args.output_dir)))


def test_pruning_keeps_the_checkpoints_written_last(tiny_body_path, toy_data, tmp_path) -> None:
    """save_total_limit keeps the checkpoints written last, the one just written always among them: a run resumed
    from checkpoint-3 keeps its checkpoint-4, and the checkpoint-6 written before, beyond the step resumed from,
    goes."""
    run(tiny_body_path, toy_data, tmp_path, **SHORT, max_steps=6, save_steps=3, save_total_limit=None)
    assert _checkpoint_names(tmp_path) == ["checkpoint-3", "checkpoint-6"]
    saves = CheckpointsAtSave()
    run(tiny_body_path, toy_data, tmp_path, [saves], resume=str(tmp_path / "checkpoint-3"), **SHORT, max_steps=6,
        save_steps=2, save_total_limit=1)
    assert saves.seen == [["checkpoint-4"], ["checkpoint-6"]]
    verify_checkpoint(tmp_path / "checkpoint-6")


class EditFirstCheckpoint(TrainerCallback):
    """Edits ``trainer_state.json`` of the first checkpoint saved, by hand as it were."""

    def __init__(self) -> None:
        self.edited: Path | None = None

    def on_save(self, args, state, control, **kwargs):
        if self.edited is None:
            self.edited = Path(args.output_dir) / f"checkpoint-{state.global_step}" / "trainer_state.json"
            self.edited.write_text(self.edited.read_text()[:-1] + ', "my_note": "keep me"}')


def test_pruning_keeps_a_file_changed_since_it_was_written(tiny_body_path, toy_data, tmp_path, caplog) -> None:
    """A file the checkpoint's manifest lists but that changed since setfit_lite wrote it is the user's: pruning
    removes the unchanged files around it and keeps it, with its folder, naming it in a warning."""
    edit = EditFirstCheckpoint()
    with caplog.at_level("WARNING"):
        run(tiny_body_path, toy_data, tmp_path, [edit], **SHORT, max_steps=4, save_steps=2, save_total_limit=1)
    assert _checkpoint_names(tmp_path) == ["checkpoint-2", "checkpoint-4"]
    assert sorted(p.name for p in (tmp_path / "checkpoint-2").iterdir()) == ["trainer_state.json"]
    assert edit.edited is not None and '"my_note": "keep me"}' in edit.edited.read_text()
    verify_checkpoint(tmp_path / "checkpoint-4")
    assert re.search(r"kept .*checkpoint-2: it holds trainer_state\.json, which changed since setfit_lite wrote",
                     caplog.text)


def test_re_saving_a_checkpoint_with_a_file_changed_since_it_was_written_is_refused(tiny_body_path, toy_data,
                                                                                    tmp_path) -> None:
    """A resumed run reaching the step of a checkpoint holding a file changed since setfit_lite wrote it does not
    replace it: a CheckpointError names the file, and the folder is left as it was."""
    run(tiny_body_path, toy_data, tmp_path, **SHORT, max_steps=4, save_steps=2, save_total_limit=None)
    edited = tmp_path / "checkpoint-4" / "trainer_state.json"
    edited.write_text(edited.read_text()[:-1] + ', "my_note": "keep me"}')
    before = _tree(tmp_path / "checkpoint-4")
    with pytest.raises(CheckpointError, match=r"checkpoint-4 holds trainer_state\.json, which changed since "
                                              r"setfit_lite wrote them: refusing to replace the checkpoint"):
        run(tiny_body_path, toy_data, tmp_path, resume=str(tmp_path / "checkpoint-2"), **SHORT, max_steps=4,
            save_steps=2, save_total_limit=None)
    assert _tree(tmp_path / "checkpoint-4") == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]
