"""Ctrl-C and SIGTERM on the command line: both interrupt a command, which ends with one line on stderr saying
what was saved (and how to resume) and exit status 128 + the signal's number."""

from __future__ import annotations

import argparse
import contextlib
import shlex
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .options import CHECKPOINTS

__all__ = ["interrupted_line", "interruptible", "signal_number"]


class _Interrupted(KeyboardInterrupt):
    """SIGINT/SIGTERM outside the trainer's checkpointing window."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"signal {signum}")
        self.signum = signum


def _raise_interrupted(signum: int, frame: Any) -> None:
    raise _Interrupted(signum)


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """SIGTERM, like Ctrl-C, raises a KeyboardInterrupt (the trainer takes both over while it can checkpoint)."""
    previous: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, _raise_interrupted)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def signal_number(interrupt: KeyboardInterrupt) -> int:
    """The signal that interrupted: our own handler and the trainer's ``TrainingInterrupted`` name it."""
    signum = getattr(interrupt, "signum", None)
    return int(signum) if signum is not None else int(signal.SIGINT)


def interrupted_line(ns: argparse.Namespace, signum: int, argv: list[str]) -> str:
    """One line: where the checkpoint is and the command that resumes from it, or that nothing was saved (torch is
    imported for ``train`` only: another command may run without it, and must not start importing it as it
    stops)."""
    head = f"setfit-lite {ns.command}: interrupted by {signal.Signals(signum).name}"
    if ns.command != "train":
        return f"{head}; nothing was saved"
    from ..training.checkpoints import latest_checkpoint
    saved = latest_checkpoint(Path(ns.output_dir) / CHECKPOINTS) if ns.save_steps or ns.resume else None
    if saved is None:
        hint = "" if ns.save_steps else " (train with --save-steps N to checkpoint)"
        return f"{head}; nothing was saved{hint}"
    command = shlex.join(["setfit-lite", *argv, *([] if ns.resume else ["--resume"])])
    return f"{head}; checkpoint saved in {saved}; resume with: {command}"
