"""Where the time of an exported model's ``predict_proba`` goes: tokenisation, padding, the graph's
operators (attention, matmuls, layer norms, the head), Python overhead.

    python -m benchmarks.inference_profile ONNX_DIR [ONNX_DIR ...] [--texts sst2] [--threads 1] [--batch-size 32]

For each exported folder, on a dataset's test split: seconds of tokenising, padding and ``session.run`` inside one
``predict_proba`` call, the rest as Python overhead, the padding waste (padded tokens / real tokens) with and
without length-sorted batches, and onnxruntime's own profile summed by operator type (top 12). Prints JSON and a
markdown table.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path

import numpy as np

from benchmarks.machine import write_result
from benchmarks.workdir import process_folder

ROOT = Path(__file__).resolve().parent.parent


def padding_waste(lengths: list[int], batch_size: int, order: np.ndarray) -> float:
    """Padded tokens per real token when batches of ``order`` are padded to their longest row."""
    padded = sum(max(lengths[i] for i in order[s:s + batch_size]) * len(order[s:s + batch_size])
                 for s in range(0, len(order), batch_size))
    return padded / sum(lengths)


def profile(folder: str, texts: list[str], threads: int, batch_size: int) -> dict:
    import onnxruntime as ort

    from setfit_lite.runtime.onnx import OnnxSetFitModel
    from setfit_lite.runtime.predictor import length_sorted_batches

    model = OnnxSetFitModel.load(folder, num_threads=threads, runtime="onnxruntime")
    model.predict_proba(texts[:64], batch_size=batch_size)  # warm-up
    timings: Counter = Counter()
    session, tokenizer = model.session, model.tokenizer

    def timed(name, fn):
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            out = fn(*args, **kwargs)
            timings[name] += time.perf_counter() - start
            return out
        return wrapper

    model.tokenize = timed("tokenize", model.tokenize)
    tokenizer.pad = timed("pad", tokenizer.pad)
    model.session = type("Timed", (), {"run": staticmethod(timed("graph", session.run))})()
    start = time.perf_counter()
    model.predict_proba(texts, batch_size=batch_size)
    total = time.perf_counter() - start
    ids = tokenizer.encode(texts)
    lengths = [len(t) for t in ids]
    sorted_order = np.concatenate(length_sorted_batches(ids, batch_size))
    row = {"folder": folder, "texts": len(texts), "threads": threads, "batch_size": batch_size, "seconds": total,
           "per_s": len(texts) / total, **{f"{k}_s": v for k, v in timings.items()},
           "python_s": total - sum(timings.values()), "mean_tokens": float(np.mean(lengths)),
           "max_tokens": int(max(lengths)),
           "padding_waste_sorted": padding_waste(lengths, batch_size, sorted_order),
           "padding_waste_unsorted": padding_waste(lengths, batch_size, np.arange(len(lengths)))}
    # onnxruntime's operator profile over the same texts
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.enable_profiling = True
    options.profile_file_prefix = str(process_folder("setfit_lite_ort_profile_") / "ort")
    profiled = ort.InferenceSession(str(Path(folder) / "model.onnx"), options, providers=["CPUExecutionProvider"])
    model.session = profiled
    model.predict_proba(texts, batch_size=batch_size)
    events = json.loads(Path(profiled.end_profiling()).read_text())
    by_op: Counter = Counter()
    for event in events:
        if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
            by_op[event["args"]["op_name"]] += event["dur"] / 1e6
    graph_total = sum(by_op.values())
    row["operators"] = {op: {"s": s, "share": s / graph_total} for op, s in by_op.most_common(12)}
    return row


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folders", nargs="+")
    parser.add_argument("--texts", default="sst2", help="dataset folder in --data-dir whose test split is used")
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    with open(args.data_dir / args.texts / "test.jsonl", encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for line in f if line.strip()][:args.limit]
    rows = [profile(folder, texts, args.threads, args.batch_size) for folder in args.folders]
    md = ["| folder | per s | tokenize s | pad s | graph s | python s | padding waste sorted / unsorted |",
          "|---|---|---|---|---|---|---|"]
    for r in rows:
        md.append(f"| {Path(r['folder']).name} | {r['per_s']:.0f} | {r['tokenize_s']:.3f} | {r['pad_s']:.3f} | "
                  f"{r['graph_s']:.3f} | {r['python_s']:.3f} | {r['padding_waste_sorted']:.3f} / "
                  f"{r['padding_waste_unsorted']:.3f} |")
    for r in rows:
        md += ["", f"{Path(r['folder']).name}: operators (share of graph time)", "",
               "| operator | s | share |", "|---|---|---|"]
        md += [f"| {op} | {v['s']:.3f} | {v['share']:.1%} |" for op, v in r["operators"].items()]
    print(json.dumps(rows, indent=1))
    print("\n".join(md))
    if args.out:
        write_result(args.out, {"rows": rows}, "\n".join(md))


if __name__ == "__main__":
    main()
