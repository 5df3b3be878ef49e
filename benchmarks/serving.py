"""The prediction server under load: ``setfit-lite serve`` (micro-batching) against a naive FastAPI wrapper (one
``predict`` per request) and against in-process ``predict_proba(batch_size=64)``, per tier, in one run.

    python -m benchmarks.serving --tiers static onnx_int8 student3_int8 --clients 1 8 32 128 [--soak 10000] [--work DIR]
    python -m benchmarks.serving --profile onnx_int8 --clients 32   # py-spy of the server: where its time goes
    python -m benchmarks.serving --tiers onnx_int8 --clients 8 32 --variant pass16="--predict-batch-size 16"

Tiers (built once from MiniLM-L6 trained with setfit_lite's defaults on SST-2, 8 shots per class, seed 0, and kept
in ``--work`` for later runs): ``onnx_int8`` (``export_onnx(quantize="int8")``), ``student3_int8`` (3 layers
distilled with ``DistillationTrainer`` on the training texts and ``--unlabeled`` other training-split texts, int8)
and ``static`` (``export_static`` with the same unlabeled texts). Requests: 1-8 SST-2 test texts each (seeded), sent
by a bounded asyncio client (aiohttp, ``--clients`` connections, keep-alive) running on the same machine as the
server (``--split validation``: validation texts instead, for choosing a server setting). Each cell checks every
answer's labels against in-process ``predict`` of the same texts; an error, a
timeout or a wrong label is counted. In-process throughput is ``predict_proba`` of all the texts of a cell's
requests at ``batch_size=64``. ``--soak N``: N requests at 32 clients to the batched server of ``--soak-tier``, the
server's RSS before and after. ``--variant NAME="OPTIONS"``: also ``setfit-lite serve`` with these options (after
the run's own), measured in each cell between the batched and the naive server, so that a setting is compared with
the defaults in one run. Writes ``--out``.json and .md (default ``benchmarks/results/serving``), with lscpu.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import shlex
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402

from benchmarks.smoke import add_smoke_option, apply_smoke, smoke_settings, smoke_train_args  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TIERS = ("onnx_int8", "student3_int8", "static")
BODY = "sentence-transformers/all-MiniLM-L6-v2"
PREDICT_BATCH_SIZE = None  # setfit-lite serve --predict-batch-size (set from --predict-batch-size; None: its default)


def server_env() -> dict[str, str]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def read_split(data_dir: Path, split: str) -> list[dict]:
    with open(data_dir / "sst2" / f"{split}.jsonl", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def build_tiers(tiers: list[str], data_dir: Path, work: Path, unlabeled: int,
                body: str = BODY) -> dict[str, Path]:
    """The tiers' folders in ``work``, each built once (a folder with a manifest is reused), from ``body``; a
    ``work`` folder holding tiers of another body is refused (its ``body.txt`` names the body)."""
    folders = {tier: work / tier for tier in tiers}
    record = work / "body.txt"
    if record.is_file() and record.read_text(encoding="utf-8").strip() != body:
        raise SystemExit(f"{work} holds tiers built from {record.read_text(encoding='utf-8').strip()!r}, not "
                         f"{body!r}: give another --work")
    record.write_text(body + "\n", encoding="utf-8")
    if all((folder / "manifest.json").is_file() for folder in folders.values()):
        return folders
    from benchmarks.compare_setfit import load_task
    from benchmarks.inference import distil_student
    from setfit_lite import SetFitModel, Trainer, TrainingArguments

    task = load_task(data_dir, "sst2:8", 0)
    teacher_dir = work / "teacher"
    if not (teacher_dir / "manifest.json").is_file():
        model = SetFitModel.from_pretrained(body)
        Trainer(model=model, args=TrainingArguments(seed=0, show_progress_bar=False, **smoke_train_args()),
                train_dataset={"text": task["texts"], "label": task["labels"]}).train()
        model.save_pretrained(teacher_dir)
    model = SetFitModel.from_pretrained(teacher_dir)
    seen = set(task["texts"])
    pool = [r["text"] for r in read_split(data_dir, "train") if r["text"] not in seen]
    random.Random(0).shuffle(pool)
    for tier, folder in folders.items():
        if (folder / "manifest.json").is_file():
            continue
        print(f"building {tier}", file=sys.stderr, flush=True)
        if tier == "onnx_int8":
            model.export_onnx(folder, quantize="int8")
        elif tier == "static":
            model.export_static(folder, task["texts"], task["labels"], unlabeled_texts=pool[:unlabeled])
        elif tier == "student3_int8":
            distil_student(model, 3, "first", task["texts"] + pool[:unlabeled], folder)
    return folders


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def naive_server(folder: str, port: int, workers: int) -> None:
    """What a user writes without setfit-lite serve: a FastAPI route calling ``predict`` once per request (a plain
    ``def``, so FastAPI runs it in its thread pool), on uvicorn with the same workers."""
    import uvicorn

    os.environ["SERVING_BENCH_MODEL"] = folder
    uvicorn.run("benchmarks.serving:naive_app", factory=True, host="127.0.0.1", port=port, workers=workers,
                log_level="warning", access_log=False)


def naive_app():  # noqa: ANN201 - a FastAPI app (uvicorn factory)
    from fastapi import FastAPI

    from setfit_lite.modeling import load_model_folder

    model = load_model_folder(os.environ["SERVING_BENCH_MODEL"])
    app = FastAPI()

    @app.post("/predict")
    def predict(body: dict) -> dict:
        return {"labels": model.predict(body["texts"])}

    @app.get("/ready")
    def ready() -> dict:
        return {"status": "ready", "pid": os.getpid()}

    return app


def start(kind: str, folder: Path, workers: int, max_batch_size: int, max_wait_ms: float,
          options: list[str] = (), tries: int = 3) -> tuple:
    """A server process (``batched``: setfit-lite serve, with ``options`` last; ``naive``: `naive_server`) and its
    port, every worker ready (`wait_until_ready`). The port is free when chosen, but another process may take it
    before the server binds it: a server that exits before it is ready, or a ``/ready`` answered by a process not
    of this server (its ``pid``), is tried again on another port, up to ``tries`` times."""
    for _ in range(tries):
        port = free_port()
        if kind == "batched":
            argv = [sys.executable, "-m", "setfit_lite.cli", "serve", str(folder), "--port", str(port),
                    "--workers", str(workers), "--max-batch-size", str(max_batch_size), "--max-wait-ms",
                    str(max_wait_ms), *(["--predict-batch-size", str(PREDICT_BATCH_SIZE)] if PREDICT_BATCH_SIZE
                                        else []), *options]
        else:
            argv = [sys.executable, "-m", "benchmarks.serving", "--naive-server", str(folder), "--port", str(port),
                    "--workers", str(workers)]
        process = subprocess.Popen(argv, env=server_env(), cwd=ROOT, stderr=subprocess.DEVNULL)
        if wait_until_ready(port, lambda p=process: p.poll() is None, lambda p=process: _tree_pids(p.pid), workers):
            return process, port
        stop(process)
    raise RuntimeError(f"the {kind} server on {folder.name} did not start (tried {tries} ports)")


def wait_until_ready(port: int, running: Callable[[], bool], pids: Callable[[], set[int]], workers: int,
                     timeout: float = 120) -> bool:
    """Whether every one of the server's ``workers`` processes has answered ``/ready`` with 200 (each worker loads
    its own model and answers 503 until it has: a measurement started when the first one is ready sends some
    requests to one still loading). False when the server ended (``running``), did not get there in ``timeout``
    seconds, or a process not of the server (not in ``pids()``) answered: another server holds the port."""
    import urllib.request

    import psutil

    deadline = time.monotonic() + timeout
    ready: set[int] = set()
    while running() and time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/ready", timeout=5) as answer:
                pid = json.loads(answer.read()).get("pid")
        except (OSError, ValueError):  # not listening yet, or 503 (an HTTPError) from a worker still loading
            pid = None
        if pid is not None:
            try:
                ours = pid in pids()
            except psutil.Error:  # the server ended meanwhile: running() says so
                continue
            if not ours:
                return False
            ready.add(pid)
            if len(ready) >= workers:
                return True
        time.sleep(0.05)  # the next connection may reach another worker
    return False


def stop(process: subprocess.Popen) -> int:
    process.terminate()
    try:
        return process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.wait()


def _tree(pid: int) -> list:
    import psutil

    parent = psutil.Process(pid)
    return [parent, *parent.children(recursive=True)]


def _tree_pids(pid: int) -> set[int]:
    return {p.pid for p in _tree(pid)}


def rss_mb(pid: int) -> float:
    """Resident memory of a process and its children (uvicorn's workers), MB."""
    return sum(p.memory_info().rss for p in _tree(pid)) / 2**20


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process and its children (uvicorn's workers) so far."""
    return sum(t.user + t.system for t in (p.cpu_times() for p in _tree(pid)))


def measure(port: int, pid: int, requests: list[list[str]], expected: list[list], clients: int) -> dict:
    """`load`, with the CPU seconds the server (``pid``) and the client (this process) spent on it, and the
    server's CPU milliseconds per text: on cores the client shares, what the server would need alone."""
    server, client = cpu_s(pid), time.process_time()
    row = asyncio.run(load(port, requests, expected, clients))
    row["server_cpu_s"] = round(cpu_s(pid) - server, 2)
    row["client_cpu_s"] = round(time.process_time() - client, 2)
    row["server_cpu_ms_per_text"] = round(1000 * row["server_cpu_s"] / row["texts"], 3)
    return row


async def load(port: int, requests: list[list[str]], expected: list[list], clients: int) -> dict:
    """Send every request over ``clients`` keep-alive connections (each client sends its next request when the
    last is answered); latency of each, and the errors, timeouts and wrong answers."""
    import aiohttp

    url = f"http://127.0.0.1:{port}/predict"
    latencies = np.zeros(len(requests))
    counts = {"errors": 0, "lost": 0, "wrong": 0}
    order = iter(range(len(requests)))
    connector = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=120)) as session:

        async def client() -> None:
            for i in order:
                start = time.perf_counter()
                try:
                    async with session.post(url, json={"texts": requests[i]}) as answer:
                        body = await answer.json()
                        status = answer.status
                except (aiohttp.ClientError, asyncio.TimeoutError):
                    counts["lost"] += 1
                    continue
                latencies[i] = time.perf_counter() - start
                if status != 200:
                    counts["errors"] += 1
                elif body["labels"] != expected[i]:
                    counts["wrong"] += 1

        start = time.perf_counter()
        await asyncio.gather(*(client() for _ in range(clients)))
        wall = time.perf_counter() - start
    texts = sum(map(len, requests))
    done = latencies[latencies > 0] * 1000
    return {"requests": len(requests), "texts": texts, "wall_s": round(wall, 3),
            "requests_per_s": round(len(requests) / wall, 1), "texts_per_s": round(texts / wall, 1),
            "p50_ms": round(float(np.percentile(done, 50)), 2), "p95_ms": round(float(np.percentile(done, 95)), 2),
            "p99_ms": round(float(np.percentile(done, 99)), 2), **counts}


