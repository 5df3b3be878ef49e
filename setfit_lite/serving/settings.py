"""The server's settings: one frozen dataclass, every value checked once by the rules of `setfit_lite.config.rules`
(the command line parses its options with the same rules, so a bad value is an error before anything starts).

Standard library only: the command line imports it without FastAPI installed.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

from ..config.rules import Rule, check_rule, integer, number, option, text

__all__ = ["SERVE_RULES", "ServeSettings"]

SERVE_RULES: dict[str, Rule] = {
    "host": text("a host name or IP address to listen on", empty=False),
    "port": integer(low=0, high=65535, note="a TCP port; 0: any free port"),
    "workers": integer(note="server processes, each with its own copy of the model"),
    "max_batch_size": integer(note="texts in one predict call"),
    "predict_batch_size": integer(note="texts per forward pass inside one predict call"),
    "max_wait_ms": number(low=0.0, high=10_000.0, note="milliseconds"),
    "max_texts": integer(note="texts in one request"),
    "max_text_chars": integer(note="characters in one text"),
    "max_body_bytes": integer(low=64, note="bytes in one request body"),
    "runtime": option(("auto", "onnxruntime", "openvino")),
    "read_timeout_s": number(low=0.0, low_open=True, high=3600.0, note="seconds"),
    "shutdown_timeout_s": number(low=0.0, low_open=True, high=3600.0, note="seconds"),
}


@dataclass(frozen=True)
class ServeSettings:
    """How the prediction server batches and what it accepts.

    Args:
        host: Address to listen on (``setfit-lite serve`` only; Ray Serve's proxy has its own).
        port: TCP port to listen on (0: any free port).
        workers: Server processes (each loads the model; their batches are separate).
        max_batch_size: Most texts the batcher puts in one ``predict_proba`` call. A request with more texts
            than this is predicted alone, in one call (its passes of `predict_batch_size`, as for any batch).
        predict_batch_size: The ``batch_size`` of that ``predict_proba`` call: a batch's texts are sorted by length
            and run in forward passes of this many, so short texts are not padded to the longest of the batch
            (the ONNX and torch tiers; the static tier does not pad). Smaller passes pad less but pay the
            per-pass overhead more often; the default suits sentence-length texts on CPU (the serving benchmark
            page compares passes of 8 and 16).
        max_wait_ms: How long the batcher waits for more requests after the first one of a batch arrives
            (0: it takes only what is already queued).
        max_texts: Most texts in one request (more: 422).
        max_text_chars: Most characters in one text (more: 422).
        max_body_bytes: Largest request body, checked from ``Content-Length`` and while reading (more: 413).
        runtime: What runs an ONNX folder: ``"auto"`` (``OnnxSetFitModel.load``'s rule), ``"onnxruntime"`` or
            ``"openvino"``.
        read_timeout_s: Longest pause while a request body is read: a body that stops arriving for this long is
            answered 408 and its connection closed (as nginx's ``client_body_timeout``).
        shutdown_timeout_s: After SIGTERM, how long the requests already taken have to be answered; those still
            unanswered then are cancelled (500) and the server exits (``setfit-lite serve`` only). Keep it above
            ``read_timeout_s`` plus the longest prediction, and below the time your process manager waits before
            it kills the server (Kubernetes: 30 s).

    Raises:
        TypeError: A value of the wrong type, naming the setting.
        ValueError: A value out of range, naming the setting and what is allowed.

    Examples:
        >>> ServeSettings(max_batch_size=32).max_wait_ms
        2.0
    """

    host: str = "127.0.0.1"
    port: int = 8000
    workers: int = 1
    max_batch_size: int = 128
    predict_batch_size: int = 8
    max_wait_ms: float = 2.0
    max_texts: int = 256
    max_text_chars: int = 10_000
    max_body_bytes: int = 1_048_576
    runtime: str = "auto"
    read_timeout_s: float = 10.0
    shutdown_timeout_s: float = 20.0

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = check_rule(SERVE_RULES[field.name], field.name, getattr(self, field.name), owner="ServeSettings ")
            object.__setattr__(self, field.name, value)

    @property
    def max_wait_s(self) -> float:
        """``max_wait_ms`` in seconds."""
        return self.max_wait_ms / 1000.0

    def to_json(self) -> str:
        """The settings as a JSON object (how ``--workers N`` passes them to its worker processes)."""
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, payload: str) -> ServeSettings:
        """Settings from `to_json`'s output, checked again.

        Args:
            payload: The JSON object.

        Returns:
            The settings.

        Raises:
            ValueError: ``payload`` is not a JSON object of known settings.
        """
        values: Any = json.loads(payload)
        known = {f.name for f in dataclasses.fields(cls)}
        if not isinstance(values, dict) or not set(values) <= known:
            raise ValueError(f"serving settings must be a JSON object with keys among {sorted(known)}")
        return cls(**values)
