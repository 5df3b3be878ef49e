"""The server's Prometheus metrics (``prometheus_client``), in a registry of their own per app, so that two apps in
one process (tests, Ray Serve replicas sharing a worker) never mix their counts.

- ``setfit_lite_requests_total{path, status}``: requests answered, by route and HTTP status (``499``: the client
  hung up before any answer, as nginx counts it);
- ``setfit_lite_request_latency_seconds{path}``: time from the request's arrival to its answer;
- ``setfit_lite_batch_texts`` / ``setfit_lite_batch_requests``: texts and requests in each ``predict_proba`` call;
- ``setfit_lite_queue_depth``: requests waiting for the model (queued, or in the batch being gathered);
- ``setfit_lite_texts_total``: texts predicted.

With ``--workers N`` every worker process writes its metrics to files in ``PROMETHEUS_MULTIPROC_DIR``
(prometheus_client's multiprocess mode, which ``serve`` turns on for its workers), and a scrape answered by any
worker sums the counts of all of them (the queue depth over the live workers: `drop_dead_live_gauges` forgets the
gauges of a worker that ended without its shutdown).
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

__all__ = ["CONTENT_TYPE_LATEST", "MULTIPROCESS_ENV", "ROUTES", "MetricsMiddleware", "ServingMetrics",
           "drop_dead_live_gauges"]

MULTIPROCESS_ENV = "PROMETHEUS_MULTIPROC_DIR"  # prometheus_client's multiprocess mode: where processes write

ROUTES = ("/predict", "/health", "/ready", "/metrics", "/docs", "/openapi.json")  # any other path counts as "other"
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
SIZE_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
CLIENT_CLOSED = 499  # the status counted for a request that got no response (the client disconnected first)
LIVE_GAUGE_FILE = re.compile(r"gauge_live[a-z]+_(\d+)\.db")  # prometheus_client's file of a live-mode gauge, by pid


def _running(pid: int) -> bool:
    """Whether a process of this pid exists (one of another user's, which cannot be signalled, too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def drop_dead_live_gauges(path: str | os.PathLike, new_process: bool = False) -> None:
    """Remove from a multiprocess folder the live-mode gauge files (the queue depth's ``gauge_livesum_<pid>.db``) of
    processes no longer running, so that the live sums count running processes only.

    A worker's own files are removed at its clean shutdown (`ServingMetrics.process_ended`); one killed (SIGKILL, out
    of memory) leaves them. Only those files are touched: counters and histograms of ended processes still count, and
    a folder of the user's keeps everything else.

    Args:
        path: The ``PROMETHEUS_MULTIPROC_DIR`` folder (of this machine: pids are looked up here).
        new_process: Whether the calling process has not written any metric yet: then the files under its own pid
            are an earlier process's that had the same pid, and are removed too.
    """
    from prometheus_client import multiprocess

    own = os.getpid()
    names = os.listdir(path) if os.path.isdir(path) else []
    pids = {int(match.group(1)) for match in map(LIVE_GAUGE_FILE.fullmatch, names) if match}
    for pid in sorted(pids):
        if not _running(pid) or (new_process and pid == own):
            with contextlib.suppress(OSError):  # another worker's scrape may have removed them first
                multiprocess.mark_process_dead(pid, os.fspath(path))


class ServingMetrics:
    """The metrics of one app and their registry (`exposition` renders them): those of this process, or in
    multiprocess mode (``PROMETHEUS_MULTIPROC_DIR`` set when the process started) those of every worker."""

    def __init__(self) -> None:
        self.multiprocess_dir = os.environ.get(MULTIPROCESS_ENV) or None
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter("setfit_lite_requests", "HTTP requests answered, by route and status",
                                ["path", "status"], registry=self.registry)
        self.latency = Histogram("setfit_lite_request_latency_seconds", "Time from a request's arrival to its answer",
                                 ["path"], buckets=LATENCY_BUCKETS, registry=self.registry)
        self.batch_texts = Histogram("setfit_lite_batch_texts", "Texts in one predict_proba call of the batcher",
                                     buckets=SIZE_BUCKETS, registry=self.registry)
        self.batch_requests = Histogram("setfit_lite_batch_requests", "Requests in one batch of the batcher",
                                        buckets=SIZE_BUCKETS, registry=self.registry)
        self.queue_depth = Gauge("setfit_lite_queue_depth",
                                 "Requests waiting for the model (queued or in a batch being gathered)",
                                 registry=self.registry, multiprocess_mode="livesum")
        self.texts = Counter("setfit_lite_texts", "Texts predicted", registry=self.registry)

    def observe_batch(self, texts: int, requests: int) -> None:
        """One ``predict_proba`` call of ``texts`` texts from ``requests`` requests."""
        self.batch_texts.observe(texts)
        self.batch_requests.observe(requests)
        self.texts.inc(texts)

    def exposition(self) -> bytes:
        """The Prometheus text format of every metric (served with `CONTENT_TYPE_LATEST`); in multiprocess mode the
        live gauges of processes no longer running are dropped first (`drop_dead_live_gauges`)."""
        if self.multiprocess_dir is None:
            return generate_latest(self.registry)
        from prometheus_client import multiprocess

        drop_dead_live_gauges(self.multiprocess_dir)
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry, path=self.multiprocess_dir)
        return generate_latest(registry)

    def process_ended(self) -> None:
        """In multiprocess mode, drop this process's live gauges (the queue depth) from the sums (at shutdown)."""
        if self.multiprocess_dir is not None:
            from prometheus_client import multiprocess

            multiprocess.mark_process_dead(os.getpid(), self.multiprocess_dir)


class MetricsMiddleware:
    """ASGI middleware counting every HTTP request by route and status, and timing it (the outermost layer, so the
    body-size limit's 413 answers and server errors are counted too). A request is counted as its last body message
    is handed on, before the client can have its answer: a client that scrapes right after an answer sees it counted
    (with ``--workers`` too, whichever worker answers the scrape)."""

    def __init__(self, app: Any, metrics: ServingMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        path = path if path in ROUTES else "other"
        start = time.perf_counter()
        status: dict[str, Any] = {"code": None, "counted": False}

        def count() -> None:
            if not status["counted"]:
                status["counted"] = True
                # no response at all: the client hung up first (nginx's 499), not a server error
                code = CLIENT_CLOSED if status["code"] is None else status["code"]
                self.metrics.requests.labels(path, str(code)).inc()
                self.metrics.latency.labels(path).observe(time.perf_counter() - start)

        async def send_status(message: dict) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                count()
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        except BaseException:
            if status["code"] is None:  # an exception before the response started is a server error
                status["code"] = 500
            raise
        finally:
            count()  # a request that ended without a complete answer
