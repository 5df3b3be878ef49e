"""Safe, atomic persistence helpers: JSON, safetensors, pickle detection and integrity manifests.

Nothing in setfit_lite ever writes a pickle, nor reads one unless a caller passes ``allow_pickle=True``.
This module has no setfit_lite imports, so any other module may use it: write folders with
:func:`atomic_directory`, JSON with :func:`save_json` and digests with :func:`sha256_file` rather than anew.
torch is imported only to save or load tensors.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import uuid
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from huggingface_hub.utils.sha import sha_fileobj
from safetensors import SafetensorError

if TYPE_CHECKING:
    import torch

__all__ = [
    "MANIFEST_NAME",
    "PICKLE_SUFFIXES",
    "SAVE_JOURNAL_NAME",
    "atomic_directory",
    "atomic_update_directory",
    "atomic_write_bytes",
    "atomic_write_text",
    "find_pickle_files",
    "load_json",
    "load_tensors",
    "recover_interrupted_save",
    "refuse_pickles",
    "save_json",
    "save_tensors",
    "sha256_file",
    "verify_manifest",
    "write_manifest",
]

logger = logging.getLogger(__name__)

MANIFEST_NAME = "manifest.json"
# An update of an existing folder (``atomic_update_directory``) stages its files in a hidden sub-folder, then
# commits by writing this journal; whoever finds the journal (the save itself, or the next load or save after a
# kill) completes the update.
SAVE_JOURNAL_NAME = ".setfit_lite-save.json"
_STAGING_PREFIX = ".setfit_lite-save-"
# Always treated as pickles; ``.bin`` files are sniffed (``pytorch_model.bin`` is a pickle, others may not be).
PICKLE_SUFFIXES = (".pkl", ".pickle", ".joblib", ".pt", ".pth")
_SNIFFED_SUFFIXES = (".bin",)


# --------------------------------------------------------------------------------------------- atomic writes


def _fsync(path: Path) -> None:
    """fsync a file (or a folder) by path."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: Path) -> None:
    """Best-effort fsync of a directory so renames inside it are durable (no-op where unsupported)."""
    with contextlib.suppress(OSError, AttributeError):
        _fsync(path)


def _temp_sibling(target: Path, kind: str) -> Path:
    """A fresh hidden path in ``target``'s folder (same filesystem, so renames are atomic)."""
    return target.with_name(f".{target.name}.{kind}-{uuid.uuid4().hex[:12]}")


