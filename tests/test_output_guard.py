"""No writer writes over what it reads: every writer refuses an output that is, contains or lies inside its input
(however the path is spelled) before reading or writing anything; and concurrent saves into one folder all succeed.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import multiprocessing
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from conftest import make_sentences
from test_cli import _setfit_folder

from setfit_lite import SetFitModel, Trainer, TrainingArguments
from setfit_lite.cli import main

TEXTS, LABELS = make_sentences(6, seed=0)


@pytest.fixture(scope="module")
def fitted(tiny_body_path: str) -> SetFitModel:
    """The tiny body with a fitted logistic-regression head."""
    model = SetFitModel.from_pretrained(tiny_body_path, labels=["negative", "positive"])
    model.model_head = model.new_head(2, multi_label=False).fit(model.encode(TEXTS),
                                                                [int(y == "positive") for y in LABELS])
    return model


@pytest.fixture(scope="module")
def saved_model(tmp_path_factory: pytest.TempPathFactory, fitted: SetFitModel) -> Path:
    folder = tmp_path_factory.mktemp("guard_saved") / "model"
    fitted.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def setfit_folder(tmp_path_factory: pytest.TempPathFactory, tiny_body_path: str) -> Path:
    return _setfit_folder(tmp_path_factory.mktemp("guard_setfit") / "setfit", tiny_body_path)[0]


@pytest.fixture(scope="module")
def data_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("guard_data") / "train.jsonl"
    path.write_text("".join(json.dumps({"text": t, "label": y}) + "\n" for t, y in zip(TEXTS, LABELS)))
    return path


def snapshot(root: Path) -> dict[str, str]:
    """Every entry under ``root``: a file's sha256, a folder's or link's kind."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_symlink():
            out[rel] = f"link:{os.readlink(p)}"
        elif p.is_dir():
            out[rel] = "dir"
        else:
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def _cli(*argv: str) -> None:
    """``setfit-lite ARGV`` in this process; exit status 2 raises ValueError with the error line."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        status = main(list(argv))
    if status == 2:
        raise ValueError(err.getvalue())
    assert status == 0, err.getvalue()


def _checkpoints(source: Path, out: str, data: Path) -> None:
    args = TrainingArguments(output_dir=out, save_strategy="steps", save_steps=1, max_steps=2, num_epochs=1,
                             show_progress_bar=False, backend="cpu")
    Trainer(model=SetFitModel.from_pretrained(source), args=args,
            train_dataset={"text": TEXTS, "label": LABELS}).train()
    assert any(Path(out).glob("checkpoint-*"))


# writer name -> (the input folder it reads: fixture name, the write)
WRITERS: dict[str, tuple[str, Callable[[Path, str, Path], None]]] = {
    "save_pretrained": ("tiny_body_path", lambda src, out, data: SetFitModel.from_pretrained(src).save_pretrained(out)),
    "export_onnx": ("saved_model", lambda src, out, data: SetFitModel.from_pretrained(src).export_onnx(out)),
    "export_static": ("saved_model", lambda src, out, data: SetFitModel.from_pretrained(src).export_static(
        out, TEXTS, pca_dims=None, refine_epochs=0)),
    "checkpoints": ("tiny_body_path", _checkpoints),
    "cli_export": ("saved_model", lambda src, out, data: _cli("export", str(src), out)),
    "cli_export_static": ("saved_model", lambda src, out, data: _cli("export", str(src), out, "--static",
                                                                     "--data", str(data), "--pca-dims", "8")),
    "cli_convert": ("setfit_folder", lambda src, out, data: _cli("convert", str(src), out)),
    "cli_train": ("tiny_body_path", lambda src, out, data: _cli("train", str(data), "--model", str(src),
                                                                "--output-dir", out, "--max-steps", "2")),
}


def _output(relation: str, source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The output path standing in ``relation`` to ``source`` (which is ``tmp_path/outer/input``)."""
    if relation == "same":
        return str(source)
    if relation == "same_via_symlink":
        link = tmp_path / "link"
        link.symlink_to(source, target_is_directory=True)
        return str(link)
    if relation == "same_via_dotdot":
        (tmp_path / "cwd").mkdir()
        monkeypatch.chdir(tmp_path / "cwd")
        return "../outer/./input/"
    if relation == "inside_input":
        return str(source / "out")
    if relation == "contains_input":
        return str(source.parent)
    assert relation == "sibling"
    return str(tmp_path / "sibling")


RELATIONS = ["same", "same_via_symlink", "same_via_dotdot", "inside_input", "contains_input"]


@pytest.mark.parametrize("relation", [*RELATIONS, "sibling"])
@pytest.mark.parametrize("writer", list(WRITERS))
def test_writer_refuses_an_output_over_its_input(writer: str, relation: str, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest,
                                                 data_file: Path) -> None:
    if writer in ("export_onnx", "cli_export") and relation == "sibling":
        pytest.importorskip("onnx")
    fixture, write = WRITERS[writer]
    source = shutil.copytree(request.getfixturevalue(fixture), tmp_path / "outer" / "input")
    out = _output(relation, source, tmp_path, monkeypatch)
    before = snapshot(tmp_path / "outer")
    if relation == "sibling":
        write(source, out, data_file)
        assert Path(out).is_dir()
    else:
        with pytest.raises(ValueError) as refused:
            write(source, out, data_file)
        message = str(refused.value)
        assert out in message and str(source) in message, message  # names both paths as given / as read
        assert "pass " in message  # and says what to pass instead
    assert snapshot(tmp_path / "outer") == before  # the input, byte for byte, and nothing written beside it


