"""The benchmarks' temporary folders: every one is removed when its run ends.

A benchmark that trains or exports models into a folder of its own makes it here, never with a bare
``tempfile.mkdtemp`` (a test holds the benchmarks to that): a run trains and exports hundreds of MB, and CI runs the
benchmarks' smoke mode on every change.
"""

from __future__ import annotations

import atexit
import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["process_folder", "work_folder"]


@contextlib.contextmanager
def work_folder(prefix: str) -> Iterator[Path]:
    """A new temporary folder for the block, removed with everything in it when the block ends (or fails)."""
    with tempfile.TemporaryDirectory(prefix=prefix) as folder:
        yield Path(folder)


def process_folder(prefix: str) -> Path:
    """A new temporary folder for the rest of this process (what a cached setting or a URL points to), removed
    when the interpreter exits."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder
