"""Prediction at corpus scale: the transformer tier (torch, ONNX fp32/int8, OpenVINO) and the static tier against
setfit 1.2's ``predict`` and model2vec's own ``StaticModel.encode``, on the same body, head weights, texts and
machine, in one run, with every runtime at its default thread count (as a user runs it).

    python -m benchmarks.inference --tasks sst2:8 emotion:16 --setfit-python PATH/TO/setfit-venv/bin/python \
        [--threads N] [--test-limit N] [--model-dirs sst2:8=DIR ...] [--stream 1000000]

``--threads N`` runs every contender on N threads instead (torch and setfit's torch: ``torch.set_num_threads``,
onnxruntime / OpenVINO / the static tier: ``num_threads``); the thread settings of each runtime are recorded in the
output either way. ``TOKENIZERS_PARALLELISM=false`` for every contender (setfit's worker included).

Per task (MiniLM-L6 trained with setfit_lite's defaults at the given shots, seed 0, or ``--model-dirs``) it exports
ONNX fp32, int8 (dynamic, per-channel), int8-static (QDQ, calibrated on the training texts plus ``--calibration``
texts of the training split) and the static tier (model2vec-format table distilled from the fine-tuned body, head
refitted on the training texts plus ``--static-unlabeled`` training-split texts labelled by the fine-tuned model).
For every variant on the task's test split: throughput of ``predict_proba`` (sentences/s, in this process, after a
warm-up, the best of ``--rounds`` rounds that each run setfit and then every variant, so that all see the shared
machine's load alike), its ratio to setfit's ``predict`` (same body and logistic-regression weights, in its own virtual
environment), batch-1 latency (median and p95 over ``--latency-n`` texts), accuracy and agreement with the torch
model, folder size on disk, cold start (median wall time of ``setfit-lite predict DIR two-texts.txt`` in a fresh
process; setfit: a process that loads its model and predicts two texts) and the peak RSS of a fresh process that
loads the model and predicts the whole test split. ``--stream N`` also streams N texts from a file through the static
model's ``predict_iter`` and samples RSS every chunk. Writes ``--out``.json and .md.

The static tier remembers each word's token ids (`setfit_lite.runtime.word_cache`, BERT-style tokenizers): its row
is timed with the cache as a served model has it, warmed on the ``--static-unlabeled`` training-split texts and put
back to that state before every round (the test texts' words are not in it unless those texts share them), and
``static_cold_cache`` with the cache emptied before every round (a model's first call).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.compare_setfit import load_task
from benchmarks.machine import write_result
from benchmarks.smoke import add_smoke_option, apply_smoke
from benchmarks.workdir import work_folder

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

SETFIT_WORKER = r"""
import json, sys, time
import numpy as np
from sentence_transformers import SentenceTransformer
from sklearn.linear_model import LogisticRegression
from setfit import SetFitModel
import torch
spec = json.load(open(sys.argv[1]))
if spec.get("threads"):
    torch.set_num_threads(spec["threads"])
head = LogisticRegression()
head.coef_, head.intercept_ = np.array(spec["coef"]), np.array(spec["intercept"])
head.classes_ = np.array(spec["classes"])
model = SetFitModel(model_body=SentenceTransformer(spec["body"], device="cpu"), model_head=head)
model.predict(spec["texts"][:2])
if sys.argv[2] == "cold":
    raise SystemExit(0)
model.predict(spec["texts"][:8])  # warm-up
print("READY " + json.dumps({"torch_threads": torch.get_num_threads()}), flush=True)
for command in sys.stdin:  # "run": predict the texts; "latency": batch-1 predictions; "quit"
    command = command.strip()
    if command == "run":
        t = time.perf_counter()
        pred = model.predict(spec["texts"])
        out = {"seconds": time.perf_counter() - t, "pred": [int(p) for p in np.asarray(pred)]}
    elif command == "latency":
        lat = []
        for text in spec["texts"][:spec["latency_n"]]:
            t = time.perf_counter()
            model.predict([text])
            lat.append((time.perf_counter() - t) * 1000)
        out = {"latency_ms": lat}
    else:
        break
    print("RESULT " + json.dumps(out), flush=True)