def make_requests(texts: list[str], n: int, seed: int) -> list[list[str]]:
    rng = random.Random(seed)
    return [rng.sample(texts, rng.randint(1, 8)) for _ in range(n)]


def in_process(model, requests: list[list[str]], rounds: int = 2) -> dict:
    flat = [t for r in requests for t in r]
    model.predict_proba(flat[:64], batch_size=64)
    cpu = time.process_time()
    best = min(timed(lambda: model.predict_proba(flat, batch_size=64)) for _ in range(rounds))
    cpu = (time.process_time() - cpu) / rounds  # CPU seconds of one run, all of this process's threads
    return {"texts": len(flat), "wall_s": round(best, 3), "texts_per_s": round(len(flat) / best, 1),
            "requests_per_s": round(len(requests) / best, 1), "cpu_ms_per_text": round(1000 * cpu / len(flat), 3)}


def timed(call) -> float:  # noqa: ANN001
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def requests_for(clients: int, per_client: int, minimum: int) -> int:
    return max(minimum, clients * per_client)


def lscpu() -> dict[str, str]:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return {"model": platform.processor()}
    fields = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
    flags = fields.get("Flags", "").split()
    return {"model": fields.get("Model name", "").strip(), "cpus": fields.get("CPU(s)", "").strip(),
            "flags": " ".join(f for f in flags if f.startswith(("avx", "amx")) or f in ("fma", "f16c"))}


