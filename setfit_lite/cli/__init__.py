"""``setfit-lite`` command line: demo | train | search | evaluate | predict | suggest | export | convert | serve.

Quiet by default: results go to stdout, warnings to stderr, progress bars only when stderr is a terminal
(``--quiet``: none, and errors only; ``--verbose``: the training log too). Ctrl-C or SIGTERM ends a command with
one line on stderr and exit status 128 + the signal's number (130, 143); ``train --save-steps N`` checkpoints first
and says how to resume.

- `parser`: the argparse parser, built from the commands;
- `commands`: one module per command, its options (``add_arguments``) beside what it does (``run``);
- `options` and `training`: options several commands share;
- `inputs`: texts from files or stdin, model folders, the guard that nothing read is written over;
- `output`: logging, warnings and progress bars for ``--quiet`` / ``--verbose``;
- `signals`: Ctrl-C and SIGTERM: the exit status and the line saying what was saved.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys

from ..errors import NoCompletedTrialError
from .commands import COMMANDS
from .output import command_output
from .parser import build_parser
from .signals import interrupted_line, interruptible, signal_number

__all__ = ["build_parser", "main"]


def _runs_exported(ns: argparse.Namespace) -> bool:
    """Whether the command runs an exported (ONNX, OpenVINO or static) folder: then torch, transformers and
    Optuna are never imported."""
    from ..modeling import exported_format

    return ns.command in ("predict", "evaluate", "serve") and exported_format(ns.model_dir) is not None


def _stdout_gone() -> bool:
    """Whether stdout's reader has closed the pipe; then stdout is pointed at the null device, so that the flush at
    exit does not fail again."""
    import select

    try:
        fd = sys.stdout.fileno()
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        gone = any(events & select.POLLERR for _, events in poller.poll(0))  # a pipe without its reader
    except (OSError, ValueError, AttributeError):  # no file descriptor, or no poll on this platform
        return False
    if gone:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, fd)
        os.close(null)
    return gone


def main(argv: list[str] | None = None) -> int:
    """Run ``setfit-lite ARGV``; the exit status: 0, 1 (no search trial completed), 2 (an error), 128 + signal
    (141 when the reader of stdout closed the pipe, with nothing on stderr)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    ns = build_parser().parse_args(argv)
    # signals handled first: a Ctrl-C while the output setup imports transformers gets the one line too
    try:
        with interruptible(), command_output(getattr(ns, "verbosity", "default"),
                                             dependencies=not _runs_exported(ns)):
            COMMANDS[ns.command].run(ns)
    except KeyboardInterrupt as interrupt:  # Ctrl-C, SIGTERM, or the trainer's TrainingInterrupted
        signum = signal_number(interrupt)
        print(interrupted_line(ns, signum, argv), file=sys.stderr)
        return 128 + signum
    except BrokenPipeError as error:
        if not _stdout_gone():
            print(f"setfit-lite {ns.command}: error: {error}", file=sys.stderr)
            return 2
        return 128 + signal.SIGPIPE  # the reader of stdout left (`| head -1`): quietly, as SIGPIPE ends a command
    except (ValueError, TypeError, OSError, ImportError) as error:
        print(f"setfit-lite {ns.command}: error: {error}", file=sys.stderr)
        return 2
    except NoCompletedTrialError as error:
        print(f"setfit-lite {ns.command}: error: {error}", file=sys.stderr)
        return 1
    return 0
