"""Unlabeled texts: 8 per class + a pool of unlabeled training texts (self-training) against 8 and 16 per class.

    python -m benchmarks.unlabeled --seeds 0 --test-limit 1000 --setfit-python SETFIT_VENV/bin/python

On the tasks of ``accuracy_suite.py`` (MiniLM-L6 body), per seed: setfit_lite on ``--shots`` (8) examples per class
alone, on the same examples plus ``--pool`` (2,000) unlabeled texts (``Trainer(unlabeled_dataset=...)``), on
``2 * shots`` (16) per class, and setfit 1.2 on the 8 per class, all in one run (``compare_setfit.py``'s workers,
seeds alternate the order). The samples are ``sample_dataset``'s for the seed; the pool is drawn (for the seed) from
the rest of the training split, labels dropped, with no text of the sample or of the scored split in it. Scored on
the test split (``--test-limit``: a fixed random subset), accuracy and macro-F1.

``--choose-default`` instead scores self-training settings (``VARIANTS``) on the validation split: how the defaults
of ``pseudo_label_threshold``, ``self_training_rounds`` and ``self_training_body`` were chosen.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from benchmarks import accuracy_suite, compare_setfit, imbalanced

HERE = Path(__file__).resolve().parent

# self-training settings scored on validation data (--choose-default); the first is the chosen default
VARIANTS = {
    "auto (CV), knn k=3": {"self_training": "auto", "pseudo_label_method": "knn", "pseudo_label_neighbors": 3},
    "always, knn k=3": {"self_training": True, "pseudo_label_method": "knn", "pseudo_label_neighbors": 3},
    "always, knn k=5": {"self_training": True, "pseudo_label_method": "knn", "pseudo_label_neighbors": 5},
    "always, confidence (body, 1 round, p>=0.5)": {"self_training": True, "pseudo_label_method": "confidence"},
}
# the sweep of 2026-12-01 that chose the confidence policy's settings (--choose-default --variants earlier)
EARLIER_VARIANTS = {
    "body, 1 round, p>=0.5": {"self_training_rounds": 1, "self_training_body": True, "pseudo_label_threshold": 0.5},
    "body, 1 round, p>=0": {"self_training_rounds": 1, "self_training_body": True, "pseudo_label_threshold": 0.0},
    "head only, 1 round, p>=0.5": {"self_training_rounds": 1, "self_training_body": False,
                                   "pseudo_label_threshold": 0.5},
    "body, 2 rounds, p>=0.5": {"self_training_rounds": 2, "self_training_body": True, "pseudo_label_threshold": 0.5},
}
EARLIER = {"self_training": True, "pseudo_label_method": "confidence"}  # that sweep's policy, always on


def configs(ns: argparse.Namespace) -> dict[str, tuple[str, dict, bool]]:
    """Configuration name -> (worker, TrainingArguments, whether it gets the pool, shots per class)."""
    shots = ns.shots
    if ns.choose_default:
        variants = VARIANTS if ns.variants == "current" else {name: EARLIER | args
                                                               for name, args in EARLIER_VARIANTS.items()}
        return {f"{shots}/class": ("setfit_lite", {}, False, shots)} | \
            {f"{shots}/class + pool [{name}]": ("setfit_lite", args, True, shots) for name, args in variants.items()}
    out = {f"{shots}/class": ("setfit_lite", {}, False, shots),
           f"{shots}/class + {ns.pool} unlabeled": ("setfit_lite", json.loads(ns.lite_args), True, shots),
           f"{2 * shots}/class": ("setfit_lite", {}, False, 2 * shots)}
    if not ns.skip_setfit:
        out[f"setfit {shots}/class"] = ("setfit", {}, False, shots)
    return out


def mean_table(runs: dict[str, dict[str, list[dict]]]) -> str:
    """Markdown: the mean over tasks of each configuration's accuracy (its mean over seeds)."""
    names = list(dict.fromkeys(c for per in runs.values() for c in per))
    lines = ["| configuration | mean accuracy over tasks | mean macro-F1 | tasks |", "|---|---|---|---|"]
    for name in names:
        per_task = [rs for per in runs.values() if (rs := per.get(name))]
        acc = statistics.fmean(statistics.fmean(r["accuracy"] for r in rs) for rs in per_task)
        f1 = statistics.fmean(statistics.fmean(r["f1_macro"] for r in rs) for rs in per_task)
        lines.append(f"| {name} | {100 * acc:.1f} | {100 * f1:.1f} | {len(per_task)} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="+", default=list(accuracy_suite.TASKS), choices=accuracy_suite.TASKS)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--shots", type=int, default=8)
    parser.add_argument("--pool", type=int, default=2000, help="unlabeled training texts given to self-training")
    parser.add_argument("--lite-args", default="{}", help="JSON TrainingArguments of the run with the pool")
    parser.add_argument("--variants", choices=("current", "earlier"), default="current",
                        help="--choose-default: the pool decision and pseudo-labellers (current), or the confidence "
                             "policy's settings (earlier, the sweep of 2026-12-01)")
    parser.add_argument("--merge", type=Path, default=None,
                        help="an earlier results JSON of this script: its other tasks join the tables (each task's "
                             "rows still come from one run)")
    ns, command = imbalanced.parse_common(parser, argv, "unlabeled", "self-training settings")
    split = "validation" if ns.choose_default else "test"
    plan = configs(ns)
    workers = {"setfit_lite": compare_setfit.Worker("setfit_lite", sys.executable)}
    if any(w == "setfit" for w, *_ in plan.values()):
        workers["setfit"] = compare_setfit.Worker("setfit", ns.setfit_python or sys.executable)
    results = {"command": command, "model": ns.model, "split": split, "test_limit": ns.test_limit,
               "sample": (f"{ns.shots} (and {2 * ns.shots}) per class drawn per seed with sample_dataset; pool: "
                          f"{ns.pool} other training-split texts per seed, labels dropped, none in the sample or the "
                          f"scored split; body {ns.model}; scored on the {split} split"), "runs": {}}
    if ns.merge is not None:
        earlier = json.loads(ns.merge.read_text())
        results["merged"] = {"command": earlier.get("command"), "tasks": [t for t in earlier["runs"]
                                                                           if t not in ns.tasks]}
        results["runs"] = {t: runs for t, runs in earlier["runs"].items() if t not in ns.tasks}
    for name in ns.tasks:
        runs: dict[str, list[dict]] = {c: [] for c in plan}
        for i, seed in enumerate(ns.seeds):
            data = {shots: compare_setfit.load_task(ns.data_dir, f"{name}:{shots}", seed, ns.test_limit, split=split,
                                                    pool=ns.pool)
                    for shots in sorted({s for *_, s in plan.values()})}
            for config in (list(plan) if i % 2 == 0 else list(reversed(plan))):
                worker, args, with_pool, shots = plan[config]
                task = data[shots] | {"model": ns.model, "args": args,
                                      "unlabeled": data[ns.shots]["pool_texts"] if with_pool else None}
                del task["pool_texts"]
                reply = workers[worker].run(task)
                row = {"seed": seed, "train_seconds": reply["train_seconds"]} | \
                    imbalanced.scores(task["test_labels"], reply["predictions"])
                runs[config].append(row)
                print(json.dumps({"task": name, "config": config, **row}), flush=True)
        results["runs"][name] = runs
        imbalanced.write(results, ns.out, f"{ns.shots if ns.choose_default else 2 * ns.shots}/class")
        with ns.out.with_suffix(".md").open("a") as f:
            f.write("\n" + mean_table(results["runs"]))
    print(mean_table(results["runs"]))
    for worker in workers.values():
        worker.close()


if __name__ == "__main__":
    main()