print("HWM", open("/proc/self/status").read().split("VmHWM:")[1].split()[0], flush=True)
"""


class SetfitWorker:
    """setfit 1.2's ``predict`` in its own virtual environment, loaded once, asked for runs between ours."""

    def __init__(self, python: str, spec_path: Path) -> None:
        self.proc = subprocess.Popen([python, "-c", SETFIT_WORKER, str(spec_path), "serve"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env(), cwd=ROOT)
        self.threads = json.loads(self._line("READY"))

    def _line(self, prefix: str) -> str:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith(prefix):
                return line[len(prefix):].strip()
        raise RuntimeError(f"the setfit worker ended before {prefix}")

    def ask(self, command: str) -> dict:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return json.loads(self._line("RESULT "))

    def close(self) -> float:
        """Stop the worker; its peak RSS in MB."""
        assert self.proc.stdin is not None
        self.proc.stdin.write("quit\n")
        self.proc.stdin.flush()
        peak = int(self._line("HWM ")) / 1024
        self.proc.wait()
        return peak


# a fresh process that loads a folder as `setfit-lite predict` does and predicts the test file (peak RSS)
LOAD_PREDICT = r"""
import sys
from setfit_lite.cli.inputs import load_model
from setfit_lite.runtime.predictor import iter_text_file
model = load_model(sys.argv[1], sys.argv[2])
for _ in model.iter_proba(iter_text_file(sys.argv[3]), batch_size=32):
    pass
"""

STREAM = r"""
import json, sys, time
from pathlib import Path
from setfit_lite.runtime.static import StaticSetFitModel

def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20

model = StaticSetFitModel.load(sys.argv[1])
samples, n, start = [rss_mb()], 0, time.perf_counter()
for i, label in enumerate(model.predict_iter(Path(sys.argv[2]), batch_size=1024)):
    n += 1
    if i % 8192 == 0:
        samples.append(rss_mb())
samples.append(rss_mb())
print("RESULT " + json.dumps({"texts": n, "seconds": time.perf_counter() - start, "rss_mb": samples}))
"""


HWM = '\nprint("HWM", open("/proc/self/status").read().split("VmHWM:")[1].split()[0])\n'


def env() -> dict[str, str]:
    """Children's environment: offline, and bytecode cached as in an installed package (the first of the cold
    starts writes it and is not counted)."""
    out = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    out.pop("PYTHONDONTWRITEBYTECODE", None)
    out["PYTHONPATH"] = os.pathsep.join([str(ROOT), out.get("PYTHONPATH", "")])
    return out


def child(argv: list[str]) -> tuple[float, str]:
    """(wall seconds, stdout) of a fresh process."""
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env(), cwd=ROOT)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:4])} failed: {proc.stderr[-2000:]}")
    return time.perf_counter() - start, proc.stdout


def peak_rss_mb(out: str) -> float:
    """The child's own peak RSS (VmHWM, printed by `HWM`: rusage's ru_maxrss would count the fork of this
    process before exec)."""
    return int(next(line for line in out.splitlines() if line.startswith("HWM "))[4:]) / 1024


def result_line(out: str) -> dict:
    return json.loads(next(line for line in out.splitlines() if line.startswith("RESULT "))[7:])


def latency(predict, texts: list[str], n: int) -> dict[str, float]:
    """Median and p95 milliseconds of ``predict([text])`` over ``n`` single texts."""
    predict(texts[:1])
    times = []
    for text in texts[:n]:
        start = time.perf_counter()
        predict([text])
        times.append((time.perf_counter() - start) * 1000)
    return {"median_ms": float(np.median(times)), "p95_ms": float(np.percentile(times, 95))}


def folder_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20


def read_split(data_dir: Path, name: str, split: str) -> list[str]:
    with open(data_dir / name / f"{split}.jsonl", encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f if line.strip()]


