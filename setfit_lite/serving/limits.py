"""The request-body limits, as ASGI middleware: a body over ``max_bytes`` is refused with 413 before the app sees it,
from its ``Content-Length`` when it has one (nothing is read) and while it is read otherwise (chunked bodies, or a
client sending more than it announced); a body that stops arriving for ``read_timeout_s`` is refused with 408. Both
answers close the connection."""

from __future__ import annotations

import asyncio
import json
from typing import Any

__all__ = ["BodyLimitMiddleware", "error_body"]


def error_body(message: str, **extra: Any) -> dict[str, Any]:
    """The JSON of every error answer: ``{"error": message, ...}``."""
    return {"error": message, **extra}


async def _send_json(send: Any, status: int, payload: dict[str, Any]) -> None:
    body = json.dumps(payload).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


class BodyLimitMiddleware:
    """Reads each HTTP request's body, at most ``max_bytes`` of it, before passing the request on with that body.

    Answers 413 (``Content-Length`` or the bytes read exceed ``max_bytes``), 408 (no part of the body came for
    ``read_timeout_s``: a stalled client holds neither the buffer nor a graceful shutdown) or 400 (a
    ``Content-Length`` that is not a number), naming the limit.

    Args:
        app: The ASGI app the request goes on to.
        max_bytes: The largest body.
        read_timeout_s: The longest wait for the next part of a body (None: no limit).
    """

    def __init__(self, app: Any, max_bytes: int, read_timeout_s: float | None = None) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.read_timeout_s = read_timeout_s

    def _too_large(self, size: str) -> dict[str, Any]:
        return error_body(f"the request body ({size}) is larger than the server's limit of {self.max_bytes} bytes "
                          "(max_body_bytes)", limit=self.max_bytes)

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        if declared is not None:
            try:
                length = int(declared)
            except ValueError:
                await _send_json(send, 400, error_body(f"Content-Length is not a number: {declared[:40]!r}"))
                return
            if length > self.max_bytes:
                await _send_json(send, 413, self._too_large(f"Content-Length {length}"))
                return
        chunks: list[bytes] = []
        size = 0
        while True:
            try:
                message = await asyncio.wait_for(receive(), self.read_timeout_s)
            except asyncio.TimeoutError:  # the builtin TimeoutError from Python 3.11
                await _send_json(send, 408, error_body(
                    f"the request body stopped arriving: nothing came for {self.read_timeout_s:g} s (read_timeout_s)",
                    limit=self.read_timeout_s))
                return
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await _send_json(send, 413, self._too_large(f"more than {self.max_bytes} bytes read"))
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        delivered = False

        async def replay() -> dict[str, Any]:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # after the body: wait for the disconnect, as the server's receive does

        await self.app(scope, replay, send)
