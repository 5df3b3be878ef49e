"""Determinism with the default number of threads: what it costs in training time, and that it holds.

    python -m benchmarks.determinism --task emotion:16 --seeds 0 1 --repeats 2

Three ways of computing the pair losses' row gather, alternated run by run in one process (MiniLM-L6, the
library's defaults, default thread count):

- ``index_select`` (what the library uses): ``torch.index_select``, whose backward adds rows in index order;
- ``getitem``: ``x[idx]``, whose CPU backward (``index_put_(accumulate=True)``) adds repeated rows from
  several threads in any order;
- ``deterministic_algorithms``: ``getitem`` under ``torch.use_deterministic_algorithms(True)`` (every op).

Per variant: median training seconds, the ratio to ``getitem``, and whether runs with the same seed ended with
bit-identical body parameters and ``predict_proba``. Training times on a shared VM are noisy, so the script also
times the loss alone (forward and backward of the default loss on a batch of 16 MiniLM-sized embeddings,
variants interleaved), the only code that differs. Writes ``--out``.json and .md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import time
from pathlib import Path

from benchmarks.compare_setfit import load_task
from benchmarks.machine import write_result

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

VARIANTS = ("index_select", "getitem", "deterministic_algorithms")


def train_once(body: str, task: dict, seed: int, variant: str) -> dict:
    import numpy as np
    import torch

    import setfit_lite.losses as losses
    from setfit_lite import SetFitModel, Trainer, TrainingArguments

    library_rows = losses.rows
    if variant != "index_select":
        losses.rows = lambda values, index: values[index]
    torch.use_deterministic_algorithms(variant == "deterministic_algorithms")
    try:
        model = SetFitModel.from_pretrained(body)
        trainer = Trainer(model=model, args=TrainingArguments(seed=seed, show_progress_bar=False),
                          train_dataset={"text": task["texts"], "label": task["labels"]})
        start = time.perf_counter()
        trainer.train()
        seconds = time.perf_counter() - start
    finally:
        losses.rows = library_rows
        torch.use_deterministic_algorithms(False)
    digest = hashlib.sha256()
    for name, tensor in sorted(model.model_body.state_dict().items()):
        digest.update(name.encode() + tensor.float().numpy().tobytes())
    proba = np.ascontiguousarray(model.predict_proba(task["test_texts"][:200]))
    digest.update(proba.tobytes())
    return {"variant": variant, "seed": seed, "train_seconds": seconds, "steps": trainer.state.global_step,
            "digest": digest.hexdigest()[:16], "threads": torch.get_num_threads()}


def time_loss(repeats: int = 5, iterations: int = 300) -> dict[str, float]:
    """Median milliseconds of one forward + backward of the default loss, per row-gather variant."""
    import torch

    import setfit_lite.losses as losses

    loss = losses.build_loss("CosineSimilarityLoss")
    generator = torch.Generator().manual_seed(0)
    embeddings = torch.randn(16, 384, generator=generator, requires_grad=True)
    labels = torch.arange(16) % 6
    library_rows = losses.rows
    gathers = {"index_select": library_rows, "getitem": lambda values, index: values[index]}
    times: dict[str, list[float]] = {name: [] for name in gathers}
    try:
        for _ in range(repeats):
            for name, gather in gathers.items():
                losses.rows = gather
                start = time.perf_counter()
                for _ in range(iterations):
                    embeddings.grad = None
                    loss(embeddings, labels).backward()
                times[name].append((time.perf_counter() - start) / iterations * 1e3)
    finally:
        losses.rows = library_rows
    return {name: statistics.median(values) for name, values in times.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--task", default="emotion:16")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    parser.add_argument("--repeats", type=int, default=2, help="runs per seed and variant (same seed each time)")
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--model", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "determinism")
    args = parser.parse_args(argv)

    runs = []
    for seed in args.seeds:
        task = load_task(args.data_dir, args.task, seed)
        for repeat in range(args.repeats):
            order = VARIANTS if repeat % 2 == 0 else tuple(reversed(VARIANTS))
            for variant in order:
                run = train_once(args.model, task, seed, variant)
                runs.append(run)
                print(json.dumps(run), flush=True)
    summary = {}
    for variant in VARIANTS:
        mine = [r for r in runs if r["variant"] == variant]
        summary[variant] = {
            "train_seconds_median": statistics.median(r["train_seconds"] for r in mine),
            "identical_per_seed": all(len({r["digest"] for r in mine if r["seed"] == s}) == 1 for s in args.seeds),
        }
    base = summary["getitem"]["train_seconds_median"]
    for variant in VARIANTS:
        summary[variant]["time_ratio_to_getitem"] = summary[variant]["train_seconds_median"] / base
    threads = runs[0]["threads"]
    loss_ms = time_loss()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    record = {"task": args.task, "seeds": args.seeds, "threads": threads, "summary": summary, "loss_ms": loss_ms,
              "runs": runs}
    lines = [f"# Determinism: {args.task}, seeds {args.seeds}, {args.repeats} runs each, {threads} threads", "",
             "| loss row gather | median train s | time vs getitem | same seed, identical model |", "|---|---|---|---|"]
    lines += [f"| {v} | {s['train_seconds_median']:.2f} | {s['time_ratio_to_getitem']:.3f} | "
              f"{'yes' if s['identical_per_seed'] else 'no'} |" for v, s in summary.items()]
    lines += ["", "| loss row gather | loss forward + backward, ms (16 x 384) |", "|---|---|"]
    lines += [f"| {name} | {ms:.2f} |" for name, ms in loss_ms.items()]
    write_result(args.out, record, "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
