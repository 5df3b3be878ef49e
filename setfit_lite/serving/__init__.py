"""A prediction server for any model tier: FastAPI + uvicorn, dynamic micro-batching across concurrent requests,
request limits, Prometheus metrics, graceful SIGTERM; the same app as a Ray Serve deployment.

- `settings`: `ServeSettings`, every value checked once (standard library only);
- `batcher`: `MicroBatcher`, requests gathered into one ``predict_proba`` call on a thread of its own;
- `limits`: the request-body limit (ASGI middleware);
- `metrics`: the Prometheus metrics of one app;
- `app`: `create_app`, the routes;
- `server`: `serve`, uvicorn with one or more worker processes (``setfit-lite serve``);
- `ray_serve`: `ray_serve_app`, the app as a Ray Serve deployment.

Needs the ``serve`` extra (``pip install 'setfit_lite[serve]'``; Ray Serve: ``ray[serve]``). Serving an ONNX or
static folder never imports torch.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["MicroBatcher", "ServeSettings", "create_app", "ray_serve_app", "serve"]

_EXPORTS = {"MicroBatcher": ".batcher", "ServeSettings": ".settings", "create_app": ".app", "serve": ".server",
            "ray_serve_app": ".ray_serve"}


def __getattr__(name: str) -> Any:
    """The public names, imported when first used (``ServeSettings`` needs no FastAPI, ``ray_serve_app`` Ray)."""
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name], __name__), name)
