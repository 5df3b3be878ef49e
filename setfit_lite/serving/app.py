"""The prediction server's ASGI app: `create_app` for a model folder of any tier or a loaded predictor.

Routes: ``GET /health`` (the process is up), ``GET /ready`` (the model is loaded and warmed: 200, else 503),
``POST /predict``, ``GET /metrics`` (Prometheus; the three answer ``HEAD`` too) and FastAPI's ``/docs`` and
``/openapi.json``. Requests are checked (body size and read timeout, JSON, the request schema with the settings'
limits, each text as ``predict`` checks it) before they reach the `MicroBatcher`; every error is a JSON
``{"error": ...}`` naming the problem, and the server keeps serving. A server-side failure (the model did not load, a
prediction failed, a route raised) is answered with a generic message and an ``error_id``, never the exception's text
(which may name the model folder or other server paths): the server's log has the detail under that id. A client
that hangs up while its request waits for the model gets nothing: its request leaves the batcher (unless its batch
is already running) and is counted 499.
"""

# no `from __future__ import annotations` here: FastAPI reads /predict's request model, a class made per app, from
# the endpoint's annotation at run time
import asyncio
import contextlib
import copy
import email.message
import logging
import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

import numpy as np
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..data.checks import validate_texts
from ..version import __version__
from .batcher import BatcherClosed, MicroBatcher
from .limits import BodyLimitMiddleware, error_body
from .metrics import CLIENT_CLOSED, CONTENT_TYPE_LATEST, MetricsMiddleware, ServingMetrics
from .settings import ServeSettings

__all__ = ["ServingState", "create_app", "model_labels"]

logger = logging.getLogger(__name__)

WARMUP_TEXT = "warm up the model"
MAX_PROBLEMS = 5  # validation problems named in one error message
NOT_JSON = "the body is not valid JSON"

T = TypeVar("T")


@dataclass
class ServingState:
    """What the app knows of its model: ``status`` is ``"loading"``, ``"ready"``, ``"failed"`` or ``"stopping"``;
    after a failed load, ``error`` is the exception (for the server's log and health checks only: it may name server
    paths) and ``error_id`` the id clients are given."""

    settings: ServeSettings
    status: str = "loading"
    predictor: Any = None
    batcher: MicroBatcher | None = None
    error: str | None = None
    error_id: str | None = None


def _new_error_id() -> str:
    """A short random id tying a generic error answer to the server's log line that has the detail."""
    return uuid.uuid4().hex[:12]


def _internal_error(what: str, error_id: str, status_code: int = 500, **extra: Any) -> JSONResponse:
    """The answer of a server-side failure: ``what`` and the id only, never the exception's text, which may name
    the model folder or other server paths (the log line under ``error_id`` has it)."""
    return JSONResponse(error_body(f"{what} (error id {error_id}; the server's log has the details)",
                                   error_id=error_id, **extra), status_code=status_code)


def model_labels(predictor: Any) -> list:
    """The predictor's labels as JSON values (numpy scalars become Python ones)."""
    return [label.item() if isinstance(label, np.generic) else label for label in predictor.labels]


def _request_models(settings: ServeSettings) -> tuple[type[BaseModel], type[BaseModel]]:
    """The request and response schemas, with the settings' limits in the request's (and so in the docs)."""
    text = Annotated[str, StringConstraints(max_length=settings.max_text_chars)]

    class PredictRequest(BaseModel):
        """Texts to classify."""

        model_config = ConfigDict(strict=True, extra="forbid")
        texts: Annotated[list[text], Field(min_length=1, max_length=settings.max_texts,
                                           description="the texts, each a non-blank string")]
        probabilities: bool = Field(False, description="also return each text's class probabilities")

    class PredictResponse(BaseModel):
        """One label per text; with ``probabilities``, one row per text in ``classes`` order."""

        labels: list[Any] = Field(description="the predicted label of each text (multi-label: a multi-hot row in "
                                              "classes order)")
        probabilities: list[list[float]] | None = None
        classes: list[Any] | None = Field(None, description="the model's labels, the columns of probabilities")

    return PredictRequest, PredictResponse