def run_task(spec: str, args: argparse.Namespace, work: Path) -> dict:
    from setfit_lite import SetFitModel, Trainer, TrainingArguments
    from setfit_lite.runtime.onnx import OnnxSetFitModel
    from setfit_lite.runtime.static import StaticSetFitModel

    name = spec.split(":")[0]
    task = load_task(args.data_dir, spec, 0, test_limit=args.test_limit)
    texts, labels = task["test_texts"], np.array(task["test_labels"])
    folder = work / spec.replace(":", "_")
    model_dir = args.model_dirs.get(spec)
    if model_dir is None:
        model = SetFitModel.from_pretrained(args.model)
        Trainer(model=model, args=TrainingArguments(seed=0, show_progress_bar=False, **args.train_args),
                train_dataset={"text": task["texts"], "label": task["labels"]}).train()
        model_dir = folder / "model"
        model.save_pretrained(model_dir)
    model = SetFitModel.from_pretrained(model_dir)
    seen = set(task["texts"])
    pool = [t for t in read_split(args.data_dir, name, "train") if t not in seen]
    random.Random(0).shuffle(pool)

    folders: dict[str, Path] = {"torch": Path(model_dir)}
    student_fp32: dict[str, Path] = {}  # the students' fp32 exports, run by OpenVINO only
    export_s: dict[str, float] = {}
    for variant, quantize in (("onnx_fp32", None), ("onnx_int8", "int8"), ("onnx_int8_static", "int8-static")):
        start = time.perf_counter()
        calibration = task["texts"] + pool[:args.calibration] if quantize == "int8-static" else None
        folders[variant] = model.export_onnx(folder / variant, quantize=quantize, calibration_texts=calibration)
        export_s[variant] = time.perf_counter() - start
    start = time.perf_counter()
    folders["static"] = model.export_static(folder / "static", task["texts"], task["labels"],
                                            unlabeled_texts=pool[:args.static_unlabeled])
    export_s["static"] = time.perf_counter() - start
    for student_spec in args.student:
        layers, _, keep = student_spec.partition(":")
        variant = f"student{layers}_int8"
        start = time.perf_counter()
        folders[variant], fp32 = distil_student(model, int(layers), keep or "first",
                                                task["texts"] + pool[:args.student_unlabeled], folder / variant,
                                                folder / f"student{layers}_fp32", target=args.student_target,
                                                epochs=args.student_epochs)
        export_s[variant] = time.perf_counter() - start
        student_fp32[f"openvino_student{layers}_fp32"] = fp32

    # the torch tier as a user gets it (inference_precision="auto": bf16 where the CPU computes it natively) and,
    # where that is not fp32, the same folder forced to fp32: the reference every accuracy and agreement is taken to
    runners: dict[str, tuple[object, Path, str]] = {"torch": (model, folders["torch"], "onnxruntime")}
    if model.embedding_precision() != "fp32":
        runners["torch_fp32"] = (SetFitModel.from_pretrained(model_dir, inference_precision="fp32"),
                                 folders["torch"], "")
    for variant in ("onnx_fp32", "onnx_int8", "onnx_int8_static"):
        runners[variant] = (OnnxSetFitModel.load(folders[variant], num_threads=args.threads,
                                                  runtime="onnxruntime"), folders[variant],
                            "onnxruntime")
    for variant in folders:
        if variant.startswith("student"):
            runners[variant] = (OnnxSetFitModel.load(folders[variant], num_threads=args.threads,
                                                  runtime="onnxruntime"), folders[variant],
                                "onnxruntime")
    if importlib.util.find_spec("openvino") is not None:
        for variant in ("onnx_fp32", "onnx_int8_static"):
            ov_name = variant.replace("onnx", "openvino")
            runners[ov_name] = (OnnxSetFitModel.load(folders[variant], num_threads=args.threads, runtime="openvino"),
                                folders[variant], "openvino")
        for ov_name, path in student_fp32.items():  # the student under OpenVINO's precision hint (bf16 on AMX)
            runners[ov_name] = (OnnxSetFitModel.load(path, num_threads=args.threads, runtime="openvino"), path,
                                "openvino")
    static = StaticSetFitModel.load(folders["static"], num_threads=args.threads)
    runners["static"] = (static, folders["static"], "onnxruntime")
    # the static tier's word cache (a BERT-style tokenizer): timed as a served model has it, warmed on texts of the
    # training split (never the test texts; put back before every round), and cold (empty before every round)
    cache_states: dict[str, dict] = {}
    if static.word_cache is not None:
        static.class_proba(pool[:args.static_unlabeled])
        cache_states["static"] = dict(static.word_cache._cache)
        runners["static_cold_cache"] = (StaticSetFitModel.load(folders["static"], num_threads=args.threads),
                                        folders["static"], "")
        cache_states["static_cold_cache"] = {}
    if importlib.util.find_spec("model2vec") is not None:
        runners["model2vec"] = (Model2VecPeer(folders["static"], static), folders["static"], "")
    settings = thread_settings(runners)

    worker = None
    if args.setfit_python:
        estimator = model.model_head.estimator
        spec_path = folder / "setfit_spec.json"
        spec_path.write_text(json.dumps({"body": str(model_dir), "texts": texts, "coef": estimator.coef_.tolist(),
                                         "intercept": estimator.intercept_.tolist(),
                                         "classes": estimator.classes_.tolist(), "latency_n": args.latency_n,
                                         "threads": args.threads}),
                             encoding="utf-8")
        worker = SetfitWorker(args.setfit_python, spec_path)
        settings["setfit"] = {**worker.threads, "TOKENIZERS_PARALLELISM": env()["TOKENIZERS_PARALLELISM"]}
    # throughput: --rounds rounds, each running setfit then every variant, so that all share the machine's load;
    # each keeps its best round
    best: dict[str, float] = {}
    probas: dict[str, np.ndarray] = {}
    setfit_pred = None
    for _ in range(args.rounds):
        if worker is not None:
            got = worker.ask("run")
            best["setfit"] = min(best.get("setfit", float("inf")), got["seconds"])
            setfit_pred = np.asarray(got["pred"])
        for variant, (runner, _, _) in runners.items():
            runner.predict_proba(texts[:64])  # warm-up
            if variant in cache_states:  # the word cache as it was before the test texts
                runner.word_cache._cache = dict(cache_states[variant])
            start = time.perf_counter()
            probas[variant] = np.asarray(runner.class_proba(texts, batch_size=args.batch_size))
            best[variant] = min(best.get(variant, float("inf")), time.perf_counter() - start)
    reference = "torch_fp32" if "torch_fp32" in runners else "torch"
    ref = probas[reference]
    rows: dict[str, dict] = {}
    for variant, (runner, path, runtime) in runners.items():
        proba = probas[variant]
        pred = np.asarray(runner.labels)[proba.argmax(1)]
        rows[variant] = {"per_s": len(texts) / best[variant], "seconds": best[variant],
                         "accuracy": float(np.mean(pred == labels)),
                         "agreement": float(np.mean(proba.argmax(1) == ref.argmax(1))),
                         "max_abs_diff": float(np.abs(proba - ref).max()), "size_mb": folder_mb(path),
                         "latency": latency(runner.predict_proba, texts, args.latency_n),
                         "export_s": export_s.get(variant.replace("openvino", "onnx"))}
        if hasattr(runner, "embedding_precision"):  # the torch tier: the precision its body ran in
            rows[variant]["precision"] = runner.embedding_precision()
        elif runtime == "openvino":  # the precision OpenVINO ran the graph in (the "auto" hint resolved)
            rows[variant]["precision"] = runner.inference_precision
        print(json.dumps({spec: {variant: rows[variant]}}), flush=True)
    if worker is not None:
        lat = worker.ask("latency")["latency_ms"]
        rows["setfit"] = {"per_s": len(texts) / best["setfit"], "seconds": best["setfit"],
                          "accuracy": float(np.mean(np.asarray(model.labels)[setfit_pred] == labels)),
                          "agreement": float(np.mean(setfit_pred == ref.argmax(1))),
                          "size_mb": folder_mb(Path(model_dir)),
                          "latency": {"median_ms": float(np.median(lat)), "p95_ms": float(np.percentile(lat, 95))},
                          "peak_rss_mb": worker.close()}
        print(json.dumps({spec: {"setfit": rows["setfit"]}}), flush=True)

    # cold start (CLI on two texts) and peak RSS (load + predict the test split), each in a fresh process
    two, test_file = folder / "two.txt", folder / "test.txt"
    two.write_text("\n".join(texts[:2]) + "\n", encoding="utf-8")
    test_file.write_text("\n".join(t.replace("\n", " ") for t in texts) + "\n", encoding="utf-8")
    for variant, (_, path, runtime) in runners.items():
        # a peer without a CLI, torch forced to fp32 (the CLI runs the folder's precision); smoke
        if not runtime or (args.fresh is not None and variant not in args.fresh):
            continue
        cli = [sys.executable, "-m", "setfit_lite.cli", "predict", str(path), str(two), "--runtime", runtime]
        cold = [child(cli)[0] for _ in range(args.cold_n + 1)][1:]
        rows[variant]["cold_start_s"] = statistics.median(cold)
        out = child([sys.executable, "-c", LOAD_PREDICT + HWM, str(path), runtime, str(test_file)])[1]
        rows[variant]["peak_rss_mb"] = peak_rss_mb(out)
    if worker is not None and (args.fresh is None or "setfit" in args.fresh):
        cold = [child([args.setfit_python, "-c", SETFIT_WORKER, str(spec_path), "cold"])[0]
                for _ in range(args.cold_n + 1)][1:]
        rows["setfit"]["cold_start_s"] = statistics.median(cold)
    if worker is not None:
        for row in rows.values():
            row["speed_vs_setfit"] = row["per_s"] / rows["setfit"]["per_s"]
    result = {"task": spec, "test_texts": len(texts), "rows": rows, "threads": settings, "reference": reference,
              "static_profile": static_profile(static, texts, cache_states.get("static"))}
    if "static" in cache_states:
        words = [w for t in texts for w in t.split(" ")]
        result["static_profile"]["test_words_not_in_warm_cache"] = float(
            np.mean([w not in cache_states["static"] for w in words]))
    if args.student:
        result["student_distillation"] = {"specs": list(args.student), "target": args.student_target,
                                          "epochs": args.student_epochs,
                                          "texts": len(task["texts"] + pool[:args.student_unlabeled])}
    if args.peaks:
        result["roofline"] = roofline_fractions(rows, runners["onnx_fp32"][0].tokenize(texts), args.batch_size or 32,
                                                args.peaks)
    return result


