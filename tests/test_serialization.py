"""Atomic writes, JSON/safetensors helpers, pickle refusal, integrity manifests, saving into existing folders."""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from setfit_lite.serialization import (
    SAVE_JOURNAL_NAME,
    atomic_directory,
    atomic_update_directory,
    atomic_write_bytes,
    atomic_write_text,
    find_pickle_files,
    load_json,
    load_tensors,
    path_lock,
    recover_interrupted_save,
    refuse_pickles,
    save_json,
    save_tensors,
    sha256_file,
    verify_manifest,
    write_manifest,
)


def _leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith("."))


# ------------------------------------------------------------------------------------------ atomic writes


def test_atomic_directory_creates_and_replaces(tmp_path: Path) -> None:
    target = tmp_path / "model"
    with atomic_directory(target) as tmp:
        assert tmp.parent == tmp_path and tmp.name.startswith(".") and tmp.is_dir()
        assert not target.exists()
        (tmp / "a.txt").write_text("one")
    assert (target / "a.txt").read_text() == "one"

    with atomic_directory(target) as tmp:
        (tmp / "b.txt").write_text("two")
    assert sorted(p.name for p in target.iterdir()) == ["b.txt"]
    assert _leftovers(tmp_path) == []


def test_atomic_directory_keeps_old_target_on_error(tmp_path: Path) -> None:
    target = tmp_path / "model"
    target.mkdir()
    (target / "keep.txt").write_text("old")
    with pytest.raises(RuntimeError, match="boom"):
        with atomic_directory(target) as tmp:
            (tmp / "partial.txt").write_text("half")
            raise RuntimeError("boom")
    assert sorted(p.name for p in target.iterdir()) == ["keep.txt"]
    assert (target / "keep.txt").read_text() == "old"
    assert _leftovers(tmp_path) == []


def test_atomic_directory_error_without_previous_target(tmp_path: Path) -> None:
    with pytest.raises(KeyError):
        with atomic_directory(tmp_path / "sub" / "model"):
            raise KeyError("x")
    assert list((tmp_path / "sub").iterdir()) == []


