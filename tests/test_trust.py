"""Trust rules (issue 37), one table per class: each row is a hostile input that the one mechanism behind the rule
must handle (a foreign manifest or a symlink never deletes or writes a user's file, every config field is checked
against its graph, every parameter goes through the rule table before any work, ...)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from setfit_lite.serialization import MANIFEST_NAME

# ------------------------------------------------------------------- 1. only setfit_lite's manifest owns files


def _foreign_manifest(folder: Path, *names: str) -> dict[str, bytes]:
    """``folder`` holding the user's files ``names`` and a ``manifest.json`` (not setfit_lite's) listing them."""
    folder.mkdir(parents=True, exist_ok=True)
    contents = {}
    for name in names:
        data = f"{name}: the user's data\n".encode()
        (folder / name).write_bytes(data)
        contents[name] = data
    (folder / MANIFEST_NAME).write_text(json.dumps({n: hashlib.sha256(d).hexdigest() for n, d in contents.items()}))
    return contents


def _save(model: Any, folder: Path) -> None:
    model.save_pretrained(folder)


def _export(model: Any, folder: Path) -> None:
    model.export_onnx(folder)


@pytest.mark.parametrize("writer", [_save, _export], ids=["save_pretrained", "export_onnx"])
def test_foreign_manifest_owns_nothing(writer: Any, tier_models: dict, tmp_path: Path) -> None:
    """A folder whose manifest.json setfit_lite did not write: saving into it removes none of the files it lists."""
    folder = tmp_path / "mine"
    user_files = _foreign_manifest(folder, "survey.csv", "notes.txt")
    writer(tier_models["torch"], folder)
    for name, data in user_files.items():
        assert (folder / name).read_bytes() == data, name


def _link_head(tmp_path: Path, model: Any) -> tuple[Path, Path]:
    other, mine = tmp_path / "other", tmp_path / "mine"
    model.save_pretrained(other)
    model.save_pretrained(mine)
    for p in (mine / "head").iterdir():
        p.unlink()
    (mine / "head").rmdir()
    (mine / "head").symlink_to(other / "head", target_is_directory=True)
    return other, mine


def _link_body_module(tmp_path: Path, model: Any) -> tuple[Path, Path]:
    other, mine = tmp_path / "other", tmp_path / "mine"
    model.save_pretrained(other)
    mine.mkdir()
    (mine / "1_Pooling").symlink_to(other / "1_Pooling", target_is_directory=True)
    return other, mine


@pytest.mark.parametrize("layout", [_link_head, _link_body_module], ids=["head-linked", "body-module-linked"])
def test_no_save_through_a_symlinked_folder(layout: Any, tier_models: dict, tmp_path: Path) -> None:
    """A sub-folder of the target that is a symlink (to another model's folder) is refused; the other is intact."""
    model = tier_models["torch"]
    other, mine = layout(tmp_path, model)
    before = {p.relative_to(other): p.read_bytes() for p in sorted(other.rglob("*")) if p.is_file()}
    with pytest.raises(FileExistsError, match="symbolic link"):
        model.save_pretrained(mine)
    assert {p.relative_to(other): p.read_bytes() for p in sorted(other.rglob("*")) if p.is_file()} == before


@pytest.mark.parametrize("manifest", ["foreign", "none"])
def test_checkpoints_prune_only_their_own(manifest: str, tmp_path: Path) -> None:
    """Checkpoint pruning removes only folders with setfit_lite's manifest: a look-alike stays."""
    from setfit_lite.checkpoint_files import _prune

    for step in (1, 2, 3):
        folder = tmp_path / f"checkpoint-{step}"
        folder.mkdir()
        (folder / "checkpoint.json").write_text("{}")
        if manifest == "foreign":
            _foreign_manifest(folder, "results.csv")
    _prune(tmp_path, 1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint-1", "checkpoint-2", "checkpoint-3"]
