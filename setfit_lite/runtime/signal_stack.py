"""Keep the calling thread's alternate signal stack across a native call that swaps it and frees its own.

OpenVINO's CPU plugin (2024-2026 releases, seen with 2026's wheel on Linux) installs an alternate signal stack
(``sigaltstack``) of its own on the thread that compiles a model, and when the compiled model is freed it puts
back the stack it found and frees its own. With two compiled models freed out of order, or a stack replaced
meanwhile (Python's ``faulthandler`` installs one), the thread is left pointing at freed memory. CPython installs
its signal handlers with ``SA_ONSTACK``, so the next signal handled on that thread (SIGINT from Ctrl-C, SIGTERM
from a scheduler: training's checkpoint-and-stop) runs on unmapped memory and the process dies with SIGSEGV.
`kept_signal_stack` saves the thread's stack before such a call and puts it back after, so the foreign
stack is never the live one and nothing freed is ever restored. Linux only; elsewhere it does nothing.
"""

from __future__ import annotations

import ctypes
import functools
import sys
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["current_signal_stack", "kept_signal_stack"]


class _StackT(ctypes.Structure):  # struct stack_t (Linux): void *ss_sp; int ss_flags; size_t ss_size
    _fields_ = [("ss_sp", ctypes.c_void_p), ("ss_flags", ctypes.c_int), ("ss_size", ctypes.c_size_t)]


@functools.cache
def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.sigaltstack.argtypes = [ctypes.POINTER(_StackT), ctypes.POINTER(_StackT)]
        return libc
    except (OSError, AttributeError):
        return None


def current_signal_stack() -> tuple[int, int, int] | None:
    """The calling thread's alternate signal stack as ``(address, flags, size)`` (None off Linux)."""
    libc = _libc()
    if libc is None:
        return None
    stack = _StackT()
    if libc.sigaltstack(None, ctypes.byref(stack)) != 0:
        return None
    return int(stack.ss_sp or 0), int(stack.ss_flags), int(stack.ss_size)


@contextmanager
def kept_signal_stack() -> Iterator[None]:
    """Run the body, then put back the calling thread's alternate signal stack as it was before."""
    libc = _libc()
    saved = _StackT()
    if libc is None or libc.sigaltstack(None, ctypes.byref(saved)) != 0:
        yield
        return
    try:
        yield
    finally:
        restore = _StackT(saved.ss_sp, saved.ss_flags & 2, saved.ss_size)  # SS_DISABLE (2), or the stack
        libc.sigaltstack(ctypes.byref(restore), None)
