"""What a command prints besides its results: setfit_lite's log on stderr, warnings, progress bars and
dependencies' messages, for ``--quiet``, the default or ``--verbose``."""

from __future__ import annotations

import contextlib
import logging
import sys
import warnings
from collections.abc import Iterator

from .. import logging as sl_logging
from ..verbosity import quiet_dependencies, quiet_optuna

__all__ = ["LEVELS", "command_output"]

LEVELS = {"quiet": logging.ERROR, "default": logging.WARNING, "verbose": logging.INFO}
LIBRARIES = ("setfit_lite", "trainers")  # the loggers whose records a command prints


class _DropSignalNotice(logging.Filter):
    """The trainer's "signal received: saving a checkpoint" notice (any logger of the ``setfit_lite`` hierarchy):
    the command line prints its own summary."""

    def __init__(self) -> None:
        super().__init__("setfit_lite")

    def filter(self, record: logging.LogRecord) -> bool:
        return not (super().filter(record) and str(record.msg).startswith("signal "))


@contextlib.contextmanager
def command_output(verbosity: str, dependencies: bool = True) -> Iterator[None]:
    """Logging, warnings and progress bars for ``verbosity`` ("quiet", "default" or "verbose").

    ``dependencies=False`` (a command that runs an exported folder) leaves transformers, huggingface_hub and
    Optuna unimported: their settings are not touched.
    """
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("setfit-lite: %(levelname)s: %(message)s"))
    if verbosity != "verbose":
        handler.addFilter(_DropSignalNotice())
    loggers = [logging.getLogger(name) for name in LIBRARIES]
    saved = [(lg.level, lg.propagate) for lg in loggers]
    bars = sl_logging.is_progress_bar_enabled()
    for lg in loggers:
        lg.addHandler(handler)
        lg.setLevel(LEVELS[verbosity])
        lg.propagate = False
    (sl_logging.disable_progress_bar if verbosity == "quiet" else sl_logging.enable_progress_bar)()
    try:
        with warnings.catch_warnings(), contextlib.ExitStack() as stack:
            if verbosity == "quiet":
                warnings.simplefilter("ignore")
            if dependencies:
                stack.enter_context(_dependency_output(verbosity))
            yield
    finally:
        (sl_logging.enable_progress_bar if bars else sl_logging.disable_progress_bar)()
        for lg, (lg_level, propagate) in zip(loggers, saved):
            lg.removeHandler(handler)
            lg.setLevel(lg_level)
            lg.propagate = propagate


@contextlib.contextmanager
def _dependency_output(verbosity: str) -> Iterator[None]:
    """transformers' logging, its and the hub's progress bars, and Optuna's trial lines, for ``verbosity``."""
    from transformers.utils import logging as hf_logging

    transformers_level = hf_logging.get_verbosity()
    try:
        with quiet_dependencies(), quiet_optuna():
            if verbosity == "quiet":
                hf_logging.set_verbosity_error()
            yield
    finally:
        hf_logging.set_verbosity(transformers_level)