# which GEMM peak bounds each transformer path: its runtime and number format (a path that ran in bf16 has none)
PEAK_OF = {"torch": "torch_fp32", "torch_fp32": "torch_fp32", "onnx_fp32": "ort_fp32", "openvino_fp32": "ort_fp32",
           "onnx_int8": "ort_int8",
           "onnx_int8_static": "ort_int8", "openvino_int8_static": "ort_int8", "setfit": "torch_fp32"}


def roofline_fractions(rows: dict, token_ids: list[list[int]], batch_size: int, peaks: dict) -> dict:
    """Each transformer path's encoder GFLOP/s (``roofline.encoder_flops`` of the texts as batched) as a fraction of
    the GEMM peak of its runtime and format (``roofline.measure``, same run)."""
    from benchmarks.roofline import encoder_flops, fraction_of_peak

    per_text = encoder_flops([len(t) for t in token_ids], batch_size) / len(token_ids)
    out = {}
    for name, peak in PEAK_OF.items():
        if name in rows and rows[name].get("precision", "fp32") == "fp32":
            fraction = fraction_of_peak(rows[name]["per_s"], per_text, peaks[peak])
            out[name] = {"peak": peak, "peak_gflops": peaks[peak], "fraction": fraction,
                         "achieved_gflops": fraction * peaks[peak], "mflops_per_text": per_text / 1e6}
    return out


