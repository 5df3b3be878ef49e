"""bf16 against fp32 prediction in the torch tier, on the CPU this runs on.

Two measurements, each side by side in one run (interleaved rounds, best round kept):

- ``modes``: how to run the body in bf16. MiniLM-L6's ``SetFitModel.encode`` of SST-2's test sentences (batch 64,
  default threads) in fp32, under ``torch.autocast("cpu", torch.bfloat16)``, and with a copy of the body whose
  weights are cast to bf16; texts/s, the ratio to fp32 and the cosine of each embedding to its fp32 one;
- ``suite``: what ``inference_precision="auto"`` (bf16 where the CPU has native bf16) changes on the six suite
  tasks: an 8-shot model per task (seed 0, setfit_lite's defaults, test-limited), its predictions with
  ``inference_precision="fp32"`` and ``"bf16"``, agreement, accuracy of each, and the speed ratio (``--device cuda``:
  predicted on the GPU);
- ``openvino``: an fp32 ONNX export (of an 8-shot SST-2 model trained here, or ``--onnx-dir``) under OpenVINO's
  f32 and bf16 inference precision hints, and what ``inference_precision="auto"`` chooses on this CPU.

Every result file records the CPU (``benchmarks.machine.cpu_info``).

Example:
    ``python -m benchmarks.precision modes --rounds 3``
    ``python -m benchmarks.precision suite --test-limit 1000``
    ``python -m benchmarks.precision openvino --rounds 3``
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from contextlib import nullcontext
from pathlib import Path

import numpy as np

from benchmarks.accuracy_suite import TASKS
from benchmarks.compare_setfit import load_task
from benchmarks.machine import cpu_info, cpu_line, write_result
from benchmarks.smoke import add_smoke_option, apply_smoke
from benchmarks.workdir import process_folder

MINILM = "sentence-transformers/all-MiniLM-L6-v2"


def _model(name: str) -> object:
    from setfit_lite import SetFitModel

    return SetFitModel.from_pretrained(name)


def modes(args: argparse.Namespace) -> dict:
    """fp32, bf16 autocast and bf16 weights through ``SetFitModel.encode``, interleaved ``args.rounds`` times."""
    import torch

    task = load_task(args.data_dir, "sst2:8", 0, test_limit=args.test_limit)
    texts = task["test_texts"]
    model = _model(args.model)
    model.inference_precision = "fp32"  # each mode below sets the precision itself
    fp32_body = model.model_body
    bf16_body = copy.deepcopy(fp32_body).to(torch.bfloat16)

    def run(mode: str) -> np.ndarray:
        model.model_body = bf16_body if mode == "bf16_weights" else fp32_body
        context = torch.autocast("cpu", torch.bfloat16) if mode == "bf16_autocast" else nullcontext()
        with context:
            return model.encode(texts, batch_size=args.batch_size)

    names = ("fp32", "bf16_autocast", "bf16_weights")
    for name in names:
        run(name)  # warm-up
    best = {name: float("inf") for name in names}
    out: dict[str, np.ndarray] = {}
    for _ in range(args.rounds):
        for name in names:
            start = time.perf_counter()
            out[name] = run(name)
            best[name] = min(best[name], time.perf_counter() - start)
    model.model_body = fp32_body
    ref = out["fp32"] / np.linalg.norm(out["fp32"], axis=1, keepdims=True)
    rows = {}
    for name in names:
        emb = out[name] / np.linalg.norm(out[name], axis=1, keepdims=True)
        cos = (emb * ref).sum(1)
        rows[name] = {"per_s": len(texts) / best[name], "seconds": best[name],
                      "speed_vs_fp32": best["fp32"] / best[name],
                      "cosine_min": float(cos.min()), "cosine_mean": float(cos.mean())}
        print(json.dumps({name: rows[name]}), flush=True)
    return {"texts": len(texts), "batch_size": args.batch_size, "threads": torch.get_num_threads(),
            "rounds": args.rounds, "rows": rows}


def suite(args: argparse.Namespace) -> dict:
    """8-shot models on the suite tasks, predicted in fp32 and in bf16 (interleaved rounds)."""
    from setfit_lite import SetFitModel, Trainer, TrainingArguments

    tasks = {}
    for name in args.tasks:
        task = load_task(args.data_dir, f"{name}:{args.shots}", args.seed, test_limit=args.test_limit)
        texts, labels = task["test_texts"], np.asarray(task["test_labels"])
        model = SetFitModel.from_pretrained(args.model, labels=task["label_names"])
        start = time.perf_counter()
        Trainer(model=model, args=TrainingArguments(seed=args.seed, show_progress_bar=False, **args.train_args),
                train_dataset={"text": task["texts"], "label": task["labels"]}).train()
        train_s = time.perf_counter() - start
        model.to(args.device)  # training leaves the body on the host
        model.inference_precision = "auto"
        auto = model.embedding_precision()  # what a user's predict runs in on this device
        best = {"fp32": float("inf"), "bf16": float("inf")}
        proba = {}
        for _ in range(args.rounds):
            for precision in best:
                model.inference_precision = precision
                start = time.perf_counter()
                proba[precision] = model.class_proba(texts, batch_size=args.batch_size)
                best[precision] = min(best[precision], time.perf_counter() - start)
        pred = {p: proba[p].argmax(1) for p in proba}
        acc = {p: float(np.mean(pred[p] == labels)) for p in pred}
        tasks[name] = {"test_texts": len(texts), "train_s": train_s, "accuracy_fp32": acc["fp32"],
                       "accuracy_bf16": acc["bf16"], "accuracy_diff_points": 100 * (acc["bf16"] - acc["fp32"]),
                       "agreement": float(np.mean(pred["bf16"] == pred["fp32"])),
                       "max_abs_proba_diff": float(np.abs(proba["bf16"] - proba["fp32"]).max()),
                       "per_s_fp32": len(texts) / best["fp32"], "per_s_bf16": len(texts) / best["bf16"],
                       "speed_bf16_vs_fp32": best["fp32"] / best["bf16"], "auto_precision": auto}
        print(json.dumps({name: tasks[name]}), flush=True)
    return {"shots": args.shots, "seed": args.seed, "test_limit": args.test_limit, "rounds": args.rounds,
            "batch_size": args.batch_size, "tasks": tasks, "device": device_name(args.device)}


def device_name(device: str) -> str:
    """``"cpu"``, or the device with its GPU's name and torch's version (``"cuda: NVIDIA H200, torch 2.11.0"``)."""
    import torch

    if device == "cpu":
        return "cpu"
    return f"{device}: {torch.cuda.get_device_name(torch.device(device))}, torch {torch.__version__}"


def openvino(args: argparse.Namespace) -> dict:
    """An fp32 ONNX export (``--onnx-dir``, else one of an 8-shot SST-2 model trained here: seed 0, setfit_lite's
    defaults) run by OpenVINO with ``INFERENCE_PRECISION_HINT`` f32 and bf16, interleaved; the precision
    ``inference_precision="auto"`` chooses on this CPU, accuracy and agreement of each with f32, and the precision
    each matrix product ran in (the compiled model's runtime graph)."""
    import collections
    import importlib.metadata

    from setfit_lite.runtime.onnx import OnnxSetFitModel, OpenVinoSession, resolve_inference_precision

    task = load_task(args.data_dir, "sst2:8", 0, test_limit=args.test_limit)
    texts, labels = task["test_texts"], np.asarray(task["test_labels"])
    onnx_dir = args.onnx_dir
    if onnx_dir is None:
        from setfit_lite import SetFitModel, Trainer, TrainingArguments

        trained = SetFitModel.from_pretrained(args.model, labels=task["label_names"])
        Trainer(model=trained, args=TrainingArguments(seed=0, show_progress_bar=False, **args.train_args),
                train_dataset={"text": task["texts"], "label": task["labels"]}).train()
        onnx_dir = trained.export_onnx(process_folder("setfit_lite_precision_") / "onnx_fp32")
    model = OnnxSetFitModel.load(onnx_dir, runtime="openvino", inference_precision="fp32")
    model_file = str(Path(onnx_dir) / model.config["model_file"])
    sessions = {hint: OpenVinoSession(model_file, precision=hint) for hint in ("f32", "bf16")}
    kernels = {}
    for hint, session in sessions.items():
        counts: collections.Counter = collections.Counter()
        for op in session.compiled.get_runtime_model().get_ops():
            info = op.get_rt_info()
            if "layerType" in info and info["layerType"].astype(str) in ("FullyConnected", "MatMul"):
                counts[f"{info['layerType'].astype(str)} {info['runtimePrecision'].astype(str)}"] += 1
        kernels[hint] = dict(counts)
    best = {hint: float("inf") for hint in sessions}
    proba = {}
    for _ in range(args.rounds + 1):  # the first round warms up
        for hint, session in sessions.items():
            model.session = session
            start = time.perf_counter()
            proba[hint] = model.class_proba(texts, batch_size=32)
            best[hint] = min(best[hint], time.perf_counter() - start)
    accuracy = {hint: float(np.mean(p.argmax(1) == labels)) for hint, p in proba.items()}
    return {"texts": len(texts), "rounds": args.rounds, "trained_here": args.onnx_dir is None, "kernels": kernels,
            "auto_chooses": resolve_inference_precision("auto", "openvino"),
            "versions": {name: importlib.metadata.version(name) for name in ("openvino", "onnxruntime")},
            "per_s": {hint: len(texts) / s for hint, s in best.items()}, "accuracy": accuracy,
            "speed_bf16_vs_f32": best["f32"] / best["bf16"],
            "agreement": float(np.mean(proba["bf16"].argmax(1) == proba["f32"].argmax(1))),
            "max_abs_proba_diff": float(np.abs(proba["bf16"] - proba["f32"]).max())}


def markdown(result: dict) -> list[str]:
    cpu = result["cpu"]
    lines = [f"# bf16 prediction ({result['what']})", "", f"`{result['command']}`", "", cpu_line(cpu), ""]
    if result["what"] == "openvino":
        body = result["openvino"]
        versions = ", ".join(f"{k} {v}" for k, v in body.get("versions", {}).items())
        lines += [f"{body['texts']} SST-2 test sentences, batch 32, best of {body['rounds']} interleaved rounds"
                  f"{'; ' + versions if versions else ''}.", "",
                  "| INFERENCE_PRECISION_HINT | texts/s | accuracy | matrix products ran in |", "|---|---|---|---|"]
        for hint, per_s in body["per_s"].items():
            acc = body.get("accuracy", {}).get(hint)
            lines.append(f"| {hint} | {per_s:,.1f} | {'' if acc is None else f'{acc:.4f}'} | {body['kernels'][hint]} |")
        lines += ["", f"bf16 ÷ f32 speed {body['speed_bf16_vs_f32']:.2f}×, agreement {body['agreement']:.4f}, max "
                      f"|Δp| {body['max_abs_proba_diff']:.4f}"]
        if "auto_chooses" in body:
            lines.append(f"`inference_precision=\"auto\"` chooses {body['auto_chooses']} on this CPU.")
    elif result["what"] == "modes":
        body = result["modes"]
        lines += [f"{body['texts']} SST-2 test sentences, batch {body['batch_size']}, {body['threads']} threads, "
                  f"best of {body['rounds']} interleaved rounds.", "",
                  "| mode | texts/s | × fp32 | cosine to fp32 (min / mean) |", "|---|---|---|---|"]
        for name, row in body["rows"].items():
            lines.append(f"| {name} | {row['per_s']:,.1f} | {row['speed_vs_fp32']:.2f}× | "
                         f"{row['cosine_min']:.5f} / {row['cosine_mean']:.5f} |")
    else:
        body = result["suite"]
        texts = ("the test texts of the table (a random sample where fewer than the split)" if body.get("logs")
                 else "full test splits" if body["test_limit"] is None else f"up to {body['test_limit']} test texts")
        source = f" From the logs {', '.join(body['logs'])}." if body.get("logs") else ""
        device = f" Predicted on {body['device']}." if body.get("device", "cpu") != "cpu" else ""
        lines += [f"{body['shots']} per class, seed {body['seed']}, {texts}, batch {body['batch_size']}, best of "
                  f"{body['rounds']} interleaved rounds.{source}{device}", "",
                  "| task | test texts | accuracy fp32 | accuracy bf16 | Δ points | agreement | max |Δp| | bf16 ÷ fp32 "
                  "speed |", "|---|---|---|---|---|---|---|---|"]
        for name, row in body["tasks"].items():
            lines.append(f"| {name} | {row['test_texts']} | {row['accuracy_fp32']:.4f} | {row['accuracy_bf16']:.4f} "
                         f"| {row['accuracy_diff_points']:+.2f} | {row['agreement']:.4f} | "
                         f"{row['max_abs_proba_diff']:.4f} | {row['speed_bf16_vs_fp32']:.2f}× |")
        lines += ["", "texts/s fp32 / bf16: " + "; ".join(
            f"{name} {row['per_s_fp32']:,.1f} / {row['per_s_bf16']:,.1f}"
            + (f" (`inference_precision=\"auto\"` runs {row['auto_precision']})" if "auto_precision" in row else "")
            for name, row in body["tasks"].items())]
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=("modes", "suite", "openvino"))
    parser.add_argument("--onnx-dir", type=Path, default=None, help="openvino: an fp32 export_onnx folder")
    parser.add_argument("--data-dir", type=Path, default=Path("../shared/data"))
    parser.add_argument("--model", default=MINILM)
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=TASKS)
    parser.add_argument("--shots", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--test-limit", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--device", default="cpu", help="suite: where the trained models predict (cpu, cuda)")
    add_smoke_option(parser)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--summarize", type=Path, nargs="+", default=None, metavar="LOG",
                        help="suite: write the results from the JSON lines of interrupted runs' logs (a task in "
                             "several: the last log's)")
    args = parser.parse_args(argv)
    args.train_args = {}
    apply_smoke(args, parser, f"precision_{args.what}")
    if args.smoke:
        args.rounds = 1
    command = "python -m benchmarks.precision " + " ".join(argv if argv is not None else sys.argv[1:])
    if args.summarize is not None:  # the tasks interrupted suite runs printed, one JSON line each
        tasks = {k: v for log in args.summarize for line in log.read_text(encoding="utf-8").splitlines()
                 if line.startswith("{") for k, v in json.loads(line).items()}
        body = {"shots": args.shots, "seed": args.seed, "test_limit": args.test_limit, "rounds": args.rounds,
                "batch_size": args.batch_size, "tasks": tasks, "logs": [log.name for log in args.summarize]}
    else:
        body = {"modes": modes, "suite": suite, "openvino": openvino}[args.what](args)
    result = {"command": command, "what": args.what, "cpu": cpu_info(), args.what: body}
    out = args.out or Path(f"benchmarks/results/precision_{args.what}")
    lines = markdown(result)
    write_result(out, result, "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
