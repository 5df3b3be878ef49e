"""The output-path guard: a writer never writes into, over or around what it reads.

Every writer (``save_pretrained``, the ONNX and static exports, checkpoints, the command line's outputs) calls
`check_output_path` with its output and the folders and files it reads, before reading or writing anything.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

__all__ = ["check_output_path", "refuse_symlinked_folders", "symlinked_folder"]

PathArg = str | os.PathLike[str]


def check_output_path(output: PathArg, *inputs: PathArg | None, allow_same: bool = False,
                      allow_contained: bool = False, suffix: str = "out") -> None:
    """Raise ValueError if ``output`` is one of ``inputs``, lies inside one, or contains one.

    Paths are compared after resolving symlinks, relative paths, ``..`` and trailing slashes, and by file identity
    (device and inode) where they exist, so that every spelling of the same folder is caught. Inputs that are None
    or do not exist are skipped (nothing there can be lost). ``allow_same``: the output may be an input itself;
    ``allow_contained``: inputs may lie inside the output (a checkpoint resumed from its run's output_dir). The
    message names both paths and suggests a sibling of the input, named with ``suffix``, to pass instead.
    """
    out = Path(os.path.realpath(output))
    for given in inputs:
        if given is None or not os.path.lexists(given):
            continue
        source = Path(os.path.realpath(given))
        relation = _relation(out, source)
        if relation is None or relation == "is" and allow_same or relation == "contains" and allow_contained:
            continue
        where = {"is": "another path", "lies inside": f"a path outside {_show(given, source)}",
                 "contains": f"a path that does not contain {_show(given, source)}"}[relation]
        name = f"{source.name}-{suffix}" if source.is_dir() else f"{source.stem}-{suffix}{source.suffix}"
        raise ValueError(f"the output {_show(output, out)} {relation} the input {_show(given, source)}: writing "
                         f"there would change or destroy what is read; pass {where}, e.g. {source.with_name(name)}")


def _relation(output: Path, source: Path) -> str | None:
    """How ``output`` stands to ``source``: "is", "lies inside", "contains", or None (apart)."""
    if _same(output, source):
        return "is"
    if any(_same(parent, source) for parent in output.parents):
        return "lies inside"
    if any(_same(output, parent) for parent in source.parents):
        return "contains"
    return None


def _same(a: Path, b: Path) -> bool:
    """Whether two resolved paths name one file: equal, or the same device and inode (a case-insensitive file
    system, a bind mount)."""
    if a == b:
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _show(given: PathArg, resolved: Path) -> str:
    """The path as the caller gave it, with where it resolves to when that differs."""
    text = os.fspath(given)
    return text if Path(text) == resolved else f"{text} (= {resolved})"


def refuse_symlinked_folders(root: PathArg, relative_paths: Iterable[str]) -> None:
    """FileExistsError if a folder between ``root`` and one of ``relative_paths`` (files a save writes or removes
    inside ``root``) is a symlink: writing there would change the folder the link points to (another model's
    ``head/``, say), which this save does not own. ``root`` itself may be a link (the user chose that path)."""
    found = symlinked_folder(root, relative_paths)
    if found is not None:
        folder, rel = found
        raise FileExistsError(f"cannot save into {root}: {folder} is a symbolic link (to {os.readlink(folder)}); "
                              f"writing {rel} would go through it into a folder this save does not own. Nothing was "
                              "changed; replace the link by a folder or save elsewhere")


def symlinked_folder(root: PathArg, relative_paths: Iterable[str]) -> tuple[Path, str] | None:
    """The first folder between ``root`` and one of ``relative_paths`` that is a symlink, with that path; None if
    there is none (``root`` itself is not looked at)."""
    base = Path(root)
    for rel in relative_paths:
        parts = Path(rel).parts[:-1]
        for depth in range(1, len(parts) + 1):
            folder = base.joinpath(*parts[:depth])
            if folder.is_symlink():
                return folder, rel
    return None
