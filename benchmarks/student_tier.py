"""The distilled student tier: a few of the fine-tuned body's layers, distilled from it, exported to int8 ONNX.

    python -m benchmarks.student_tier --task sst2 --layers 2 3 --unlabeled 4000 [--teacher DIR] [--keep spread first]
        [--target similarities embeddings]

The teacher is ``--teacher`` (a saved SetFitModel) or MiniLM-L6 trained with setfit_lite's defaults on ``--shots``
examples per class (seed ``--seed``, the same sample as ``benchmarks/inference.py``). For every layer count and
layer choice (``shrink_body(teacher, n, keep=...)``) and distillation target (``--target``: the teacher's in-batch
similarities, setfit's, or its embeddings) the student is trained with ``DistillationTrainer`` on the
few-shot training texts plus ``--unlabeled`` other texts of the training split (never validation or test texts),
then exported with ``export_onnx(..., quantize="int8")``. The layer choice (and target) per layer count is made on the
validation split's accuracy of the int8 student; the test split is only reported. Throughput: ``predict_proba`` of
the test texts by the chosen int8 students and the teacher's int8 export, in this process, with default threads and
``TOKENIZERS_PARALLELISM=false``, in ``--rounds`` interleaved rounds (best round reported), with each path's share
of onnxruntime's measured int8 GEMM peak (``benchmarks/results/roofline.json``, when present). Writes
``--out``.json and .md (default ``benchmarks/results/student_tier_<task>``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402

from benchmarks.compare_setfit import load_task
from benchmarks.machine import write_result
from benchmarks.roofline import encoder_flops, fraction_of_peak

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

BODY = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_SHOTS = {"sst2": 8, "emotion": 16}


def read_split(data_dir: Path, task: str, split: str) -> tuple[list[str], list[int]]:
    with open(data_dir / task / f"{split}.jsonl", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return [r["text"] for r in rows], [int(r["label"]) for r in rows]


def accuracy(model, texts: list[str], labels: list[int] | np.ndarray) -> float:
    """Share of ``texts`` whose prediction is the label (or, given a model's predictions, agrees with them)."""
    predicted = np.asarray(model.predict(texts, as_numpy=True))
    return float(np.mean(predicted == np.asarray(labels)))


def texts_per_second(models: dict, texts: list[str], rounds: int) -> dict[str, float]:
    """Best-of-``rounds`` texts/s of ``predict_proba`` per model; each round runs every model once, in turn."""
    for model in models.values():
        model.predict_proba(texts[:64])  # warm-up
    best = dict.fromkeys(models, 0.0)
    for _ in range(rounds):
        for name, model in models.items():
            start = time.perf_counter()
            model.predict_proba(texts)
            best[name] = max(best[name], len(texts) / (time.perf_counter() - start))
    return best


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--task", default="sst2")
    parser.add_argument("--teacher", type=Path, default=None, help="a saved SetFitModel (else train one)")
    parser.add_argument("--shots", type=int, default=None, help="per class, when training the teacher")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--layers", type=int, nargs="+", default=[2, 3])
    parser.add_argument("--keep", nargs="+", default=["spread", "first"], help="layer choices to compare")
    parser.add_argument("--target", nargs="+", default=["similarities"], choices=["similarities", "embeddings"],
                        help="what the student learns of the teacher (DistillationTrainer's target), to compare")
    parser.add_argument("--unlabeled", type=int, default=4000)
    parser.add_argument("--epochs", type=int, default=None, help="the students' distillation epochs (default: 1)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    out = args.out or HERE / "results" / f"student_tier_{args.task}"

    import onnxruntime as ort
    import torch

    from setfit_lite import DistillationTrainer, SetFitModel, Trainer, TrainingArguments
    from setfit_lite.distillation import shrink_body

    shots = args.shots or DEFAULT_SHOTS.get(args.task, 8)
    task = load_task(args.data_dir, f"{args.task}:{shots}", args.seed)
    val_texts, val_labels = read_split(args.data_dir, args.task, "validation")
    test_texts, test_labels = task["test_texts"], task["test_labels"]
    pool, _ = read_split(args.data_dir, args.task, "train")
    few = set(task["texts"])
    others = [t for t in dict.fromkeys(pool) if t not in few]
    unlabeled = random.Random(args.seed).sample(others, min(args.unlabeled, len(others)))
    distil_texts = task["texts"] + unlabeled

    if args.teacher is not None:
        teacher = SetFitModel.from_pretrained(args.teacher)
        teacher_source = str(args.teacher)
    else:
        teacher = SetFitModel.from_pretrained(BODY)
        Trainer(model=teacher, args=TrainingArguments(seed=args.seed, show_progress_bar=False),
                train_dataset={"text": task["texts"], "label": task["labels"]}).train()
        teacher_source = f"{BODY} trained here, {shots} per class, seed {args.seed}"
    layers_total = teacher.model_body[0].auto_model.config.num_hidden_layers
    config = teacher.model_body[0].auto_model.config
    shape = {"hidden": config.hidden_size, "intermediate": config.intermediate_size}

    result: dict = {"task": args.task, "teacher": teacher_source, "teacher_layers": layers_total,
                    "distil_texts": len(distil_texts), "validation_size": len(val_texts), "test_size": len(test_texts),
                    "threads": {"torch.get_num_threads": torch.get_num_threads(),
                                "onnxruntime.intra_op_num_threads": ort.SessionOptions().intra_op_num_threads,
                                "TOKENIZERS_PARALLELISM": os.environ.get("TOKENIZERS_PARALLELISM"),
                                "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS")}}
    with tempfile.TemporaryDirectory() as tmp:
        teacher_onnx = SetFitModel.from_onnx(teacher.export_onnx(Path(tmp) / "teacher_int8", quantize="int8"))
        result["teacher_accuracy"] = {
            "torch": {"validation": accuracy(teacher, val_texts, val_labels),
                      "test": accuracy(teacher, test_texts, test_labels)},
            "onnx_int8": {"validation": accuracy(teacher_onnx, val_texts, val_labels),
                          "test": accuracy(teacher_onnx, test_texts, test_labels)}}
        teacher_test = np.asarray(teacher.predict(test_texts, as_numpy=True))
        print(json.dumps({"teacher_accuracy": result["teacher_accuracy"]}), flush=True)
        students, exported = [], {}
        for num_layers, keep, target in itertools.product(args.layers, args.keep, args.target):
            student = shrink_body(teacher, num_layers, keep=keep)
            start = time.perf_counter()
            DistillationTrainer(teacher_model=teacher, student_model=student, target=target,
                                args=TrainingArguments(seed=args.seed, show_progress_bar=False,
                                                       **({"num_epochs": (args.epochs, 16)} if args.epochs else {})),
                                train_dataset={"text": distil_texts}).train()
            seconds = time.perf_counter() - start
            onnx = SetFitModel.from_onnx(student.export_onnx(
                Path(tmp) / f"student_{num_layers}_{keep}_{target}", quantize="int8"))
            row = {"layers": num_layers, "keep": keep, "target": target,
                   "indices": student.training_info["layers_kept"]["indices"],
                   "distil_seconds": round(seconds, 1),
                   "torch": {"validation": accuracy(student, val_texts, val_labels),
                             "test": accuracy(student, test_texts, test_labels)},
                   "onnx_int8": {"validation": accuracy(onnx, val_texts, val_labels),
                                 "test": accuracy(onnx, test_texts, test_labels),
                                 "test_agreement_with_teacher": accuracy(onnx, test_texts, teacher_test)}}
            students.append(row)
            exported[(num_layers, keep, target)] = onnx
            print(json.dumps(row), flush=True)
        chosen = {}
        for num_layers in args.layers:
            rows = [r for r in students if r["layers"] == num_layers]
            best = max(rows, key=lambda r: r["onnx_int8"]["validation"])  # ties: the first --keep, --target listed
            best["chosen_on_validation"] = True
            chosen[num_layers] = best
        speed = texts_per_second({"teacher": teacher_onnx,
                                  **{f"student_{n}": exported[(n, r["keep"], r["target"])]
                                     for n, r in chosen.items()}},
                                 test_texts, args.rounds)
    result["students"] = students
    lengths = [len(ids) for ids in teacher.tokenize(test_texts)]
    roofline_file = HERE / "results" / "roofline.json"
    peak = json.loads(roofline_file.read_text())["peak_gflops"]["ort_int8"] if roofline_file.exists() else None

    def speed_row(name: str, num_layers: int) -> dict:
        flops = encoder_flops(lengths, 32, layers=num_layers, **shape) / len(lengths)
        return {"texts_per_s": round(speed[name], 1), "x_teacher_int8": round(speed[name] / speed["teacher"], 2),
                "gflop_per_text": round(flops / 1e9, 4),
                "fraction_of_ort_int8_peak": None if peak is None else round(fraction_of_peak(speed[name], flops,
                                                                                              peak), 3)}

    result["speed"] = {"teacher_int8": speed_row("teacher", layers_total),
                       **{f"student_{n}_int8": speed_row(f"student_{n}", n) for n in chosen}}
    result["rounds"] = args.rounds
    result["ort_int8_peak_gflops"] = peak
    result["command"] = "python -m benchmarks.student_tier " + " ".join(argv if argv is not None else sys.argv[1:])
    text = markdown(result)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_result(out, result, text)
    print(text)
    return result


def markdown(result: dict) -> str:
    """Accuracy per student (the layer choice marked) and the speed of the int8 exports."""
    teacher = result["teacher_accuracy"]
    lines = [f"`{result['command'].strip()}`", "",
             f"Teacher: {result['teacher']} ({result['teacher_layers']} layers); students distilled on "
             f"{result['distil_texts']} training-split texts; validation {result['validation_size']}, test "
             f"{result['test_size']} texts. Threads: "
             + ", ".join(f"{k}={v}" for k, v in result["threads"].items()) + ".", "",
             "| model | layers kept | distil s | val acc torch | val acc int8 | test acc torch | test acc int8 "
             "| test agreement int8 / teacher |",
             "|---|---|---|---|---|---|---|---|",
             f"| teacher | all {result['teacher_layers']} | | {teacher['torch']['validation']:.3f} "
             f"| {teacher['onnx_int8']['validation']:.3f} | {teacher['torch']['test']:.3f} "
             f"| {teacher['onnx_int8']['test']:.3f} | |"]
    for row in result["students"]:
        mark = " (chosen on validation)" if row.get("chosen_on_validation") else ""
        target = f", {row['target']}" if "target" in row else ""
        lines.append(f"| student {row['layers']} layers, {row['keep']}{target}{mark} | {row['indices']} "
                     f"| {row['distil_seconds']:.0f} | {row['torch']['validation']:.3f} "
                     f"| {row['onnx_int8']['validation']:.3f} | {row['torch']['test']:.3f} "
                     f"| {row['onnx_int8']['test']:.3f} | {row['onnx_int8']['test_agreement_with_teacher']:.3f} |")
    lines += ["", "| int8 ONNX path | texts/s (best round) | × teacher int8 | GFLOP/text | share of int8 GEMM peak |",
              "|---|---|---|---|---|"]
    for name, row in result["speed"].items():
        share = "–" if row["fraction_of_ort_int8_peak"] is None else f"{row['fraction_of_ort_int8_peak']:.1%}"
        lines.append(f"| {name} | {row['texts_per_s']:.1f} | {row['x_teacher_int8']:.2f} | {row['gflop_per_text']:.3f} "
                     f"| {share} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
