"""Integrity manifests: ``manifest.json`` maps each file of a folder to its sha256; verified on load."""

from __future__ import annotations

import os
from pathlib import Path

from huggingface_hub.utils.sha import sha_fileobj

from .files import load_json, save_json

__all__ = ["MANIFEST_NAME", "is_inside", "read_manifest", "sha256_file", "verify_manifest", "write_manifest"]

MANIFEST_NAME = "manifest.json"


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


def is_inside(rel: str) -> bool:
    """Whether a manifest/journal path stays inside its folder (lexical check: hub caches symlink to blobs)."""
    norm = os.path.normpath(rel)
    return not (os.path.isabs(norm) or norm in (".", "..") or norm.startswith(".." + os.sep) or Path(rel).drive)


def read_manifest(root: Path) -> dict[str, str]:
    """The entries of ``root/manifest.json``, validated; ValueError naming the file otherwise."""
    manifest_path = root / MANIFEST_NAME
    entries = load_json(manifest_path, what="manifest")
    if not isinstance(entries, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in entries.items()):
        raise ValueError(f"manifest file {manifest_path} must map relative file paths to sha256 hex digests")
    for rel in entries:
        if not is_inside(rel):
            raise ValueError(f"manifest file {manifest_path} lists a path outside the folder: {rel!r}")
    return entries


def verify_manifest(folder: str | os.PathLike[str]) -> None:
    """Check every file listed in ``manifest.json``; raise ValueError naming missing or changed files.

    Files not listed in the manifest are ignored (use ``refuse_pickles`` to vet extra files).
    """
    root = Path(folder)
    missing, changed = [], []
    for rel, expected in sorted(read_manifest(root).items()):
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