def distil_student(teacher: object, layers: int, keep: str, texts: list[str], folder: Path,
                   fp32_folder: Path | None = None, target: str = "similarities",
                   epochs: int = 1) -> tuple[Path, Path | None]:
    """A ``layers``-layer student of the fine-tuned ``teacher`` (``shrink_body``), distilled on ``texts`` (training
    and unlabeled training-split texts, never test texts) by ``DistillationTrainer`` (its ``target``, for
    ``epochs`` epochs; the rest its defaults), exported int8 to ``folder`` and, where given, fp32 to
    ``fp32_folder`` (the graph OpenVINO runs in its precision hint's)."""
    from setfit_lite import DistillationTrainer, TrainingArguments
    from setfit_lite.distillation import shrink_body

    student = shrink_body(teacher, layers, keep=keep)
    DistillationTrainer(teacher_model=teacher, student_model=student, target=target,
                        args=TrainingArguments(seed=0, show_progress_bar=False, num_epochs=(epochs, 16)),
                        train_dataset={"text": texts}).train()
    int8 = student.export_onnx(folder, quantize="int8")
    return int8, None if fp32_folder is None else student.export_onnx(fp32_folder)


class Model2VecPeer:
    """model2vec's own ``StaticModel.encode`` on the static folder, then the same head as the static tier: the
    static tier's peer (the folder is a model2vec model)."""

    def __init__(self, folder: Path, static: object) -> None:
        from model2vec import StaticModel

        self.model, self.static = StaticModel.from_pretrained(str(folder)), static
        self.labels = static.labels

    def class_proba(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        from setfit_lite.runtime.static import linear_proba

        return linear_proba(self.static.head, self.model.encode(texts))

    def predict_proba(self, texts: list[str]) -> np.ndarray:
        return self.class_proba(texts)


def thread_settings(runners: dict) -> dict:
    """What each runtime runs on: torch's threads, numpy's BLAS pools, the exported tiers' workers, the
    environment variables that change them."""
    import torch
    from threadpoolctl import threadpool_info

    out: dict = {"cpus": os.cpu_count(), "torch_threads": torch.get_num_threads(),
                 "blas": [{k: pool[k] for k in ("internal_api", "num_threads")} for pool in threadpool_info()],
                 "env": {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                                         "TOKENIZERS_PARALLELISM")}}
    for name, (runner, _, runtime) in runners.items():
        if runtime == "onnxruntime" and hasattr(runner, "num_workers"):
            out[name] = {"batches_at_once": runner.num_workers, "intra_op_threads": 1, "spinning": False}
        elif runtime == "openvino":
            compiled = runner.session.compiled
            out[name] = {key: compiled.get_property(key) for key in ("INFERENCE_NUM_THREADS", "NUM_STREAMS")}
        elif hasattr(runner, "num_threads"):
            out[name] = {"threads": runner.num_threads, "blas_threads_in_head": 1}
    out["model2vec"] = "model2vec's encode (its own batching; the head: numpy at the BLAS settings above)"
    return out


