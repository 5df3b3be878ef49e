"""Integrity manifests: ``manifest.json`` maps each file of a folder to its sha256; verified on load.

The manifest setfit_lite writes is marked (``"format": "setfit_lite.manifest"``, its ``format_version``, the files
under ``"files"``): `owned_files` reads only such a manifest, and it is the one ownership check every writer
uses before it removes or replaces a file it did not write in this call (a save into an existing folder removes
the files of the previous save; checkpoints replace and prune earlier checkpoints). A ``manifest.json`` written by
anything else, or by setfit_lite before the mark (a bare mapping of paths to digests), is still verified on load
but owns nothing: nothing it lists is ever removed. A listed file whose digest no longer matches was changed since
it was written: a save treats it as the user's (`update`).

The model card, ``README.md`` (`UNVERIFIED_FILES`), is listed, so that the library knows it wrote it, but not
verified on load: it is documentation, which the user may edit or delete without making the model unloadable.
"""

from __future__ import annotations

import os
from pathlib import Path

from huggingface_hub.utils.sha import sha_fileobj

from .files import load_json, save_json

__all__ = ["MANIFEST_FORMAT", "MANIFEST_NAME", "UNVERIFIED_FILES", "is_inside", "owned_files", "owns_folder",
           "read_manifest", "sha256_file", "verify_manifest", "write_manifest"]

MANIFEST_NAME = "manifest.json"
MANIFEST_FORMAT = "setfit_lite.manifest"  # the mark of a manifest this library wrote
MANIFEST_FORMAT_VERSION = 1
#: files a manifest lists but loading does not verify: documentation (the model card), which the user may edit or
#: delete; a save still never replaces an edited one (`update`)
UNVERIFIED_FILES = frozenset({"README.md"})


def sha256_file(path: str | os.PathLike[str], chunk_size: int = 1 << 20) -> str:
    """Return the hex sha256 digest of a file (huggingface_hub's chunked ``sha_fileobj``)."""
    with Path(path).open("rb") as fh:
        return sha_fileobj(fh, chunk_size).hex()


def write_manifest(folder: str | os.PathLike[str]) -> dict[str, str]:
    """Write ``manifest.json``, marked as setfit_lite's, mapping every file's relative POSIX path to its sha256
    (under ``"files"``); return the mapping."""
    root = Path(folder)
    entries = {
        p.relative_to(root).as_posix(): sha256_file(p)
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.relative_to(root).as_posix() != MANIFEST_NAME
    }
    save_json(root / MANIFEST_NAME, {"format": MANIFEST_FORMAT, "format_version": MANIFEST_FORMAT_VERSION,
                                     "files": entries})
    return entries


def is_inside(rel: str) -> bool:
    """Whether a manifest/journal path stays inside its folder (lexical check: hub caches symlink to blobs)."""
    norm = os.path.normpath(rel)
    return not (os.path.isabs(norm) or norm in (".", "..") or norm.startswith(".." + os.sep) or Path(rel).drive)


def read_manifest(root: Path) -> dict[str, str]:
    """The entries of ``root/manifest.json`` (setfit_lite's marked form, or a bare mapping of paths to digests),
    validated; ValueError naming the file otherwise."""
    return _read_manifest(root)[0]


def owned_files(root: str | os.PathLike[str]) -> dict[str, str]:
    """The files (path: sha256) that setfit_lite's own manifest in ``root`` lists: the only files a writer may
    remove or replace without having written them in this call. Empty when ``root`` has no manifest, or one that
    setfit_lite did not write (unmarked: another tool's, or one edited into another form). ValueError for a
    marked manifest that cannot be read."""
    folder = Path(root)
    if not (folder / MANIFEST_NAME).is_file():
        return {}
    entries, marked = _read_manifest(folder)
    return entries if marked else {}


def owns_folder(root: str | os.PathLike[str]) -> bool:
    """Whether ``root`` is a real folder (not a symlink) holding a manifest setfit_lite wrote."""
    folder = Path(root)
    if folder.is_symlink() or not folder.is_dir() or not (folder / MANIFEST_NAME).is_file():
        return False
    try:
        return _read_manifest(folder)[1]
    except ValueError:
        return False


def _read_manifest(root: Path) -> tuple[dict[str, str], bool]:
    """``(entries, whether the manifest is marked as setfit_lite's)``; ValueError naming the file if invalid."""
    manifest_path = root / MANIFEST_NAME
    data = load_json(manifest_path, what="manifest")
    marked = isinstance(data, dict) and data.get("format") == MANIFEST_FORMAT
    if marked and data.get("format_version") != MANIFEST_FORMAT_VERSION:
        raise ValueError(f"manifest file {manifest_path} has format_version {data.get('format_version')!r}; this "
                         f"setfit_lite reads {MANIFEST_FORMAT_VERSION} (written by a newer setfit_lite?)")
    entries = data.get("files") if marked else data
    if not isinstance(entries, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in entries.items()):
        raise ValueError(f"manifest file {manifest_path} must map relative file paths to sha256 hex digests")
    for rel in entries:
        if not is_inside(rel):
            raise ValueError(f"manifest file {manifest_path} lists a path outside the folder: {rel!r}")
    return entries, marked


def verify_manifest(folder: str | os.PathLike[str]) -> None:
    """Check every file listed in ``manifest.json``; raise ValueError naming missing or changed files.

    Files not listed in the manifest are ignored (use ``refuse_pickles`` to vet extra files), and so are the listed
    `UNVERIFIED_FILES` (the model card: documentation, edited or deleted at will).
    """
    root = Path(folder)
    missing, changed = [], []
    for rel, expected in sorted(read_manifest(root).items()):
        if rel in UNVERIFIED_FILES:
            continue
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
        edited = any(rel.endswith(".json") for rel in changed)  # a config a user may have edited on purpose
        hint = ("; a file edited by hand after saving is refused as well: keep the folder as it was saved and pass "
                "the change as an argument when loading, or save the folder again with it" if edited else "")
        raise ValueError(f"{root} does not match {MANIFEST_NAME}; " + "; ".join(parts) + hint)
