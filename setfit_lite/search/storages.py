"""Optuna storages from what a user passes: a database URL, a ``.db``/``.sqlite`` path (SQLite), a ``.log``/``.jsonl``
path (journal file) or a storage object, opened and checked before any trial runs.

A database URL (SQLite, PostgreSQL, any SQLAlchemy URL) becomes an ``RDBStorage`` whose tables exist; workers that
start at once on a fresh database race to create them, and the losers retry. Heartbeats re-queue the trials of a
worker that died. Errors name the URL with its password hidden. Torch-free.
"""

from __future__ import annotations

import os
import random
import time
import warnings
from pathlib import Path
from typing import Any

import optuna

from ..config.params import check_params

__all__ = ["open_storage"]

_CONNECT_ATTEMPTS = 6  # workers creating the tables of a fresh database at once: the losers retry
_JOURNAL_SUFFIXES = (".log", ".jsonl")
_SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")


def _resolve_storage(storage: Any) -> Any:
    if storage is None or isinstance(storage, optuna.storages.BaseStorage):
        return storage
    if isinstance(storage, os.PathLike) or (isinstance(storage, str) and "://" not in storage):
        path = Path(storage)
        if path.suffix.lower() in _JOURNAL_SUFFIXES:
            from optuna.storages.journal import JournalFileBackend, JournalStorage

            return JournalStorage(JournalFileBackend(str(path)))
        if path.suffix.lower() in _SQLITE_SUFFIXES:
            return f"sqlite:///{path.resolve()}"
        raise ValueError(f"storage {str(storage)!r}: give a database URL (e.g. sqlite:///study.db), a path ending in "
                         f"{'/'.join(_SQLITE_SUFFIXES)} (SQLite) or {'/'.join(_JOURNAL_SUFFIXES)} (journal file), "
                         "or an optuna storage object")
    if isinstance(storage, str):
        return storage
    raise TypeError(f"storage must be a URL, a path or an optuna storage, got {type(storage).__name__}")


def _masked(url: str) -> str:
    """``url`` with its password replaced by ``***`` (for messages)."""
    try:
        from sqlalchemy.engine import make_url

        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # not parseable: say nothing of it beyond the scheme
        return url.split("://", 1)[0] + "://..."


def _stale_trial_callback_kwargs(max_retry: int | None) -> dict[str, Any]:
    """The RDBStorage argument that re-queues a trial whose worker stopped beating (Optuna >= 4.9 renamed it)."""
    retry = getattr(optuna.storages, "RetryHeartbeatStaleTrialCallback", None)
    if retry is not None:
        return {"heartbeat_stale_trial_callback": retry(max_retry=max_retry)}
    return {"failed_trial_callback": optuna.storages.RetryFailedTrialCallback(max_retry=max_retry)}


def _open_database(url: str, heartbeat_interval: int | None, grace_period: int | None,
                   max_retry: int | None) -> optuna.storages.RDBStorage:
    """An RDBStorage on ``url``, its tables created if needed; errors say what is wrong, without the password.

    Several workers starting on a fresh database race to create its tables (PostgreSQL: ``IntegrityError`` on
    ``pg_type``); the losers retry, and find the tables.
    """
    from sqlalchemy import exc as sa_exc

    kwargs: dict[str, Any] = {}
    with warnings.catch_warnings():  # heartbeats are "experimental" in Optuna since 2.8
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        if heartbeat_interval is not None:
            kwargs.update(heartbeat_interval=heartbeat_interval, grace_period=grace_period,
                          **_stale_trial_callback_kwargs(max_retry))
    for attempt in range(_CONNECT_ATTEMPTS):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                return optuna.storages.RDBStorage(url, **kwargs)
        except (sa_exc.IntegrityError, sa_exc.ProgrammingError):
            if attempt == _CONNECT_ATTEMPTS - 1:
                raise
            time.sleep(random.uniform(0.05, 0.2) * (attempt + 1))
        except sa_exc.ArgumentError as error:
            hint = " (PostgreSQL: postgresql://USER:PASSWORD@HOST:PORT/DATABASE)" if url.startswith("postgres:") else ""
            raise ValueError(f"storage {_masked(url)!r} is not a database URL SQLAlchemy can use{hint}: "
                             f"{error}") from None
        except sa_exc.OperationalError as error:  # no server, wrong host/port, user or password, no such database
            reason = str(getattr(error, "orig", None) or error).strip().splitlines()[0]
            raise ConnectionError(f"cannot open the Optuna storage {_masked(url)}: {reason}") from None
        except ImportError as error:
            hint = (' (pip install "setfit_lite[postgres]": psycopg 3, which SQLAlchemy >= 2.1 uses for postgresql://; '
                    'with an older SQLAlchemy write postgresql+psycopg://)') if url.startswith("postgresql") else ""
            raise ImportError(f"storage {_masked(url)} needs a database driver that is not installed{hint}: "
                              f"{error.__cause__ or error}") from None
    raise AssertionError("unreachable")


def open_storage(storage: Any, heartbeat_interval: int | None = None, grace_period: int | None = None,
                 max_retry: int | None = 3) -> Any:
    """Connect the Optuna storage a study is kept in, so a wrong URL, user or password fails here, before any
    model is built.

    Args:
        storage: None (in memory), a database URL (`sqlite:///...`, `postgresql://...`: an `RDBStorage` whose
            tables exist), a `.db`/`.sqlite` path, a `.log`/`.jsonl` journal file, or an Optuna storage object.
        heartbeat_interval: As in [`create_study`][setfit_lite.search.create_study] (database URLs only).
        grace_period: As in `create_study`.
        max_retry: As in `create_study`.

    Returns:
        The Optuna storage (or None).

    Raises:
        ValueError: `grace_period` without `heartbeat_interval`, or a heartbeat on a storage that is not a
            database URL.
        ConnectionError: A database that cannot be reached or refuses the user or password.
        ImportError: A missing database driver (the message names the extra to install).
    """
    check_params({"heartbeat_interval": heartbeat_interval, "grace_period": grace_period, "max_retry": max_retry})
    if heartbeat_interval is None and grace_period is not None:
        raise ValueError("grace_period needs heartbeat_interval")
    resolved = _resolve_storage(storage)
    if isinstance(resolved, str):
        return _open_database(resolved, heartbeat_interval, grace_period, max_retry)
    if heartbeat_interval is not None:
        raise ValueError("heartbeat_interval needs a database URL storage (sqlite:///..., postgresql://...): the "
                         "heartbeats are kept in the database; for a storage object, configure its heartbeat there")
    return resolved
