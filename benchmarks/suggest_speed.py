"""How long one ``suggest_labels`` round takes on a 100,000-text pool: the static tier, and MiniLM itself.

    python -m benchmarks.suggest_speed --pool 100000 --k 16 --torch-texts 2000

A MiniLM-L6 model is trained briefly on the shipped SST-2 sample (``TrainingArguments(max_steps=20)``) and exported
to the static tier (``export_static``, no refinement). The pool: ``--pool`` distinct synthetic texts, each the first
half of one SST-2 training sentence and the second half of another (drawn with seed 0). Timed once each (wall
clock, ``time.perf_counter``), in one process: ``suggest_labels`` with the static model for each strategy (a
fitted head: ``"auto"`` is ``margin_diverse``; ``cold_start_kmeans`` clusters the whole pool, fitted on a
seeded 20,000-text sample), split into scoring
(embeddings and probabilities of the pool, one pass) and choosing, with the process CPU seconds of the round and
the load average after it (the machine is shared); and the MiniLM model itself on ``--torch-texts`` texts
of the pool, whose texts per second give the time it would take on the whole pool.

Writes ``benchmarks/results/suggest_speed.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.machine import cpu_info
from benchmarks.suggest_choice import machine

HERE = Path(__file__).resolve().parent


def synthetic_pool(data_dir: Path, n: int, seed: int = 0) -> list[str]:
    """``n`` distinct texts: the first half of one SST-2 training sentence joined to the second half of another."""
    with (data_dir / "sst2" / "train.jsonl").open(encoding="utf-8") as f:
        words = [json.loads(line)["text"].split() for line in f if line.strip()]
    words = [w for w in words if len(w) >= 4]
    rng, out, seen = random.Random(seed), [], set()
    while len(out) < n:
        a, b = rng.choice(words), rng.choice(words)
        text = " ".join(a[:len(a) // 2] + b[len(b) // 2:])
        if text not in seen:
            seen.add(text)
            out.append(text)
    return out


STRATEGIES_TIMED = ("auto", "uncertainty", "cold_start_kmeans", "random", "margin_diverse", "margin_typical", "typical",
                    "class_typical", "mixed")


def timed(model: object, pool: list[str], k: int, strategy: str) -> dict:
    """One round: seconds to score the pool (a fresh PoolView's views) and to choose, and the whole call."""
    from setfit_lite import suggest_labels
    from setfit_lite.active.pool import PoolView, has_fitted_head
    from setfit_lite.active.strategies import NEEDS_HEAD

    start = time.perf_counter()
    view = PoolView(model, pool, 64)
    view.embeddings()
    if has_fitted_head(model) and strategy in ("auto", *NEEDS_HEAD):
        view.proba()
    scoring = time.perf_counter() - start
    start, cpu = time.perf_counter(), time.process_time()
    picks = suggest_labels(model, pool, k, strategy=strategy)
    total, cpu = time.perf_counter() - start, time.process_time() - cpu
    return {"strategy": strategy, "texts": len(pool), "round_seconds": round(total, 2),
            "scoring_seconds": round(scoring, 2), "choosing_seconds": round(max(total - scoring, 0.0), 2),
            "round_cpu_seconds": round(cpu, 2), "load_average": round(os.getloadavg()[0], 1), "picks": len(picks)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pool", type=int, default=100_000)
    parser.add_argument("--k", type=int, default=16)
    parser.add_argument("--torch-texts", type=int, default=2000)
    parser.add_argument("--data-dir", type=Path, default=HERE.parent.parent / "shared" / "data")
    parser.add_argument("--strategies", nargs="+", default=list(STRATEGIES_TIMED), choices=STRATEGIES_TIMED)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "suggest_speed")
    ns = parser.parse_args(argv)
    import torch

    from setfit_lite import SetFitModel, Trainer, TrainingArguments, load_sample
    from setfit_lite.version import __version__

    sample = load_sample("sst2")
    model = SetFitModel.from_pretrained("sentence-transformers/all-MiniLM-L6-v2", labels=["negative", "positive"])
    Trainer(model=model, args=TrainingArguments(max_steps=20, seed=0),
            train_dataset={"text": sample["text"], "label": sample["label_text"]}).train()
    pool = synthetic_pool(ns.data_dir, ns.pool)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        static = SetFitModel.from_static(model.export_static(Path(folder) / "static", sample["text"],
                                                             sample["label_text"], refine_epochs=0))
        export_s = time.perf_counter() - start
        for strategy in ns.strategies:
            rows.append({"model": "static (MiniLM-L6 distilled, 256 dims)"} | timed(static, pool, ns.k, strategy))
            print(json.dumps(rows[-1]), flush=True)
    subset = pool[:ns.torch_texts]
    rows.append({"model": "MiniLM-L6 (torch)"} | timed(model, subset, ns.k, "auto"))
    per_second = len(subset) / max(rows[-1]["round_seconds"], 1e-9)
    rows[-1]["projected_pool_seconds"] = round(ns.pool / per_second, 1)
    print(json.dumps(rows[-1]), flush=True)
    command = "python -m benchmarks.suggest_speed " + " ".join(argv if argv is not None else sys.argv[1:])
    results = {"command": command, "machine": machine(), "cpu": cpu_info(), "torch_threads": torch.get_num_threads(),
               "versions": {"setfit_lite": __version__, "torch": torch.__version__}, "k": ns.k,
               "export_static_seconds": round(export_s, 1), "rows": rows}
    ns.out.parent.mkdir(parents=True, exist_ok=True)
    ns.out.with_suffix(".json").write_text(json.dumps(results, indent=1))
    lines = [f"`{command}`", "", results["machine"], f"torch threads: {results['torch_threads']}", "",
             "| model | strategy | texts | round s | scoring s | choosing s | round CPU s | load | projected 100k s |",
             "|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['model']} | {r['strategy']} | {r['texts']} | {r['round_seconds']} | {r['scoring_seconds']} | "
              f"{r['choosing_seconds']} | {r['round_cpu_seconds']} | {r['load_average']} | "
              f"{r.get('projected_pool_seconds', '')} |" for r in rows]
    ns.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
