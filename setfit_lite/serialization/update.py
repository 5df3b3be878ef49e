"""Saving into an existing folder: replace only the model's own files, all at once, even across a kill.

The new files are staged in a hidden sub-folder, then the update commits by writing a journal; whoever finds the
journal (the save itself, or the next load or save after a kill) completes the update.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import random
import re
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path, PurePath
from typing import Any, TypeVar

from .atomic import FOLDER_LOCK_NAME, fsync_dir, fsync_path, path_lock, remove_path, replace_directory
from .files import load_json, save_json
from .guard import refuse_symlinked_folders, symlinked_folder
from .manifest import MANIFEST_NAME, owned_files, owns_folder, sha256_file, write_manifest

__all__ = ["HEAD_FILE_NAMES", "MODEL_FILE_NAMES", "SAVE_JOURNAL_NAME", "atomic_update_directory", "check_can_update",
           "model_file_paths", "read_consistently", "recover_interrupted_save"]

logger = logging.getLogger(__name__)
T = TypeVar("T")

SAVE_JOURNAL_NAME = ".setfit_lite-save.json"
_STAGING_PREFIX = ".setfit_lite-save-"
# the top-level files setfit_lite's writers (save_pretrained, export_onnx, export_static) may write, and the files
# of a sentence-transformers module folder: with the head's, what `check_can_update` looks for before a long job
# (`model_file_paths`); tests check that every writer stays within it
MODEL_FILE_NAMES = frozenset({
    MANIFEST_NAME, "README.md", "config.json", "config_sentence_transformers.json", "config_setfit.json",
    "config_setfit_lite.json", "config_setfit_lite_onnx.json", "config_setfit_lite_static.json", "modules.json",
    "sentence_bert_config.json", "model.safetensors", "model.onnx", "model-fp32.onnx", "head.onnx",
    "head_static.safetensors", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt",
    "added_tokens.json", "tokenizer.model", "sentencepiece.bpe.model"})
HEAD_FOLDER = "head"
HEAD_FILE_NAMES = frozenset({"head_config.json", "head.safetensors", "head.skops"})  # what a head writes in head/
# a folder sentence-transformers saves a module into: its index and class name ("1_Pooling", "2_Dense")
_MODULE_FOLDER = re.compile(r"\d+_[A-Za-z]\w*")


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
    folder calls it) completes the update. Either way the folder never holds a mix. Before the commit, every
    folder that will receive or lose a file (``head/``, ``1_Pooling/``, the target itself) is checked to be
    writable (`_check_writable`): a read-only one raises PermissionError with nothing changed and nothing left,
    rather than an update that stops halfway. Concurrent saves into one folder take turns (`path_lock`: a lock
    file beside it): each succeeds, the last one's stays; a load (`read_consistently`) waits for a save to end.
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
        _recover(target)
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
            _check_writable(target, journal["write"] + journal["remove"])
            _fsync_tree(stage)
            save_json(target / SAVE_JOURNAL_NAME, journal)  # the commit point
        except BaseException:
            remove_path(stage)
            raise
        _apply_journal(target, journal)


def recover_interrupted_save(folder: str | os.PathLike[str]) -> bool:
    """Complete a committed update of ``folder`` that a killed process left half done; return whether one was.

    Only what a save of setfit_lite started is completed, inside ``folder``: a journal that names anything else
    (`_checked_journal`) raises ValueError before anything is moved or removed, and a file it lists to remove is
    removed only if the folder's setfit_lite manifest lists it, unchanged. Waits for a save of the folder that is
    still completing the update (`path_lock`); idempotent.
    """
    root = Path(folder)
    if not _has_journal(root):
        return False
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(path_lock(root))
        except OSError as exc:
            raise _not_completed(root, exc) from exc
        return _recover(root)


_READ_ATTEMPTS = 8  # reads of a folder that changed meanwhile, where no lock can be taken, before giving up
_READ_RETRY_WAIT = 0.05  # seconds (on average) before the second of them, doubled for each next one up to 1 s


def read_consistently(folder: str | os.PathLike[str], read: Callable[[], T]) -> T:
    """``read()``'s result, read while no save changes ``folder``: a load sees the whole previous model or the
    whole new one, never a mix of the two, nor a spurious "does not match manifest.json" from a save under way.

    An interrupted save is completed first (`recover_interrupted_save`). Then ``read`` runs holding the folder's
    lock shared (`path_lock`, as a save places it: beside the folder, in it where its parent is read-only): loads
    run together, a save into the folder waits until they end, and a load waits for a save under way. Where no
    lock file can be made (a read-only folder and parent, a read-only file system), nothing is written: ``read``
    runs unlocked and the folder is looked at before and after (`_folder_state`: its files' inodes, sizes and
    times); if a file changed meanwhile, the result (or error) is dropped and ``read`` runs again, at most eight
    times. A thread that holds the folder's lock for a save raises RuntimeError rather than wait for itself.

    Args:
        folder: The folder ``read`` reads; one that is not a folder is read as it is.
        read: What reads it (checks its manifest, then reads its files), run again where it changed meanwhile.

    Returns:
        What ``read`` returns.

    Raises:
        OSError: The folder changed during each of eight unlocked reads (saves into it one after the other), or an
            interrupted save in it could not be completed (`recover_interrupted_save`).
    """
    root = Path(folder)
    if not root.is_dir():
        return read()
    changed: BaseException | None = None
    for attempt in range(_READ_ATTEMPTS):
        if attempt:  # a random share of the wait: readers and a saver that keep meeting drift apart
            time.sleep(min(_READ_RETRY_WAIT * 2 ** (attempt - 1), 1.0) * random.uniform(0.5, 1.5))
        locked = False
        with contextlib.ExitStack() as stack:
            try:
                stack.enter_context(path_lock(root, shared=True))
            except OSError as exc:
                logger.debug("reading %s without its lock (%s): checking it did not change meanwhile", root, exc)
            else:
                locked = True
                if not _has_journal(root):  # no save is under way, nor can one start before this returns
                    return read()
        if locked or _has_journal(root):  # a save committed and was killed: completed first (its lock held alone)
            try:
                recover_interrupted_save(root)
            except OSError:  # unlocked, it cannot be completed here, or it is one under way (another user's)
                if locked or attempt == _READ_ATTEMPTS - 1:
                    raise
            continue
        before = _folder_state(root)
        try:
            result = read()
        except Exception as exc:
            if before == _folder_state(root) and SAVE_JOURNAL_NAME not in before:
                raise
            changed = exc
            continue
        if before == _folder_state(root) and SAVE_JOURNAL_NAME not in before:
            return result
        changed = None
    raise OSError(f"{root} changed while it was read, {_READ_ATTEMPTS} times in a row (saved into again and again "
                  "meanwhile); load it again once the saves are done") from changed


def _folder_state(root: Path) -> dict[str, tuple[int, ...] | None]:
    """What tells whether a save changed ``root`` meanwhile: each file's relative path with its device, inode, size
    and modification and change times (a save moves new files into place: new inodes), the journal included; a
    save's staging folder, journal temp file and lock file are left out (a save writes them before it commits)."""
    state: dict[str, tuple[int, ...] | None] = {}
    top = os.fspath(root)
    for dirpath, dirnames, filenames in os.walk(top):
        if dirpath == top:
            dirnames[:] = [name for name in dirnames if not name.startswith(_STAGING_PREFIX)]
            filenames = [name for name in filenames if name != FOLDER_LOCK_NAME
                         and not name.startswith(f".{SAVE_JOURNAL_NAME}.tmp-")]
        for name in filenames:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, top).replace(os.sep, "/")
            try:
                st = os.stat(path)
            except OSError:
                state[rel] = None
                continue
            state[rel] = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    return state