def versions() -> dict[str, str]:
    from importlib.metadata import version

    names = ("fastapi", "starlette", "uvicorn", "pydantic", "prometheus-client", "onnxruntime", "aiohttp", "numpy")
    return {"python": platform.python_version(), **{name: version(name) for name in names}}


def run(args: argparse.Namespace) -> dict:
    from setfit_lite.modeling import load_model_folder
    from setfit_lite.serving.settings import ServeSettings

    folders = build_tiers(args.tiers, args.data_dir, args.work, args.unlabeled, args.model)
    test_texts = [r["text"] for r in read_split(args.data_dir, args.split)]
    shown = [{str(args.data_dir): "DATA_DIR", str(args.work): "WORK"}.get(a, a) for a in args.argv]  # no local paths
    results: dict = {"command": "python -m benchmarks.serving " + shlex.join(shown), "cpu": lscpu(),
                     "versions": versions(), "settings": {"workers": args.workers, "split": args.split,
                     "max_batch_size": args.max_batch_size, "max_wait_ms": args.max_wait_ms,
                     "predict_batch_size": args.predict_batch_size or ServeSettings().predict_batch_size,
                     "variants": {name: " ".join(options) for name, options in args.variant}}, "tiers": {}}
    for tier in args.tiers:
        model = load_model_folder(folders[tier])
        rows = results["tiers"][tier] = {}
        for clients in args.clients:
            n = requests_for(clients, args.per_client, args.min_requests)
            requests = make_requests(test_texts, n, seed=clients)
            expected = [model.predict(r) for r in requests]
            row = rows[str(clients)] = {"load_average_1m": round(os.getloadavg()[0], 1),
                                        "in_process": in_process(model, requests)}
            servers = [("batched", "batched", []), *(("variant " + name, "batched", options)
                                                     for name, options in args.variant), ("naive", "naive", [])]
            for key, kind, options in servers:
                process, port = start(kind, folders[tier], args.workers, args.max_batch_size, args.max_wait_ms,
                                      options)
                try:
                    asyncio.run(load(port, make_requests(test_texts, 20, seed=99), [[None]] * 20,
                                     min(clients, 8)))  # warm-up, not counted (its answers are not checked)
                    row[key] = measure(port, process.pid, requests, expected, clients)
                finally:
                    status = stop(process)
                row[key]["exit_status"] = status
            for name, _ in args.variant:
                variant = row["variant " + name]
                variant["over_naive"] = round(variant["texts_per_s"] / row["naive"]["texts_per_s"], 2)
            row["batched_over_naive"] = round(row["batched"]["texts_per_s"] / row["naive"]["texts_per_s"], 2)
            row["batched_over_in_process"] = round(row["batched"]["texts_per_s"] / row["in_process"]["texts_per_s"],
                                                   3)
            print(json.dumps({"tier": tier, "clients": clients, **{k: v for k, v in row.items()}}), flush=True)
    if args.soak:
        model = load_model_folder(folders[args.soak_tier])
        requests = make_requests(test_texts, args.soak, seed=7)
        expected = [model.predict(r) for r in requests]
        process, port = start("batched", folders[args.soak_tier], args.workers, args.max_batch_size,
                              args.max_wait_ms)
        try:
            asyncio.run(load(port, requests[:200], expected[:200], 32))
            before = rss_mb(process.pid)
            soak = asyncio.run(load(port, requests, expected, 32))
            soak.update(rss_before_mb=round(before, 1), rss_after_mb=round(rss_mb(process.pid), 1))
        finally:
            soak["exit_status"] = stop(process)
        results["soak"] = {"tier": args.soak_tier, "clients": 32, **soak}
        print(json.dumps({"soak": results["soak"]}), flush=True)
    return results


