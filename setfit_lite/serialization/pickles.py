"""Pickle detection: setfit_lite never writes a pickle, and refuses to load a folder holding one unless asked."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

__all__ = ["PICKLE_SUFFIXES", "find_pickle_files", "refuse_pickles"]

# Always treated as pickles; ``.bin`` files are sniffed (``pytorch_model.bin`` is a pickle, others may not be).
PICKLE_SUFFIXES = (".pkl", ".pickle", ".joblib", ".pt", ".pth")
_SNIFFED_SUFFIXES = (".bin",)


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