def _remove(path: Path) -> None:
    """Remove a file, symlink or folder tree if it exists."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


@contextlib.contextmanager
def atomic_directory(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield an empty hidden temp folder next to ``path``; on success it atomically becomes ``path``.

    If ``path`` already exists it is renamed aside, the temp folder is renamed in, then the old one is
    removed (restored instead if the swap fails). On an exception inside the block the temp folder is
    removed and any previous ``path`` is left untouched.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temp_sibling(target, "tmp")
    tmp.mkdir()  # unlike tempfile.mkdtemp, honours the umask (the folder becomes the final target)
    try:
        yield tmp
    except BaseException:
        _remove(tmp)
        raise
    old: Path | None = None
    try:
        if target.exists() or target.is_symlink():
            old = _temp_sibling(target, "old")
            os.replace(target, old)
        try:
            os.replace(tmp, target)
        except BaseException:
            if old is not None:
                os.replace(old, target)
                old = None
            raise
    except BaseException:
        _remove(tmp)
        raise
    _fsync_dir(target.parent)
    if old is not None:
        _remove(old)


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (temp file in the same folder, fsync, ``os.replace``)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp_name = _temp_sibling(target, "tmp")
    fd = os.open(tmp_name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp_name, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
    _fsync_dir(target.parent)


def atomic_write_text(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> None:
    """Write ``text`` to ``path`` atomically."""
    atomic_write_bytes(path, text.encode(encoding))


# ---------------------------------------------------------------------------------------------------- JSON


def save_json(path: str | os.PathLike[str], obj: Any) -> None:
    """Write ``obj`` as JSON (sorted keys, indent 2, trailing newline) atomically."""
    text = json.dumps(obj, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False)
    atomic_write_text(path, text + "\n")


def load_json(path: str | os.PathLike[str], *, what: str) -> Any:
    """Read a JSON file; a missing, unreadable or invalid file raises ValueError naming ``what`` and the path."""
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"{what} file {p} is missing")
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{what} file {p} is not valid JSON ({exc}); the file may be truncated or corrupt") from exc
    except OSError as exc:
        raise ValueError(f"{what} file {p} could not be read: {exc}") from exc


# ----------------------------------------------------------------------------------------------- tensors


def _to_cpu_tensor(name: str, value: np.ndarray | torch.Tensor) -> torch.Tensor:
    import torch  # here, not at the top: ONNX inference uses this module without torch

    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu").contiguous()
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            raise TypeError(f"tensor {name!r}: object arrays cannot be saved")
        return torch.from_numpy(np.require(value, requirements=["C", "W"]))
    raise TypeError(f"tensor {name!r}: expected a numpy array or torch tensor, got {type(value).__name__}")


def save_tensors(
    path: str | os.PathLike[str],
    tensors: Mapping[str, np.ndarray | torch.Tensor],
    metadata: Mapping[str, str] | None = None,
) -> None:
    """Save named arrays/tensors to a safetensors file atomically (tensors sharing memory are copied)."""
    from safetensors.torch import save as _st_save

    out: dict[str, torch.Tensor] = {}
    seen: set[tuple[int, int]] = set()
    for name, value in tensors.items():
        if not isinstance(name, str):
            raise TypeError(f"tensor names must be str, got {name!r}")
        tensor = _to_cpu_tensor(name, value)
        key = (tensor.untyped_storage().data_ptr(), tensor.untyped_storage().nbytes())
        if tensor.numel() and key in seen:
            tensor = tensor.clone()
        seen.add(key)
        out[name] = tensor
    meta = {"format": "pt", **(dict(metadata) if metadata else {})}
    atomic_write_bytes(path, _st_save(out, metadata=meta))


def load_tensors(path: str | os.PathLike[str]) -> dict[str, torch.Tensor]:
    """Load a safetensors file onto the CPU; a missing, truncated or corrupt file raises ValueError naming it."""
    from safetensors.torch import load_file as _st_load_file

    p = Path(path)
    if not p.is_file():
        raise ValueError(f"tensor file {p} is missing")
    try:
        return _st_load_file(p, device="cpu")
    except (SafetensorError, OSError, RuntimeError, ValueError) as exc:
        raise ValueError(f"tensor file {p} is truncated or corrupt and cannot be loaded: {exc}") from exc


# ----------------------------------------------------------------------------------------------- pickles


def _is_pickle_payload(path: Path) -> bool:
    """Sniff whether a file is a raw pickle (protocol >= 2) or a torch zip archive containing a pickle."""
    try:
        with path.open("rb") as fh:
            head = fh.read(2)
        if len(head) == 2 and head[0] == 0x80 and 2 <= head[1] <= 5:
            return True
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as zf:
                return any(n.endswith((".pkl", ".pickle")) for n in zf.namelist())
    except (OSError, zipfile.BadZipFile):
        return False
    return False


def find_pickle_files(folder: str | os.PathLike[str]) -> list[Path]:
    """Return (sorted) files under ``folder`` that are, or are likely to be, pickles."""
    root = Path(folder)
    if not root.is_dir():
        return []
    found = []
    for p in root.rglob("*"):
        if not p.is_file():
            continue
        suffix = p.suffix.lower()
        if suffix in PICKLE_SUFFIXES or (suffix in _SNIFFED_SUFFIXES and _is_pickle_payload(p)):
            found.append(p)
    return sorted(found)


def refuse_pickles(folder: str | os.PathLike[str], allow_pickle: bool = False) -> list[Path]:
    """Raise ValueError listing pickle files under ``folder`` unless ``allow_pickle``; return the files found."""
    found = find_pickle_files(folder)
    if found and not allow_pickle:
        root = Path(folder)
        listing = ", ".join(str(p.relative_to(root)) for p in found)
        raise ValueError(
            f"refusing to load {root}: it contains pickle files, which can execute arbitrary code when loaded: "
            f"{listing}. Pass allow_pickle=True only if you trust the source of these files."
        )
    return found


# ------------------------------------------------------------------------------------------------ manifest


def sha256_file(path: str | os.PathLike[str], chunk_size: int = 1 << 20) -> str:
    """Return the hex sha256 digest of a file (huggingface_hub's chunked ``sha_fileobj``)."""
    with Path(path).open("rb") as fh:
        return sha_fileobj(fh, chunk_size).hex()


def write_manifest(folder: str | os.PathLike[str]) -> dict[str, str]:
    """Write ``manifest.json`` mapping every file's relative POSIX path to its sha256; return the mapping."""
    root = Path(folder)
    entries = {
        p.relative_to(root).as_posix(): sha256_file(p)
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.relative_to(root).as_posix() != MANIFEST_NAME
    }
    save_json(root / MANIFEST_NAME, entries)
    return entries


def _is_inside(rel: str) -> bool:
    """Whether a manifest/journal path stays inside its folder (lexical check: hub caches symlink to blobs)."""
    norm = os.path.normpath(rel)
    return not (os.path.isabs(norm) or norm in (".", "..") or norm.startswith(".." + os.sep) or Path(rel).drive)


def _read_manifest(root: Path) -> dict[str, str]:
    """The entries of ``root/manifest.json``, validated; ValueError naming the file otherwise."""
    manifest_path = root / MANIFEST_NAME
    entries = load_json(manifest_path, what="manifest")
    if not isinstance(entries, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in entries.items()):
        raise ValueError(f"manifest file {manifest_path} must map relative file paths to sha256 hex digests")
    for rel in entries:
        if not _is_inside(rel):
            raise ValueError(f"manifest file {manifest_path} lists a path outside the folder: {rel!r}")
    return entries


def verify_manifest(folder: str | os.PathLike[str]) -> None:
    """Check every file listed in ``manifest.json``; raise ValueError naming missing or changed files.

    Files not listed in the manifest are ignored (use ``refuse_pickles`` to vet extra files).
    """
    root = Path(folder)
    missing, changed = [], []
    for rel, expected in sorted(_read_manifest(root).items()):
        p = root / rel
        if not p.is_file():
            missing.append(rel)
        elif sha256_file(p) != expected.lower():
            changed.append(rel)
    if missing or changed:
        parts = []
        if missing:
            parts.append(f"missing: {', '.join(missing)}")
        if changed:
            parts.append(f"changed (truncated or tampered): {', '.join(changed)}")
        raise ValueError(f"{root} does not match {MANIFEST_NAME}; " + "; ".join(parts))


# ------------------------------------------------------------------------------ updating an existing folder


@contextlib.contextmanager
def atomic_update_directory(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield an empty staging folder whose files, on success, atomically become ``path``'s owned files.

    On exit ``manifest.json`` is written for the staged files. If ``path`` does not exist it appears complete
    or not at all (:func:`atomic_directory`). If it is a folder, only the files the new content has and the
    files listed in its previous ``manifest.json`` are touched: same-named files are replaced, previously
    listed files the new content lacks are removed (unless changed since), and everything else (the user's
    files) is left alone. A path that is not a folder raises FileExistsError and is left untouched.

    The update commits by writing a journal once every file is staged: a process killed before that leaves
    the previous content; after it, the next :func:`recover_interrupted_save` (every load and save of the
    folder calls it) completes the update. Either way the folder never holds a mix. Concurrent saves into
    one folder are not supported.
    """
    target = Path(path)
    if target.is_symlink() and not target.exists() or target.exists() and not target.is_dir():
        raise FileExistsError(f"cannot save into {target}: it exists and is not a folder (it was left untouched)")
    if not target.exists():
        with atomic_directory(target) as tmp:
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
        _fsync_tree(stage)
        save_json(target / SAVE_JOURNAL_NAME, journal)  # the commit point
    except BaseException:
        _remove(stage)
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
            isinstance(journal.get(key), list) and all(isinstance(r, str) and _is_inside(r) for r in journal[key])
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
        _fsync_dir(folder)  # the moves are durable before the journal goes
    _remove(stage)
    with contextlib.suppress(FileNotFoundError):
        (root / SAVE_JOURNAL_NAME).unlink()
    _fsync_dir(root)


def _remove_leftovers(root: Path) -> None:
    """Staging folders and journal temp files of saves killed before they committed."""
    for p in root.iterdir():
        if p.name.startswith((_STAGING_PREFIX, f".{SAVE_JOURNAL_NAME}.tmp-")):
            _remove(p)


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


def _stale_files(root: Path, written: set[str]) -> list[str]:
    """Files listed by ``root``'s previous manifest, unchanged since, that the new content does not write."""
    if not (root / MANIFEST_NAME).is_file():
        return []
    try:
        previous = _read_manifest(root)
    except ValueError as exc:
        logger.warning("not removing files of the previous model in %s: %s", root, exc)
        return []
    return sorted(
        rel for rel, digest in previous.items()
        if rel not in written and (root / rel).is_file() and sha256_file(root / rel) == digest.lower()
    )


def _fsync_tree(folder: Path) -> None:
    """fsync every file and folder under ``folder`` (so the commit never points at unwritten data)."""
    for p in sorted(folder.rglob("*"), reverse=True):
        if p.is_file() and not p.is_symlink():
            _fsync(p)
        elif p.is_dir():
            _fsync_dir(p)
    _fsync_dir(folder)
