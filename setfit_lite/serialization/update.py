"""Saving into an existing folder: replace only the model's own files, all at once, even across a kill.

The new files are staged in a hidden sub-folder, then the update commits by writing a journal; whoever finds the
journal (the save itself, or the next load or save after a kill) completes the update.
"""

from __future__ import annotations

import contextlib
import logging
import os
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from .atomic import fsync_dir, fsync_path, path_lock, remove_path, replace_directory
from .files import load_json, save_json
from .guard import refuse_symlinked_folders
from .manifest import MANIFEST_NAME, is_inside, owned_files, owns_folder, sha256_file, write_manifest

__all__ = ["MODEL_FILE_NAMES", "SAVE_JOURNAL_NAME", "atomic_update_directory", "check_can_update",
           "recover_interrupted_save"]

logger = logging.getLogger(__name__)

SAVE_JOURNAL_NAME = ".setfit_lite-save.json"
_STAGING_PREFIX = ".setfit_lite-save-"
# the top-level files setfit_lite's writers (save_pretrained, export_onnx, export_static) may write: what
# `check_can_update` looks for before a long job; tests check that every writer stays within it
MODEL_FILE_NAMES = frozenset({
    MANIFEST_NAME, "README.md", "config.json", "config_sentence_transformers.json", "config_setfit.json",
    "config_setfit_lite.json", "config_setfit_lite_onnx.json", "config_setfit_lite_static.json", "modules.json",
    "sentence_bert_config.json", "model.safetensors", "model.onnx", "model-fp32.onnx", "head.onnx",
    "head_static.safetensors", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt",
    "added_tokens.json", "tokenizer.model", "sentencepiece.bpe.model"})


