"""What this CPU can do at the transformer encoder's shapes, and a path's throughput as a fraction of it.

    python -m benchmarks.roofline [--repeats 7] [--out benchmarks/results/roofline]

Measures, with each runtime's default thread count (recorded in the output), the best-of-``--repeats`` GEMM
throughput (GFLOP/s) at MiniLM-L6's matmul shapes (M = tokens in a batch, K x N the weight): fp32 with
``torch.matmul``, fp32 through onnxruntime (a one-MatMul graph built with ``onnx.helper``) and int8 through the same
graph quantised as the project's int8 export quantises (``quantize_dynamic``, per-channel QInt8 weights, so each run
also quantises its activations). Prints a markdown table and writes ``--out``.json and .md.

The library side for other benchmarks: `encoder_flops` counts the FLOPs a length-sorted batched run of the
encoder executes, `fraction_of_peak` turns a measured texts/s into a fraction of a measured peak.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from benchmarks.machine import write_result

HERE = Path(__file__).resolve().parent

# MiniLM-L6's matmuls: the attention projections (Q, K, V, O: 384 -> 384), the FFN's up (384 -> 1536) and down
# (1536 -> 384) projections; M is the number of tokens in one batch (texts x padded length)
SHAPES = [(m, k, n) for m in (1024, 256) for k, n in ((384, 384), (384, 1536), (1536, 384))]


def encoder_flops(token_lengths: Sequence[int], batch_size: int, hidden: int = 384, layers: int = 6,
                  intermediate: int = 1536) -> int:
    """FLOPs of the encoder's matmuls over texts of ``token_lengths`` tokens, batched as the library batches them.

    Texts are sorted longest first and cut into batches of ``batch_size`` (``length_sorted_batches``); every text of
    a batch is padded to the batch's longest. Per layer and padded sequence of length L: ``2*L*h*h`` for each of Q,
    K, V and the output projection, ``2*L*h*i`` for each FFN projection, and ``2*L*L*h`` for each of the attention
    scores and their weighted sum over the values (summed over heads). Embeddings, layer norms, softmax and pooling
    are left out (they are not matmuls and are a small share).
    """
    per_token = 4 * 2 * hidden * hidden + 2 * 2 * hidden * intermediate
    lengths = sorted((int(n) for n in token_lengths), reverse=True)
    total = 0
    for start in range(0, len(lengths), batch_size):
        batch = lengths[start:start + batch_size]
        padded = batch[0]
        total += len(batch) * (padded * per_token + 2 * 2 * padded * padded * hidden)
    return layers * total


def fraction_of_peak(texts_per_s: float, flops_per_text: float, peak_gflops: float) -> float:
    """The share of ``peak_gflops`` a path doing ``flops_per_text`` at ``texts_per_s`` achieves."""
    return texts_per_s * flops_per_text / (peak_gflops * 1e9)


def best_seconds(fn: Callable[[], object], repeats: int, min_seconds: float = 0.05) -> float:
    """The best over ``repeats`` of the mean time of one ``fn()`` call (each repeat runs it for >= ``min_seconds``)."""
    fn()  # warm-up: first-call allocations, kernel selection
    start, calls = time.perf_counter(), 0
    while time.perf_counter() - start < min_seconds:
        fn()
        calls += 1
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls)
    return best


def torch_gemm(m: int, k: int, n: int, repeats: int) -> float:
    """fp32 GFLOP/s of ``torch.matmul`` of an (m, k) by a (k, n) matrix."""
    import torch

    gen = torch.Generator().manual_seed(0)
    a, b = torch.randn(m, k, generator=gen), torch.randn(k, n, generator=gen)
    with torch.inference_mode():
        seconds = best_seconds(lambda: torch.matmul(a, b), repeats)
    return 2 * m * k * n / seconds / 1e9


def matmul_graph(path: Path, k: int, n: int) -> Path:
    """An ONNX graph ``Y = X @ W`` with X of shape (M, k) (M dynamic) and W a (k, n) fp32 initializer."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    weight = np.random.default_rng(0).standard_normal((k, n)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["X", "W"], ["Y"])], "gemm",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["M", k])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["M", n])],
        initializer=[numpy_helper.from_array(weight, "W")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def quantize_like_export(fp32_path: Path, int8_path: Path) -> Path:
    """``fp32_path`` quantised as ``export_onnx(..., quantize="int8")`` does: dynamic, per-channel QInt8 weights."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from setfit_lite.exporting.onnx import _ORT_PREPROCESS_ADVICE
    from setfit_lite.verbosity import filter_log_records

    with filter_log_records("", *_ORT_PREPROCESS_ADVICE):
        quantize_dynamic(str(fp32_path), str(int8_path), weight_type=QuantType.QInt8, per_channel=True)
    return int8_path


def ort_gemm(model_path: Path, m: int, k: int, n: int, repeats: int) -> float:
    """GFLOP/s of one run of the one-MatMul graph at ``model_path`` on an (m, k) input (default session options)."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(model_path), ort.SessionOptions(), providers=["CPUExecutionProvider"])
    x = np.random.default_rng(1).standard_normal((m, k)).astype(np.float32)
    seconds = best_seconds(lambda: session.run(None, {"X": x}), repeats)
    return 2 * m * k * n / seconds / 1e9


def thread_settings() -> dict:
    """The thread settings each runtime runs with here (all defaults unless the environment sets them)."""
    import onnxruntime as ort
    import torch

    options = ort.SessionOptions()
    return {
        "os.cpu_count": os.cpu_count(),
        "torch.get_num_threads": torch.get_num_threads(),
        "torch.get_num_interop_threads": torch.get_num_interop_threads(),
        "onnxruntime.intra_op_num_threads": options.intra_op_num_threads,
        "onnxruntime.inter_op_num_threads": options.inter_op_num_threads,
        "onnxruntime.execution_mode": str(options.execution_mode),
        "onnxruntime.note": "0 threads: onnxruntime's default, one intra-op thread per physical core",
        **{name: os.environ.get(name) for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "TOKENIZERS_PARALLELISM")},
    }


