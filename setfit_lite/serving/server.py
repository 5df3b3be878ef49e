"""``setfit-lite serve``'s server: the app of `create_app` on uvicorn, in this process
or in ``workers`` processes sharing one listening socket.

SIGTERM or Ctrl-C: the listening socket closes, every request already taken is answered (the batcher drains its
queue; those left after ``shutdown_timeout_s`` are cancelled), and `serve` returns normally (the command exits 0).

With ``workers > 1`` the workers run prometheus_client's multiprocess mode in a folder made for the run (removed at
the end) unless ``PROMETHEUS_MULTIPROC_DIR`` is already set (then that folder is used and left alone), so that
``/metrics``, whichever worker answers it, counts the requests of all of them.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import shutil
import signal
import socket
import tempfile
import threading
from collections.abc import Iterator
from typing import Any

from .app import create_app
from .metrics import MULTIPROCESS_ENV, drop_dead_live_gauges
from .settings import ServeSettings

__all__ = ["ENV_MODEL", "ENV_SETTINGS", "app_from_environment", "listen", "serve"]

ENV_MODEL = "SETFIT_LITE_SERVE_MODEL"  # what worker processes of --workers N load
ENV_SETTINGS = "SETFIT_LITE_SERVE_SETTINGS"
BACKLOG = 2048  # connections waiting to be accepted (uvicorn's default)


def app_from_environment() -> Any:
    """The app of a worker process (``--workers N``): the model folder and settings the parent put in the
    environment (an app factory for uvicorn, called once per worker process before it writes any metric).

    First the live gauges that processes ended without their shutdown (SIGKILL, out of memory) left in the metrics
    folder are dropped, this pid's too: a file under this pid is from an earlier process that had the same pid, and
    would offset this one's gauges."""
    multiprocess_dir = os.environ.get(MULTIPROCESS_ENV)
    if multiprocess_dir:
        drop_dead_live_gauges(multiprocess_dir, new_process=True)
    return create_app(os.environ[ENV_MODEL], ServeSettings.from_json(os.environ[ENV_SETTINGS]))


def listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (IPv4 or IPv6), inheritable by worker processes.

    It listens from here on, before any worker starts: a second server on the same port fails at once (with
    ``SO_REUSEADDR``, two sockets that are bound but not yet listening may share a port).

    Raises:
        OSError: The address cannot be listened on, naming it (in use, not this machine's, ...).
    """
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                             flags=socket.AI_PASSIVE)[0]
        sock = socket.socket(family, kind, proto)
    except OSError as error:
        raise OSError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(BACKLOG)
    except OSError as error:
        sock.close()
        raise OSError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
    sock.set_inheritable(True)
    return sock


@contextlib.contextmanager
def _signals_end_quietly() -> Iterator[None]:
    """SIGINT/SIGTERM only recorded while the server runs: uvicorn handles them (graceful shutdown) and raises them
    again once it has stopped, which must then end nothing more."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, lambda *_: None) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def serve(model: str | os.PathLike | Any, settings: ServeSettings | None = None, log_level: str = "warning",
          sock: socket.socket | None = None) -> None:
    """Serve ``model`` over HTTP until SIGTERM or Ctrl-C, then answer what was accepted (within
    ``settings.shutdown_timeout_s``) and return.

    Args:
        model: A model folder of any tier, or (one worker only) a fitted predictor.
        settings: Address, workers, batching and limits (default `ServeSettings`'s).
        log_level: uvicorn's log level (``"error"``, ``"warning"``, ``"info"``, ...).
        sock: A socket from `listen` (default: one listening here on ``settings.host:settings.port``).

    Raises:
        OSError: The address cannot be listened on.
        ValueError: ``workers > 1`` with a predictor object (each worker process loads the folder itself).

    Examples:
        >>> serve("my-model-onnx", ServeSettings(port=8080, max_batch_size=32))
    """
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    settings = ServeSettings() if settings is None else settings
    if settings.workers > 1 and not isinstance(model, (str, os.PathLike)):
        raise ValueError("workers > 1 needs a model folder: each worker process loads it")
    sock = listen(settings.host, settings.port) if sock is None else sock
    options: dict[str, Any] = {"log_level": log_level, "access_log": False, "lifespan": "on", "backlog": BACKLOG,
                               "timeout_graceful_shutdown": settings.shutdown_timeout_s, "workers": settings.workers}
    with sock, _signals_end_quietly():
        if settings.workers == 1:
            uvicorn.Server(uvicorn.Config(create_app(model, settings), **options)).run(sockets=[sock])
            return
        saved = {name: os.environ.get(name) for name in (ENV_MODEL, ENV_SETTINGS, MULTIPROCESS_ENV)}
        os.environ[ENV_MODEL] = os.path.abspath(os.fspath(model))
        os.environ[ENV_SETTINGS] = settings.to_json()
        made = None if saved[MULTIPROCESS_ENV] else tempfile.mkdtemp(prefix="setfit-lite-metrics-")
        if made is not None:
            os.environ[MULTIPROCESS_ENV] = made
        try:
            config = uvicorn.Config(f"{__name__}:app_from_environment", factory=True, **options)
            if "target" in inspect.signature(Multiprocess).parameters:  # uvicorn before 0.36
                Multiprocess(config, target=uvicorn.Server(config).run, sockets=[sock]).run()
            else:
                Multiprocess(config, sockets=[sock]).run()
        finally:
            if made is not None:
                shutil.rmtree(made, ignore_errors=True)
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
