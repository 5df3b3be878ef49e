"""Atomic writes: a file or a whole folder appears complete or not at all (temp sibling, fsync, rename)."""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

__all__ = ["FOLDER_LOCK_NAME", "atomic_directory", "atomic_write_bytes", "atomic_write_text", "fsync_dir", "fsync_path",
           "path_lock", "remove_path", "replace_directory", "temp_sibling"]


def fsync_path(path: Path) -> None:
    """fsync a file (or a folder) by path."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: Path) -> None:
    """Best-effort fsync of a directory so renames inside it are durable (no-op where unsupported)."""
    with contextlib.suppress(OSError, AttributeError):
        fsync_path(path)


def temp_sibling(target: Path, kind: str) -> Path:
    """A fresh hidden path in ``target``'s folder (same filesystem, so renames are atomic)."""
    return target.with_name(f".{target.name}.{kind}-{uuid.uuid4().hex[:12]}")


def remove_path(path: Path) -> None:
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
    removed and any previous ``path`` is left untouched. Writers of one path, in any process or thread, take
    turns (`path_lock`): each one's folder appears whole, and the last one's stays.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with path_lock(target), replace_directory(target) as tmp:
        yield tmp


@contextlib.contextmanager
def replace_directory(target: Path) -> Iterator[Path]:
    """`atomic_directory` for a caller that holds ``target``'s `path_lock` (and made its parent)."""
    tmp = temp_sibling(target, "tmp")
    tmp.mkdir()  # unlike tempfile.mkdtemp, honours the umask (the folder becomes the final target)
    try:
        yield tmp
    except BaseException:
        remove_path(tmp)
        raise
    old: Path | None = None
    try:
        if target.exists() or target.is_symlink():
            old = temp_sibling(target, "old")
            os.replace(target, old)
        try:
            os.replace(tmp, target)
        except BaseException:
            if old is not None:
                os.replace(old, target)
                old = None
            raise
    except BaseException:
        remove_path(tmp)
        raise
    fsync_dir(target.parent)
    if old is not None:
        remove_path(old)


@contextlib.contextmanager
def path_lock(path: str | os.PathLike[str], shared: bool = False) -> Iterator[None]:
    """Hold a lock on the folder ``path`` (which may not exist yet) for the block; wait for it.

    The lock is ``flock`` on a hidden ``.NAME.lock`` file beside the folder (where its parent is read-only: in
    the folder, `FOLDER_LOCK_NAME`), so that every spelling of the path, every process and every thread shares it;
    the kernel drops it when its holder dies. A writer holds it exclusively; a reader (``shared=True``: a load)
    shares it with other readers, so that loads run together while a save waits for them, and they for it. The
    lock file is setfit_lite's: created for the lock, marked inside, and removed on release by its last holder; a
    waiter that then gets the lock of the removed file tries again on the current one. A file of that name that
    setfit_lite did not create (the user's, another tool's lock) is locked as it is and never removed or written
    (a symbolic link to nothing there: FileExistsError). Without ``fcntl`` (Windows), the ``filelock`` package
    locks instead, exclusively.

    Args:
        path: The folder.
        shared: Whether to share the lock with other shared holders (a load) rather than hold it alone (a save).

    Raises:
        RuntimeError: This thread holds the folder's lock already, and one of the two is exclusive (a save of the
            folder inside its own load or save): waiting would never end.
        OSError: No lock file can be made, beside the folder nor in it (a read-only folder and parent).
    """
    resolved = Path(os.path.realpath(path))
    held_here = _held_by_this_thread()
    modes = held_here.setdefault(resolved, [])
    if modes and not (shared and all(modes)):
        raise RuntimeError(f"{path} is locked by this thread already (a save or load of it is under way in this "
                           "thread): waiting for its lock again would never end; save or load it after that returns")
    modes.append(shared)
    try:
        with _flocked(resolved, shared):
            yield
    finally:
        modes.pop()
        if not modes:
            del held_here[resolved]


FOLDER_LOCK_NAME = ".setfit_lite.lock"  # `path_lock`'s lock file inside the folder, where its parent is read-only
_HELD = threading.local()  # per thread: {resolved folder: [whether shared, per lock this thread holds on it]}


