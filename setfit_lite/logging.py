"""setfit's (and transformers') logging helpers for setfit_lite's loggers: ``set_verbosity_info()`` and friends.

The library's loggers live under ``"setfit_lite"``. Until a function of this module is called they have no handler
of their own and propagate to the root logger, so setfit_lite stays quiet unless the application configures
logging. The first call here does what setfit does on import: it gives the ``"setfit_lite"`` logger a stderr
handler and stops propagation (``enable_propagation()`` turns it back on; ``disable_default_handler()`` removes the
handler).

This is setfit_lite's one verbosity API. At ``INFO`` or below (``set_verbosity_info()``, the command line's
``--verbose``) dependencies speak too: transformers' and the hub's progress bars, Optuna's line per trial
(`setfit_lite.verbosity` keeps them quiet otherwise). ``disable_progress_bar()`` turns off every progress bar,
including those a caller asks for; otherwise a requested bar is drawn when stderr is a terminal (tqdm's own rule,
``tqdm(disable=None)``).
"""

from __future__ import annotations

import logging
import sys
import threading
from logging import CRITICAL, DEBUG, ERROR, FATAL, INFO, NOTSET, WARN, WARNING  # noqa: F401 (setfit's names)

__all__ = ["CRITICAL", "DEBUG", "ERROR", "FATAL", "INFO", "NOTSET", "WARN", "WARNING", "add_handler",
           "disable_default_handler", "disable_progress_bar", "disable_propagation", "enable_default_handler",
           "enable_explicit_format", "enable_progress_bar", "enable_propagation", "get_log_levels_dict",
           "get_logger", "get_verbosity", "is_progress_bar_enabled", "is_verbose", "remove_handler",
           "reset_format", "set_verbosity", "set_verbosity_debug", "set_verbosity_error", "set_verbosity_info",
           "set_verbosity_warning", "tqdm_disable"]

_LIBRARY = __name__.split(".")[0]
_LEVELS = {"debug": DEBUG, "info": INFO, "warning": WARNING, "error": ERROR, "critical": CRITICAL}
_lock = threading.Lock()
_default_handler: logging.Handler | None = None
_progress_bars = True


def _root() -> logging.Logger:
    return logging.getLogger(_LIBRARY)


def _configure() -> None:
    """Once: a stderr handler on the library's logger, no propagation (setfit's setup)."""
    global _default_handler
    with _lock:
        if _default_handler is not None:
            return
        _default_handler = logging.StreamHandler(sys.stderr)
        root = _root()
        root.addHandler(_default_handler)
        if root.level == NOTSET:
            root.setLevel(WARNING)
        root.propagate = False


def get_log_levels_dict() -> dict[str, int]:
    """The level names ``set_verbosity`` understands, as setfit gives them."""
    return dict(_LEVELS)


def get_logger(name: str | None = None) -> logging.Logger:
    """A logger under the library's, configured with its handler.

    Args:
        name: The logger's name; None for `"setfit_lite"`.

    Returns:
        The `logging.Logger`.
    """
    _configure()
    return logging.getLogger(name or _LIBRARY)


def get_verbosity() -> int:
    """The level of setfit_lite's logger (``logging.WARNING`` by default)."""
    _configure()
    return _root().getEffectiveLevel()


def set_verbosity(verbosity_level: int) -> None:
    """Set the level of setfit_lite's logger; at `INFO` or below, dependencies' progress bars and log lines are let
    through too.

    Args:
        verbosity_level: A `logging` level, such as `setfit_lite.logging.INFO`.

    Example:
        ```python
        from setfit_lite import logging

        logging.set_verbosity(logging.ERROR)   # warnings off
        ```
    """
    _configure()
    _root().setLevel(verbosity_level)


def set_verbosity_info() -> None:
    """`set_verbosity(INFO)`: progress and decisions, and dependencies' output."""
    set_verbosity(INFO)


def set_verbosity_warning() -> None:
    """`set_verbosity(WARNING)`, the default: warnings and errors only."""
    set_verbosity(WARNING)


def set_verbosity_debug() -> None:
    """`set_verbosity(DEBUG)`: everything."""
    set_verbosity(DEBUG)


def set_verbosity_error() -> None:
    """`set_verbosity(ERROR)`: errors only."""
    set_verbosity(ERROR)


def disable_default_handler() -> None:
    """Remove the stderr handler this module installed."""
    _configure()
    assert _default_handler is not None
    _root().removeHandler(_default_handler)


def enable_default_handler() -> None:
    """Put the stderr handler back."""
    _configure()
    assert _default_handler is not None
    _root().addHandler(_default_handler)


def add_handler(handler: logging.Handler) -> None:
    """Add a handler to setfit_lite's logger.

    Args:
        handler: A `logging.Handler`.

    Raises:
        ValueError: None.
    """
    _configure()
    if handler is None:
        raise ValueError("add_handler needs a logging.Handler, got None")
    _root().addHandler(handler)


def remove_handler(handler: logging.Handler) -> None:
    """Remove a handler from setfit_lite's logger.

    Args:
        handler: A handler of the logger.

    Raises:
        ValueError: A handler the logger does not have.
    """
    _configure()
    if handler is None or handler not in _root().handlers:
        raise ValueError(f"{handler!r} is not a handler of the {_LIBRARY!r} logger")
    _root().removeHandler(handler)


def disable_propagation() -> None:
    """Stop setfit_lite's records from reaching the root logger (the default once this module is used)."""
    _configure()
    _root().propagate = False


def enable_propagation() -> None:
    """Let setfit_lite's records reach the root logger too (disable the default handler to avoid printing twice)."""
    _configure()
    _root().propagate = True


def enable_explicit_format() -> None:
    """``[LEVEL|file:line] time >> message`` on every handler of setfit_lite's logger."""
    _configure()
    formatter = logging.Formatter("[%(levelname)s|%(filename)s:%(lineno)s] %(asctime)s >> %(message)s")
    for handler in _root().handlers:
        handler.setFormatter(formatter)


def reset_format() -> None:
    """Back to the plain format on every handler of setfit_lite's logger."""
    _configure()
    for handler in _root().handlers:
        handler.setFormatter(None)


def is_verbose() -> bool:
    """Whether setfit_lite's logger was set to ``INFO`` or below: then dependencies' progress bars and log lines
    are let through too."""
    level = _root().level
    return level != NOTSET and level <= INFO


def is_progress_bar_enabled() -> bool:
    """Whether progress bars may be drawn (not after `disable_progress_bar`)."""
    return _progress_bars


def enable_progress_bar() -> None:
    """Allow progress bars again: a requested bar is drawn when stderr is a terminal."""
    global _progress_bars
    _progress_bars = True


def disable_progress_bar() -> None:
    """No progress bars at all, even those a caller asks for."""
    global _progress_bars
    _progress_bars = False


def tqdm_disable(requested: bool | None = True) -> bool | None:
    """tqdm's ``disable=`` for a bar the caller ``requested``: ``True`` when not requested or progress bars are
    off, else ``None`` (tqdm draws the bar only when its stream, stderr, is a terminal)."""
    return None if requested and _progress_bars else True
