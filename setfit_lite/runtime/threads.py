"""Using the machine's cores in the torch-free prediction tiers (ONNX, static), without oversubscribing them.

The exported tiers split their work themselves: a chunk of texts is cut into independent pieces (batches for the
ONNX graph, slices of texts for the static table) that run on a thread pool of `default_workers` threads,
each piece single-threaded inside (onnxruntime with one intra-op thread, numpy's BLAS held to one thread while a
piece runs). tokenizers, onnxruntime and numpy release the GIL for their work, so the pieces run in parallel.

Why not let each runtime use its own threads: on small machines their pools fight. onnxruntime's intra-op threads
spin between the short matmuls of a batch, and OpenBLAS splits a (texts x 256) @ (256 x classes) head product
over threads whose start-up costs more than the product (measured on 2 cores: 13.6 ms with two BLAS threads
against 0.44 ms with one, for 1,821 texts). One level of parallelism, over pieces, scales instead.

Each piece's result does not depend on how many pieces run at once, so prediction gives the same numbers with
any number of workers and from any number of caller threads.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

__all__ = ["default_workers", "run_pieces", "single_threaded_blas"]

T = TypeVar("T")
R = TypeVar("R")

_blas_lock = threading.Lock()
_blas_users = 0
_blas_limit: Any = None  # the active threadpoolctl limit while any piece runs
_blas_controller: Any = None  # threadpoolctl's scan of the loaded libraries, made once (a scan takes ~1 ms)


def default_workers() -> int:
    """Threads the exported tiers use by default: ``OMP_NUM_THREADS`` when it is set to a positive integer (the
    setting torch and numpy follow too), else the CPUs this process may run on (its affinity mask, which
    containers and ``taskset`` set), else ``os.cpu_count()``."""
    omp = os.environ.get("OMP_NUM_THREADS", "").strip()
    if omp.isdigit() and int(omp) > 0:
        return int(omp)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Hold numpy's BLAS to one thread while any caller is inside the block (reference-counted across threads,
    restored when the last one leaves); a no-op without threadpoolctl (a scikit-learn dependency)."""
    global _blas_users, _blas_limit, _blas_controller
    with _blas_lock:
        if _blas_users == 0:
            if _blas_controller is None:
                try:
                    from threadpoolctl import ThreadpoolController
                except ImportError:  # pragma: no cover - scikit-learn brings it
                    _blas_controller = False
                else:
                    _blas_controller = ThreadpoolController()
            if _blas_controller:
                _blas_limit = _blas_controller.limit(limits=1, user_api="blas")
        _blas_users += 1
    try:
        yield
    finally:
        with _blas_lock:
            _blas_users -= 1
            if _blas_users == 0 and _blas_limit is not None:
                _blas_limit.restore_original_limits()
                _blas_limit = None


def run_pieces(fn: Callable[[T], R], pieces: Sequence[T], workers: int) -> list[R]:
    """``[fn(piece) for piece in pieces]``, on up to ``workers`` threads (in this thread when one suffices),
    with numpy's BLAS single-threaded throughout."""
    with single_threaded_blas():
        if workers <= 1 or len(pieces) <= 1:
            return [fn(piece) for piece in pieces]
        with ThreadPoolExecutor(max_workers=min(workers, len(pieces)), thread_name_prefix="setfit_lite") as pool:
            return list(pool.map(fn, pieces))
