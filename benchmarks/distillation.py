"""Distillation on SST-2: an mpnet teacher (8 per class) distilled into MiniLM on unlabelled training texts.

    python -m benchmarks.distillation --seeds 0 [--unlabelled 2000] [--test-limit N]

Per seed: the teacher (all-mpnet-base-v2, from its five PyPI parts) trained on 8 examples per class; the
student (all-MiniLM-L6-v2) distilled with ``DistillationTrainer`` on ``--unlabelled`` SST-2 training texts
(labels dropped); and MiniLM trained directly on the same 16 examples. Reports the three accuracies on the
test split and the inference speed ratio student/teacher (``predict`` on the same test sentences).
Writes ``--out``.json and .md.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

from benchmarks.compare_setfit import load_task
from benchmarks.machine import write_result

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

TEACHER = "sentence-transformers/all-mpnet-base-v2"
STUDENT = "sentence-transformers/all-MiniLM-L6-v2"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--unlabelled", type=int, default=2000)
    parser.add_argument("--test-limit", type=int, default=None)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "distillation_sst2")
    args = parser.parse_args(argv)

    from setfit_lite import DistillationTrainer, SetFitModel, Trainer, TrainingArguments

    with open(args.data_dir / "sst2" / "train.jsonl", encoding="utf-8") as f:
        pool = [json.loads(line)["text"] for line in f if line.strip()]
    runs = []
    for seed in args.seeds:
        task = load_task(args.data_dir, "sst2:8", seed, args.test_limit)
        few = {"text": task["texts"], "label": task["labels"]}
        test = {"text": task["test_texts"], "label": task["test_labels"]}
        unlabelled = [t for t in random.Random(seed).sample(pool, args.unlabelled + 16) if t not in few["text"]]
        row: dict = {"seed": seed}
        models = {}
        for name, body in (("teacher", TEACHER), ("minilm_direct", STUDENT)):
            model = SetFitModel.from_pretrained(body)
            trainer = Trainer(model=model, args=TrainingArguments(seed=seed, show_progress_bar=False),
                              train_dataset=few)
            start = time.perf_counter()
            trainer.train()
            row[name] = {"train_seconds": time.perf_counter() - start, **trainer.evaluate(test)}
            models[name] = model
        student = SetFitModel.from_pretrained(STUDENT)
        distiller = DistillationTrainer(teacher_model=models["teacher"], student_model=student,
                                        args=TrainingArguments(seed=seed, show_progress_bar=False),
                                        train_dataset={"text": unlabelled[:args.unlabelled]})
        start = time.perf_counter()
        distiller.train()
        row["student"] = {"train_seconds": time.perf_counter() - start, **distiller.evaluate(test)}
        for name, model in (("teacher", models["teacher"]), ("student", student)):
            start = time.perf_counter()
            model.predict(task["test_texts"])
            row[name]["predict_seconds"] = time.perf_counter() - start
        row["student_speedup"] = row["teacher"]["predict_seconds"] / row["student"]["predict_seconds"]
        runs.append(row)
        print(json.dumps(row), flush=True)

    command = "python -m benchmarks.distillation " + " ".join(argv if argv is not None else sys.argv[1:])
    summary = {"command": command, "test_size": len(task["test_texts"]), "runs": runs}
    md = [f"`{command}` ({summary['test_size']} test sentences)", "",
          "| model | accuracy (mean over seeds) | train s (mean) |", "|---|---|---|"]
    for name, label in (("teacher", "mpnet teacher, 8 per class"), ("student", "MiniLM student, distilled"),
                        ("minilm_direct", "MiniLM trained directly, 8 per class")):
        acc = statistics.mean(r[name]["accuracy"] for r in runs)
        secs = statistics.mean(r[name]["train_seconds"] for r in runs)
        md.append(f"| {label} | {acc:.3f} | {secs:.0f} |")
    md.append(f"\nInference speed student/teacher: {statistics.mean(r['student_speedup'] for r in runs):.2f}×")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_result(args.out, summary, "\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    main()
