"""Three speed defaults of the prediction tiers, checked on validation texts (never a test split): the static tier's
``MEAN_BLOCK`` (texts whose token rows are gathered at once) and the word cache's ``WORDS_PER_PASS`` (new words
tokenised in one text), and ``runtime="auto"`` (OpenVINO in bf16 for an fp32 graph on an AMX CPU) against
onnxruntime's fp32, on SST-2's and Emotion's validation splits:

    python -m benchmarks.speed_defaults --model setfit-lite-demo-model --data-dir ../shared/data \
        --out benchmarks/results/speed_defaults_amx2

``--model`` is a saved `SetFitModel` with a MiniLM-style (WordPiece) body; it is exported to a static folder and
an fp32 ONNX folder in a temporary folder. Timings: best of ``--rounds``, default threads. The block sizes and
word passes give the same numbers (tested), so only their speed differs.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.machine import write_result

TASKS = ("sst2", "emotion")


def best(fn, rounds: int) -> float:
    """The fastest of ``rounds`` calls of ``fn``, after one call to warm it."""
    fn()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True)
    parser.add_argument("--data-dir", default="../shared/data")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    import setfit_lite.runtime.static as static_module
    import setfit_lite.runtime.word_cache as word_cache
    from setfit_lite import SetFitModel
    from setfit_lite.runtime.onnx import OnnxSetFitModel

    texts = {t: [json.loads(line)["text"] for line in open(Path(args.data_dir) / t / "validation.jsonl",
                                                           encoding="utf-8")] for t in TASKS}
    model = SetFitModel.from_pretrained(args.model)
    result: dict = {"command": "python -m benchmarks.speed_defaults " + " ".join(
        f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items()), "texts": {t: len(v) for t, v in texts.items()}}
    with tempfile.TemporaryDirectory() as tmp:
        train = texts["sst2"][:200]
        static = SetFitModel.from_static(model.export_static(Path(tmp) / "static", train, model.predict(train)))
        fp32 = model.export_onnx(Path(tmp) / "onnx")
        blocks: dict = {}
        for block in (4, 8, 16, 32, 64):
            static_module.MEAN_BLOCK = block
            blocks[block] = {t: best(lambda v=v: static.encode(v, batch_size=64), args.rounds)
                             for t, v in texts.items()}
        passes: dict = {}
        for per_pass in (1, 64, 512, 4096):
            word_cache.WORDS_PER_PASS = per_pass
            passes[per_pass] = {}
            for t, v in texts.items():
                words = list({w for text in v for w in text.split(" ")})
                passes[per_pass][t] = best(lambda w=words: static.word_cache.word_ids(w), args.rounds)
        runtimes: dict = {}
        for name in ("onnxruntime", "auto"):
            onnx = OnnxSetFitModel.load(fp32, runtime=name)
            runtimes[name] = {"runtime": onnx.runtime, "precision": onnx.inference_precision,
                              **{t: best(lambda v=v, m=onnx: m.predict_proba(v), max(1, args.rounds // 3))
                                 for t, v in texts.items()},
                              "labels": {t: onnx.predict(v) for t, v in texts.items()}}
    agreement = {t: float(np.mean(np.array(runtimes["auto"]["labels"][t])
                                  == np.array(runtimes["onnxruntime"]["labels"][t]))) for t in TASKS}
    for r in runtimes.values():
        r.pop("labels")
    result.update(mean_block_s=blocks, words_per_pass_s=passes, runtime_s=runtimes, auto_agreement=agreement)
    md = [f"`{result['command']}`", "", f"Validation texts: {result['texts']}", "",
          "| MEAN_BLOCK | " + " | ".join(f"{t} encode ms" for t in TASKS) + " |", "|---|---|---|"]
    md += [f"| {b} | " + " | ".join(f"{1000 * s[t]:.1f}" for t in TASKS) + " |" for b, s in blocks.items()]
    md += ["", "| WORDS_PER_PASS | " + " | ".join(f"{t} every word ms" for t in TASKS) + " |", "|---|---|---|"]
    md += [f"| {p} | " + " | ".join(f"{1000 * s[t]:.1f}" for t in TASKS) + " |" for p, s in passes.items()]
    md += ["", "| runtime | ran as | " + " | ".join(f"{t} texts/s" for t in TASKS) + " |", "|---|---|---|---|"]
    md += [f"| {n} | {r['runtime']} ({r['precision']}) | "
           + " | ".join(f"{result['texts'][t] / r[t]:.1f}" for t in TASKS) + " |" for n, r in runtimes.items()]
    md += ["", "auto's labels agree with onnxruntime fp32's on " + ", ".join(f"{t} {a:.4f}" for t, a in
                                                                              agreement.items())]
    write_result(args.out, result, "\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    main()
