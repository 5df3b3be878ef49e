"""Hyperparameter search on SST-2 8-shot: best configuration against the defaults, with and without pruning.

    python -m benchmarks.search --n-trials 20 [--search-seeds 0 1] [--test-seeds 0 1 2 3 4]

Two 20-trial Optuna searches (TPE sampler, seed 0) over the same space, one with ``MedianPruner`` (trials
evaluated after every body epoch and stopped when below the median of earlier trials at the same step) and one
with ``NopPruner``. A trial's objective is the accuracy on SST-2's validation split, averaged over the training
samples of ``--search-seeds`` (8 examples per class each, setfit's ``sample_dataset`` rows); each seed is one
``hyperparameter_search`` call on one shared study (in sqlite), and the objective of a configuration is the mean
of its trials across those calls (the sampler proposes for the first seed; later seeds replay the same
configurations in order through ``study.enqueue_trial``). The best configuration of each search and
the defaults are then trained on the samples of ``--test-seeds`` and scored on the full test split (1,821).
Writes ``--out``.json and .md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from benchmarks.compare_setfit import load_task
from benchmarks.machine import write_result
from benchmarks.workdir import process_folder

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

MINILM = "sentence-transformers/all-MiniLM-L6-v2"

SPACE = [  # SigOpt-style: the form hyperparameter_search also accepts from JSON files
    {"name": "body_learning_rate", "type": "double", "bounds": {"min": 1e-5, "max": 2e-4}, "transformation": "log"},
    {"name": "num_epochs", "type": "int", "bounds": {"min": 1, "max": 3}},
    {"name": "min_steps_per_epoch", "type": "int", "bounds": {"min": 2, "max": 12}},
    {"name": "C", "type": "double", "bounds": {"min": 0.01, "max": 100.0}, "transformation": "log"},
]


def read(data_dir: Path, split: str) -> dict:
    with open(data_dir / "sst2" / f"{split}.jsonl", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return {"text": [r["text"] for r in rows], "label": [int(r["label"]) for r in rows]}


def minilm() -> object:
    """``model_init`` of every trial and test run: a fresh MiniLM-L6."""
    from setfit_lite import SetFitModel

    return SetFitModel.from_pretrained(MINILM)


def search(data_dir: Path, seeds: list[int], n_trials: int, prune: bool, storage: str) -> dict:
    """Run the search for each seed's sample on one study; return the best configuration and timings."""
    import optuna

    from setfit_lite import Trainer, TrainingArguments

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    validation = read(data_dir, "validation")
    name = f"sst2-{'pruned' if prune else 'unpruned'}"
    per_seed: dict[int, list] = {}
    start = time.perf_counter()
    for i, seed in enumerate(seeds):
        task = load_task(data_dir, "sst2:8", seed)
        trainer = Trainer(model_init=minilm,
                          args=TrainingArguments(seed=seed, show_progress_bar=False),
                          train_dataset={"text": task["texts"], "label": task["labels"]}, eval_dataset=validation)
        sampler = optuna.samplers.TPESampler(seed=0)
        pruner = optuna.pruners.MedianPruner(n_startup_trials=5) if prune else optuna.pruners.NopPruner()
        study_name = f"{name}-seed{seed}"
        if i > 0:  # replay the first seed's configurations, in order
            study = optuna.create_study(storage=storage, study_name=study_name, direction="maximize")
            for trial in per_seed[seeds[0]]:
                study.enqueue_trial(trial["params"])
        trainer.hyperparameter_search(hp_space=SPACE, n_trials=n_trials, sampler=sampler, pruner=pruner,
                                      storage=storage, study_name=study_name, load_if_exists=True)
        study = optuna.load_study(study_name=study_name, storage=storage)
        per_seed[seed] = [{"params": t.params, "state": t.state.name,
                           "value": t.value if t.state == optuna.trial.TrialState.COMPLETE else None,
                           "last_step": t.last_step} for t in study.trials]
    seconds = time.perf_counter() - start
    configs = []
    for j, first in enumerate(per_seed[seeds[0]]):
        values = [per_seed[s][j]["value"] for s in seeds]
        configs.append({"params": first["params"], "values": values,
                        "objective": statistics.fmean(values) if None not in values else None})
    complete = [c for c in configs if c["objective"] is not None]
    best = max(complete, key=lambda c: c["objective"])
    pruned = sum(t["state"] == "PRUNED" for trials in per_seed.values() for t in trials)
    return {"study": name, "seconds": seconds, "trials": n_trials * len(seeds), "pruned": pruned, "best": best,
            "configs": configs}


def test_accuracy(data_dir: Path, params: dict, seeds: list[int]) -> dict:
    from setfit_lite import Trainer, TrainingArguments

    accuracies = []
    for seed in seeds:
        task = load_task(data_dir, "sst2:8", seed)
        trainer = Trainer(model_init=minilm,
                          args=TrainingArguments(seed=seed, show_progress_bar=False),
                          train_dataset={"text": task["texts"], "label": task["labels"]})
        if params:
            trainer.apply_hyperparameters(params, final_model=True)
        trainer.train()
        accuracies.append(trainer.evaluate({"text": task["test_texts"], "label": task["test_labels"]})["accuracy"])
    return {"accuracies": accuracies, "mean": statistics.fmean(accuracies), "sd": statistics.stdev(accuracies)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--n-trials", type=int, default=20)
    parser.add_argument("--search-seeds", nargs="+", type=int, default=[0, 1])
    parser.add_argument("--test-seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--storage", default=None,
                        help="Optuna storage URL (default: a temporary sqlite file, removed at the end)")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "search_sst2")
    args = parser.parse_args(argv)
    storage = args.storage or f"sqlite:///{process_folder('setfit_lite_search_')}/study.db"
    command = "python -m benchmarks.search " + " ".join(argv if argv is not None else sys.argv[1:])
    results: dict = {"command": command, "space": SPACE, "searches": {}}
    for prune in (True, False):
        found = search(args.data_dir, args.search_seeds, args.n_trials, prune, storage)
        print(json.dumps({k: v for k, v in found.items() if k != "configs"}), flush=True)
        results["searches"][found["study"]] = found
    results["test"] = {"defaults": test_accuracy(args.data_dir, {}, args.test_seeds)}
    for name, found in results["searches"].items():
        results["test"][name] = test_accuracy(args.data_dir, found["best"]["params"], args.test_seeds)
        print(json.dumps({name: results["test"][name]}), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    md = [f"`{command}`", "", "| configuration | search s | trials (pruned) | validation objective | "
          f"test accuracy, seeds {args.test_seeds[0]}–{args.test_seeds[-1]} (mean ± sd) | parameters |",
          "|---|---|---|---|---|---|"]
    t = results["test"]["defaults"]
    md.append(f"| defaults | – | – | – | {t['mean']:.3f} ± {t['sd']:.3f} | – |")
    for name, found in results["searches"].items():
        t = results["test"][name]
        params = ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
                           for k, v in found["best"]["params"].items())
        md.append(f"| best of {name} search | {found['seconds']:.0f} | {found['trials']} ({found['pruned']}) | "
                  f"{found['best']['objective']:.3f} | {t['mean']:.3f} ± {t['sd']:.3f} | {params} |")
    write_result(args.out, results, "\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    main()
