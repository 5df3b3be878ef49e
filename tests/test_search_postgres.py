"""Hyperparameter search on a real PostgreSQL server: workers sharing one study, a worker killed mid-trial, bad URLs.

The server is a throwaway cluster (``tests/postgres_server.py``); without PostgreSQL's binaries (installed by
``.ci/run`` on Debian) or the ``postgres`` extra these tests are skipped, saying which is missing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import optuna
import pytest
import sqlalchemy
from optuna.trial import TrialState
from postgres_server import PostgresServer, find_bindir, postgres_server

from setfit_lite.search import create_study

ROOT = Path(__file__).resolve().parents[1]
SPACE = [{"name": "seed", "type": "int", "bounds": {"min": 0, "max": 10_000}}]


@pytest.fixture(scope="module")
def server() -> Iterator[PostgresServer]:
    pytest.importorskip("psycopg", reason='the postgres extra is not installed: pip install -e ".[postgres]"')
    if find_bindir() is None:
        pytest.skip("PostgreSQL is not installed (initdb/pg_ctl not found; Debian: apt-get install -y postgresql, "
                    "which .ci/run does when it runs as root)")
    with postgres_server() as running:
        yield running


@pytest.fixture()
def files(tmp_path: Path, toy_data: Any, toy_eval: Any) -> dict[str, Path]:
    paths = {}
    for name, data in (("train", toy_data), ("eval", toy_eval)):
        paths[name] = tmp_path / f"{name}.jsonl"
        paths[name].write_text("".join(json.dumps({"text": t, "label": y}) + "\n"
                                       for t, y in zip(data["text"], data["label"])), encoding="utf-8")
    paths["space"] = tmp_path / "space.json"
    paths["space"].write_text(json.dumps(SPACE), encoding="utf-8")
    return paths


def _search_argv(files: dict[str, Path], body: str, url: str, *options: str) -> list[str]:
    return ["search", str(files["train"]), "--eval-data", str(files["eval"]), "--model", body, "--space",
            str(files["space"]), "--storage", url, "--study-name", "shared", "--backend", "cpu", "--num-epochs", "1",
            *options]


def _worker(argv: list[str]) -> subprocess.Popen:
    env = {**os.environ, "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.Popen([sys.executable, "-m", "setfit_lite.cli", *argv], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _finish(worker: subprocess.Popen) -> dict[str, Any]:
    out, err = worker.communicate(timeout=300)
    assert worker.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


RACE = """
import sys, time
from setfit_lite.search import create_study
start = float(sys.argv[2])
time.sleep(max(0.0, start - time.time()))  # every process creates the study at the same instant
print(create_study(sys.argv[1], "race", load_if_exists=True).study_name)
"""


def test_workers_creating_one_study_at_once_on_a_fresh_database(server: PostgresServer) -> None:
    """Plain Optuna: most of these processes die with an IntegrityError while creating the tables."""
    url = server.create_database("race")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    start = time.time() + 4
    workers = [subprocess.Popen([sys.executable, "-c", RACE, url, str(start)], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True) for _ in range(4)]
    results = [w.communicate(timeout=120) for w in workers]
    assert [w.returncode for w in workers] == [0] * 4, [err for _, err in results]
    assert [out.strip() for out, _ in results] == ["race"] * 4
    assert len(optuna.study.get_all_study_summaries(url)) == 1


def test_two_cli_workers_share_one_postgres_study(server: PostgresServer, files: dict[str, Path],
                                                  tiny_body_path: str, tmp_path: Path) -> None:
    url = server.create_database("shared")
    outputs = [tmp_path / f"best{i}.json" for i in range(2)]
    workers = [_worker(_search_argv(files, tiny_body_path, url, "--n-trials", "2", "--output", str(out)))
               for out in outputs]  # started together on a database without tables or study
    results = [_finish(w) for w in workers]
    study = optuna.load_study(study_name="shared", storage=url)
    assert [t.state for t in study.trials] == [TrialState.COMPLETE] * 4  # the sum of the workers' trials
    assert sorted(t.number for t in study.trials) == [0, 1, 2, 3]
    assert [json.loads(out.read_text(encoding="utf-8")) for out in outputs] == results
    last = [r for r in results if r["n_trials"] == 4]  # the worker that finished last saw every trial
    assert last and all(r["run_id"] == str(study.best_trial.number) and r["objective"] == study.best_value
                        for r in last)


def test_killed_worker_trial_is_retried_by_another(server: PostgresServer, files: dict[str, Path],
                                                   tiny_body_path: str) -> None:
    url = server.create_database("killed")
    options = ("--max-trials", "4", "--heartbeat-interval", "1", "--grace-period", "2")
    first = _worker(_search_argv(files, tiny_body_path, url, *options))
    storage = optuna.storages.RDBStorage(url)  # one connection pool for the polling

    def mid_trial() -> bool:
        """A trial has completed and the next one runs with a heartbeat (Optuna ignores a trial killed before its
        first heartbeat) and its parameters (what the retry must reuse; on a loaded machine the heartbeat can come
        first)."""
        try:
            trials = optuna.load_study(study_name="shared", storage=storage).trials
        except KeyError:  # the study does not exist yet
            return False
        with storage.engine.connect() as connection:
            beating = set(connection.execute(sqlalchemy.text("SELECT trial_id FROM trial_heartbeats")).scalars())
        return (any(t.state == TrialState.COMPLETE for t in trials) and trials[-1].state == TrialState.RUNNING
                and trials[-1]._trial_id in beating and bool(trials[-1].params))

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        time.sleep(0.05)
        if mid_trial():
            first.send_signal(signal.SIGSTOP)  # frozen, then checked again: killed mid-trial for sure
            if mid_trial():
                first.send_signal(signal.SIGKILL)
                break
            first.send_signal(signal.SIGCONT)
    first.communicate(timeout=60)
    assert first.returncode == -signal.SIGKILL
    study = optuna.load_study(study_name="shared", storage=storage)
    (killed,) = [t for t in study.trials if t.state == TrialState.RUNNING]
    completed_before = sum(t.state == TrialState.COMPLETE for t in study.trials)
    assert 1 <= completed_before < 4

    time.sleep(2.5)  # past the grace period
    result = _finish(_worker(_search_argv(files, tiny_body_path, url, *options)))
    trials = optuna.load_study(study_name="shared", storage=url).trials
    storage.engine.dispose()
    assert sum(t.state == TrialState.COMPLETE for t in trials) == 4  # the study still reaches its trial count
    assert [t.number for t in trials if t.state == TrialState.FAIL] == [killed.number]
    (retry,) = [t for t in trials if t.system_attrs.get("failed_trial") == killed.number]
    assert retry.state == TrialState.COMPLETE and retry.params == killed.params
    assert result["n_trials"] == len(trials)


@pytest.mark.parametrize("bad", ["password", "port", "scheme"])
def test_bad_storage_is_a_clear_error_before_training(server: PostgresServer, files: dict[str, Path],
                                                      tiny_body_path: str, bad: str, capsys: pytest.CaptureFixture,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from setfit_lite.cli import main
    from setfit_lite.modeling import SetFitModel

    loaded: list[Any] = []
    monkeypatch.setattr(SetFitModel, "from_pretrained", lambda *a, **k: loaded.append(a))
    url = {"password": server.url(password="not-the-password"),
           "port": server.url().replace(f":{server.port}/", ":1/"),
           "scheme": server.url().replace("postgresql://", "postgres://")}[bad]
    start = time.monotonic()
    assert main(_search_argv(files, tiny_body_path, url, "--n-trials", "1")) == 2
    err = capsys.readouterr().err
    expected = {"password": 'password authentication failed for user "setfit"', "port": "127.0.0.1",
                "scheme": "not a database URL SQLAlchemy can use (PostgreSQL: postgresql://"}[bad]
    assert expected in err and "setfit-lite search: error:" in err
    assert "not-the-password" not in err and server.password not in err  # the password is never printed
    assert loaded == [] and time.monotonic() - start < 30  # no model was loaded, nothing trained
    with pytest.raises((ConnectionError, ValueError)):
        create_study(url, "s")


# ------------------------------------------------------------------------------------------------ without a server


def test_shared_study_options_are_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from setfit_lite.search import open_storage

    with pytest.raises(ValueError, match="grace_period needs heartbeat_interval"):
        open_storage(f"sqlite:///{tmp_path / 'a.db'}", grace_period=5)
    with pytest.raises(ValueError, match="heartbeat_interval needs a database URL"):
        open_storage(tmp_path / "journal.jsonl", heartbeat_interval=5)
    storage = open_storage(tmp_path / "b.db", heartbeat_interval=5, grace_period=7, max_retry=1)
    assert (storage.heartbeat_interval, storage.grace_period) == (5, 7)
    with monkeypatch.context() as patch:  # without the postgres extra
        patch.setitem(sys.modules, "psycopg", None)
        with pytest.raises(ImportError, match=r"u:\*\*\*@.*setfit_lite\[postgres\]"):
            open_storage("postgresql://u:secret@127.0.0.1:1/db")


def test_max_trials_counts_the_study_not_the_worker(tmp_path: Path, tiny_body_path: str, toy_data: Any,
                                                    toy_eval: Any) -> None:
    from setfit_lite import SetFitModel, Trainer, TrainingArguments

    trainer = Trainer(args=TrainingArguments(backend="cpu", num_epochs=1), train_dataset=toy_data,
                      eval_dataset=toy_eval, model_init=lambda: SetFitModel.from_pretrained(tiny_body_path))
    options = {"hp_space": SPACE, "storage": tmp_path / "max.db", "study_name": "max", "load_if_exists": True,
               "n_trials": None, "pruner": optuna.pruners.NopPruner()}
    assert len(trainer.hyperparameter_search(max_trials=2, **options).study.trials) == 2
    assert len(trainer.hyperparameter_search(max_trials=2, **options).study.trials) == 2  # already there: none
    assert len(trainer.hyperparameter_search(max_trials=3, **options).study.trials) == 3
    with pytest.raises(ValueError, match="max_trials"):
        trainer.hyperparameter_search(max_trials=0, **options)