def _has_journal(root: Path) -> bool:
    """Whether ``root`` holds a save journal (a link of that name too: `_checked_journal` refuses it)."""
    journal_path = root / SAVE_JOURNAL_NAME
    return journal_path.is_file() or journal_path.is_symlink()


def _not_completed(root: Path, exc: OSError) -> OSError:
    """The error for an interrupted save of ``root`` that cannot be completed for lack of access."""
    return OSError(f"{root} holds an interrupted save that could not be completed ({exc}); load or save it once "
                   "with write access to the folder")


def _recover(root: Path) -> bool:
    """`recover_interrupted_save` for a caller that holds ``root``'s `path_lock`."""
    if not _has_journal(root):
        return False
    journal = _checked_journal(root, load_json(root / SAVE_JOURNAL_NAME, what="save journal"))
    logger.info("completing an interrupted save into %s", root)
    try:
        _apply_journal(root, journal)
    except OSError as exc:
        raise _not_completed(root, exc) from exc
    return True


def _checked_journal(root: Path, journal: Any) -> dict[str, Any]:
    """``root``'s save journal to complete, its ``remove`` list cut to the files ``root``'s setfit_lite manifest
    lists, unchanged since or removed already (others are left, with a warning).

    Raises:
        ValueError: Naming the journal and the problem, nothing moved or removed, for a journal that a save of
            setfit_lite would not have written: one that is a symbolic link; a staging entry that is not a real
            folder directly inside ``root`` (a missing one is the end of a completed update); a path that is not
            plain and relative (absolute, ``..``) or that goes through a symbolic link, inside ``root`` or the
            staging folder; a staged file that is not a regular file, or is missing but not moved in; a file the
            update would replace that setfit_lite did not write or that changed since (`_foreign_files`).
    """
    journal_path = root / SAVE_JOURNAL_NAME

    def refuse(problem: str) -> ValueError:
        return ValueError(f"save journal {journal_path} is invalid: {problem}. Nothing was moved or removed; if you "
                          "saved this folder yourself, delete the journal and save the model again, otherwise do "
                          "not load the folder")

    if journal_path.is_symlink():
        raise refuse("it is a symbolic link")
    keys = ("write", "remove")
    if not (isinstance(journal, dict) and isinstance(journal.get("staging"), str)
            and all(isinstance(journal.get(key), list) and all(isinstance(rel, str) for rel in journal[key])
                    for key in keys)):
        raise refuse('it must be a JSON object with a "staging" folder name and "write" and "remove" lists of paths')
    name = journal["staging"]
    if not _is_plain_relative(name) or "/" in name or not name.startswith(_STAGING_PREFIX):
        raise refuse(f"its staging entry {name!r} is not a staging folder name of setfit_lite")
    stage = root / name
    if stage.is_symlink() or os.path.lexists(stage) and not stage.is_dir():
        raise refuse(f"its staging folder {stage} is a symbolic link or not a folder")
    for key in keys:
        for rel in journal[key]:
            if not _is_plain_relative(rel):
                raise refuse(f"its {key} entry {rel!r} is not a plain relative path inside the folder")
    pending = [rel for rel in journal["write"] if os.path.lexists(stage / rel)]
    for base, rels in ((root, journal["write"] + journal["remove"]), (stage, journal["write"])):
        found = symlinked_folder(base, rels)
        if found is not None:
            raise refuse(f"{found[0]} is a symbolic link, which {found[1]} would go through")
    for rel in journal["write"]:
        src = stage / rel
        if src.is_symlink() or os.path.lexists(src) and not src.is_file():
            raise refuse(f"the staged {src} is a symbolic link or not a file")
        if rel not in pending and not (root / rel).is_file():
            raise refuse(f"the staged {src} is missing, and {root / rel} is not in place")
    foreign, changed = _foreign_files(root, pending)
    if foreign or changed:
        raise refuse(f"it would replace {_shown(foreign + changed)}, which setfit_lite did not write or which "
                     "changed since")
    try:
        owned = owned_files(root)
    except ValueError:  # a marked manifest that cannot be read owns nothing
        owned = {}
    unchanged = set(_unchanged(root, owned, journal["remove"]))  # a listed file removed already: its folder pruned
    remove = [rel for rel in journal["remove"]
              if rel in unchanged or rel in owned and not os.path.lexists(root / rel)]
    kept = [rel for rel in journal["remove"] if rel not in remove and os.path.lexists(root / rel)]
    if kept:
        logger.warning("not removing %s of %s: no setfit_lite manifest there lists them as they are now", _shown(kept),
                       root)
    return {**journal, "remove": remove}


