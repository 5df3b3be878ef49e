"""Zero-shot from label names against chance, setfit and few-shot training, on Emotion (6 classes).

    python -m benchmarks.zero_shot --seeds 0 1 2 [--test-limit 600] [--setfit-python /venv-with-setfit/bin/python]

Per seed, every classifier is trained on the same ``get_templated_dataset(candidate_labels=<the six names>)``
(setfit's template "This sentence is {}", 8 copies per label) and scored on the same test sentences:
setfit_lite's default (``zero_shot="prototypes"``: one distinct text per class, so the body is left as it is and
the head is the nearest label sentence by cosine), ``zero_shot="train"`` (body and logistic regression trained
on the templates, with label anchors, and without), setfit 1.2's defaults in its own worker when
``--setfit-python`` is given, and setfit_lite on 8 real examples per class. Chance is reported two ways: uniform
(1/6) and the majority class. Runs go through ``compare_setfit.py``'s workers. Writes ``--out``.json and .md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import Counter
from pathlib import Path

from benchmarks.compare_setfit import Worker, load_task
from benchmarks.machine import write_result
from benchmarks.smoke import add_smoke_option, apply_smoke

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

LABELS = ["sadness", "joy", "love", "anger", "fear", "surprise"]  # dair-ai Emotion ids 0..5


ROWS = (("zero_shot", "setfit_lite zero-shot, defaults (zero_shot='prototypes')"),
        ("zero_shot_train", "setfit_lite, zero_shot='train' (body + logistic regression on the templates)"),
        ("zero_shot_train_no_anchors", "setfit_lite, zero_shot='train', label_anchors='off'"),
        ("setfit", "setfit 1.2 zero-shot, defaults"),
        ("eight_shot", "setfit_lite, 8 real examples per class"))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--model", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--template", default="This sentence is {}")
    parser.add_argument("--sample-size", type=int, default=8, help="templated examples per label")
    parser.add_argument("--test-limit", type=int, default=None)
    parser.add_argument("--setfit-python", default=None, help="a Python with setfit installed (else no setfit row)")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "zero_shot_emotion")
    add_smoke_option(parser)
    args = parser.parse_args(argv)
    apply_smoke(args, parser, "zero_shot_emotion")

    from setfit_lite import get_templated_dataset
    from setfit_lite.zoo import resolve_model_path

    lite = Worker("setfit_lite", sys.executable)
    reference = Worker("setfit", args.setfit_python) if args.setfit_python else None
    model = resolve_model_path(args.model)  # a local folder, which setfit's worker can load too
    templated = get_templated_dataset(candidate_labels=LABELS, template=args.template, sample_size=args.sample_size)
    configs = {"zero_shot": (lite, {}), "zero_shot_train": (lite, {"zero_shot": "train"}),
               "zero_shot_train_no_anchors": (lite, {"zero_shot": "train", "label_anchors": "off"})}
    if reference is not None:
        configs["setfit"] = (reference, {})
    runs = []
    for seed in args.seeds:
        task = load_task(args.data_dir, "emotion:8", seed, args.test_limit) | {"model": model, "label_names": LABELS}
        zero = task | {"texts": list(templated["text"]), "labels": list(templated["label"])}  # ids into LABELS
        record = {"seed": seed}
        for key, (worker, kwargs) in configs.items():
            record[key] = score(worker, zero | {"args": kwargs}, task)
        record["eight_shot"] = score(lite, task | {"args": {}}, task)
        runs.append(record)
        print(json.dumps(runs[-1]), flush=True)
    for worker in (lite, reference):
        if worker is not None:
            worker.close()

    counts = Counter(task["test_labels"])
    summary = {"command": "python -m benchmarks.zero_shot " + " ".join(argv if argv is not None else sys.argv[1:]),
               "test_size": len(task["test_labels"]), "chance_uniform": 1 / len(LABELS),
               "chance_majority": max(counts.values()) / len(task["test_labels"]), "runs": runs}
    for key, _ in ROWS:
        accs = [r[key]["accuracy"] for r in runs if key in r]
        if accs:
            summary[key] = {"mean": statistics.mean(accs), "sd": statistics.stdev(accs) if len(accs) > 1 else 0.0,
                            "train_seconds_median": statistics.median(r[key]["train_seconds"] for r in runs)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    md = [f"`{summary['command']}` ({summary['test_size']} test sentences, MiniLM-L6)", "",
          "| classifier | accuracy (mean ± sd over seeds) | train s (median) |", "|---|---|---|",
          f"| uniform chance | {summary['chance_uniform']:.3f} | |",
          f"| majority class | {summary['chance_majority']:.3f} | |"]
    for key, name in ROWS:
        if key in summary:
            s = summary[key]
            md.append(f"| {name} | {s['mean']:.3f} ± {s['sd']:.3f} | {s['train_seconds_median']:.1f} |")
    write_result(args.out, summary, "\n".join(md))
    print("\n".join(md))


def score(worker: Worker, task: dict, test: dict) -> dict:
    """Train on ``task`` in ``worker`` and score the predictions on ``test``'s labels."""
    reply = worker.run(task)
    predictions = reply.pop("predictions")
    reply["accuracy"] = sum(p == y for p, y in zip(predictions, test["test_labels"])) / len(predictions)
    return reply


if __name__ == "__main__":
    main()
