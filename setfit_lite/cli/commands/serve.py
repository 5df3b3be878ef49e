"""``setfit-lite serve``: a model folder of any tier over HTTP (`setfit_lite.serving`): ``POST /predict``,
``/health``, ``/ready``, ``/metrics``, with micro-batching across requests; SIGTERM or Ctrl-C answers every accepted
request (within ``--shutdown-timeout-s``) and exits 0. Every option is checked, and the model loaded, before the server
starts."""

from __future__ import annotations

import argparse
import sys

from ...config.params import argument_type
from ...serving.settings import SERVE_RULES, ServeSettings
from ..options import add_runtime_arg

HELP = "serve a model over HTTP: POST /predict, /health, /ready, /metrics (needs the serve extra)"

_DEFAULTS = ServeSettings()
_OPTIONS = (  # (setting, help)
    ("host", "address to listen on (0.0.0.0: every interface)"),
    ("port", "TCP port to listen on (0: any free port, printed at start)"),
    ("workers", "server processes, each with its own copy of the model"),
    ("max_batch_size", "most texts in one predict call: concurrent requests are batched up to it"),
    ("predict_batch_size", "texts per forward pass inside one predict call (a batch is sorted by length first)"),
    ("max_wait_ms", "how long a batch waits for more requests after its first (0: only those already queued)"),
    ("max_texts", "most texts in one request (more: 422)"),
    ("max_text_chars", "most characters in one text (more: 422)"),
    ("max_body_bytes", "largest request body in bytes, from Content-Length and while reading (more: 413)"),
    ("read_timeout_s", "seconds a request body may stop arriving before it is refused (408, connection closed)"),
    ("shutdown_timeout_s", "after SIGTERM, seconds to answer the requests already taken; those left are "
                           "cancelled (500)"),
)
LOG_LEVELS = {"quiet": "error", "default": "warning", "verbose": "info"}


def server_url(host: str, port: int) -> str:
    """The URL of a listening address: ``http://127.0.0.1:8000``, ``http://[::1]:8000`` (IPv6 is bracketed)."""
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def add_arguments(serve: argparse.ArgumentParser) -> None:
    serve.add_argument("model_dir", help="a saved model, or a folder written by `setfit-lite export` (ONNX and "
                                         "static folders are served without torch)")
    for name, text in _OPTIONS:
        serve.add_argument(f"--{name.replace('_', '-')}", dest=name, type=argument_type(name, SERVE_RULES),
                           default=getattr(_DEFAULTS, name), help=f"{text} (default: %(default)s)")
    add_runtime_arg(serve)


def _require_serving() -> None:
    """ImportError saying what to install when the ``serve`` extra is missing."""
    missing = []
    for module in ("fastapi", "uvicorn", "prometheus_client"):
        try:
            __import__(module)
        except ImportError:
            missing.append(module)
    if missing:
        raise ImportError(f"setfit-lite serve needs {', '.join(missing)}: pip install 'setfit_lite[serve]'")


def run(ns: argparse.Namespace) -> None:
    from ...modeling import exported_format
    from ...serving.server import listen, serve
    from ..inputs import load_model

    _require_serving()
    settings = ServeSettings(**{name: getattr(ns, name) for name, _ in _OPTIONS}, runtime=ns.runtime)
    model = load_model(ns.model_dir, ns.runtime)  # a folder that cannot be served fails here, before listening
    sock = listen(settings.host, settings.port)
    host, port = sock.getsockname()[:2]
    tier = exported_format(ns.model_dir) or "torch"
    print(f"setfit-lite serve: {ns.model_dir} ({tier}, {len(model.labels)} labels) on {server_url(host, port)} with "
          f"{settings.workers} worker(s); GET /ready says when it takes requests; SIGTERM or Ctrl-C stops",
          file=sys.stderr, flush=True)
    if settings.workers > 1:
        del model  # each worker process loads the folder itself
        model = ns.model_dir
    serve(model, settings, log_level=LOG_LEVELS[getattr(ns, "verbosity", "default")], sock=sock)