@contextlib.contextmanager
def atomic_update_directory(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield an empty staging folder whose files, on success, atomically become ``path``'s owned files.

    On exit ``manifest.json`` is written for the staged files. If ``path`` does not exist it appears complete
    or not at all (`atomic_directory`). If it is a folder, only the files the new content has and the
    files listed in its previous ``manifest.json`` are touched: same-named files that manifest lists are replaced,
    previously listed files the new content lacks are removed (unless changed since), and everything else (the
    user's files) is left alone; a same-named file that no setfit_lite manifest lists (the user's own README.md, or
    another tool's manifest.json), or that it lists but that changed since (a model card edited by hand), raises
    FileExistsError before anything is written (`_check_not_foreign`). A path that is not a folder raises
    FileExistsError and is left untouched.

    The update commits by writing a journal once every file is staged: a process killed before that leaves
    the previous content; after it, the next `recover_interrupted_save` (every load and save of the
    folder calls it) completes the update. Either way the folder never holds a mix. Concurrent saves into one
    folder take turns (`path_lock`: a lock file beside it): each succeeds, the last one's stays.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with path_lock(target):
        if target.is_symlink() and not target.exists() or target.exists() and not target.is_dir():
            raise FileExistsError(f"cannot save into {target}: it exists and is not a folder (it was left untouched)")
        if not target.exists():
            with replace_directory(target) as tmp:
                yield tmp
                write_manifest(tmp)
            return
        recover_interrupted_save(target)
        _remove_leftovers(target)
        stage = target / f"{_STAGING_PREFIX}{uuid.uuid4().hex[:12]}"
        stage.mkdir()
        try:
            yield stage
            written = [*sorted(write_manifest(stage)), MANIFEST_NAME]  # the manifest moves in last
            _check_no_conflicts(target, written)
            journal = {"staging": stage.name, "write": written, "remove": _stale_files(target, set(written))}
            refuse_symlinked_folders(target, journal["write"] + journal["remove"])
            _check_not_foreign(target, written)
            _fsync_tree(stage)
            save_json(target / SAVE_JOURNAL_NAME, journal)  # the commit point
        except BaseException:
            remove_path(stage)
            raise
        _apply_journal(target, journal)


def recover_interrupted_save(folder: str | os.PathLike[str]) -> bool:
    """Complete a committed update of ``folder`` that a killed process left half done; return whether one was.

    Idempotent and safe to run while the saving process itself is still completing the update.
    """
    root = Path(folder)
    journal_path = root / SAVE_JOURNAL_NAME
    if not journal_path.is_file():
        return False
    journal = load_json(journal_path, what="save journal")
    valid = (
        isinstance(journal, dict)
        and isinstance(journal.get("staging"), str)
        and journal["staging"].startswith(_STAGING_PREFIX)
        and os.sep not in journal["staging"]
        and all(
            isinstance(journal.get(key), list) and all(isinstance(r, str) and is_inside(r) for r in journal[key])
            for key in ("write", "remove")
        )
    )
    if not valid:
        raise ValueError(f"save journal {journal_path} is invalid; delete it and save the model again")
    logger.info("completing an interrupted save into %s", root)
    try:
        _apply_journal(root, journal)
    except OSError as exc:
        raise OSError(f"{root} holds an interrupted save that could not be completed ({exc}); "
                      "load or save it once with write access to the folder") from exc
    return True


def _apply_journal(root: Path, journal: Mapping[str, Any]) -> None:
    """Move the staged files into ``root``, remove the stale ones, then drop the staging folder and journal."""
    stage = root / journal["staging"]
    refuse_symlinked_folders(root, journal["write"] + journal["remove"])
    for rel in journal["write"]:
        src, dst = stage / rel, root / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.replace(src, dst)
        except FileNotFoundError:
            if not dst.is_file():  # not moved already (by an earlier, interrupted run of this journal)
                raise
    for rel in journal["remove"]:
        stale = root / rel
        with contextlib.suppress(FileNotFoundError):
            stale.unlink()
        for parent in stale.parents:  # prune the folders this left empty (not the target itself)
            if parent == root or root not in parent.parents:
                break
            try:
                parent.rmdir()
            except OSError:
                break
    for folder in sorted({(root / rel).parent for rel in journal["write"]} | {root}):
        fsync_dir(folder)  # the moves are durable before the journal goes
    remove_path(stage)
    with contextlib.suppress(FileNotFoundError):
        (root / SAVE_JOURNAL_NAME).unlink()
    fsync_dir(root)


def _remove_leftovers(root: Path) -> None:
    """Staging folders and journal temp files of saves killed before they committed."""
    for p in root.iterdir():
        if p.name.startswith((_STAGING_PREFIX, f".{SAVE_JOURNAL_NAME}.tmp-")):
            remove_path(p)


def _check_no_conflicts(root: Path, written: list[str]) -> None:
    """FileExistsError if a staged file would land on a folder, or under something that is not a folder."""
    for rel in written:
        dst = root / rel
        if dst.is_dir() and not dst.is_symlink():
            raise FileExistsError(f"cannot save into {root}: {dst} is a folder where the model writes a file")
        for parent in Path(rel).parents:
            p = root / parent
            if parent != Path(".") and p.exists() and not p.is_dir():
                raise FileExistsError(f"cannot save into {root}: {p} is a file where the model needs a folder")


def check_can_update(path: str | os.PathLike[str]) -> None:
    """Before a long job (or the first of two saves) that ends in a save or export into ``path``, what the save
    would refuse, as FileExistsError: ``path`` or the nearest existing path above it is not a folder; or ``path``
    is a folder holding files of the names a model folder has (`MODEL_FILE_NAMES`) that setfit_lite did not write,
    or that changed since it wrote them (`atomic_update_directory`). An update of ``path`` that a killed save left
    half done is completed first, as the save itself would."""
    root = Path(path)
    for candidate in (root, *root.parents):
        if candidate.exists() or candidate.is_symlink():  # a dangling link is not a folder either
            if not candidate.is_dir():
                what = "it" if candidate == root else f"{candidate} above it"
                raise FileExistsError(f"cannot save into {root}: {what} exists and is not a folder (nothing was "
                                      "saved)")
            break
    if root.is_dir():
        recover_interrupted_save(root)  # as the save will first: a half-applied update is not an edit
        _check_not_foreign(root, sorted(name for name in MODEL_FILE_NAMES if (root / name).is_file()))


def _check_not_foreign(root: Path, written: list[str]) -> None:
    """FileExistsError naming them if files of ``root`` that the save would replace are the user's: files no
    setfit_lite manifest of ``root`` lists (and a ``manifest.json`` that is not its own), and files it lists that
    changed since it wrote them (their sha256 is no longer the listed one: a model card edited by hand)."""
    try:
        owned = owned_files(root)
    except ValueError:  # a marked manifest that cannot be read owns nothing
        owned = {}
    foreign, changed = [], []
    for rel in written:
        path = root / rel
        if not path.is_file():
            continue
        if rel == MANIFEST_NAME:
            if not owns_folder(root.resolve()):  # the target itself may be a link the user chose
                foreign.append(rel)
        elif rel not in owned:
            foreign.append(rel)
        elif sha256_file(path) != owned[rel].lower():
            changed.append(rel)
    problems = []
    if foreign:
        problems.append(f"it holds {_shown(foreign)}, which setfit_lite did not write (no manifest of its own lists "
                        "them)")
    if changed:
        problems.append(f"{'and ' if foreign else 'it holds '}{_shown(changed)}, which changed since setfit_lite "
                        "wrote them (edited by hand: yours now)")
    if problems:
        raise FileExistsError(f"cannot save into {root}: {' '.join(problems)} and the save would replace; move them "
                              "or save into another folder (nothing was written)")


def _shown(names: list[str]) -> str:
    """At most five file names, then how many more."""
    return ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")


def _stale_files(root: Path, written: set[str]) -> list[str]:
    """Files listed by ``root``'s previous manifest, unchanged since, that the new content does not write; none
    unless setfit_lite wrote that manifest (`owned_files`)."""
    if not (root / MANIFEST_NAME).is_file():
        return []
    try:
        previous = owned_files(root)
    except ValueError as exc:
        logger.warning("not removing files of the previous model in %s: %s", root, exc)
        return []
    if not previous:
        logger.warning("not removing any file of %s: its %s was not written by setfit_lite", root, MANIFEST_NAME)
    return sorted(
        rel for rel, digest in previous.items()
        if rel not in written and (root / rel).is_file() and sha256_file(root / rel) == digest.lower()
    )


def _fsync_tree(folder: Path) -> None:
    """fsync every file and folder under ``folder`` (so the commit never points at unwritten data)."""
    for p in sorted(folder.rglob("*"), reverse=True):
        if p.is_file() and not p.is_symlink():
            fsync_path(p)
        elif p.is_dir():
            fsync_dir(p)
    fsync_dir(folder)