def static_profile(static, texts: list[str], warm_cache: dict | None = None, repeats: int = 5) -> dict:
    """Where the static tier's time goes, on one thread: tokenizer (ids as a flat array), row lookup and mean
    (``encode`` minus the tokenizer) and the head (its blocked product and nonlinearity on the embeddings);
    best of ``repeats``. With a word cache, each repeat starts from ``warm_cache`` (the words of texts other than
    these), and the tokenizer is also timed without the cache (``tokenizer_uncached_s``)."""
    from setfit_lite.runtime.static import HEAD_BLOCK, linear_proba
    from setfit_lite.runtime.threads import single_threaded_blas

    cache = static.word_cache

    def best(fn) -> float:
        fn()
        times = []
        for _ in range(repeats):
            if cache is not None:
                cache._cache = dict(warm_cache or {})
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return min(times)

    threads, static.num_threads = static.num_threads, 1
    try:
        with single_threaded_blas():
            tokenizer = best(lambda: static._flat_token_ids(texts))
            encode = best(lambda: static.encode(texts))
            embeddings = static.encode(texts)
            head = best(lambda: linear_proba(static.head, embeddings, block=HEAD_BLOCK))
        total = best(lambda: static.class_proba(texts))
        static.word_cache = None
        uncached = best(lambda: static._flat_token_ids(texts)) if cache is not None else tokenizer
    finally:
        static.num_threads, static.word_cache = threads, cache
    return {"texts": len(texts), "tokenizer_s": tokenizer, "lookup_mean_s": encode - tokenizer,
            "head_s": head, "total_s": total, "tokenizer_uncached_s": uncached}


def stream(args: argparse.Namespace, static_folder: Path, work: Path) -> dict:
    """``predict_iter`` over a file of ``args.stream`` texts (SST-2 training sentences, numbered), RSS sampled."""
    source = read_split(args.data_dir, "sst2", "train")
    path = work / "stream.txt"
    with open(path, "w", encoding="utf-8") as f:
        for i in range(args.stream):
            f.write(f"{source[i % len(source)]} {i}\n")
    out = child([sys.executable, "-c", STREAM + HWM, str(static_folder), str(path)])[1]
    got, peak = result_line(out), peak_rss_mb(out)
    path.unlink()
    rss = got["rss_mb"]
    return {"texts": got["texts"], "per_s": got["texts"] / got["seconds"], "rss_first_chunk_mb": rss[1],
            "rss_last_mb": rss[-1], "rss_max_mb": max(rss), "peak_rss_mb": peak}


