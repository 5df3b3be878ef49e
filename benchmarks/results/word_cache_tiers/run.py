"""The word cache in the transformer tiers' tokenizer: ``predict_proba`` of each exported folder with the cache and
without it (``tokenizer.word_cache = None``: the tokenizer runs every text), in interleaved rounds, same process,
default threads; the labels of both compared::

    PYTHONPATH=. python benchmarks/results/word_cache_tiers/run.py --texts sst2 --split validation \
        --folders MODELS/sst2_8/fp32 MODELS/sst2_8/student3_fp32 --out benchmarks/results/word_cache_tiers/sst2

(``MODELS`` from ``benchmarks/results/openvino_streams/prepare.py``.) Each round predicts the split's texts once
per setting, the setting's order alternating; a fresh model per setting, so that neither starts with the
other's cached words; the first round warms both (words, graph) and is not counted.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402

from benchmarks.machine import write_result  # noqa: E402
from setfit_lite import SetFitModel  # noqa: E402

DATA = Path(__file__).resolve().parents[3].parent / "shared" / "data"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--texts", required=True)
    parser.add_argument("--split", default="validation")
    parser.add_argument("--folders", nargs="+", required=True)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    texts = [json.loads(line)["text"] for line in (DATA / args.texts / f"{args.split}.jsonl").open()]
    rows = {}
    for folder in args.folders:
        models = {"cache": SetFitModel.from_onnx(folder), "no_cache": SetFitModel.from_onnx(folder)}
        models["no_cache"].tokenizer.word_cache = None
        times: dict[str, list[float]] = {name: [] for name in models}
        proba = {}
        tokenize_ms: dict[str, list[float]] = {name: [] for name in models}
        for round_ in range(args.rounds + 1):
            for name in (list(models) if round_ % 2 == 0 else list(models)[::-1]):
                start = time.perf_counter()
                proba[name] = models[name].predict_proba(texts, as_numpy=True)
                spent = time.perf_counter() - start
                start = time.perf_counter()
                models[name].tokenize(texts)
                tokenized = time.perf_counter() - start
                if round_:
                    times[name].append(spent)
                    tokenize_ms[name].append(1000 * tokenized)
        best = {name: min(t) for name, t in times.items()}
        rows[Path(folder).name] = {
            "texts_per_s": {name: round(len(texts) / b, 1) for name, b in best.items()},
            "cache_x": round(best["no_cache"] / best["cache"], 3),
            "tokenize_ms_best": {name: round(min(t), 1) for name, t in tokenize_ms.items()},
            "runtime": getattr(models["cache"], "runtime", None),
            "labels_agree": float(np.mean(proba["cache"].argmax(1) == proba["no_cache"].argmax(1))),
            "max_abs_proba_diff": float(np.abs(proba["cache"] - proba["no_cache"]).max())}
        print(folder, rows[Path(folder).name], flush=True)
    result = {"texts": f"{args.texts} {args.split}", "n_texts": len(texts), "rounds": args.rounds, "folders": rows,
              "command": "PYTHONPATH=. python benchmarks/results/word_cache_tiers/run.py --texts "
                         f"{args.texts} --split {args.split} --folders "
                         + " ".join(f"MODELS/{Path(f).parent.name}/{Path(f).name}" for f in args.folders)
                         + f" --out benchmarks/results/word_cache_tiers/{args.out.name}"}
    lines = [f"`{result['command']}`", "", f"{len(texts)} texts ({args.texts} {args.split}), best of {args.rounds}"
             " interleaved rounds, default threads.", "",
             "| folder | runtime | texts/s with the cache | without | × | tokenize ms with / without | labels agree |",
             "|---|---|---|---|---|---|---|"]
    for name, row in rows.items():
        lines.append(f"| {name} | {row['runtime']} | {row['texts_per_s']['cache']:,.1f} "
                     f"| {row['texts_per_s']['no_cache']:,.1f} | {row['cache_x']:.3f} "
                     f"| {row['tokenize_ms_best']['cache']:.1f} / {row['tokenize_ms_best']['no_cache']:.1f} "
                     f"| {row['labels_agree']:.4f} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_result(args.out, result, "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