def _where(loc: Sequence[Any]) -> str:
    """``("body", "texts", 3)`` -> ``"texts[3]"``."""
    out = ""
    for part in loc:
        if part == "body" and not out:
            continue
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "the body"


def _sent_as_json(content_type: str) -> bool:
    """Whether FastAPI parses a body of this Content-Type as JSON: ``application/json`` or ``application/*+json``
    (its own rule; ``text/json`` or ``application/jsonl`` reach the endpoint as bytes)."""
    if not content_type:
        return False
    message = email.message.Message()
    message["content-type"] = content_type
    subtype = message.get_content_subtype()
    return message.get_content_maintype() == "application" and (subtype == "json" or subtype.endswith("+json"))


def _validation_answer(request: Request, error: RequestValidationError) -> JSONResponse:
    content_type = request.headers.get("content-type", "")
    if not _sent_as_json(content_type):  # FastAPI parses JSON only when the request says it is JSON
        return JSONResponse(error_body(f"the body must be JSON sent with Content-Type: application/json (got "
                                       f"{content_type[:60] or 'no Content-Type'})"), status_code=415)
    problems = [{"where": _where(e.get("loc", ())), "problem": e.get("msg", ""), "type": e.get("type", "")}
                for e in error.errors()]
    if any(p["type"] == "json_invalid" for p in problems):
        return JSONResponse(error_body(NOT_JSON), status_code=400)
    named = "; ".join(f"{p['where']}: {p['problem']}" for p in problems[:MAX_PROBLEMS])
    more = f" (and {len(problems) - MAX_PROBLEMS} more)" if len(problems) > MAX_PROBLEMS else ""
    return JSONResponse(error_body(named + more, problems=problems[:MAX_PROBLEMS]), status_code=422)


def _http_error_answer(error: StarletteHTTPException) -> JSONResponse:
    """The JSON answer of an HTTP error; FastAPI's "error parsing the body" of JSON that is not UTF-8 says so."""
    if error.status_code == 400 and isinstance(error.__cause__, UnicodeDecodeError):  # FastAPI's parse of a JSON body
        reason = error.__cause__.reason
        return JSONResponse(error_body(f"{NOT_JSON}: it is not UTF-8 text ({reason} at byte "
                                       f"{error.__cause__.start})"), status_code=400)
    return JSONResponse(error_body(str(error.detail)), status_code=error.status_code, headers=error.headers)


async def _until_hung_up(request: Request) -> None:
    """Returns once the client has hung up: after a request's body, the next ASGI message is its disconnect (a
    server that sends another message, or fails to receive, leaves nothing to watch: this then never returns)."""
    try:
        message = await request.receive()
    except Exception:
        message = {}
    if message.get("type") != "http.disconnect":
        await asyncio.get_running_loop().create_future()


