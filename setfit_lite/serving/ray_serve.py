"""The prediction server as a Ray Serve deployment: the app of `create_app` in each
replica (its own model, batcher, limits and ``/metrics``), behind Ray Serve's HTTP proxy.

Each replica loads the folder when it starts and is routed requests only once its model is warm. Predictions are
idempotent, so a client that retries on a connection error or a 5xx loses nothing when a replica dies: Ray Serve
sends the retry to a live replica and starts a new one in the dead one's place.

Ray is imported only when `ray_serve_app` is called (``pip install 'ray[serve]'``).
"""

from __future__ import annotations

import os
from typing import Any

from .app import create_app
from .settings import ServeSettings

__all__ = ["SetFitServeIngress", "ray_serve_app"]


class SetFitServeIngress:
    """The deployment class: a replica builds its app from the folder and settings it is bound with.

    Args:
        model_dir: The model folder (every node must be able to read it at this path).
        settings: Batching and limits (``host``, ``port``, ``workers`` and ``shutdown_timeout_s`` do not apply: Ray
            Serve's proxy listens and stops replicas).
    """

    def __init__(self, model_dir: str, settings: ServeSettings | None = None) -> None:
        self._model_dir = model_dir
        self._settings = ServeSettings() if settings is None else settings
        self._app: Any = None

    def __serve_build_asgi_app__(self) -> Any:  # Ray Serve calls it in the replica, after __init__
        self._app = create_app(self._model_dir, self._settings, load_in_background=False)
        return self._app

    def check_health(self) -> None:
        """Ray Serve's health check: an error (the replica is replaced) when the model failed to load."""
        state = getattr(getattr(self._app, "state", None), "serving", None)
        if state is not None and state.status == "failed":
            raise RuntimeError(f"the model failed to load (error id {state.error_id}): {state.error}")


def ray_serve_app(model_dir: str | os.PathLike, settings: ServeSettings | None = None, *, name: str = "setfit_lite",
                  num_replicas: int = 1, ray_actor_options: dict[str, Any] | None = None,
                  **deployment_options: Any) -> Any:
    """A Ray Serve application serving ``model_dir`` (any tier) with ``num_replicas`` replicas.

    Args:
        model_dir: The model folder, at a path every node can read.
        settings: Batching and limits of each replica (default `ServeSettings`'s).
        name: The deployment's name.
        num_replicas: Replicas (or ``"auto"`` with an ``autoscaling_config`` in ``deployment_options``).
        ray_actor_options: Resources of each replica (default one CPU).
        **deployment_options: Other options of ``ray.serve.deployment`` (``max_replicas_per_node``,
            ``health_check_period_s``, ...). ``max_ongoing_requests`` defaults to ``settings.max_batch_size``, so a
            replica can gather a full batch of one-text requests.

    Returns:
        The bound application, for ``ray.serve.run(app, route_prefix="/")``.

    Raises:
        ImportError: Ray Serve is not installed.

    Examples:
        >>> from ray import serve
        >>> serve.run(ray_serve_app("my-model-onnx", num_replicas=2), route_prefix="/")
    """
    try:
        from ray import serve
    except ImportError as error:
        raise ImportError("ray_serve_app needs Ray Serve: pip install 'ray[serve]'") from error
    settings = ServeSettings() if settings is None else settings
    deployment_options.setdefault("max_ongoing_requests", settings.max_batch_size)
    deployment = serve.deployment(serve.ingress()(SetFitServeIngress), name=name, num_replicas=num_replicas,
                                  ray_actor_options=ray_actor_options or {"num_cpus": 1}, **deployment_options)
    return deployment.bind(os.path.abspath(os.fspath(model_dir)), settings)