PROFILE_BUCKETS = (  # (what, a frame that marks it), the first match of a sample's stack (leaf first) names it
    ("model: onnxruntime run", "run (onnxruntime"), ("model: static table", "static.py"),
    ("tokenise and pad", "tokeniz"), ("tokenise and pad", "pad ("), ("numpy / head", "numpy"),
    ("JSON encode", "json"), ("JSON encode", "render"), ("pydantic request check", "pydantic"),
    ("pydantic request check", "_validate"), ("FastAPI routing and dependencies", "fastapi"),
    ("prometheus metrics", "prometheus_client"), ("batcher (gather, hand-off)", "batcher.py"),
    ("HTTP parse / write (uvicorn, httptools)", "uvicorn"), ("event loop (asyncio)", "asyncio"),
    ("starlette", "starlette"))


def summarise_profile(raw: Path) -> dict:
    """py-spy's raw samples (``thread;frame;...;frame count``) summed into `PROFILE_BUCKETS`, per cent of
    the server's busy samples, and per thread (batcher, pieces, event loop)."""
    buckets: dict[str, int] = {}
    threads: dict[str, int] = {}
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        n = int(count)
        total += n
        frames = stack.split(";")
        thread = frames[0]
        name = ("batcher thread" if "batcher" in stack and "setfit_lite_" not in thread else
                "model piece threads" if "_worker (concurrent" in stack else
                "event loop thread" if "asyncio" in stack or "uvicorn" in stack else "other")
        threads[name] = threads.get(name, 0) + n
        what = next((what for what, mark in PROFILE_BUCKETS if any(mark in frame for frame in frames)), "other")
        buckets[what] = buckets.get(what, 0) + n
    share = {k: round(100 * v / max(total, 1), 1) for k, v in sorted(buckets.items(), key=lambda kv: -kv[1])}
    return {"samples": total, "by_activity_percent": share,
            "by_thread_percent": {k: round(100 * v / max(total, 1), 1) for k, v in threads.items()}}


