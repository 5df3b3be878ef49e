"""A load that overlaps a save into the same folder gives the whole previous model or the whole new one, never a
mix of the two (the body of one and the head of the other) and never a spurious "does not match manifest.json".

Each test stops a load between two of its file reads and lets another thread save a different model into the
folder there: the save either completes (a loader that does not wait for it reads the rest from the new model) or
waits for the folder's lock, which the load holds until its last read. The same for the ONNX and static exports,
for a folder where no lock file can be made (read again when it changed), and for a save of a folder inside its
own load in one thread (an error, not a wait that never ends).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from conftest import make_sentences

import setfit_lite.heads
import setfit_lite.runtime.onnx
import setfit_lite.runtime.static
from setfit_lite import SetFitModel
from setfit_lite.runtime.onnx import OnnxSetFitModel
from setfit_lite.runtime.static import StaticSetFitModel
from setfit_lite.serialization import path_lock

TEXTS = ["a good and great film", "a bad and boring plot", "film plot"]
WAIT = 120  # seconds: far more than a save of the tiny model takes


def _fitted(body: str, seed: int, perturb: bool) -> SetFitModel:
    """The tiny body with a head fitted on ``seed``'s sentences; ``perturb``: its body's weights moved too."""
    model = SetFitModel.from_pretrained(body, labels=["negative", "positive"])
    if perturb:
        torch.manual_seed(seed)
        with torch.no_grad():
            for param in model.model_body.parameters():
                param.add_(0.3 * torch.randn_like(param))
    texts, labels = make_sentences(6, seed=seed)
    model.model_head = model.new_head(2, multi_label=False).fit(model.encode(texts), model.label_ids(labels))
    return model


@pytest.fixture(scope="module")
def two_models(tiny_body_path: str) -> tuple[SetFitModel, SetFitModel]:
    """Two models that differ in body and head."""
    return _fitted(tiny_body_path, 0, perturb=False), _fitted(tiny_body_path, 5, perturb=True)


def _proba(model: Any) -> np.ndarray:
    return np.asarray(model.predict_proba(TEXTS, as_numpy=True))


class OverlappingSave:
    """Runs ``save`` in another thread when `start` is called (from inside a load), and returns from `start` once
    that save has completed or is waiting for the folder's lock (seen at ``flock``)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, save: Callable[[], Any]) -> None:
        self.save, self.error = save, None
        self.thread: threading.Thread | None = None
        self.settled, self.waited = threading.Event(), threading.Event()
        real_flock = fcntl.flock

        def flock(fd: int, operation: int) -> None:
            if threading.current_thread() is self.thread and operation == fcntl.LOCK_EX:
                try:
                    return real_flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    self.waited.set()
                    self.settled.set()
            return real_flock(fd, operation)

        monkeypatch.setattr(fcntl, "flock", flock)

    def start(self) -> None:
        if self.thread is not None:  # a load read again: the save runs once
            return

        def run() -> None:
            try:
                self.save()
            except BaseException as exc:  # noqa: BLE001 - reported by `join`
                self.error = exc
            finally:
                self.settled.set()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        assert self.settled.wait(WAIT), "the save neither completed nor waited for the lock"

    def join(self) -> None:
        assert self.thread is not None, "the load never reached the point where the save starts"
        self.thread.join(WAIT)
        assert not self.thread.is_alive(), "the save never ended: it waits for a lock no one releases"
        if self.error is not None:
            raise self.error


@contextlib.contextmanager
def _save_after(monkeypatch: pytest.MonkeyPatch, module: Any, name: str, save: Callable[[], Any]
                ) -> Iterator[OverlappingSave]:
    """``module.name`` (a function a loader calls between two reads) runs, then ``save`` in another thread."""
    overlapping = OverlappingSave(monkeypatch, save)
    real = getattr(module, name)

    def then_save(*args: Any, **kwargs: Any) -> Any:
        result = real(*args, **kwargs)
        overlapping.start()
        return result

    monkeypatch.setattr(module, name, then_save)
    yield overlapping
    monkeypatch.setattr(module, name, real)


def test_torch_load_overlapping_a_save_gets_one_whole_model(tmp_path: Path, two_models: tuple,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    old, new = two_models
    folder = tmp_path / "model"
    old.save_pretrained(folder)
    with _save_after(monkeypatch, setfit_lite.heads, "load_head", lambda: new.save_pretrained(folder)) as saving:
        loaded = SetFitModel.from_pretrained(folder)  # its head read, then the save; then its body
    saving.join()
    np.testing.assert_allclose(_proba(loaded), _proba(old), atol=1e-6)  # not the old head on the new body
    for got, want in zip(loaded.model_body.state_dict().values(), old.model_body.state_dict().values()):
        assert torch.equal(got, want)
    assert saving.waited.is_set()  # the save waited for the load to end
    np.testing.assert_allclose(_proba(SetFitModel.from_pretrained(folder)), _proba(new), atol=1e-6)  # then saved
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]  # no lock file left beside it


