"""Zero-shot from label names against chance and against few-shot training, on Emotion (6 classes).

    python benchmarks/zero_shot.py --seeds 0 1 2 [--test-limit 600]

Per seed: a classifier trained only on ``get_templated_dataset(candidate_labels=<the six names>)``, and one
trained on 8 real examples per class (setfit's ``sample_dataset`` rows), both MiniLM-L6 with setfit_lite's
defaults, scored on the same test sentences. Chance is reported two ways: uniform (1/6) and the majority class.
Writes ``--out``.json and .md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from compare_setfit import load_task  # noqa: E402

LABELS = ["sadness", "joy", "love", "anger", "fear", "surprise"]  # dair-ai Emotion ids 0..5


def run(body: str, train: dict, task: dict, seed: int, **kwargs: object) -> dict:
    from setfit_lite import SetFitModel, Trainer, TrainingArguments

    # the label names, so that the default objective anchors each class to its name (label_anchors="auto")
    model = SetFitModel.from_pretrained(body, labels=LABELS)
    args = TrainingArguments(seed=seed, show_progress_bar=False, **kwargs)
    trainer = Trainer(model=model, args=args, train_dataset=train)
    start = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - start
    result = trainer.evaluate({"text": task["test_texts"], "label": task["test_labels"]})
    return {"accuracy": result["accuracy"], "train_seconds": seconds, "train_size": len(train["text"])}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--model", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--template", default="This sentence is {}")
    parser.add_argument("--sample-size", type=int, default=8, help="templated examples per label")
    parser.add_argument("--test-limit", type=int, default=None)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "zero_shot_emotion")
    args = parser.parse_args(argv)

    from setfit_lite import get_templated_dataset

    runs = []
    for seed in args.seeds:
        task = load_task(args.data_dir, "emotion:8", seed, args.test_limit)
        templated = get_templated_dataset(candidate_labels=LABELS, template=args.template,
                                          sample_size=args.sample_size)
        zero_data = {"text": templated["text"], "label": templated["label"]}
        zero = run(args.model, zero_data, task, seed)
        zero_off = run(args.model, zero_data, task, seed, label_anchors="off")
        zero_prior = run(args.model, zero_data, task, seed, label_prior_temperature=0.05)
        few = run(args.model, {"text": task["texts"], "label": task["labels"]}, task, seed)
        runs.append({"seed": seed, "zero_shot": zero, "zero_shot_no_anchors": zero_off, "zero_shot_prior": zero_prior,
                     "eight_shot": few})
        print(json.dumps(runs[-1]), flush=True)

    counts = Counter(task["test_labels"])
    summary = {"command": "python benchmarks/zero_shot.py " + " ".join(argv if argv is not None else sys.argv[1:]),
               "test_size": len(task["test_labels"]), "chance_uniform": 1 / len(LABELS),
               "chance_majority": max(counts.values()) / len(task["test_labels"]), "runs": runs}
    for key in ("zero_shot", "zero_shot_prior", "zero_shot_no_anchors", "eight_shot"):
        accs = [r[key]["accuracy"] for r in runs]
        summary[key] = {"mean": statistics.mean(accs), "sd": statistics.stdev(accs) if len(accs) > 1 else 0.0}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    md = [f"`{summary['command']}` ({summary['test_size']} test sentences, MiniLM-L6)", "",
          "| classifier | accuracy (mean ± sd over seeds) |", "|---|---|",
          f"| uniform chance | {summary['chance_uniform']:.3f} |",
          f"| majority class | {summary['chance_majority']:.3f} |"]
    for key, name in (("zero_shot", "zero-shot (label names only)"),
                      ("zero_shot_prior", "zero-shot, label_prior_temperature=0.05 (head × label-text softmax)"),
                      ("zero_shot_no_anchors", "zero-shot, label_anchors='off' (before issue 20)"),
                      ("eight_shot", "8 real examples per class")):
        md.append(f"| {name} | {summary[key]['mean']:.3f} ± {summary[key]['sd']:.3f} |")
    args.out.with_suffix(".md").write_text("\n".join(md) + "\n", encoding="utf-8")
    print("\n".join(md))


if __name__ == "__main__":
    main()
