"""Dependencies kept quiet at setfit_lite's call sites unless setfit_lite's verbosity is ``INFO`` or below.

transformers' and the hub's progress bars ("Loading weights", "Writing model shards"), onnxruntime's quantisation
advice and Optuna's line per trial are not actionable for a user of setfit_lite: they are silenced where setfit_lite
calls those libraries. ``setfit_lite.logging.set_verbosity_info()`` (the command line's ``--verbose``) lets them
through. The verbosity itself is set and read with `setfit_lite.logging`.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Iterator

from .logging import is_progress_bar_enabled, is_verbose

__all__ = ["filter_log_records", "quiet_dependencies", "quiet_optuna"]


@contextlib.contextmanager
def quiet_dependencies() -> Iterator[None]:
    """Turn off transformers' progress bars ("Loading weights", "Writing model shards") inside the block.

    The previous transformers and huggingface_hub settings are restored afterwards. At verbosity ``INFO`` with
    progress bars enabled the bars are left as they are.
    """
    if is_verbose() and is_progress_bar_enabled():
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
    """Optuna's INFO lines ("Trial 3 finished with value ...") off inside the block, unless setfit_lite's verbosity
    is ``INFO`` or below; Optuna's previous verbosity is restored afterwards."""
    import optuna

    previous = optuna.logging.get_verbosity()
    verbose = is_verbose()
    wanted = optuna.logging.INFO if verbose else optuna.logging.WARNING
    optuna.logging.set_verbosity(min(previous, wanted) if verbose else max(previous, wanted))
    try:
        yield
    finally:
        optuna.logging.set_verbosity(previous)