def measure(repeats: int) -> dict:
    """Peaks per runtime and shape; ``peak_gflops`` holds each runtime's best over the shapes."""
    import onnxruntime as ort
    import torch

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for k, n in dict.fromkeys((k, n) for _, k, n in SHAPES):
            fp32 = matmul_graph(Path(tmp) / f"gemm_{k}x{n}.onnx", k, n)
            int8 = quantize_like_export(fp32, Path(tmp) / f"gemm_{k}x{n}_int8.onnx")
            for m in sorted({m for m, kk, nn in SHAPES if (kk, nn) == (k, n)}, reverse=True):
                rows.append({"M": m, "K": k, "N": n,
                             "torch_fp32": torch_gemm(m, k, n, repeats),
                             "ort_fp32": ort_gemm(fp32, m, k, n, repeats),
                             "ort_int8": ort_gemm(int8, m, k, n, repeats)})
    runtimes = ("torch_fp32", "ort_fp32", "ort_int8")
    return {
        "machine": {"processor": platform.processor() or platform.machine(), "python": sys.version.split()[0],
                    "torch": torch.__version__, "onnxruntime": ort.__version__},
        "threads": thread_settings(),
        "repeats": repeats,
        "gemm_gflops": rows,
        "peak_gflops": {name: max(row[name] for row in rows) for name in runtimes},
    }


def markdown(result: dict) -> str:
    """The peaks as a markdown table, then the thread settings."""
    lines = ["| M (tokens) | K | N | torch fp32 GFLOP/s | onnxruntime fp32 GFLOP/s | onnxruntime int8 GFLOP/s |",
             "|---|---|---|---|---|---|"]
    for row in result["gemm_gflops"]:
        lines.append(f"| {row['M']} | {row['K']} | {row['N']} | {row['torch_fp32']:.1f} | {row['ort_fp32']:.1f} "
                     f"| {row['ort_int8']:.1f} |")
    peak = result["peak_gflops"]
    lines.append(f"| **peak** | | | **{peak['torch_fp32']:.1f}** | **{peak['ort_fp32']:.1f}** "
                 f"| **{peak['ort_int8']:.1f}** |")
    threads = ", ".join(f"{key}={value}" for key, value in result["threads"].items() if key != "onnxruntime.note")
    lines += ["", f"Default threads: {threads} ({result['threads']['onnxruntime.note']}). "
                  f"Best of {result['repeats']} repeats; int8 includes the dynamic quantisation of the activations."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "roofline")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    result = measure(args.repeats)
    result["seconds"] = round(time.perf_counter() - start, 1)
    result["command"] = "python -m benchmarks.roofline " + " ".join(argv if argv is not None else sys.argv[1:])
    text = markdown(result)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_result(args.out, result, f"`{result['command'].strip()}`\n\n{text}")
    print(text)
    return result


if __name__ == "__main__":
    main()