def test_atomic_write_text_and_bytes(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    atomic_write_text(path, "héllo")
    atomic_write_text(path, "second")
    assert path.read_text(encoding="utf-8") == "second"
    atomic_write_bytes(tmp_path / "b.bin", b"\x00\x01")
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\x01"
    assert _leftovers(tmp_path) == []


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork (and fcntl)")
def test_path_lock_removes_only_a_lock_file_of_its_own(tmp_path: Path) -> None:
    """A file of the lock's name beside the target that setfit_lite did not create (the user's, another tool's
    lock) is locked as it is, still excluding other holders, and never removed nor written; a lock file
    setfit_lite created, or one that a killed holder left, is removed on release."""
    target, lock = tmp_path / "model", tmp_path / ".model.lock"
    lock.write_text("the user's own\n")
    with atomic_directory(target) as tmp:
        (tmp / "a.txt").write_text("a")
    entered = threading.Event()

    def second_holder() -> None:
        with path_lock(target):
            entered.set()

    with path_lock(target):
        waiter = threading.Thread(target=second_holder)
        waiter.start()
        assert not entered.wait(0.3)  # the user's file still locks
    waiter.join(timeout=10)
    assert entered.is_set() and lock.read_text() == "the user's own\n"

    lock.unlink()
    with path_lock(target):
        assert lock.is_file()
    assert not os.path.lexists(lock)
    pid = os.fork()
    if pid == 0:  # a holder killed while it holds the lock leaves the file
        with path_lock(target):
            os._exit(0)
    os.waitpid(pid, 0)
    assert lock.is_file()
    with path_lock(target):
        pass
    assert _leftovers(tmp_path) == []


# ------------------------------------------------------------------------------------------------- JSON


def test_save_json_sorted_indented(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    save_json(path, {"b": 1, "a": [1, 2], "é": "ü"})
    text = path.read_text(encoding="utf-8")
    assert text == json.dumps({"a": [1, 2], "b": 1, "é": "ü"}, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    assert load_json(path, what="test config") == {"a": [1, 2], "b": 1, "é": "ü"}


def test_load_json_errors_name_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    with pytest.raises(ValueError, match=r"head config file .*missing\.json is missing"):
        load_json(missing, what="head config")
    bad = tmp_path / "bad.json"
    bad.write_text('{"a": 1', encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.json is not valid JSON"):
        load_json(bad, what="model config")


# ---------------------------------------------------------------------------------------------- tensors


def test_tensors_round_trip(tmp_path: Path) -> None:
    weight = torch.randn(3, 4)
    tensors = {
        "np64": np.arange(6, dtype=np.float64).reshape(2, 3),
        "ints": np.array([0, 2, 5], dtype=np.int64),
        "torch": weight,
        "tied": weight,  # shares memory with "torch": must still save
        "view": weight[1],
    }
    path = tmp_path / "t.safetensors"
    save_tensors(path, tensors)
    loaded = load_tensors(path)
    assert set(loaded) == set(tensors)
    assert loaded["np64"].dtype == torch.float64 and np.array_equal(loaded["np64"].numpy(), tensors["np64"])
    assert loaded["ints"].dtype == torch.int64
    assert torch.equal(loaded["tied"], weight) and torch.equal(loaded["view"], weight[1])


def test_save_tensors_rejects_objects(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="'bad'"):
        save_tensors(tmp_path / "t.safetensors", {"bad": np.array([object()])})


def test_load_tensors_truncated_or_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "head.safetensors"
    save_tensors(path, {"w": np.ones((16, 16))})
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 100])
    with pytest.raises(ValueError, match=r"head\.safetensors is truncated or corrupt"):
        load_tensors(path)
    path.write_bytes(b"\xff" * 8 + data[8:])  # header length field garbled
    with pytest.raises(ValueError, match=r"head\.safetensors"):
        load_tensors(path)
    path.write_bytes(data[:8] + b"{not json" + data[17:])
    with pytest.raises(ValueError, match=r"head\.safetensors"):
        load_tensors(path)
    with pytest.raises(ValueError, match=r"nothing\.safetensors is missing"):
        load_tensors(tmp_path / "nothing.safetensors")


# ---------------------------------------------------------------------------------------------- pickles


def _torch_style_bin(path: Path) -> None:
    """A zip archive laid out like torch.save output (archive/data.pkl), written without pickle."""
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("archive/data.pkl", b"\x80\x02}q\x00.")
        zf.writestr("archive/version", b"3\n")


def test_find_and_refuse_pickles(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    for name in ("a.pkl", "b.pickle", "c.joblib", "d.pt", "sub/e.pth"):
        (tmp_path / name).write_bytes(b"anything")
    _torch_style_bin(tmp_path / "pytorch_model.bin")
    (tmp_path / "legacy.bin").write_bytes(b"\x80\x04\x95\x00")  # raw pickle, protocol 4
    (tmp_path / "vectors.bin").write_bytes(b"\x00\x01raw floats")  # not a pickle
    save_tensors(tmp_path / "model.safetensors", {"w": np.zeros(2)})
    (tmp_path / "config.json").write_text("{}")

    found = [p.relative_to(tmp_path).as_posix() for p in find_pickle_files(tmp_path)]
    assert found == ["a.pkl", "b.pickle", "c.joblib", "d.pt", "legacy.bin", "pytorch_model.bin", "sub/e.pth"]

    with pytest.raises(ValueError, match="allow_pickle=True") as err:
        refuse_pickles(tmp_path)
    assert "pytorch_model.bin" in str(err.value) and "sub/e.pth" in str(err.value)
    assert len(refuse_pickles(tmp_path, allow_pickle=True)) == 7


def test_refuse_pickles_clean_folder(tmp_path: Path) -> None:
    save_json(tmp_path / "config.json", {})
    assert refuse_pickles(tmp_path) == []
    assert find_pickle_files(tmp_path / "absent") == []


# --------------------------------------------------------------------------------------------- manifest


def _model_folder(root: Path) -> Path:
    (root / "head").mkdir(parents=True)
    save_tensors(root / "head" / "head.safetensors", {"w": np.arange(64, dtype=np.float32)})
    save_json(root / "config.json", {"labels": ["a", "b"]})
    return root


def test_import_loads_no_torch() -> None:
    """ONNX inference saves and loads through this package without torch: importing it must not load torch."""
    code = "import sys, setfit_lite.serialization; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stdout + out.stderr


def test_sha256_file(tmp_path: Path) -> None:
    path = tmp_path / "x"
    path.write_bytes(b"abc" * 1000)
    assert sha256_file(path, chunk_size=7) == hashlib.sha256(b"abc" * 1000).hexdigest()
    assert sha256_file(path) == hashlib.sha256(b"abc" * 1000).hexdigest()  # one chunk
    (tmp_path / "empty").write_bytes(b"")
    assert sha256_file(tmp_path / "empty") == hashlib.sha256(b"").hexdigest()


def test_manifest_round_trip_and_tampering(tmp_path: Path) -> None:
    folder = _model_folder(tmp_path / "m")
    entries = write_manifest(folder)
    assert sorted(entries) == ["config.json", "head/head.safetensors"]
    verify_manifest(folder)
    (folder / "extra.txt").write_text("not listed")  # extra files are ignored
    verify_manifest(folder)

    weights = folder / "head" / "head.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF  # tensor bytes changed: the header still parses, only the manifest notices
    weights.write_bytes(bytes(data))
    load_tensors(weights)
    with pytest.raises(ValueError, match=r"changed \(truncated or tampered\): head/head\.safetensors") as refused:
        verify_manifest(folder)
    assert "edited by hand" not in str(refused.value)  # the hint is for JSON files a user may edit, not weights

    weights.write_bytes(bytes(data[:-10]))
    (folder / "config.json").unlink()
    with pytest.raises(ValueError, match=r"missing: config\.json.*head/head\.safetensors"):
        verify_manifest(folder)


def test_manifest_lists_the_model_card_but_does_not_verify_it(tmp_path: Path) -> None:
    """README.md (the model card) is documentation: listed (the library wrote it), but edited or deleted it leaves
    the folder loadable; any other file is still verified."""
    folder = _model_folder(tmp_path / "m")
    (folder / "README.md").write_text("# card\n")
    assert "README.md" in write_manifest(folder)
    (folder / "README.md").write_text("# my own card\nIntended use: triage only.\n")
    verify_manifest(folder)
    (folder / "README.md").unlink()
    verify_manifest(folder)
    (folder / "head" / "README.md").write_text("not the card")  # only the folder's own card is exempt
    write_manifest(folder)
    (folder / "head" / "README.md").write_text("changed")
    with pytest.raises(ValueError, match=r"changed \(truncated or tampered\): head/README\.md"):
        verify_manifest(folder)


def test_manifest_follows_symlinked_files(tmp_path: Path) -> None:
    blobs = tmp_path / "blobs"  # hub-cache layout: snapshot files are symlinks to blobs elsewhere
    blobs.mkdir()
    (blobs / "abc123").write_text('{"x": 1}')
    folder = tmp_path / "snapshot"
    folder.mkdir()
    (folder / "config.json").symlink_to(blobs / "abc123")
    write_manifest(folder)
    verify_manifest(folder)
    (blobs / "abc123").write_text('{"x": 2}')
    with pytest.raises(ValueError, match="config.json"):
        verify_manifest(folder)


def test_manifest_invalid(tmp_path: Path) -> None:
    folder = _model_folder(tmp_path / "m")
    with pytest.raises(ValueError, match=r"manifest file .*manifest\.json is missing"):
        verify_manifest(folder)
    for bad in ("../outside", "/etc/passwd", "head/../../x"):
        save_json(folder / "manifest.json", {bad: "00"})
        with pytest.raises(ValueError, match="outside the folder"):
            verify_manifest(folder)
    save_json(folder / "manifest.json", ["not", "a", "mapping"])
    with pytest.raises(ValueError, match="must map"):
        verify_manifest(folder)


# -------------------------------------------------------------------------------- updating an existing folder


def _tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def _old_model_folder(root: Path) -> Path:
    """A folder holding a previous 'model' (listed in its manifest) and the user's own files."""
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("old a")
    (root / "sub" / "old.txt").write_text("old only")
    write_manifest(root)
    (root / "keep.txt").write_text("mine")
    (root / "notes").mkdir()
    (root / "notes" / "n.txt").write_text("my notes")
    return root


def test_atomic_update_replaces_only_owned_files(tmp_path: Path) -> None:
    folder = _old_model_folder(tmp_path / "m")
    with atomic_update_directory(folder) as tmp:
        assert tmp.parent == folder and tmp.name.startswith(".")
        assert (folder / "a.txt").read_text() == "old a"  # nothing changes before the block ends
        (tmp / "a.txt").write_text("new a")
        (tmp / "head").mkdir()
        (tmp / "head" / "w.txt").write_text("new w")
    files = _tree(folder)
    assert files.pop("manifest.json")
    assert files == {"a.txt": "new a", "head/w.txt": "new w", "keep.txt": "mine", "notes/n.txt": "my notes"}
    assert not (folder / "sub").exists()  # the previous model's folder it emptied is removed
    assert sorted(json.loads((folder / "manifest.json").read_text())["files"]) == ["a.txt", "head/w.txt"]
    verify_manifest(folder)
    assert _leftovers(folder) == []


def test_atomic_update_keeps_stale_files_changed_since(tmp_path: Path) -> None:
    folder = _old_model_folder(tmp_path / "m")
    (folder / "sub" / "old.txt").write_text("edited by the user")
    (folder / "sub" / "mine.txt").write_text("user file in a model folder")
    with atomic_update_directory(folder) as tmp:
        (tmp / "a.txt").write_text("new a")
    assert (folder / "sub" / "old.txt").read_text() == "edited by the user"
    assert (folder / "sub" / "mine.txt").exists()


def test_atomic_update_refuses_a_listed_file_changed_since(tmp_path: Path) -> None:
    """A file the previous manifest lists whose digest no longer matches is the user's: a write over it is refused,
    naming it, before anything is written; written back as it was, the update goes through."""
    folder = _old_model_folder(tmp_path / "m")
    (folder / "a.txt").write_text("edited by the user")
    before = _tree(folder)
    with pytest.raises(FileExistsError, match=r"it holds a\.txt, which changed since setfit_lite wrote them"):
        with atomic_update_directory(folder) as tmp:
            (tmp / "a.txt").write_text("new a")
    assert _tree(folder) == before and _leftovers(folder) == []
    (folder / "keep.txt").write_text("mine, of a name the model now writes")
    with pytest.raises(FileExistsError, match=r"keep\.txt, which setfit_lite did not write .* and a\.txt, which "):
        with atomic_update_directory(folder) as tmp:
            (tmp / "a.txt").write_text("new a")
            (tmp / "keep.txt").write_text("new keep")
    (folder / "a.txt").write_text("old a")
    with atomic_update_directory(folder) as tmp:
        (tmp / "a.txt").write_text("new a")
    assert (folder / "a.txt").read_text() == "new a" and (folder / "keep.txt").read_text().startswith("mine")


def test_atomic_update_error_leaves_folder_unchanged(tmp_path: Path) -> None:
    folder = _old_model_folder(tmp_path / "m")
    before = _tree(folder)
    with pytest.raises(RuntimeError, match="boom"):
        with atomic_update_directory(folder) as tmp:
            (tmp / "a.txt").write_text("half")
            raise RuntimeError("boom")
    assert _tree(folder) == before and _leftovers(folder) == []


def test_atomic_update_refuses_a_file_and_conflicts(tmp_path: Path) -> None:
    path = tmp_path / "somefile"
    path.write_text("precious")
    with pytest.raises(FileExistsError, match=r"somefile: it exists and is not a folder"):
        with atomic_update_directory(path):
            pytest.fail("must not get here")
    assert path.read_text() == "precious"

    folder = tmp_path / "m"
    (folder / "a.txt").mkdir(parents=True)  # a folder where the new content has a file
    with pytest.raises(FileExistsError, match=r"a\.txt is a folder where the model writes a file"):
        with atomic_update_directory(folder) as tmp:
            (tmp / "a.txt").write_text("x")
    assert (folder / "a.txt").is_dir() and _leftovers(folder) == []


def test_atomic_update_new_and_relative_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with atomic_update_directory("new/nested") as tmp:
        (tmp / "a.txt").write_text("a")
    assert sorted(_tree(tmp_path / "new" / "nested")) == ["a.txt", "manifest.json"]
    (tmp_path / "keep.txt").write_text("mine")
    with atomic_update_directory(".") as tmp:
        (tmp / "b.txt").write_text("b")
    assert (tmp_path / "b.txt").read_text() == "b" and (tmp_path / "keep.txt").read_text() == "mine"
    assert _leftovers(tmp_path) == []


def test_recover_interrupted_save_completes_a_committed_update(tmp_path: Path) -> None:
    """A journal left by a killed save is completed (idempotently) by the next load or save."""
    folder = _old_model_folder(tmp_path / "m")
    stage = folder / ".setfit_lite-save-abc"
    (stage / "head").mkdir(parents=True)
    (stage / "head" / "w.txt").write_text("new w")
    (folder / "a.txt").write_text("new a")  # already moved in before the kill
    save_json(folder / SAVE_JOURNAL_NAME, {"staging": stage.name, "write": ["a.txt", "head/w.txt"],
                                           "remove": ["sub/old.txt"]})
    assert recover_interrupted_save(folder) is True
    assert _tree(folder) == {"a.txt": "new a", "head/w.txt": "new w", "keep.txt": "mine",
                             "manifest.json": (folder / "manifest.json").read_text(), "notes/n.txt": "my notes"}
    assert _leftovers(folder) == [] and recover_interrupted_save(folder) is False

    save_json(folder / SAVE_JOURNAL_NAME, {"staging": "../elsewhere", "write": [], "remove": []})
    with pytest.raises(ValueError, match="save journal .* is invalid"):
        recover_interrupted_save(folder)


def _entries(root: Path) -> dict[str, object]:
    """Every entry under ``root``, links not followed: a link's target, a file's bytes, or "dir"."""
    found: dict[str, object] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            rel = path.relative_to(root).as_posix()
            found[rel] = os.readlink(path) if path.is_symlink() else "dir" if path.is_dir() else path.read_bytes()
    return found


def _hostile_journal(case: str, folder: Path, home: Path) -> tuple[dict, str]:
    """A save journal (and staging folder) in ``folder`` that names what no save of setfit_lite wrote, with the
    problem the refusal names; ``home`` holds the user's files elsewhere."""
    stage = folder / ".setfit_lite-save-x"
    if case == "staging-link":  # the journal moves the user's files from anywhere into the folder
        stage.symlink_to(home, target_is_directory=True)
        return {"write": ["Documents/thesis.txt"], "remove": []}, "is a symbolic link or not a folder"
    if case == "staging-file":
        stage.write_text("not a folder")
        return {"write": [], "remove": []}, "is a symbolic link or not a folder"
    stage.mkdir()
    (stage / "a.txt").write_text("staged a")
    if case == "dotdot":
        return {"write": ["sub/../a.txt"], "remove": []}, "is not a plain relative path"
    if case == "absolute":
        return {"write": ["a.txt"], "remove": [str(home / "Documents" / "thesis.txt")]}, "is not a plain relative"
    if case == "folder-link":  # writes (and removes) through a link in the folder, into the user's files
        (folder / "docs").symlink_to(home / "Documents", target_is_directory=True)
        (stage / "docs").mkdir()
        (stage / "docs" / "thesis.txt").write_text("replaced")
        return {"write": ["docs/thesis.txt"], "remove": ["docs/todo.txt"]}, "docs is a symbolic link"
    if case == "staged-folder-link":  # moves the user's files through a link in the staging folder
        (stage / "Documents").symlink_to(home / "Documents", target_is_directory=True)
        return {"write": ["Documents/thesis.txt"], "remove": []}, "Documents is a symbolic link"
    if case == "staged-file-link":
        (stage / "thesis.txt").symlink_to(home / "Documents" / "thesis.txt")
        return {"write": ["thesis.txt"], "remove": []}, "is a symbolic link or not a file"
    if case == "replaces-users-file":  # the user's keep.txt: no manifest of setfit_lite's lists it
        (stage / "keep.txt").write_text("replaced")
        return {"write": ["keep.txt"], "remove": []}, "would replace keep.txt, which setfit_lite did not write"
    raise AssertionError(case)


def _check_can_update(folder: Path) -> None:
    from setfit_lite.serialization import check_can_update

    check_can_update(folder)


def _from_pretrained(folder: Path) -> None:
    from setfit_lite import SetFitModel

    SetFitModel.from_pretrained(folder)


@pytest.mark.parametrize("loader", [recover_interrupted_save, _from_pretrained, _check_can_update],
                         ids=["recover", "from_pretrained", "check_can_update"])
@pytest.mark.parametrize("case", ["staging-link", "staging-file", "dotdot", "absolute", "folder-link",
                                  "staged-folder-link", "staged-file-link", "replaces-users-file"])
def test_recovery_refuses_a_journal_no_save_wrote(case: str, loader: object, tmp_path: Path) -> None:
    """A save journal in a folder (an untrusted download, say) that names anything outside the folder, a path
    through a symbolic link on either side, or a file of the user's to replace is refused, naming the problem,
    by every loader and by the check before a save: nothing is moved or removed, here or elsewhere."""
    home = tmp_path / "home"
    (home / "Documents").mkdir(parents=True)
    (home / "Documents" / "thesis.txt").write_text("my only copy")
    (home / "Documents" / "todo.txt").write_text("mine too")
    folder = _old_model_folder(tmp_path / "m")
    journal, problem = _hostile_journal(case, folder, home)
    save_json(folder / SAVE_JOURNAL_NAME, {"staging": ".setfit_lite-save-x", **journal})
    before = _entries(tmp_path)
    with pytest.raises(ValueError, match=f"save journal .* is invalid: .*{problem}.*Nothing was moved or removed"):
        loader(folder)
    assert _entries(tmp_path) == before


def test_recovery_removes_only_files_setfit_lite_wrote(tmp_path: Path) -> None:
    """A journal's files to remove are removed only if the folder's setfit_lite manifest lists them, unchanged:
    the user's files it names stay."""
    folder = _old_model_folder(tmp_path / "m")
    (folder / ".setfit_lite-save-x").mkdir()
    save_json(folder / SAVE_JOURNAL_NAME, {"staging": ".setfit_lite-save-x", "write": [],
                                           "remove": ["keep.txt", "notes/n.txt", "sub/old.txt"]})
    assert recover_interrupted_save(folder) is True
    manifest = (folder / "manifest.json").read_text()
    assert _tree(folder) == {"a.txt": "old a", "keep.txt": "mine", "manifest.json": manifest, "notes/n.txt": "my notes"}
    assert _leftovers(folder) == []


# ------------------------------------------------------------------------ SetFitModel.save_pretrained


@pytest.fixture(scope="module")
def old_and_new(tiny_body_path: str) -> tuple:
    """OLD: the tiny body with a fitted head. NEW: a perturbed body, no head (so OLD's head/ becomes stale)."""
    from conftest import make_sentences

    from setfit_lite import SetFitModel

    texts, labels = make_sentences(6, seed=0)
    old = SetFitModel.from_pretrained(tiny_body_path, labels=["negative", "positive"])
    old.model_head = old.new_head(2, multi_label=False).fit(old.encode(texts), [int(y == "positive") for y in labels])
    new = SetFitModel.from_pretrained(tiny_body_path)
    torch.manual_seed(1)
    with torch.no_grad():
        for param in new.model_body.parameters():
            param.add_(0.05 * torch.randn_like(param))
    return old, new, texts


def _user_files(folder: Path) -> None:
    (folder / "keep.txt").write_text("mine")
    (folder / "notes").mkdir()
    (folder / "notes" / "n.txt").write_text("my notes")


def _save_beside_user_files(model: object, folder: Path) -> None:
    """A new folder with the user's files in it, then ``model`` saved into it."""
    folder.mkdir()
    _user_files(folder)
    model.save_pretrained(folder)


def _assert_user_files(folder: Path) -> None:
    assert (folder / "keep.txt").read_text() == "mine"
    assert (folder / "notes" / "n.txt").read_text() == "my notes"


def test_save_pretrained_into_existing_folder_keeps_user_files(tmp_path: Path, old_and_new: tuple) -> None:
    from setfit_lite import SetFitModel

    old, new, texts = old_and_new
    folder = tmp_path / "somedir"
    _save_beside_user_files(old, folder)
    _assert_user_files(folder)
    np.testing.assert_array_equal(SetFitModel.from_pretrained(folder).predict_proba(texts), old.predict_proba(texts))

    new.save_pretrained(folder)  # no head: the previous model's head/ goes, the user's files stay
    _assert_user_files(folder)
    assert not (folder / "head").exists() and _leftovers(folder) == []
    loaded = SetFitModel.from_pretrained(folder)
    assert loaded.model_head is None
    np.testing.assert_array_equal(loaded.encode(texts), new.encode(texts))


def test_save_pretrained_refuses_a_file(tmp_path: Path, old_and_new: tuple) -> None:
    old, _, _ = old_and_new
    path = tmp_path / "somefile"
    path.write_text("precious")
    with pytest.raises(FileExistsError, match="somefile: it exists and is not a folder"):
        old.save_pretrained(path)
    assert path.read_text() == "precious" and sorted(p.name for p in tmp_path.iterdir()) == ["somefile"]


def test_save_pretrained_under_a_file_names_the_file(tmp_path: Path, old_and_new: tuple) -> None:
    old, _, _ = old_and_new
    path = tmp_path / "somefile"
    path.write_text("precious")
    with pytest.raises(FileExistsError, match=r"cannot save into .*somefile/x: .*somefile above it exists and is "
                                              r"not a folder"):
        old.save_pretrained(path / "x")
    assert path.read_text() == "precious" and sorted(p.name for p in tmp_path.iterdir()) == ["somefile"]


@pytest.mark.parametrize("card", [5, b"# card", ["# card"]])
def test_save_pretrained_refuses_a_model_card_that_is_not_a_str(tmp_path: Path, old_and_new: tuple,
                                                                card: object) -> None:
    old, _, _ = old_and_new
    with pytest.raises(TypeError, match=rf"model_card must be .* a str, or None .*; got {type(card).__name__}"):
        old.save_pretrained(tmp_path / "model", model_card=card)
    assert list(tmp_path.iterdir()) == []


def test_save_pretrained_dot_and_relative(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          old_and_new: tuple) -> None:
    from setfit_lite import SetFitModel

    old, _, texts = old_and_new
    monkeypatch.chdir(tmp_path)
    _user_files(tmp_path)
    old.save_pretrained(".")
    old.save_pretrained("rel/model")
    _assert_user_files(tmp_path)
    for where in (".", "rel/model"):
        np.testing.assert_array_equal(SetFitModel.from_pretrained(where).predict_proba(texts),
                                      old.predict_proba(texts))


# kill -9 during a save: every instant leaves the previous model or the new one

_FS_OPS = ("replace", "rename", "unlink", "remove", "rmdir", "mkdir", "fsync")


def _save_in_child(model, folder: Path, kill_before_op: int | None = None, op_sleep: float = 0.0,
                   kill_after: float | None = None) -> tuple[int, int]:
    """Save in a forked child that is SIGKILLed before its ``kill_before_op``-th file-system operation, or by the
    parent after ``kill_after`` seconds. Returns (status, number of operations the child counted)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: count (and maybe slow down) file-system operations, save, report, exit
        os.close(read_end)
        code = 0
        try:
            count = [0]

            def instrument(name: str) -> None:
                real = getattr(os, name)

                def op(*args, **kwargs):
                    count[0] += 1
                    if count[0] == kill_before_op:
                        os.kill(os.getpid(), signal.SIGKILL)
                    time.sleep(op_sleep)
                    return real(*args, **kwargs)

                setattr(os, name, op)

            for name in _FS_OPS:
                instrument(name)
            model.save_pretrained(folder)
            os.write(write_end, str(count[0]).encode())
        except BaseException:
            code = 3
        os._exit(code)
    os.close(write_end)
    if kill_after is not None:
        time.sleep(kill_after)
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 120
    while (waited := os.waitpid(pid, os.WNOHANG))[0] == 0:
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            pytest.fail("the saving child hung")
        time.sleep(0.01)
    with os.fdopen(read_end) as fh:
        reported = fh.read()
    status = waited[1]
    assert not os.WIFEXITED(status) or os.WEXITSTATUS(status) == 0, "the save failed in the child"
    return status, int(reported or 0)


def _loads_as_old_or_new(folder: Path, texts: list[str], old_proba: np.ndarray, new_emb: np.ndarray) -> str:
    from setfit_lite import SetFitModel

    _assert_user_files(folder)
    loaded = SetFitModel.from_pretrained(folder)
    assert not (folder / SAVE_JOURNAL_NAME).exists()
    if loaded.model_head is not None:
        assert loaded.labels == ["negative", "positive"]
        np.testing.assert_array_equal(loaded.predict_proba(texts), old_proba)
        return "old"
    assert loaded.labels is None
    np.testing.assert_array_equal(loaded.encode(texts), new_emb)
    return "new"


@pytest.fixture()
def kill_setup(tmp_path: Path, old_and_new: tuple) -> tuple:
    from setfit_lite import SetFitModel

    old, new, texts = old_and_new
    pristine = tmp_path / "pristine"
    _save_beside_user_files(old, pristine)
    new.save_pretrained(tmp_path / "new_ref")
    old_proba = SetFitModel.from_pretrained(pristine).predict_proba(texts)
    new_emb = SetFitModel.from_pretrained(tmp_path / "new_ref").encode(texts)
    return new, texts, pristine, old_proba, new_emb


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_kill9_at_every_file_operation_of_a_save(tmp_path: Path, kill_setup: tuple) -> None:
    new, texts, pristine, old_proba, new_emb = kill_setup
    status, n_ops = _save_in_child(new, shutil.copytree(pristine, tmp_path / "count"))
    assert status == 0 and n_ops > 20
    outcomes = []
    for k in range(1, n_ops + 1):
        folder = shutil.copytree(pristine, tmp_path / f"kill{k}")
        status, _ = _save_in_child(new, folder, kill_before_op=k)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        outcomes.append(_loads_as_old_or_new(folder, texts, old_proba, new_emb))
        shutil.rmtree(folder)
    # killed before the commit: the old model; after it: the new one (completed on load); never anything else
    assert outcomes[0] == "old" and outcomes[-1] == "new"
    assert outcomes == sorted(outcomes, key=["old", "new"].index)

    folder = shutil.copytree(pristine, tmp_path / "leftover")
    _save_in_child(new, folder, kill_before_op=n_ops // 4)  # killed while staging: hidden leftovers
    assert _leftovers(folder)
    new.save_pretrained(folder)  # the next save clears them
    assert _leftovers(folder) == [] and _loads_as_old_or_new(folder, texts, old_proba, new_emb) == "new"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_kill9_at_random_moments_of_a_slowed_save(tmp_path: Path, kill_setup: tuple) -> None:
    new, texts, pristine, old_proba, new_emb = kill_setup
    start = time.monotonic()
    _save_in_child(new, shutil.copytree(pristine, tmp_path / "timed"), op_sleep=0.005)
    duration = time.monotonic() - start
    rng = random.Random(0)
    for i in range(16):
        folder = shutil.copytree(pristine, tmp_path / f"try{i}")
        _save_in_child(new, folder, op_sleep=0.005, kill_after=rng.uniform(0.0, duration))
        _loads_as_old_or_new(folder, texts, old_proba, new_emb)
        shutil.rmtree(folder)


# ---------------------------------------------------------- from_pretrained: arguments and what a folder holds


def test_from_pretrained_refuses_settings_a_saved_head_cannot_take(tmp_path: Path, old_and_new: tuple) -> None:
    from setfit_lite import SetFitModel

    old, new, texts = old_and_new
    old.save_pretrained(tmp_path / "fitted")
    for name, value, saved in [("multi_target_strategy", "classifier-chain", None),
                               ("use_differentiable_head", True, False),
                               ("head_params", {"C": 5.0}, {}),
                               ("normalize_embeddings", True, False)]:
        with pytest.raises(ValueError, match=rf"{name}={value!r} conflicts with the model saved in .*fitted.*"
                                             rf"has {name}={saved!r} and a fitted head"):
            SetFitModel.from_pretrained(tmp_path / "fitted", **{name: value})
    same = SetFitModel.from_pretrained(tmp_path / "fitted", use_differentiable_head=False, head_params={},
                                       normalize_embeddings=False)
    np.testing.assert_array_equal(same.predict_proba(texts), old.predict_proba(texts))

    new.save_pretrained(tmp_path / "no_head")  # nothing fitted yet: the given settings apply
    loaded = SetFitModel.from_pretrained(tmp_path / "no_head", multi_target_strategy="one-vs-rest",
                                         head_params={"C": 2.0}, normalize_embeddings=True)
    assert loaded.multi_target_strategy == "one-vs-rest" and loaded.head_params == {"C": 2.0}
    assert loaded.normalize_embeddings is True
    assert SetFitModel.from_pretrained(tmp_path / "no_head", use_differentiable_head=True).use_differentiable_head


def test_from_pretrained_explains_onnx_export_and_empty_folders(tmp_path: Path, old_and_new: tuple) -> None:
    pytest.importorskip("onnx")
    from setfit_lite import SetFitModel

    old, _, _ = old_and_new
    exported = old.export_onnx(tmp_path / "exported")
    with pytest.raises(ValueError, match=r"exported with export_onnx.* SetFitModel\.from_onnx\(.*exported'\)"):
        SetFitModel.from_pretrained(exported)

    for name, files in (("empty", {}), ("notes_only", {"keep.txt": "mine"})):
        folder = tmp_path / name
        folder.mkdir()
        for file, text in files.items():
            (folder / file).write_text(text)
        with pytest.raises(ValueError, match=rf"{name} holds no model: it has no config_setfit_lite\.json .* no "
                                             r"modules\.json .* no config\.json"):
            SetFitModel.from_pretrained(folder)


def test_a_tensor_file_is_the_same_bytes_for_the_same_tensors_and_metadata(tmp_path):
    """safetensors writes its metadata from a hash map: with two keys or more (a static export's head has
    ``format`` and ``num_classes``) the same save gave different bytes, and a different manifest checksum."""
    from setfit_lite.serialization.files import load_tensors, save_tensors

    tensors = {"w": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.ones(3)}
    path = tmp_path / "t.safetensors"
    digests, orders = set(), set()
    for _ in range(8):
        save_tensors(path, tensors, {"num_classes": "2", "kind": "x", "zeta": "1"})
        data = path.read_bytes()
        digests.add(hashlib.sha256(data).hexdigest())
        size = int.from_bytes(data[:8], "little")
        assert size % 8 == 0
        orders.add(tuple(json.loads(data[8:8 + size])["__metadata__"]))
    assert orders == {("format", "kind", "num_classes", "zeta")} and len(digests) == 1
    loaded = load_tensors(path)
    assert np.array_equal(loaded["w"].numpy(), tensors["w"]) and np.array_equal(loaded["b"].numpy(), tensors["b"])