def _is_plain_relative(rel: str) -> bool:
    """Whether ``rel`` is a relative POSIX path of plain names (no ``..``, ``.``, empty part, drive or backslash)."""
    return bool(rel) and "\\" not in rel and not PurePath(rel).is_absolute() and not PurePath(rel).drive and all(
        part not in ("", ".", "..") for part in rel.split("/"))


def _apply_journal(root: Path, journal: Mapping[str, Any]) -> None:
    """Move the staged files into ``root``, remove the stale ones, move the manifest in last, then drop the staging
    folder and the journal (a kill at any point leaves what the next run completes, `_checked_journal`)."""
    stage = root / journal["staging"]
    for rel in journal["write"]:
        if rel != MANIFEST_NAME:
            _move_in(stage, root, rel)
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
    if MANIFEST_NAME in journal["write"]:  # until it is in, the previous manifest lists the files to remove
        _move_in(stage, root, MANIFEST_NAME)
    for folder in sorted({(root / rel).parent for rel in journal["write"]} | {root}):
        fsync_dir(folder)  # the moves are durable before the journal goes
    remove_path(stage)
    with contextlib.suppress(FileNotFoundError):
        (root / SAVE_JOURNAL_NAME).unlink()
    fsync_dir(root)


def _move_in(stage: Path, root: Path, rel: str) -> None:
    """Move the staged ``rel`` into ``root`` (done already, by an earlier, interrupted run, if it is not staged)."""
    src, dst = stage / rel, root / rel
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.replace(src, dst)
    except FileNotFoundError:
        if not dst.is_file():
            raise


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
    is a folder where a model's files go (`model_file_paths`, sub-folders included) that holds a file setfit_lite
    did not write, or that changed since it wrote it (`atomic_update_directory`), a folder where a file goes, a file
    where a folder goes, or a symbolic link to a folder; as PermissionError, a folder of ``path`` that the save would
    write a file in but this process cannot write in (``path`` itself, ``head/``, a module's folder:
    `_check_writable`). An update of ``path`` that a killed save left half done is completed first, as the save
    itself would."""
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
        paths = model_file_paths(root)
        refuse_symlinked_folders(root, paths)
        _check_no_conflicts(root, paths)
        _check_not_foreign(root, paths)
        _check_writable(root, paths)


def model_file_paths(folder: str | os.PathLike[str]) -> list[str]:
    """The paths (relative, POSIX) where a save or an export into ``folder`` may write a file, as far as the folder
    tells: `MODEL_FILE_NAMES`, the head's files in ``head/`` (`HEAD_FILE_NAMES`), and `MODEL_FILE_NAMES` in each
    sub-folder (or link) named as sentence-transformers names a module's folder (``1_Pooling``)."""
    root = Path(folder)
    modules = sorted(entry.name for entry in root.iterdir() if _MODULE_FOLDER.fullmatch(entry.name)
                     and (entry.is_dir() or entry.is_symlink())) if root.is_dir() else []
    return sorted({*MODEL_FILE_NAMES, *(f"{HEAD_FOLDER}/{name}" for name in HEAD_FILE_NAMES),
                   *(f"{module}/{name}" for module in modules for name in MODEL_FILE_NAMES)})


