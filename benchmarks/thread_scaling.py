"""How the torch-free tiers use a many-core CPU, in one run on one machine.

- the static tier: texts/s of ``class_proba`` on a test split by thread count (``num_threads``) and by the fewest
  texts a thread gets (``setfit_lite.runtime.static.MIN_SLICE``), beside model2vec's own ``encode`` with the same
  head where model2vec is installed;
- onnxruntime: texts/s of an exported folder's ``class_proba`` by how the CPUs are split between batches run at
  once and intra-op threads per batch (setfit_lite's default: as many batches as CPUs, one thread each), and by
  batch size.

Every configuration's probabilities are compared with the first one's (max |Δp|): the splits must not change the
numbers beyond rounding.

    python -m benchmarks.thread_scaling --static STATIC_DIR --onnx ONNX_DIR --tasks sst2 emotion --rounds 5

Writes ``--out``.json and .md (with the CPU, `benchmarks.machine`).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.machine import write_result
from benchmarks.smoke import add_smoke_option, apply_smoke

HERE = Path(__file__).resolve().parent


def best_seconds(fn: Callable[[], Any], rounds: int) -> tuple[float, Any]:
    """The best of ``rounds`` timed calls after one warm-up, and the last result."""
    out = fn()
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def thread_counts(cpus: int) -> list[int]:
    """1, 2, 4, ... up to ``cpus``, and ``cpus`` itself."""
    counts = [1]
    while counts[-1] * 2 <= cpus:
        counts.append(counts[-1] * 2)
    return counts if counts[-1] == cpus else [*counts, cpus]


def static_rows(folder: Path, texts: list[str], rounds: int, cpus: int, min_slices: list[int]) -> list[dict]:
    from setfit_lite.runtime import static as static_module
    from setfit_lite.runtime.static import StaticSetFitModel, linear_proba

    model = StaticSetFitModel.load(folder)
    default_slice, rows, reference = static_module.MIN_SLICE, [], None
    try:
        for min_slice in min_slices:
            static_module.MIN_SLICE = min_slice
            for threads in thread_counts(cpus):
                model.num_threads = threads
                seconds, proba = best_seconds(lambda: model.class_proba(texts), rounds)
                reference = proba if reference is None else reference
                rows.append({"path": "static", "min_slice": min_slice, "threads": threads,
                             "per_s": len(texts) / seconds, "max_abs_diff": float(np.abs(proba - reference).max())})
                print(json.dumps(rows[-1]), flush=True)
    finally:
        static_module.MIN_SLICE = default_slice
    if importlib.util.find_spec("model2vec") is not None:
        from model2vec import StaticModel

        peer = StaticModel.from_pretrained(str(folder))
        seconds, proba = best_seconds(lambda: linear_proba(model.head, peer.encode(texts)), rounds)
        rows.append({"path": "model2vec", "min_slice": None, "threads": None, "per_s": len(texts) / seconds,
                     "max_abs_diff": float(np.abs(proba - reference).max())})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def onnx_rows(folder: Path, texts: list[str], rounds: int, cpus: int, batch_sizes: list[int]) -> list[dict]:
    import onnxruntime as ort

    from setfit_lite.runtime.onnx import OnnxSetFitModel

    model = OnnxSetFitModel.load(folder)
    model_file = str(folder / model.config["model_file"])
    rows, reference = [], None
    for intra in thread_counts(cpus):
        workers = max(1, cpus // intra)
        options = ort.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = intra, 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        model.session = ort.InferenceSession(model_file, sess_options=options, providers=["CPUExecutionProvider"])
        model.num_workers = workers
        for batch_size in batch_sizes:
            seconds, proba = best_seconds(lambda b=batch_size: model.class_proba(texts, batch_size=b), rounds)
            reference = proba if reference is None else reference
            rows.append({"path": folder.name, "batches_at_once": workers, "intra_op_threads": intra,
                         "batch_size": batch_size, "per_s": len(texts) / seconds,
                         "max_abs_diff": float(np.abs(proba - reference).max())})
            print(json.dumps(rows[-1]), flush=True)
    return rows


def smoke_folders(args: argparse.Namespace) -> tuple[Path, Path]:
    """``--smoke``: the static and ONNX folders of a tiny model trained for two steps on the smoke data."""
    from benchmarks.compare_setfit import load_task
    from setfit_lite import SetFitModel, Trainer, TrainingArguments

    task = load_task(args.data_dir, f"{args.tasks[0]}:8", 0)
    model = SetFitModel.from_pretrained(args.model)
    Trainer(model=model, args=TrainingArguments(seed=0, show_progress_bar=False, **args.train_args),
            train_dataset={"text": task["texts"], "label": task["labels"]}).train()
    folder = args.out.parent
    return (model.export_static(folder / "static", task["texts"], task["labels"]),
            model.export_onnx(folder / "onnx_int8", quantize="int8"))


def markdown(result: dict) -> list[str]:
    lines = [f"`{result['command']}`", ""]
    for task in result["tasks"]:
        lines += [f"## {task['task']} ({task['texts']} test texts)", ""]
        if task["static"]:
            lines += ["| static tier: fewest texts per thread | threads | texts/s | max \\|Δp\\| |",
                      "|---|---|---|---|"]
            lines += [f"| {r['min_slice'] if r['path'] == 'static' else 'model2vec encode + head'} | "
                      f"{r['threads'] or ''} | {r['per_s']:,.0f} | {r['max_abs_diff']:.1e} |" for r in task["static"]]
            lines.append("")
        if task["onnx"]:
            lines += ["| onnxruntime folder | batches at once × intra-op threads | batch size | texts/s | "
                      "max \\|Δp\\| |", "|---|---|---|---|---|"]
            lines += [f"| {r['path']} | {r['batches_at_once']} × {r['intra_op_threads']} | {r['batch_size']} | "
                      f"{r['per_s']:,.0f} | {r['max_abs_diff']:.1e} |" for r in task["onnx"]]
            lines.append("")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--static", type=Path, default=None, help="a static folder (export_static)")
    parser.add_argument("--onnx", type=Path, default=None, help="an export_onnx folder")
    parser.add_argument("--data-dir", type=Path, default=HERE.parent.parent / "shared" / "data")
    parser.add_argument("--tasks", nargs="+", default=["sst2"])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--min-slices", type=int, nargs="+", default=[256, 64, 16])
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[32, 64])
    parser.add_argument("--cpus", type=int, default=None, help="default: the CPUs this process may use")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "thread_scaling")
    parser.add_argument("--model", default=None, help=argparse.SUPPRESS)  # --smoke: the tiny body
    add_smoke_option(parser)
    args = parser.parse_args(argv)
    apply_smoke(args, parser, "thread_scaling")
    from setfit_lite.runtime.threads import default_workers

    cpus = args.cpus or default_workers()
    if args.smoke:  # a tiny model trained here, exported both ways
        args.static, args.onnx = smoke_folders(args)
        args.rounds, args.tasks, cpus = 1, args.tasks[:1], min(cpus, 2)
    command = "python -m benchmarks.thread_scaling " + " ".join(argv if argv is not None else sys.argv[1:])
    tasks = []
    for name in args.tasks:
        with open(args.data_dir / name / "test.jsonl", encoding="utf-8") as f:
            texts = [json.loads(line)["text"] for line in f if line.strip()]
        tasks.append({"task": name, "texts": len(texts),
                      "static": static_rows(args.static, texts, args.rounds, cpus, args.min_slices)
                      if args.static else [],
                      "onnx": onnx_rows(args.onnx, texts, args.rounds, cpus, args.batch_sizes) if args.onnx else []})
    result = {"command": command, "cpus": cpus, "rounds": args.rounds, "tasks": tasks}
    lines = markdown(result)
    write_result(args.out, result, "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