def profile(args: argparse.Namespace) -> dict:
    """py-spy samples of the batched server of ``--profile TIER`` while ``--clients`` (the first) send requests."""
    import shutil

    folders = build_tiers([args.profile], args.data_dir, args.work, args.unlabeled, args.model)
    test_texts = [r["text"] for r in read_split(args.data_dir, args.split)]
    clients = args.clients[0]
    requests = make_requests(test_texts, requests_for(clients, args.per_client, args.min_requests), seed=clients)
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    process, port = start("batched", folders[args.profile], args.workers, args.max_batch_size, args.max_wait_ms)
    raw = args.out.with_name(args.out.name + "_profile.txt")
    raw.parent.mkdir(parents=True, exist_ok=True)
    try:
        asyncio.run(load(port, requests[:50], [[None]] * 50, clients))
        recorder = subprocess.Popen([spy, "record", "--pid", str(process.pid), "--format", "raw", "--threads",
                                     "--nonblocking", "--subprocesses", "--rate", "200", "--output", str(raw)],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.0)
        measured = asyncio.run(load(port, requests, [[None]] * len(requests), clients))
        measured.pop("wrong")  # answers are not checked here
        recorder.send_signal(2)
        recorder.wait(timeout=60)
    finally:
        stop(process)
    summary = {"tier": args.profile, "clients": clients, "load": measured, **summarise_profile(raw)}
    print(json.dumps(summary, indent=2), flush=True)
    return summary