def test_cli_export_into_the_model_folder_keeps_the_model(tmp_path: Path, saved_model: Path,
                                                          capsys: pytest.CaptureFixture) -> None:
    model_dir = shutil.copytree(saved_model, tmp_path / "model")
    before = snapshot(model_dir)
    assert main(["export", str(model_dir), str(model_dir)]) == 2
    assert f"the output {model_dir} is the input {model_dir}" in capsys.readouterr().err
    assert snapshot(model_dir) == before
    np.testing.assert_array_equal(SetFitModel.from_pretrained(model_dir).predict_proba(TEXTS, as_numpy=True),
                                  SetFitModel.from_pretrained(saved_model).predict_proba(TEXTS, as_numpy=True))


def test_save_pretrained_back_into_its_own_saved_model_folder(tmp_path: Path, saved_model: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """setfit's idiom of overwriting a model the library saved is kept: only the files its manifest lists change;
    inside or around that folder is refused."""
    folder = shutil.copytree(saved_model, tmp_path / "outer" / "input")
    (folder / "notes.txt").write_text("mine")
    model = SetFitModel.from_pretrained(folder)
    for same in (folder, _output("same_via_symlink", folder, tmp_path, monkeypatch)):
        model.save_pretrained(same)
    assert (folder / "notes.txt").read_text() == "mine"
    np.testing.assert_array_equal(SetFitModel.from_pretrained(folder).predict_proba(TEXTS, as_numpy=True),
                                  model.predict_proba(TEXTS, as_numpy=True))
    before = snapshot(tmp_path / "outer")
    for relation in ("inside_input", "contains_input"):
        with pytest.raises(ValueError, match="pass "):
            model.save_pretrained(_output(relation, folder, tmp_path, monkeypatch))
    assert snapshot(tmp_path / "outer") == before


def test_checkpoints_refuse_an_output_dir_inside_the_resumed_checkpoint(tmp_path: Path, tiny_body_path: str) -> None:
    _checkpoints(Path(tiny_body_path), str(tmp_path / "run"), Path())
    checkpoint = tmp_path / "run" / "checkpoint-2"
    before = snapshot(tmp_path / "run")
    for out in (checkpoint, checkpoint / "more"):
        args = TrainingArguments(output_dir=str(out), save_strategy="steps", save_steps=1, max_steps=3, num_epochs=1,
                                 show_progress_bar=False, backend="cpu")
        trainer = Trainer(model=SetFitModel.from_pretrained(tiny_body_path), args=args,
                          train_dataset={"text": TEXTS, "label": LABELS})
        with pytest.raises(ValueError, match=f"{out}.*{checkpoint}"):
            trainer.train(resume_from_checkpoint=str(checkpoint))
    assert snapshot(tmp_path / "run") == before


@pytest.mark.parametrize("target", ["data", "model_file"])
def test_search_output_never_replaces_an_input(target: str, tmp_path: Path, tiny_body_path: str,
                                               data_file: Path) -> None:
    data = shutil.copy(data_file, tmp_path / "train.jsonl")
    model = shutil.copytree(tiny_body_path, tmp_path / "body")
    output = data if target == "data" else str(model / "config.json")
    before = snapshot(tmp_path)
    with pytest.raises(ValueError, match="pass "):
        _cli("search", str(data), "--model", str(model), "--eval-data", str(data), "--n-trials", "1",
             "--output", str(output))
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("relation", RELATIONS)
def test_check_output_path_relations(relation: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from setfit_lite.serialization import check_output_path

    source = tmp_path / "outer" / "input"
    source.mkdir(parents=True)
    out = _output(relation, source, tmp_path, monkeypatch)
    with pytest.raises(ValueError, match=f"the output {out} "):
        check_output_path(out, source)
    check_output_path(str(tmp_path / "sibling"), source, None, tmp_path / "missing")
    if relation.startswith("same"):
        check_output_path(out, source, allow_same=True)


# ------------------------------------------------------------------------------ concurrent saves into one folder


def _save_after(barrier: multiprocessing.synchronize.Barrier, model: SetFitModel, folder: Path) -> None:
    barrier.wait(timeout=60)
    model.save_pretrained(folder)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.parametrize("existing", [False, True], ids=["new_folder", "existing_folder"])
def test_concurrent_saves_into_one_folder_all_succeed(existing: bool, tmp_path: Path, fitted: SetFitModel,
                                                      tiny_body_path: str) -> None:
    other = SetFitModel.from_pretrained(tiny_body_path, labels=["negative", "positive"])
    other.model_head = other.new_head(2, multi_label=False).fit(other.encode(TEXTS),
                                                                [int(y == "negative") for y in LABELS])
    folder = tmp_path / "shared"
    if existing:
        other.save_pretrained(folder)
        (folder / "notes.txt").write_text("mine")
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(8)
    workers = [context.Process(target=_save_after, args=(barrier, (fitted, other)[i % 2], folder))
               for i in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=180)
    assert [w.exitcode for w in workers] == [0] * 8
    loaded = SetFitModel.from_pretrained(folder).predict_proba(TEXTS, as_numpy=True)  # complete: manifest checked
    assert any(np.array_equal(loaded, m.predict_proba(TEXTS, as_numpy=True)) for m in (fitted, other))
    assert [p.name for p in tmp_path.iterdir()] == ["shared"]  # no staging folder, no lock file left
    assert not [p.name for p in folder.iterdir() if p.name.startswith(".")]
    assert not existing or (folder / "notes.txt").read_text() == "mine"
