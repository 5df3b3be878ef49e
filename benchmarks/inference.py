"""Inference speed and agreement: torch, ONNX fp32 and ONNX int8 setfit_lite models, and setfit's `predict`.

    python benchmarks/inference.py [--sizes 1821 10000] [--setfit-python /path/to/venv/bin/python]

One model (MiniLM-L6, SST-2 8 per class, seed 0, setfit_lite defaults; or ``--model-dir``) is exported to ONNX
fp32 and int8. On the SST-2 test split (1,821 sentences; larger sizes add SST-2 training sentences) it records:
agreement of each export with the torch model (labels, max |Δp|), accuracy, throughput (sentences/s) of
``predict_proba`` for torch, ONNX fp32, ONNX int8 and setfit 1.2's ``predict`` on the same body and the same
logistic-regression weights, and batch-1 latency (median, p95) for each setfit_lite variant. When OpenVINO is
installed, the two ONNX graphs are also run by OpenVINO.
Writes ``--out``.json and .md.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from compare_setfit import load_task  # noqa: E402

SETFIT_PREDICT = r"""
import json, sys, time
import numpy as np
from sentence_transformers import SentenceTransformer
from sklearn.linear_model import LogisticRegression
from setfit import SetFitModel
spec = json.load(open(sys.argv[1]))
head = LogisticRegression()
head.coef_, head.intercept_ = np.array(spec["coef"]), np.array(spec["intercept"])
head.classes_ = np.array(spec["classes"])
model = SetFitModel(model_body=SentenceTransformer(spec["body"], device="cpu"), model_head=head)
model.predict(spec["texts"][:8])  # warm-up
start = time.perf_counter()
pred = model.predict(spec["texts"])
seconds = time.perf_counter() - start
print("RESULT " + json.dumps({"seconds": seconds, "pred": [int(p) for p in np.asarray(pred)]}))
"""


def timed(fn, *args) -> tuple[float, object]:
    start = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - start, out


def latency(predict, texts: list[str], n: int) -> dict[str, float]:
    """Median and p95 milliseconds of ``predict([text])`` over ``n`` single texts."""
    predict(texts[:1])
    times = [timed(predict, [t])[0] * 1000 for t in texts[:n]]
    return {"median_ms": float(np.median(times)), "p95_ms": float(np.percentile(times, 95))}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--model-dir", type=Path, default=None, help="a trained setfit_lite model (else train one)")
    parser.add_argument("--sizes", nargs="+", type=int, default=[1821])
    parser.add_argument("--latency-n", type=int, default=50)
    parser.add_argument("--setfit-python", default=None, help="Python of a virtual environment with setfit 1.2")
    parser.add_argument("--threads", type=int, default=1, help="onnxruntime intra-op threads (torch: OMP)")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "inference_sst2")
    args = parser.parse_args(argv)

    from setfit_lite import SetFitModel, Trainer, TrainingArguments
    from setfit_lite.export import OnnxSetFitModel

    task = load_task(args.data_dir, "sst2:8", 0)
    work = Path(tempfile.mkdtemp(prefix="setfit_lite_inference_"))
    if args.model_dir is None:
        model = SetFitModel.from_pretrained("sentence-transformers/all-MiniLM-L6-v2")
        Trainer(model=model, args=TrainingArguments(seed=0, show_progress_bar=False),
                train_dataset={"text": task["texts"], "label": task["labels"]}).train()
        args.model_dir = work / "model"
        model.save_pretrained(args.model_dir)
    model = SetFitModel.from_pretrained(args.model_dir)
    exports = {}
    for name, quantize in (("onnx_fp32", None), ("onnx_int8", "int8")):
        model.export_onnx(work / name, quantize=quantize)
        exports[name] = OnnxSetFitModel.load(work / name, num_threads=args.threads)
    if importlib.util.find_spec("openvino") is not None:  # the same graphs run by OpenVINO
        for name in ("onnx_fp32", "onnx_int8"):
            exports[name.replace("onnx", "openvino")] = OnnxSetFitModel.load(work / name, num_threads=args.threads,
                                                                             runtime="openvino")

    with open(args.data_dir / "sst2" / "train.jsonl", encoding="utf-8") as f:
        extra = [json.loads(line)["text"] for line in f if line.strip()]
    random.Random(0).shuffle(extra)
    command = "python benchmarks/inference.py " + " ".join(argv if argv is not None else sys.argv[1:])
    results: dict = {"command": command, "sizes": {}}
    for size in args.sizes:
        texts = (task["test_texts"] + extra)[:size]
        labels = np.array(task["test_labels"][:size]) if size <= len(task["test_texts"]) else None
        row: dict = {}
        seconds, ref = timed(model.predict_proba, texts)
        row["torch"] = {"seconds": seconds, "per_s": size / seconds}
        for name, onnx_model in exports.items():
            seconds, proba = timed(onnx_model.predict_proba, texts)
            row[name] = {"seconds": seconds, "per_s": size / seconds,
                         "agreement": float(np.mean(proba.argmax(1) == ref.argmax(1))),
                         "max_abs_diff": float(np.abs(proba - ref).max())}
        if labels is not None:
            for name in ("torch", *exports):
                proba = ref if name == "torch" else exports[name].predict_proba(texts)
                row[name]["accuracy"] = float(np.mean(np.asarray(model.labels)[proba.argmax(1)] == labels))
        if args.setfit_python:
            estimator = model.model_head.estimator
            spec = {"body": str(args.model_dir), "texts": texts, "coef": estimator.coef_.tolist(),
                    "intercept": estimator.intercept_.tolist(), "classes": estimator.classes_.tolist()}
            spec_path = work / "setfit_spec.json"
            spec_path.write_text(json.dumps(spec), encoding="utf-8")
            out = subprocess.run([args.setfit_python, "-c", SETFIT_PREDICT, str(spec_path)], capture_output=True,
                                 text=True, check=True).stdout
            got = json.loads(next(line for line in out.splitlines() if line.startswith("RESULT "))[7:])
            row["setfit"] = {"seconds": got["seconds"], "per_s": size / got["seconds"],
                             "agreement": float(np.mean(np.array(got["pred"]) == ref.argmax(1)))}
            for name in ("torch", *exports):
                row[name]["speed_vs_setfit"] = row[name]["per_s"] / row["setfit"]["per_s"]
        results["sizes"][str(size)] = row
        print(json.dumps({size: row}), flush=True)
    results["latency"] = {"torch": latency(model.predict_proba, task["test_texts"], args.latency_n)}
    for name, onnx_model in exports.items():
        results["latency"][name] = latency(onnx_model.predict_proba, task["test_texts"], args.latency_n)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(results, indent=2), encoding="utf-8")
    md = [f"`{results['command']}`", "", "| size | variant | sentences/s | vs setfit | agreement | max Δp | accuracy |",
          "|---|---|---|---|---|---|---|"]
    for size, row in results["sizes"].items():
        for name, r in row.items():
            md.append(f"| {size} | {name} | {r['per_s']:.1f} | {r.get('speed_vs_setfit', float('nan')):.2f}× | "
                      f"{r.get('agreement', 1.0):.4f} | {r.get('max_abs_diff', 0.0):.2e} | "
                      f"{r.get('accuracy', float('nan')):.4f} |")
    md += ["", "| batch-1 latency | median ms | p95 ms |", "|---|---|---|"]
    md += [f"| {name} | {r['median_ms']:.1f} | {r['p95_ms']:.1f} |" for name, r in results["latency"].items()]
    args.out.with_suffix(".md").write_text("\n".join(md) + "\n", encoding="utf-8")
    print("\n".join(md))


if __name__ == "__main__":
    main()