def test_load_without_a_lock_file_reads_again_when_a_save_changed_the_folder(
        tmp_path: Path, two_models: tuple, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the loader cannot make a lock file (a read-only folder and parent: simulated for the loading thread
    only), it writes nothing, and a save that completed between two of its reads makes it read the folder again."""
    old, new = two_models
    folder = tmp_path / "model"
    old.save_pretrained(folder)
    loader = threading.current_thread()
    real_open = os.open

    def read_only_for_the_loader(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if threading.current_thread() is loader and flags & os.O_CREAT:
            raise PermissionError(13, "Permission denied (read-only for the loader)", os.fspath(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", read_only_for_the_loader)
    with _save_after(monkeypatch, setfit_lite.heads, "load_head", lambda: new.save_pretrained(folder)) as saving:
        loaded = SetFitModel.from_pretrained(folder)
    saving.join()
    monkeypatch.setattr(os, "open", real_open)
    np.testing.assert_allclose(_proba(loaded), _proba(new), atol=1e-6)  # read again, whole, after the save
    for got, want in zip(loaded.model_body.state_dict().values(), new.model_body.state_dict().values()):
        assert torch.equal(got, want)


def test_onnx_load_overlapping_an_export_gets_one_whole_model(tmp_path: Path, tier_models: dict,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "onnx"
    shutil.copytree(tier_models["folders"]["onnx"], folder)  # the "torch" model's export
    old = _proba(OnnxSetFitModel.load(folder))
    other = tier_models["torch-differentiable"]
    with _save_after(monkeypatch, setfit_lite.runtime.onnx, "_load_tokenizer",
                     lambda: other.export_onnx(folder)) as saving:
        loaded = OnnxSetFitModel.load(folder)  # its config and tokenizer read, then the export; then its graph
    saving.join()
    np.testing.assert_allclose(_proba(loaded), old, atol=1e-6)
    again = _proba(OnnxSetFitModel.load(folder))
    assert not np.allclose(again, old, atol=1e-4)  # the export did replace it
    np.testing.assert_allclose(again, _proba(other), atol=1e-4)


def test_static_load_overlapping_an_export_gets_one_whole_model(tmp_path: Path, tier_models: dict,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "static"
    shutil.copytree(tier_models["folders"]["static"], folder)
    old = _proba(StaticSetFitModel.load(folder))
    texts, labels = make_sentences(12, seed=3)
    export = lambda: tier_models["torch"].export_static(folder, texts, labels[::-1], pca_dims=16,  # noqa: E731
                                                        dtype="float32", refine_epochs=0)
    with _save_after(monkeypatch, setfit_lite.runtime.static, "static_tokenizer", export) as saving:
        loaded = StaticSetFitModel.load(folder)  # its configs and tokenizer read, then the export; then the table
    saving.join()
    np.testing.assert_allclose(_proba(loaded), old, atol=1e-6)
    assert not np.allclose(_proba(StaticSetFitModel.load(folder)), old, atol=1e-4)  # the export did replace it


def test_loads_share_the_lock_and_a_save_inside_a_load_in_one_thread_is_an_error(tmp_path: Path, two_models: tuple
                                                                                 ) -> None:
    old, new = two_models
    folder = tmp_path / "model"
    old.save_pretrained(folder)
    loaded: list[SetFitModel] = []
    with path_lock(folder, shared=True):  # a load under way: another load goes on beside it
        other = threading.Thread(target=lambda: loaded.append(SetFitModel.from_pretrained(folder)), daemon=True)
        other.start()
        other.join(WAIT)
        assert loaded and not other.is_alive()
        with pytest.raises(RuntimeError, match="locked by this thread already"):
            new.save_pretrained(folder)  # would wait for itself
    np.testing.assert_allclose(_proba(SetFitModel.from_pretrained(folder)), _proba(old), atol=1e-6)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]
    assert not [p.name for p in folder.iterdir() if p.name.startswith(".")]


@pytest.mark.parametrize("error", [OSError(30, "Read-only file system"), PermissionError(13, "Permission denied")])
def test_a_lock_file_that_cannot_be_removed_does_not_fail_the_finished_load(
        tmp_path: Path, two_models: tuple[SetFitModel, SetFitModel], monkeypatch: pytest.MonkeyPatch,
        error: OSError) -> None:
    """A stale marked lock file beside the folder (left by a killed load or save) on a mount the loader cannot
    write: the last holder's removal of it fails, and the load it guarded has already read the whole model. The
    load returns the model; the file stays for the next holder."""
    folder = tmp_path / "model"
    two_models[0].save_pretrained(folder)
    lock = tmp_path / ".model.lock"
    lock.write_bytes(b"setfit_lite path_lock\n")  # what a killed holder leaves
    real_unlink = os.unlink

    def unlink(path: Any, *args: Any, **kwargs: Any) -> None:
        if Path(path) == lock:
            raise error
        real_unlink(path, *args, **kwargs)

    monkeypatch.setattr(os, "unlink", unlink)
    loaded = SetFitModel.from_pretrained(folder)
    np.testing.assert_allclose(_proba(loaded), _proba(two_models[0]), atol=1e-6)
    assert lock.exists()