def markdown(results: dict) -> list[str]:
    lines = [f"Command: `{results['command']}`", "",
             f"CPU: {results['cpu'].get('model')} ({results['cpu'].get('cpus')} CPUs; "
             f"{results['cpu'].get('flags')}); shared machine, client and server on the same cores.", "",
             "Versions: " + ", ".join(f"{k} {v}" for k, v in results["versions"].items()), "",
             f"Server: workers {results['settings']['workers']}, max_batch_size "
             f"{results['settings']['max_batch_size']}, max_wait_ms {results['settings']['max_wait_ms']}, "
             f"predict_batch_size {results['settings'].get('predict_batch_size', 'max_batch_size')}; requests from "
             f"SST-2's {results['settings'].get('split', 'test')} split.", "",
             "Load average (1 min) at the start of each cell: "
             + ", ".join(f"{t} {c}: {r['load_average_1m']}" for t, rows in results["tiers"].items()
                         for c, r in rows.items()), "",
             "| tier | clients | requests | in-process texts/s | batched texts/s | naive texts/s | batched / naive | "
             "batched / in-process | batched p50/p95/p99 ms | naive p50/p95/p99 ms | errors, lost, wrong |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for tier, rows in results["tiers"].items():
        for clients, row in rows.items():
            b, n = row["batched"], row["naive"]
            bad = (f"{b['errors']}, {b['lost']}, {b['wrong']} / {n['errors']}, {n['lost']}, {n['wrong']}")
            lines.append(f"| {tier} | {clients} | {b['requests']} | {row['in_process']['texts_per_s']:.0f} | "
                         f"{b['texts_per_s']:.0f} | {n['texts_per_s']:.0f} | {row['batched_over_naive']:.2f}x | "
                         f"{row['batched_over_in_process']:.0%} | {b['p50_ms']:.1f} / {b['p95_ms']:.1f} / "
                         f"{b['p99_ms']:.1f} | {n['p50_ms']:.1f} / {n['p95_ms']:.1f} / {n['p99_ms']:.1f} | {bad} |")
    cpu_rows = [(tier, clients, row) for tier, rows in results["tiers"].items() for clients, row in rows.items()
                if "server_cpu_ms_per_text" in row["batched"]]
    if cpu_rows:  # older result files have no CPU seconds
        lines += ["", "CPU per text: the server's CPU milliseconds per answered text (user + system, all threads), "
                      "in-process `predict_proba` beside them, and the client's share of the two servers' wall time "
                      "(the load generator runs on the same cores).", "",
                  "| tier | clients | in-process CPU ms/text | batched CPU ms/text | naive CPU ms/text | "
                  "naive / batched CPU | client CPU s (batched / naive) |", "|---|---|---|---|---|---|---|"]
        for tier, clients, row in cpu_rows:
            b, n = row["batched"], row["naive"]
            lines.append(f"| {tier} | {clients} | {row['in_process']['cpu_ms_per_text']:.3f} | "
                         f"{b['server_cpu_ms_per_text']:.3f} | {n['server_cpu_ms_per_text']:.3f} | "
                         f"{n['server_cpu_ms_per_text'] / max(b['server_cpu_ms_per_text'], 1e-9):.2f}x | "
                         f"{b['client_cpu_s']:.1f} / {n['client_cpu_s']:.1f} |")
    variants = results["settings"].get("variants") or {}
    if variants:
        lines += ["", "Server options compared in the same cells (each row's server measured between the batched "
                      "and the naive server of its cell; the first row of a cell is the run's own settings):", "",
                  "| tier | clients | server | texts/s | / naive | p50/p95/p99 ms | CPU ms/text | wrong |",
                  "|---|---|---|---|---|---|---|---|"]
        for tier, rows in results["tiers"].items():
            for clients, row in rows.items():
                for name, key in [("defaults", "batched"), *((f"{v}: `{o}`", "variant " + v)
                                                             for v, o in variants.items())]:
                    r = row[key]
                    lines.append(f"| {tier} | {clients} | {name} | {r['texts_per_s']:.0f} | "
                                 f"{r['texts_per_s'] / row['naive']['texts_per_s']:.2f}x | {r['p50_ms']:.1f} / "
                                 f"{r['p95_ms']:.1f} / {r['p99_ms']:.1f} | {r['server_cpu_ms_per_text']:.3f} | "
                                 f"{r['wrong']} |")
    if "soak" in results:
        s = results["soak"]
        lines += ["", f"Soak: {s['requests']} requests ({s['texts']} texts) at {s['clients']} clients to the batched "
                      f"{s['tier']} server in {s['wall_s']:.1f} s ({s['requests_per_s']:.0f} requests/s, p99 "
                      f"{s['p99_ms']:.1f} ms): {s['errors']} errors, {s['lost']} lost, {s['wrong']} wrong answers; "
                      f"server RSS {s['rss_before_mb']:.0f} MB before, {s['rss_after_mb']:.0f} MB after; "
                      f"exit status {s['exit_status']}."]
    return lines


def variant(text: str) -> tuple[str, list[str]]:
    """``NAME=OPTIONS`` of ``--variant``: the name and the ``setfit-lite serve`` options."""
    name, sep, options = text.partition("=")
    if not sep or not name.strip() or not options.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=\"OPTIONS\" (e.g. pass16=\"--predict-batch-size 16\"), got "
                                         f"{text!r}")
    return name.strip(), shlex.split(options)


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tiers", nargs="+", choices=TIERS, default=["static", "onnx_int8"])
    parser.add_argument("--clients", nargs="+", type=int, default=[1, 8, 32])
    parser.add_argument("--per-client", type=int, default=25, help="requests per client in a cell")
    parser.add_argument("--min-requests", type=int, default=200, help="requests in a cell at least")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--max-batch-size", type=int, default=128)
    parser.add_argument("--max-wait-ms", type=float, default=2.0)
    parser.add_argument("--predict-batch-size", type=int, default=None,
                        help="setfit-lite serve --predict-batch-size (default: its own default)")
    parser.add_argument("--variant", action="append", type=variant, default=[], metavar='NAME="OPTIONS"',
                        help="also measure setfit-lite serve with these options in every cell (repeatable)")
    parser.add_argument("--soak", type=int, default=0, help="requests of the soak run (0: none)")
    parser.add_argument("--soak-tier", choices=TIERS, default="static")
    parser.add_argument("--unlabeled", type=int, default=2000, help="training-split texts for static and student")
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "setfit_lite_serving_bench")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "serving")
    parser.add_argument("--profile", choices=TIERS, default=None,
                        help="py-spy the batched server of this tier under --clients (the first) instead of the grid")
    parser.add_argument("--split", choices=("test", "validation"), default="test",
                        help="the SST-2 split the requests' texts come from (validation: to choose a setting)")
    parser.add_argument("--model", default=BODY, help="the body the tiers are built from (trained on SST-2 8-shot)")
    add_smoke_option(parser)
    parser.add_argument("--naive-server", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.naive_server:
        naive_server(args.naive_server, args.port, args.workers)
        return
    args.argv = argv
    apply_smoke(args, parser, "serving")
    if args.smoke:  # its own tiers from the tiny body, a few small cells
        args.work = smoke_settings()["data_dir"] / "serving_work"
        args.unlabeled, args.soak = 16, min(args.soak, 40)
        args.clients, args.per_client, args.min_requests = args.clients[:2], 2, 4
    global PREDICT_BATCH_SIZE
    PREDICT_BATCH_SIZE = args.predict_batch_size
    args.work.mkdir(parents=True, exist_ok=True)
    if args.profile:
        summary = profile(args)
        args.out.with_name(args.out.name + "_profile.json").write_text(json.dumps(summary, indent=2) + "\n")
        return
    results = run(args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(results, indent=2) + "\n")
    args.out.with_suffix(".md").write_text("\n".join(markdown(results)) + "\n")
    print("\n".join(markdown(results)))


if __name__ == "__main__":
    main()
