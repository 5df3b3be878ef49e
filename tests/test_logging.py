"""Logging and verbosity: every module logs under its own name in the ``setfit_lite`` hierarchy, one verbosity API
(``setfit_lite.logging``: transformers' and setfit's names, levels as ints), and progress bars drawn by tqdm's own
rule (only on a terminal) unless turned off."""

from __future__ import annotations

import importlib
import io
import logging
import os
import signal
import sys
from collections.abc import Iterator

import pytest

from setfit_lite import SetFitModel, Trainer, TrainingArguments
from setfit_lite import logging as sl_logging

TRAINING_MODULES = ("setfit_lite.training.session", "setfit_lite.training.signals",
                    "setfit_lite.training.progress", "setfit_lite.training.interim_eval")


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture()
def library_logger(monkeypatch: pytest.MonkeyPatch) -> Iterator[logging.Logger]:
    """The ``setfit_lite`` logger, its level, handlers, propagation, ``setfit_lite.logging``'s one-time setup and
    the progress-bar switch restored after."""
    monkeypatch.setattr(sl_logging, "_default_handler", sl_logging._default_handler)
    library = logging.getLogger("setfit_lite")
    saved = (library.level, library.propagate, list(library.handlers), sl_logging.is_progress_bar_enabled())
    try:
        yield library
    finally:
        library.setLevel(saved[0])
        library.propagate = saved[1]
        library.handlers[:] = saved[2]
        (sl_logging.enable_progress_bar if saved[3] else sl_logging.disable_progress_bar)()


def test_training_modules_log_under_their_own_names(library_logger: logging.Logger, tiny_body_path: str,
                                                     toy_data: dict) -> None:
    """A training module's record reaches a handler on ``setfit_lite`` named for the module that wrote it."""
    collect = Collect()
    library_logger.addHandler(collect)
    library_logger.setLevel(logging.INFO)
    args = TrainingArguments(max_steps=3, logging_steps=1, show_progress_bar=False, backend="cpu")
    Trainer(model=SetFitModel.from_pretrained(tiny_body_path), args=args, train_dataset=toy_data).train()
    names = {record.name for record in collect.records}
    assert {"setfit_lite.trainer", "setfit_lite.training.session"} <= names, names
    for record in collect.records:  # every record is named for its file: setfit_lite/training/session.py, ...
        assert record.name.rsplit(".", 1)[-1] == record.module, (record.name, record.pathname)
    for name in TRAINING_MODULES:
        assert importlib.import_module(name).logger.name == name


@pytest.mark.parametrize("verbosity, shown", [("default", False), ("quiet", False), ("verbose", True)])
def test_command_line_drops_the_signal_notice_unless_verbose(capsys: pytest.CaptureFixture, verbosity: str,
                                                             shown: bool) -> None:
    """The trainer's "signal received" notice (``setfit_lite.training.signals``) is left to ``--verbose``: the
    command prints its own summary; other warnings of the hierarchy still pass."""
    from setfit_lite.cli.output import command_output
    from setfit_lite.training.signals import StopSignal

    with command_output(verbosity, dependencies=False):
        with StopSignal(enabled=True) as stop:
            os.kill(os.getpid(), signal.SIGTERM)
        assert stop.signum == signal.SIGTERM
        logging.getLogger("setfit_lite.training.progress").error("checkpoint-3 is incomplete: skipped")
    err = capsys.readouterr().err
    assert ("signal 15 received: saving a checkpoint" in err) is shown, err
    assert "setfit-lite: ERROR: checkpoint-3 is incomplete: skipped" in err


def test_one_verbosity_api(library_logger: logging.Logger) -> None:
    """Levels are ints (transformers' and setfit's API); ``setfit_lite.verbosity`` has no second one."""
    from setfit_lite import verbosity

    assert not hasattr(verbosity, "get_verbosity") and not hasattr(verbosity, "set_verbosity")
    for setter, level in [(sl_logging.set_verbosity_debug, logging.DEBUG),
                          (sl_logging.set_verbosity_info, logging.INFO),
                          (sl_logging.set_verbosity_warning, logging.WARNING),
                          (sl_logging.set_verbosity_error, logging.ERROR)]:
        setter()
        assert sl_logging.get_verbosity() == level and isinstance(sl_logging.get_verbosity(), int)
    sl_logging.set_verbosity(logging.CRITICAL)
    assert sl_logging.get_verbosity() == logging.CRITICAL


def test_info_verbosity_lets_dependencies_speak(library_logger: logging.Logger) -> None:
    """Optuna's line per trial is silenced below INFO and shown at ``set_verbosity_info()``."""
    import optuna

    from setfit_lite.verbosity import quiet_optuna

    collect = Collect()
    optuna_logger = logging.getLogger("optuna")
    optuna_logger.addHandler(collect)
    try:
        sl_logging.set_verbosity_warning()
        with quiet_optuna():
            optuna.create_study().optimize(lambda trial: trial.suggest_float("x", 0, 1), n_trials=1)
        assert not [r for r in collect.records if r.getMessage().startswith("Trial 0 finished")]
        sl_logging.set_verbosity_info()
        with quiet_optuna():
            optuna.create_study().optimize(lambda trial: trial.suggest_float("x", 0, 1), n_trials=1)
        assert [r for r in collect.records if r.getMessage().startswith("Trial 0 finished")]
    finally:
        optuna_logger.removeHandler(collect)


def test_tqdm_disable_follows_the_request_and_the_switch(library_logger: logging.Logger) -> None:
    """``None`` leaves the terminal check to tqdm; ``True`` when not asked or progress bars are off."""
    assert sl_logging.tqdm_disable(True) is None
    assert sl_logging.tqdm_disable(False) is True and sl_logging.tqdm_disable(None) is True
    sl_logging.disable_progress_bar()
    assert not sl_logging.is_progress_bar_enabled() and sl_logging.tqdm_disable(True) is True
    sl_logging.enable_progress_bar()
    assert sl_logging.is_progress_bar_enabled() and sl_logging.tqdm_disable(True) is None


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_training_bar_is_drawn_on_a_terminal_unless_disabled(library_logger: logging.Logger, tiny_body_path: str,
                                                             toy_data: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    args = TrainingArguments(max_steps=2, show_progress_bar=True, backend="cpu")
    model = SetFitModel.from_pretrained(tiny_body_path)
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    Trainer(model=model, args=args, train_dataset=toy_data).train()
    assert "Training (embedding)" in terminal.getvalue() and "\r" in terminal.getvalue()
    terminal.seek(0)
    terminal.truncate()
    sl_logging.disable_progress_bar()
    Trainer(model=model, args=args, train_dataset=toy_data).train()
    assert "\r" not in terminal.getvalue()
