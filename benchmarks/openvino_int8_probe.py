"""Does OpenVINO's own int8 (NNCF post-training quantization, AMX-INT8 / VNNI kernels) beat its bf16 hint on an
exported fp32 graph? Both compiled from the same ``model.onnx`` and timed side by side on SST-2's test texts (sorted
by length, batches of 64, as the ONNX tier predicts); agreement of their labels and each one's accuracy.

Runs in its own virtual environment (NNCF is not a setfit_lite dependency)::

    python -m venv NNCF_VENV && NNCF_VENV/bin/pip install openvino nncf tokenizers numpy
    NNCF_VENV/bin/python benchmarks/openvino_int8_probe.py --model-dir STUDENT_FP32_DIR --data-dir DATA_DIR \\
        --out benchmarks/results/openvino_int8_probe

``STUDENT_FP32_DIR``: an fp32 export (``export_onnx`` with no quantization), such as the 3-layer student that
``python -m benchmarks.inference --student 3`` writes. Calibration: 300 SST-2 training texts (never test texts).
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import time
from pathlib import Path

import numpy as np


def read(data_dir: Path, split: str) -> list[dict]:
    with open(data_dir / "sst2" / f"{split}.jsonl", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def batches(tokenizer, texts: list[str], size: int) -> list[tuple[list[int], dict]]:  # noqa: ANN001
    encodings = tokenizer.encode_batch(texts)
    order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
    out = []
    for start in range(0, len(order), size):
        rows = order[start:start + size]
        width = max(len(encodings[i].ids) for i in rows)
        ids = np.zeros((len(rows), width), np.int64)
        mask = np.zeros((len(rows), width), np.int64)
        for r, i in enumerate(rows):
            n = len(encodings[i].ids)
            ids[r, :n], mask[r, :n] = encodings[i].ids, 1
        out.append((rows, {"input_ids": ids, "attention_mask": mask}))
    return out


def predict(compiled, feeds: list[tuple[list[int], dict]], n: int) -> np.ndarray:  # noqa: ANN001
    request = compiled.create_infer_request()
    out = np.zeros((n, compiled.output(0).get_partial_shape()[1].get_length()), np.float32)
    for rows, feed in feeds:
        out[rows] = request.infer(feed)[compiled.output(0)]
    return out


def cpu() -> dict[str, str]:
    try:
        fields = dict(line.split(":", 1) for line in subprocess.run(["lscpu"], capture_output=True, text=True,
                                                                     check=True).stdout.splitlines() if ":" in line)
    except (OSError, subprocess.CalledProcessError):
        return {"model": platform.processor()}
    flags = [f for f in fields.get("Flags", "").split() if f.startswith(("avx", "amx"))]
    return {"model": fields.get("Model name", "").strip(), "cpus": fields.get("CPU(s)", "").strip(),
            "flags": " ".join(flags)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model-dir", type=Path, required=True)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    import nncf
    import openvino as ov
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(args.model_dir / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(512)
    test = read(args.data_dir, "test")
    texts, labels = [r["text"] for r in test], np.array([r["label"] for r in test])
    feeds = batches(tokenizer, texts, 64)
    calibration = [feed for _, feed in batches(tokenizer, [r["text"] for r in read(args.data_dir, "train")[:300]],
                                               16)]
    core = ov.Core()
    graph = core.read_model(str(args.model_dir / "model.onnx"))
    quantized = nncf.quantize(graph, nncf.Dataset(calibration), model_type=nncf.ModelType.TRANSFORMER,
                              subset_size=len(calibration))
    hint = {"INFERENCE_PRECISION_HINT": "bf16"}
    compiled = {"bf16 hint": core.compile_model(graph, "CPU", hint),
                "nncf int8 (+ bf16 hint)": core.compile_model(quantized, "CPU", hint)}
    proba = {name: predict(c, feeds, len(texts)) for name, c in compiled.items()}  # also the warm-up
    seconds: dict[str, list[float]] = {name: [] for name in compiled}
    for _ in range(args.rounds):  # side by side, alternating
        for name, c in compiled.items():
            start = time.perf_counter()
            predict(c, feeds, len(texts))
            seconds[name].append(time.perf_counter() - start)
    first, second = compiled
    result = {"cpu": cpu(), "openvino": ov.__version__, "nncf": nncf.__version__, "texts": len(texts),
              "agreement": float((proba[first].argmax(1) == proba[second].argmax(1)).mean()),
              "paths": {name: {"texts_per_s_best": round(len(texts) / min(s), 1),
                               "accuracy": round(float((proba[name].argmax(1) == labels).mean()), 4)}
                        for name, s in seconds.items()}}
    result["int8_over_bf16"] = round(min(seconds[first]) / min(seconds[second]), 3)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