def _check_writable(root: Path, paths: Iterable[str]) -> None:
    """PermissionError, before a save commits, if a folder it would write or remove one of ``paths`` (relative) in
    cannot be written in: the file's folder inside ``root``, or where that is missing, the nearest existing folder
    above it (the save makes the rest). A save into a read-only ``head/`` would otherwise stop halfway, after its
    commit point, the top-level files already replaced (`_apply_journal` has no way back)."""
    folders = set()
    for rel in paths:
        folder = (root / rel).parent
        while folder != root and not folder.is_dir():
            folder = folder.parent
        folders.add(folder)
    for folder in sorted(folders):
        problem = _write_problem(folder)
        if problem is not None:
            where = "it" if folder == root else str(folder)
            raise PermissionError(errno.EACCES, f"cannot save into {root}: {where} cannot be written in ({problem}); "
                                  "nothing was changed. Make it writable, or save into another folder", str(folder))


def _write_problem(folder: Path) -> str | None:
    """Why this process cannot make a file in ``folder``, or None if it can: a file without a name made there and
    dropped at once (``O_TMPFILE``: nothing is left, even on a kill), or where the file system does not make such
    files, what ``os.access`` says."""
    flag = getattr(os, "O_TMPFILE", None)
    if flag is not None:
        try:
            os.close(os.open(folder, flag | os.O_WRONLY, 0o600))
            return None
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
                return os.strerror(exc.errno)
    effective = os.access in os.supports_effective_ids
    if os.access(folder, os.W_OK | os.X_OK, effective_ids=effective):
        return None
    return "no write access"


def _check_not_foreign(root: Path, written: list[str]) -> None:
    """FileExistsError naming them if files of ``root`` that the save would replace are the user's
    (`_foreign_files`)."""
    foreign, changed = _foreign_files(root, written)
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


def _foreign_files(root: Path, written: list[str]) -> tuple[list[str], list[str]]:
    """Of the files of ``root`` that writing ``written`` would replace, those that are the user's: ``(foreign,
    changed)``, files no setfit_lite manifest of ``root`` lists (and a ``manifest.json`` that is not its own), and
    files it lists that changed since it wrote them (their sha256 is no longer the listed one: a model card edited
    by hand)."""
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
        elif not _unchanged(root, owned, [rel]):
            changed.append(rel)
    return foreign, changed


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
    return _unchanged(root, previous, set(previous) - written)


def _unchanged(root: Path, owned: Mapping[str, str], paths: Iterable[str]) -> list[str]:
    """Those of ``paths`` (sorted) that are files of ``root`` listed in ``owned`` with the digest they have now:
    unchanged since setfit_lite wrote them."""
    return sorted(rel for rel in paths
                  if rel in owned and (root / rel).is_file() and sha256_file(root / rel) == owned[rel].lower())


def _fsync_tree(folder: Path) -> None:
    """fsync every file and folder under ``folder`` (so the commit never points at unwritten data)."""
    for p in sorted(folder.rglob("*"), reverse=True):
        if p.is_file() and not p.is_symlink():
            fsync_path(p)
        elif p.is_dir():
            fsync_dir(p)
    fsync_dir(folder)
