"""OpenVINO with one stream on every core against a stream per core, on exported graphs (``export_onnx`` folders).

For each folder, the same graph compiled by OpenVINO in its precision hint (``inference_precision="auto"``: bf16
where the CPU computes it natively) two ways: one stream (``NUM_STREAMS`` 1, the CPUs' threads on one batch at a
time) and a stream per CPU (that many batches at once, each on one thread, as onnxruntime's tiers run). Timed side
by side on a dataset's validation texts (never test texts) at ``--batch-size`` texts a pass, best of ``--rounds``
interleaved rounds; the labels' agreement; the median latency of one text::

    python -m benchmarks.openvino_streams --folders SST2_FP32_DIR SST2_STUDENT_DIR --texts sst2 \\
        --data-dir ../shared/data --out benchmarks/results/openvino_streams/sst2_run1

``python -m benchmarks.inference --student 3`` writes such folders (``onnx_fp32``, ``student3_fp32``) in its work
folder; ``--smoke`` exports a tiny body's graph and runs two rounds on a few texts.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.machine import write_result
from benchmarks.smoke import add_smoke_option, apply_smoke, smoke_settings
from benchmarks.workdir import work_folder

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def sessions(folder: Path) -> dict[str, object]:
    """The folder's model twice, as `OnnxSetFitModel.load` gives it on all the CPUs: one OpenVINO stream
    (``openvino_streams=1``), and a stream per CPU of one thread each (the default)."""
    from setfit_lite.runtime.onnx import OnnxSetFitModel

    return {name: OnnxSetFitModel.load(folder, runtime="openvino", openvino_streams=streams)
            for name, streams in (("one_stream", 1), ("stream_per_cpu", None))}


def measure(folder: Path, texts: list[str], batch_size: int, rounds: int, latency_calls: int) -> dict:
    models = sessions(folder)
    labels = {name: model.class_proba(texts, batch_size=batch_size).argmax(axis=1) for name, model in models.items()}
    best = {name: float("inf") for name in models}
    for _ in range(rounds):
        for name, model in models.items():
            start = time.perf_counter()
            model.class_proba(texts, batch_size=batch_size)
            best[name] = min(best[name], time.perf_counter() - start)
    latency = {}
    for name, model in models.items():
        calls = []
        for text in texts[:latency_calls]:
            start = time.perf_counter()
            model.class_proba([text])
            calls.append(time.perf_counter() - start)
        latency[name] = statistics.median(calls) * 1e3
    one = models["one_stream"].session.compiled
    per_cpu = models["stream_per_cpu"].session.compiled
    return {"folder": Path(folder).name, "texts": len(texts), "batch_size": batch_size, "rounds": rounds,
            "precision": models["one_stream"].session.precision,
            "streams": {"one_stream": int(one.get_property("NUM_STREAMS")),
                        "stream_per_cpu": int(per_cpu.get_property("NUM_STREAMS"))},
            "threads": {"one_stream": int(one.get_property("INFERENCE_NUM_THREADS")),
                        "stream_per_cpu": int(per_cpu.get_property("INFERENCE_NUM_THREADS"))},
            "texts_per_s": {name: len(texts) / s for name, s in best.items()},
            "ratio": best["one_stream"] / best["stream_per_cpu"],
            "agreement": float(np.mean(labels["one_stream"] == labels["stream_per_cpu"])),
            "latency_ms_median": latency}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--folders", nargs="+", type=Path, default=[])
    parser.add_argument("--texts", default="sst2", help="the dataset folder in --data-dir whose validation split "
                                                        "is timed")
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--latency-calls", type=int, default=100)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "openvino_streams" / "run")
    add_smoke_option(parser)
    args = parser.parse_args(argv)
    apply_smoke(args, parser, "openvino_streams")
    command = "python -m benchmarks.openvino_streams " + " ".join(argv if argv is not None else sys.argv[1:])
    with open(args.data_dir / args.texts / "validation.jsonl", encoding="utf-8") as handle:
        texts = [json.loads(line)["text"] for line in handle if line.strip()]
    with work_folder("setfit_lite_openvino_streams_") as work:
        folders = list(args.folders)
        if args.smoke:  # the tiny body's graph, exported here
            from setfit_lite import SetFitModel, Trainer, TrainingArguments

            with open(args.data_dir / args.texts / "train.jsonl", encoding="utf-8") as handle:
                rows = [json.loads(line) for line in handle if line.strip()]
            model = SetFitModel.from_pretrained(smoke_settings()["model"])
            Trainer(model=model, args=TrainingArguments(seed=0, show_progress_bar=False, **args.train_args),
                    train_dataset={"text": [r["text"] for r in rows], "label": [r["label"] for r in rows]}).train()
            folders = [model.export_onnx(work / "fp32")]
            texts, args.rounds, args.latency_calls = texts[:24], 2, 4
        if not folders:
            parser.error("--folders: at least one exported folder (or --smoke)")
        rows = [measure(folder, texts, args.batch_size, args.rounds, args.latency_calls) for folder in folders]
    md = [f"`{command}`", "", f"{len(texts)} {args.texts} validation texts, {args.batch_size} a pass, best of "
          f"{args.rounds} rounds.", "",
          "| folder | precision | one stream texts/s | a stream per CPU texts/s | ratio | agreement | "
          "one-text latency ms (one / per CPU) |", "|---|---|---|---|---|---|---|"]
    md += [f"| {r['folder']} | {r['precision']} | {r['texts_per_s']['one_stream']:.1f} | "
           f"{r['texts_per_s']['stream_per_cpu']:.1f} | {r['ratio']:.2f}x | {r['agreement']:.4f} | "
           f"{r['latency_ms_median']['one_stream']:.2f} / {r['latency_ms_median']['stream_per_cpu']:.2f} |"
           for r in rows]
    write_result(args.out, {"command": command, "rows": rows}, "\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    main()
