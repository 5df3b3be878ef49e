"""``setfit-lite search``: hyperparameter search with Optuna, each trial scored on ``--eval-data``; several workers
may share one study in a database."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ...config.params import argument_type
from ..inputs import check_inputs_exist, check_new_file, check_output
from ..training import add_train_args, train_args, train_eval_rows

HELP = "search hyperparameters with Optuna (each trial scored on --eval-data)"


def add_arguments(search: argparse.ArgumentParser) -> None:
    add_train_args(search)
    search.add_argument("--space", default=None,
                        help="JSON file: a SigOpt-style parameter list or experiment dict (default: setfit's space)")
    search.add_argument("--n-trials", type=argument_type("n_trials"), default=None,
                        help="default: the experiment's budget, else 10")
    search.add_argument("--storage", default=None,
                        help="Optuna storage: a URL (sqlite:///study.db), a .db path or a .log/.jsonl journal file")
    search.add_argument("--study-name", default=None,
                        help="with --storage: an existing study of this name is continued (resume, or share it "
                             "between processes)")
    search.add_argument("--direction", choices=["maximize", "minimize"], default=None,
                        help="whether a higher metric is better (default: maximize)")
    search.add_argument("--output", default=None, help="write the best trial as JSON to this file")
    _add_shared_study_args(search)


def _add_shared_study_args(p: argparse.ArgumentParser) -> None:
    """Options for several workers (processes or machines) sharing one study in a database."""
    p.add_argument("--max-trials", type=argument_type("max_trials"), default=None,
                   help="stop once the study holds N complete trials, counting every worker's (without --n-trials "
                        "this worker runs until then)")
    p.add_argument("--heartbeat-interval", type=argument_type("heartbeat_interval"), default=None,
                   help="seconds between a running trial's heartbeats in the database; the trial of a worker that "
                        "stopped beating (killed, machine lost) is marked failed and run again by another worker")
    p.add_argument("--grace-period", type=argument_type("grace_period"), default=None,
                   help="seconds without a heartbeat before a trial counts as dead (default: 2 x the interval)")
    p.add_argument("--max-retry", type=argument_type("max_retry"), default=3,
                   help="times a dead worker's trial is run again (default 3)")


def run(ns: argparse.Namespace) -> dict[str, Any]:
    from ...modeling import SetFitModel
    from ...search import load_space, open_storage
    from ...trainer import Trainer

    if ns.study_name and not ns.storage:
        raise ValueError("--study-name needs --storage (an in-memory study cannot be continued)")
    if not ns.eval_data:
        raise ValueError("search needs --eval-data: each trial is scored on it")
    if ns.output:
        storage_file = ns.storage.removeprefix("sqlite:///") if ns.storage else None  # a URL is no path: skipped
        check_output(ns.output, ns.model, ns.data, ns.eval_data, ns.space, storage_file, suffix="best")
        check_new_file(ns.output, "search")
    # missing files and an invalid space are refused before --storage creates a database file
    check_inputs_exist({"data": ns.data, "--eval-data": ns.eval_data, "--space": ns.space})
    space = load_space(ns.space) if ns.space else None
    # a database that cannot be reached, or refuses the password, fails here: before any data or model is loaded
    storage = open_storage(ns.storage, heartbeat_interval=ns.heartbeat_interval, grace_period=ns.grace_period,
                           max_retry=ns.max_retry)
    if isinstance(space, dict):  # explicit options override the experiment's budget and objective
        space = dict(space)
        if ns.n_trials is not None:
            space["observation_budget"] = ns.n_trials
        elif ns.max_trials is not None:
            space.pop("observation_budget", None)  # --max-trials alone: run until the study holds that many
        if ns.direction is not None and space.get("metrics"):
            space["metrics"] = [{**m, "objective": ns.direction} if m.get("strategy", "optimize") == "optimize"
                                else m for m in space["metrics"]]
    args = train_args(ns)
    rows, eval_rows = train_eval_rows(ns)
    trainer = Trainer(args=args, train_dataset=rows, eval_dataset=eval_rows,
                      model_init=lambda: SetFitModel.from_pretrained(ns.model))
    options: dict[str, Any] = {"storage": storage, "study_name": ns.study_name,
                               "load_if_exists": bool(ns.study_name)}
    if ns.n_trials is not None:
        options["n_trials"] = ns.n_trials
    elif ns.max_trials is not None:
        options["n_trials"] = None  # until the study holds --max-trials complete trials
    options.update(max_trials=ns.max_trials)
    if ns.direction is not None:
        options["direction"] = ns.direction
    best = trainer.hyperparameter_search(hp_space=space, **options)
    study = best.study
    result: dict[str, Any] = {"run_id": best.run_id, "objective": best.objective,
                              "hyperparameters": best.hyperparameters, "study_name": study.study_name,
                              "direction": study.direction.name.lower(), "n_trials": len(study.trials)}
    text = json.dumps(result, default=str)
    if ns.output:
        from ...serialization import atomic_write_text

        atomic_write_text(ns.output, json.dumps(result, indent=2, default=str) + "\n", overwrite=False)
    print(text)
    return result