def _held_by_this_thread() -> dict[Path, list[bool]]:
    """The folders whose `path_lock` this thread holds, with how (shared or not), the latest last."""
    held = getattr(_HELD, "folders", None)
    if held is None:
        held = _HELD.folders = {}
    return held


@contextlib.contextmanager
def _flocked(resolved: Path, shared: bool) -> Iterator[None]:
    """`path_lock` of the resolved folder path, the thread's bookkeeping done."""
    lock = resolved.with_name(f".{resolved.name}.lock")
    try:
        held = _locked_fd(lock, shared)
    except PermissionError:
        if not resolved.is_dir():
            raise
        lock = resolved / FOLDER_LOCK_NAME
        held = _locked_fd(lock, shared)
    if held is None:  # no fcntl
        from filelock import FileLock

        with FileLock(lock):
            yield
        return
    fd, ours = held
    try:
        yield
    finally:
        if ours and (not shared or _alone_on(fd, lock)):
            # still holding the lock alone: no one else can hold this file now. A file that cannot be removed (a
            # read-only mount, a folder the caller may not write) stays, marked, for the next holder: the work
            # under the lock is done and is not undone by it
            with contextlib.suppress(OSError):
                os.unlink(lock)
        os.close(fd)


_LOCK_MARK = b"setfit_lite path_lock\n"  # the content of a lock file `path_lock` created


def _locked_fd(lock: Path, shared: bool = False) -> tuple[int, bool] | None:
    """An open descriptor of ``lock`` holding its flock (shared or exclusive), the file still in place, and whether
    the file is setfit_lite's (created by this call, or marked: left by a holder that was killed); None without
    ``fcntl``."""
    try:
        import fcntl
    except ImportError:
        return None
    while True:
        try:
            fd, created = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600), True
        except FileExistsError:
            try:
                fd, created = os.open(lock, os.O_RDONLY), False
            except FileNotFoundError:
                if lock.is_symlink():
                    raise FileExistsError(f"cannot lock with {lock}: it is a symbolic link to nothing, where "
                                          "setfit_lite makes its lock file; remove it") from None
                continue  # removed by its holder meanwhile: create it
        try:
            if created:
                os.write(fd, _LOCK_MARK)
            fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
            with contextlib.suppress(FileNotFoundError):
                if os.path.samestat(os.fstat(fd), os.stat(lock)):
                    return fd, created or _is_marked(lock, fd)
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # the holder before removed the file: lock the current one


def _alone_on(fd: int, lock: Path) -> bool:
    """Whether a shared holder of ``lock`` (by ``fd``) is its last holder: it then holds it exclusively, the file
    still in place, and may remove it; otherwise (another holder, or one waiting that got it first) it holds no lock
    any more, and whoever holds it last removes the file."""
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    try:
        return os.path.samestat(os.fstat(fd), os.stat(lock))
    except FileNotFoundError:
        return False


def _is_marked(lock: Path, fd: int) -> bool:
    """Whether the open lock file ``fd`` is a regular file (not a link) that holds `_LOCK_MARK`."""
    return not lock.is_symlink() and os.path.isfile(lock) and os.pread(fd, len(_LOCK_MARK) + 1, 0) == _LOCK_MARK


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes, overwrite: bool = True) -> None:
    """Write ``data`` to ``path`` atomically (temp file in the same folder, fsync, ``os.replace``).

    ``overwrite=False``: the file is linked into place only if ``path`` does not exist (``os.link`` fails on an
    existing name), so a file that appeared meanwhile is never replaced: FileExistsError, and nothing is left."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp_name = temp_sibling(target, "tmp")
    fd = os.open(tmp_name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if overwrite:
            os.replace(tmp_name, target)
        else:
            try:
                os.link(tmp_name, target)
            except FileExistsError:
                raise FileExistsError(f"{target} exists: not written over; pass a new file name") from None
            os.unlink(tmp_name)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
    fsync_dir(target.parent)


def atomic_write_text(path: str | os.PathLike[str], text: str, encoding: str = "utf-8", overwrite: bool = True) -> None:
    """Write ``text`` to ``path`` atomically (``overwrite=False``: never over an existing file)."""
    atomic_write_bytes(path, text.encode(encoding), overwrite=overwrite)
