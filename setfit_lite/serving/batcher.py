"""Dynamic micro-batching: requests from many connections are gathered into one ``predict_proba`` call, run on threads
of its own so the event loop keeps accepting and answering while the model works.

Each batcher thread (``threads``, one by default) takes the first waiting request, then keeps taking requests until
the batch holds ``max_batch_size`` texts or ``max_wait_s`` has passed since it took the first; a request that would
overflow the batch starts the next one (a request larger than ``max_batch_size`` is a batch alone). It calls the
model once per batch and hands each request its own rows (if the call fails, each request of the batch is tried
alone, so a text the model refuses fails only its own request). `MicroBatcher.close` refuses new requests and
answers every one already queued before the threads end. With several threads, one gathers and tokenises the next
batch while another's batch runs the model (the serving app gives a single-threaded copy of an ONNX or static
predictor one thread per core, instead of one thread that splits each batch over the cores and waits for the slowest
piece).

Standard library and numpy only (no FastAPI): the same batcher serves any front end.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field

import numpy as np

from .metrics import ServingMetrics

__all__ = ["BatcherClosed", "MicroBatcher"]

logger = logging.getLogger(__name__)


class BatcherClosed(RuntimeError):
    """The batcher is closing (the server is shutting down): it takes no new request."""


@dataclass
class _Request:
    texts: Sequence[str]
    future: Future = field(default_factory=Future)


_STOP = object()


class MicroBatcher:
    """Gathers the texts of concurrent requests into batches for one ``predict_proba`` function.

    Args:
        predict_proba: ``texts -> (len(texts), K) array``, called on the batcher thread only.
        max_batch_size: Most texts in one call (a larger request is one call alone).
        max_wait_s: How long a batch waits for more requests after its first (0: only what is queued).
        metrics: Where queue depth and batch sizes are recorded, or None.
        threads: Batcher threads, each gathering and predicting batches of its own from the one queue.

    Examples:
        >>> batcher = MicroBatcher(lambda texts: np.ones((len(texts), 2)), max_batch_size=8, max_wait_s=0.001)
        >>> batcher.submit(["a", "b"]).result().shape
        (2, 2)
        >>> batcher.close()
    """

    def __init__(self, predict_proba: Callable[[list[str]], np.ndarray], max_batch_size: int, max_wait_s: float,
                 metrics: ServingMetrics | None = None, threads: int = 1) -> None:
        if not isinstance(threads, int) or threads < 1:
            raise ValueError(f"threads must be a positive integer, got {threads!r}")
        self._predict_proba = predict_proba
        self._max_batch_size = max_batch_size
        self._max_wait_s = max_wait_s
        self._metrics = metrics
        # queue.Queue, not SimpleQueue: on Python 3.10-3.12 a SimpleQueue shared by threads that wait with a timeout
        # loses wake-ups (a 2 ms wait lasts until the next put, and a request waits for the next request)
        self._queue: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._closed = False
        self._threads = [threading.Thread(target=self._run, name=f"setfit-lite-batcher-{i}", daemon=True)
                         for i in range(threads)]
        for thread in self._threads:
            thread.start()

    def submit(self, texts: Sequence[str]) -> Future:
        """Queue texts for the next batch.

        Args:
            texts: The texts of one request.

        Returns:
            A future whose result is their probabilities (rows in `texts` order).

        Raises:
            BatcherClosed: `close` was called.
        """
        request = _Request(texts)
        with self._lock:  # no request is queued after the stop mark: close() answers everything it let in
            if self._closed:
                raise BatcherClosed("the server is shutting down")
            if self._metrics is not None:  # before the put: a batcher thread may take it (and dec) at once
                self._metrics.queue_depth.inc()
            self._queue.put(request)
        return request.future

    async def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        """`submit`, awaited on the running event loop (cancelling the caller drops its request)."""
        return await asyncio.wrap_future(self.submit(texts))

    def close(self, timeout: float | None = None) -> None:
        """Refuse new requests, answer the queued ones and end the batching threads.

        One stop mark per thread, after every request let in: the queue is first in, first out, so each request
        is taken by some thread before any thread takes a stop mark.

        Args:
            timeout: The seconds to wait for each thread; None waits until it ends.
        """
        with self._lock:
            if not self._closed:
                self._closed = True
                for _ in self._threads:
                    self._queue.put(_STOP)
        for thread in self._threads:
            thread.join(timeout)

    @property
    def closed(self) -> bool:
        """Whether `close` was called."""
        return self._closed

    def _run(self) -> None:
        pending: object = None
        while True:
            first = pending if pending is not None else self._queue.get()
            pending = None
            if first is _STOP:
                return
            batch = [first]
            size = len(first.texts)  # type: ignore[attr-defined]
            deadline = time.monotonic() + self._max_wait_s
            stop = False
            while size < self._max_batch_size:
                left = deadline - time.monotonic()
                try:
                    item = self._queue.get(left > 0, left if left > 0 else None)
                except queue.Empty:
                    break
                if item is _STOP:
                    stop = True
                    break
                if size + len(item.texts) > self._max_batch_size:  # type: ignore[attr-defined]
                    pending = item
                    break
                batch.append(item)
                size += len(item.texts)  # type: ignore[attr-defined]
            self._answer(batch)  # type: ignore[arg-type]
            if stop:
                return

    def _answer(self, batch: list[_Request]) -> None:
        if self._metrics is not None:  # waiting until now: queued, or in the batch being gathered
            self._metrics.queue_depth.dec(len(batch))
        live = [r for r in batch if r.future.set_running_or_notify_cancel()]  # a cancelled caller is skipped
        if len(live) <= 1:
            for request in live:
                self._answer_alone(request)
            return
        texts = [t for r in live for t in r.texts]
        try:
            proba = np.asarray(self._predict_proba(texts))
        except Exception:
            for request in live:  # one request's texts may be what fails: each alone, so only it gets the error
                self._answer_alone(request)
            return
        if self._metrics is not None:
            self._metrics.observe_batch(len(texts), len(live))
        start = 0
        for request in live:
            request.future.set_result(proba[start:start + len(request.texts)])
            start += len(request.texts)

    def _answer_alone(self, request: _Request) -> None:
        try:
            proba = np.asarray(self._predict_proba(list(request.texts)))
        except Exception as error:
            logger.warning("predict_proba failed on a request of %d texts: %s", len(request.texts), error)
            request.future.set_exception(error)
            return
        if self._metrics is not None:
            self._metrics.observe_batch(len(request.texts), 1)
        request.future.set_result(proba)