def markdown(results: dict) -> list[str]:
    md = [f"`{results['command']}`", "",
          "| task | variant | sentences/s | × setfit | batch-1 ms (median / p95) | cold start s | accuracy | "
          "Δ acc (pts) | agreement | size MB | peak RSS MB |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for task in results["tasks"]:
        reference = task.get("reference", "torch")
        torch_acc = task["rows"][reference]["accuracy"]
        for name, r in task["rows"].items():
            name = f"{name} ({r['precision']})" if "precision" in r else name
            md.append(f"| {task['task']} ({task['test_texts']}) | {name} | {r['per_s']:.1f} | "
                      f"{r.get('speed_vs_setfit', float('nan')):.2f}× | {r['latency']['median_ms']:.2f} / "
                      f"{r['latency']['p95_ms']:.2f} | {r.get('cold_start_s', float('nan')):.2f} | "
                      f"{r['accuracy']:.4f} | {100 * (r['accuracy'] - torch_acc):+.2f} | {r['agreement']:.4f} | "
                      f"{r['size_mb']:.1f} | {r.get('peak_rss_mb', float('nan')):.0f} |")
    for task in results["tasks"]:
        md += ["", f"{task['task']}: accuracy and agreement are against {task.get('reference', 'torch')}"]
        prof = task["static_profile"]
        md += [f"{task['task']}: static tier on one thread, {prof['texts']} texts in "
                   f"{prof['total_s'] * 1000:.1f} ms: "
                   f"tokenizer {prof['tokenizer_s'] * 1000:.1f} ms, row lookup and mean "
                   f"{prof['lookup_mean_s'] * 1000:.1f} ms, head {prof['head_s'] * 1000:.1f} ms"
                   + (f" (word cache warmed on training-split texts, {prof['test_words_not_in_warm_cache']:.1%} of "
                      f"the test words not in it; the tokenizer without the cache "
                      f"{prof['tokenizer_uncached_s'] * 1000:.1f} ms)"
                      if "test_words_not_in_warm_cache" in prof else "")]
        if "student_distillation" in task:
            dist = task["student_distillation"]
            md.append(f"{task['task']}: students {', '.join(dist['specs'])} (layers:kept) distilled onto the "
                      f"teacher's {dist['target']} for {dist['epochs']} epoch(s) on {dist['texts']} training-split "
                      "texts")
        if "roofline" in task:
            md.append(f"{task['task']}: " + "; ".join(f"{name} {r['fraction']:.0%} of the {r['peak']} GEMM peak "
                                                       f"({r['achieved_gflops']:.1f} of {r['peak_gflops']:.1f} GFLOP/s)"
                                                       for name, r in task["roofline"].items()))
    md += ["", "Thread settings: `" + json.dumps(results["tasks"][0]["threads"]) + "`"]
    if "stream" in results:
        s = results["stream"]
        md += ["", f"static `predict_iter` over a file of {s['texts']:,} texts: {s['per_s']:.0f} texts/s, RSS "
                   f"{s['rss_first_chunk_mb']:.0f} MB after the first chunk, {s['rss_last_mb']:.0f} MB at the end "
                   f"(max sampled {s['rss_max_mb']:.0f} MB, peak {s['peak_rss_mb']:.0f} MB)"]
    return md


def merge(parts: list[dict]) -> dict:
    """One result of runs split by task (each a result of this script): their tasks in order, the commands joined
    by `` + ``, each run's GEMM peaks and stream kept with its command.

    Raises:
        ValueError: if the runs were measured on different CPUs, or a task is in two of them.
    """
    cpus = {json.dumps(part.get("cpu"), sort_keys=True) for part in parts}
    if len(cpus) > 1:
        raise ValueError(f"the runs to merge were measured on different CPUs: {sorted(cpus)}")
    tasks = [task["task"] for part in parts for task in part["tasks"]]
    if len(set(tasks)) < len(tasks):
        raise ValueError(f"a task is in more than one of the runs to merge: {tasks}")
    out = {"command": " + ".join(part["command"] for part in parts),
           "tasks": [task for part in parts for task in part["tasks"]], "cpu": parts[0].get("cpu"),
           "runs": [{k: part[k] for k in ("command", "roofline_peaks", "stream") if k in part} for part in parts]}
    streams = [part["stream"] for part in parts if "stream" in part]
    return out | ({"stream": streams[0]} if streams else {})


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--tasks", nargs="+", default=["sst2:8", "emotion:16"])
    parser.add_argument("--model-dirs", nargs="*", default=[], help="TASK=DIR: a trained model (else train one)")
    parser.add_argument("--test-limit", type=int, default=None, help="a random sample of the test split")
    parser.add_argument("--latency-n", type=int, default=50)
    parser.add_argument("--cold-n", type=int, default=3, help="cold starts per variant (median)")
    parser.add_argument("--batch-size", type=int, default=None,
                        help="texts a forward pass of every tier (default: each tier's own, as predict() runs it)")
    parser.add_argument("--rounds", type=int, default=2, help="throughput rounds (setfit, then every variant)")
    parser.add_argument("--calibration", type=int, default=256, help="training-split texts added for int8-static")
    parser.add_argument("--static-unlabeled", type=int, default=4000,
                        help="training-split texts the fine-tuned model labels for the static head")
    parser.add_argument("--student", nargs="*", default=[], metavar="LAYERS[:KEEP]",
                        help="also distil a student of LAYERS layers (shrink_body keep=KEEP, default 'first': chosen "
                             "on SST-2 validation by student_tier.py) and run its int8 ONNX export")
    parser.add_argument("--student-unlabeled", type=int, default=2000,
                        help="training-split texts (beside the training texts) the student is distilled on")
    parser.add_argument("--student-target", choices=["similarities", "embeddings"], default="similarities",
                        help="what the student learns of the teacher (DistillationTrainer's target)")
    parser.add_argument("--student-epochs", type=int, default=1, help="the student's distillation epochs")
    parser.add_argument("--stream", type=int, default=0, help="texts streamed through the static predict_iter")
    parser.add_argument("--setfit-python", default=None, help="Python of a virtual environment with setfit 1.2")
    parser.add_argument("--threads", type=int, default=None,
                        help="threads for every contender (default: each runtime's default thread count)")
    parser.add_argument("--no-roofline", dest="roofline", action="store_false",
                        help="skip the GEMM peaks (benchmarks/roofline.py) and the paths' fractions of them")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "inference")
    parser.add_argument("--model", default="sentence-transformers/all-MiniLM-L6-v2", help="the body trained per task")
    parser.add_argument("--fresh", nargs="*", default=None, metavar="VARIANT",
                        help="only these variants' cold start and peak RSS are measured in fresh processes (default: "
                             "every variant; --fresh alone: none, e.g. where machine time is short)")
    parser.add_argument("--merge", type=Path, nargs="+", default=None, metavar="JSON",
                        help="only merge the results of runs split by task (their .json files, same CPU) into --out")
    add_smoke_option(parser)  # also: small exports, no roofline
    args = parser.parse_args(argv)
    if args.merge:
        results = merge([json.loads(path.read_text(encoding="utf-8")) for path in args.merge])
        md = markdown(results)
        write_result(args.out, results, "\n".join(md))
        print("\n".join(md))
        return
    if args.student_epochs < 1:
        parser.error(f"--student-epochs must be at least 1, got {args.student_epochs}")
    args.train_args = {}
    apply_smoke(args, parser, "inference")
    if args.smoke:
        args.latency_n, args.cold_n, args.calibration, args.roofline = 2, 1, 8, False
        args.static_unlabeled, args.student_unlabeled, args.stream = 16, 16, min(args.stream, 1000)
        args.tasks = args.tasks[:1]
    # the variants whose cold start and peak RSS are measured in fresh processes (smoke: one per runtime)
    if args.smoke and args.fresh is None:
        args.fresh = ["torch", "onnx_int8", "openvino_fp32", "static"]
    args.fresh = None if args.fresh is None else set(args.fresh)
    args.model_dirs = dict(item.split("=", 1) for item in args.model_dirs)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)

    os.environ["TOKENIZERS_PARALLELISM"] = "false"  # every contender alike (children get it from env())
    command = "python -m benchmarks.inference " + " ".join(argv if argv is not None else sys.argv[1:])
    results: dict = {"command": command, "tasks": []}
    args.peaks = None
    if args.roofline:
        from benchmarks.roofline import measure

        results["roofline_peaks"] = measure(repeats=5)
        args.peaks = results["roofline_peaks"]["peak_gflops"]
    with work_folder("setfit_lite_inference_") as work:  # the trained model and its tiers: removed at the end
        for spec in args.tasks:
            results["tasks"].append(run_task(spec, args, work))
        if args.stream:
            results["stream"] = stream(args, work / args.tasks[0].replace(":", "_") / "static", work)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    md = markdown(results)
    write_result(args.out, results, "\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    main()