async def _unless_hung_up(request: Request, answer: Awaitable[T]) -> T | None:
    """``answer``'s result, awaited while watching the client: None as soon as the client hangs up (``answer`` is
    then cancelled: a request still queued in the batcher is dropped from it)."""
    answering = asyncio.ensure_future(answer)
    watching = asyncio.ensure_future(_until_hung_up(request))
    try:
        await asyncio.wait({answering, watching}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watching.cancel()
        answering.cancel()  # nothing once answered
    return answering.result() if answering.done() else None


def _not_ready(state: ServingState) -> JSONResponse:
    if state.status == "failed":  # no Retry-After: a model that failed to load does not come back (the log says why)
        return _internal_error("the model failed to load", state.error_id or "unknown", 503, status=state.status)
    message = {"loading": "the model is loading", "stopping": "the server is shutting down"}.get(state.status,
                                                                                                state.status)
    return JSONResponse(error_body(message, status=state.status), status_code=503, headers={"Retry-After": "1"})


def _warm(predictor: Any, settings: ServeSettings) -> None:
    """One full batch through the model, so the first request pays no allocation or lazy initialisation."""
    predictor.class_proba([WARMUP_TEXT] * settings.max_batch_size, batch_size=settings.predict_batch_size)


def _one_thread_per_batch(predictor: Any) -> tuple[Any, int]:
    """The predictor the batcher threads call and how many threads: for an ONNX (onnxruntime, or OpenVINO with a
    stream per thread, its default) or static predictor that splits a call over ``n > 1`` threads, a shallow copy
    that runs a call on the calling thread, and ``n`` batcher threads (one batch per core, each tokenised while the
    others run); any other predictor as it is, one thread. The copy shares the graph and tables (an onnxruntime
    InferenceSession runs from many threads at once; OpenVINO gives each calling thread its own infer request), and
    its numbers are the predictor's: pieces do not depend on how many run at once (``runtime.threads``)."""
    from ..runtime.onnx import OnnxSetFitModel
    from ..runtime.static import StaticSetFitModel

    attribute = {OnnxSetFitModel: "num_workers", StaticSetFitModel: "num_threads"}.get(type(predictor))
    threads = getattr(predictor, attribute, 1) if attribute else 1
    if not isinstance(threads, int) or threads <= 1:
        return predictor, 1
    single = copy.copy(predictor)
    setattr(single, attribute, 1)
    return single, threads


def _load(model: Any, settings: ServeSettings) -> Any:
    if isinstance(model, (str, os.PathLike)):
        from ..modeling import load_model_folder

        model = load_model_folder(model, settings.runtime)
    if not callable(getattr(model, "class_proba", None)) or not getattr(model, "labels", None):
        raise TypeError(f"cannot serve {type(model).__name__}: it needs class_proba and labels (a fitted "
                        "SetFitModel, OnnxSetFitModel or StaticSetFitModel)")
    _warm(model, settings)
    return model


def create_app(model: str | os.PathLike | Any, settings: ServeSettings | None = None,
               load_in_background: bool = True) -> FastAPI:
    """The prediction server's FastAPI app.

    The model is loaded (from a folder) and warmed when the app starts: in the background by default, ``/ready``
    answering 200 once it is and ``/predict`` 503 before; with ``load_in_background=False`` the app's startup
    waits for it (Ray Serve then routes nothing to a replica before its model is warm).

    Args:
        model: A model folder of any tier (saved, ONNX or static export: `
            load_model_folder`; ONNX and static folders load without torch) or a fitted predictor.
        settings: Batching and limits (default `ServeSettings`'s).
        load_in_background: Whether the app starts serving ``/health`` and ``/ready`` while the model loads.

    Returns:
        The app, to run with any ASGI server (``setfit-lite serve`` runs it with uvicorn).

    Raises:
        TypeError: ``settings`` is not a `ServeSettings`.

    Examples:
        >>> import uvicorn
        >>> uvicorn.run(create_app("my-model-onnx", ServeSettings(max_batch_size=32)), port=8000)
    """
    settings = ServeSettings() if settings is None else settings
    if not isinstance(settings, ServeSettings):
        raise TypeError(f"settings must be a ServeSettings, got {type(settings).__name__}")
    metrics = ServingMetrics()
    state = ServingState(settings)
    predict_request, predict_response = _request_models(settings)

    async def start() -> None:
        try:
            predictor = await asyncio.to_thread(_load, model, settings)
        except Exception as error:  # the app stays up, not ready (/ready, /predict), the log saying why
            state.status, state.error = "failed", f"{type(error).__name__}: {error}"
            state.error_id = _new_error_id()
            logger.error("the model failed to load (error id %s): %s", state.error_id, state.error, exc_info=error)
            return
        batch_size = settings.predict_batch_size
        state.predictor = predictor
        single, threads = _one_thread_per_batch(predictor)
        # class_proba: (n, K) numpy for every tier and head (predict_proba is setfit's: a tensor, and (n, L, 2) for a
        # multi-output head, which the labels below would misread)
        state.batcher = MicroBatcher(lambda texts: single.class_proba(texts, batch_size=batch_size),
                                     settings.max_batch_size, settings.max_wait_s, metrics, threads=threads)
        if state.status == "loading":
            state.status = "ready"

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        loading = asyncio.create_task(start())
        if not load_in_background:
            await loading
        try:
            yield
        finally:  # the server has stopped taking requests and answered those it took
            state.status = "stopping"
            with contextlib.suppress(Exception):
                await loading
            if state.batcher is not None:
                await asyncio.to_thread(state.batcher.close)
            metrics.process_ended()

    app = FastAPI(title="setfit_lite prediction server", version=__version__, lifespan=lifespan, redoc_url=None,
                  description="Text classification with a setfit_lite model: POST /predict.")
    app.state.serving = state
    app.state.metrics = metrics

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, error: RequestValidationError) -> JSONResponse:
        return _validation_answer(request, error)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, error: StarletteHTTPException) -> JSONResponse:
        return _http_error_answer(error)

    @app.exception_handler(Exception)  # Starlette then raises the error again: the ASGI server logs its traceback
    async def server_error(request: Request, error: Exception) -> JSONResponse:
        error_id = _new_error_id()
        logger.error("internal error (error id %s) answering %s %s: %s: %s", error_id, request.method,
                     request.url.path, type(error).__name__, error)
        return _internal_error("internal server error", error_id)

    @app.api_route("/health", methods=["GET", "HEAD"],  # HEAD: load balancers and uptime checks probe with it
                   summary="Whether the process is up (and which worker process answered)")
    async def health() -> dict[str, Any]:
        return {"status": "ok", "pid": os.getpid()}

    @app.api_route("/ready", methods=["GET", "HEAD"],
                   summary="Whether the model is loaded and warmed (503 until it is)")
    async def ready() -> Response:
        if state.status != "ready":
            return _not_ready(state)
        return JSONResponse({"status": "ready", "labels": model_labels(state.predictor),
                             "multi_label": bool(state.predictor.multi_label), "pid": os.getpid()})

    @app.api_route("/metrics", methods=["GET", "HEAD"], summary="Prometheus metrics", response_class=Response)
    async def prometheus() -> Response:
        return Response(metrics.exposition(), media_type=CONTENT_TYPE_LATEST)

    @app.post("/predict", summary="Labels (and probabilities) of texts", response_model=predict_response,
              responses={400: {"description": "the body is not JSON (UTF-8)"},
                         408: {"description": "the body stopped arriving for read_timeout_s"},
                         413: {"description": "the body is larger than max_body_bytes"},
                         415: {"description": "the body is not sent as JSON"},
                         422: {"description": "the body does not follow the schema or a text is blank"},
                         503: {"description": "the model is loading, or the server is shutting down"}})
    async def predict(body: predict_request, request: Request) -> Response:  # type: ignore[valid-type]
        if state.status != "ready" or state.batcher is None:
            return _not_ready(state)
        try:
            texts = validate_texts(body.texts)
        except (TypeError, ValueError) as error:
            return JSONResponse(error_body(f"texts: {error}"), status_code=422)
        try:
            proba = await _unless_hung_up(request, state.batcher.predict_proba(texts))
        except BatcherClosed:
            return _not_ready(state)
        except Exception as error:
            error_id = _new_error_id()
            logger.error("prediction failed (error id %s) on a request of %d texts: %s: %s", error_id, len(texts),
                         type(error).__name__, error, exc_info=error)
            return _internal_error("prediction failed", error_id)
        if proba is None:  # the client hung up: nothing reaches it, the status is for the metrics
            return Response(status_code=CLIENT_CLOSED)
        labels = state.predictor.labels_from_proba(proba, as_numpy=True)
        answer: dict[str, Any] = {"labels": labels.tolist() if hasattr(labels, "tolist") else list(labels)}
        if body.probabilities:
            answer["probabilities"] = proba.tolist()
            answer["classes"] = model_labels(state.predictor)
        return JSONResponse(answer)

    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_body_bytes, read_timeout_s=settings.read_timeout_s)
    app.add_middleware(MetricsMiddleware, metrics=metrics)  # the outermost: it counts the 413s and 408s too
    return app
