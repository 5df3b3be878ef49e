"""How much setfit_lite prints: nothing unless asked.

Library calls are quiet by default: a progress bar is drawn only when the caller asks for it *and* stderr is a
terminal (a bar redrawn with ``\\r`` becomes one endless line in a log file); the progress bars and non-actionable
warnings of dependencies (transformers' "Loading weights"/"Writing model shards", onnxruntime's quantisation
advice, Optuna's line per trial) are silenced at our call sites. ``set_verbosity("verbose")`` lets them through;
``set_verbosity("quiet")`` also turns off the bars callers ask for. The command line sets it from
``--quiet``/``--verbose``.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import warnings
from collections.abc import Iterator

__all__ = ["VERBOSITY_LEVELS", "filter_log_records", "get_verbosity", "quiet_dependencies", "quiet_optuna",
           "set_verbosity", "show_progress"]

VERBOSITY_LEVELS = ("quiet", "default", "verbose")
_verbosity = "default"


def set_verbosity(level: str) -> None:
    """``"quiet"`` (no progress bars at all), ``"default"`` or ``"verbose"`` (dependencies' bars and logs too)."""
    global _verbosity
    if level not in VERBOSITY_LEVELS:
        raise ValueError(f"verbosity must be one of {VERBOSITY_LEVELS}, got {level!r}")
    _verbosity = level


def get_verbosity() -> str:
    """The current level set by :func:`set_verbosity` (``"default"`` unless changed)."""
    return _verbosity


def show_progress(requested: bool | None = True) -> bool:
    """Whether to draw a progress bar the caller ``requested``: not with verbosity ``"quiet"``, and only when
    stderr is a terminal."""
    if not requested or _verbosity == "quiet":
        return False
    isatty = getattr(sys.stderr, "isatty", None)
    return bool(isatty and isatty())


@contextlib.contextmanager
def quiet_dependencies() -> Iterator[None]:
    """Turn off transformers' progress bars ("Loading weights", "Writing model shards") inside the block.

    The previous transformers and huggingface_hub settings are restored afterwards. With verbosity ``"verbose"``
    and a terminal on stderr the bars are left as they are.
    """
    if _verbosity == "verbose" and show_progress():
        yield
        return
    from huggingface_hub.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars
    from transformers.utils import logging as hf_logging

    transformers_bars, hub_bars = hf_logging.is_progress_bar_enabled(), not are_progress_bars_disabled()
    with warnings.catch_warnings():  # "cannot disable: HF_HUB_DISABLE_PROGRESS_BARS=0 has priority"
        warnings.simplefilter("ignore")
        hf_logging.disable_progress_bar()  # transformers' switch also turns off the hub's bars
    try:
        yield
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if transformers_bars:
                hf_logging.enable_progress_bar()
            if hub_bars == are_progress_bars_disabled():
                (enable_progress_bars if hub_bars else disable_progress_bars)()


class _DropPrefixes(logging.Filter):
    def __init__(self, prefixes: tuple[str, ...]) -> None:
        super().__init__()
        self.prefixes = prefixes

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(self.prefixes)


@contextlib.contextmanager
def filter_log_records(logger_name: str, *prefixes: str) -> Iterator[None]:
    """Drop the records of logger ``logger_name`` (``""``: the root logger) whose message starts with one of
    ``prefixes`` inside the block.

    While the root logger has no handler, a ``NullHandler`` is attached to it for the block, so that a
    dependency's module-level ``logging.warning(...)`` does not call ``logging.basicConfig`` and leave a stderr
    handler on the root logger for the rest of the process.
    """
    target = logging.getLogger(logger_name or None)
    root = logging.getLogger()
    drop = _DropPrefixes(prefixes)
    placeholder = logging.NullHandler() if not root.handlers else None
    target.addFilter(drop)
    if placeholder is not None:
        root.addHandler(placeholder)
    try:
        yield
    finally:
        target.removeFilter(drop)
        if placeholder is not None:
            root.removeHandler(placeholder)


@contextlib.contextmanager
def quiet_optuna() -> Iterator[None]:
    """Optuna's INFO lines ("Trial 3 finished with value ...") off inside the block, unless verbosity is
    ``"verbose"``; Optuna's previous verbosity is restored afterwards."""
    import optuna

    previous = optuna.logging.get_verbosity()
    wanted = optuna.logging.INFO if _verbosity == "verbose" else optuna.logging.WARNING
    optuna.logging.set_verbosity(min(previous, wanted) if _verbosity == "verbose" else max(previous, wanted))
    try:
        yield
    finally:
        optuna.logging.set_verbosity(previous)
