"""The request body limit, enforced at the door: before the body is parsed and before the token
is checked, so nobody (authenticated or not) makes the server hold more than the limit.

A pure ASGI middleware, outside every route: a ``Content-Length`` over the limit is answered
413 without reading a byte; a body without one (chunked) is read and counted, and answered 413
as soon as the count passes the limit. A body within the limit is buffered (at most the limit)
and replayed to the app unchanged. The limit is ``SEENBEFORE_MAX_REQUEST_BYTES`` (1 MiB by
default); the answer is RFC 9457 problem+json like every other error.
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from seenbefore.service.errors import PROBLEM_BASE, PROBLEM_JSON, TITLES

SETTING = "SEENBEFORE_MAX_REQUEST_BYTES"


class BodyLimitMiddleware:
    def __init__(self, app: ASGIApp, *, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared == -1:
            await _problem(
                send,
                scope,
                400,
                "invalid-input",
                "the Content-Length header is not a number; send a decimal byte count or no header",
            )
            return
        if declared is not None and declared > self.max_bytes:
            await _problem(
                send,
                scope,
                413,
                "content-too-large",
                f"the request body is {declared:,} bytes (Content-Length), over the limit of "
                f"{self.max_bytes:,} bytes; send less, or raise {SETTING} on the server",
            )
            return
        chunks: list[bytes] = []
        total = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away: let the app see it
                await self.app(scope, _replay([message], receive), send)
                return
            body = message.get("body", b"")
            total += len(body)
            if total > self.max_bytes:
                await _problem(
                    send,
                    scope,
                    413,
                    "content-too-large",
                    f"the request body is more than {self.max_bytes:,} bytes, the limit; send "
                    f"less, or raise {SETTING} on the server",
                )
                return
            chunks.append(body)
            if not message.get("more_body", False):
                break
        whole: Message = {"type": "http.request", "body": b"".join(chunks), "more_body": False}
        await self.app(scope, _replay([whole], receive), send)


def _content_length(scope: Scope) -> int | None:
    """The declared length; None when absent, -1 when it is not a number."""
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            text = value.decode("latin-1").strip()
            return int(text) if text.isdigit() else -1
    return None


def _replay(messages: list[Message], receive: Receive) -> Receive:
    pending = list(messages)

    async def replay() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()

    return replay


async def _problem(send: Send, scope: Scope, status: int, slug: str, detail: str) -> None:
    body = json.dumps(
        {
            "type": PROBLEM_BASE + slug,
            "title": TITLES.get(status, "Error"),
            "status": status,
            "detail": detail,
            "instance": str(scope.get("path", "")),
        }
    ).encode("utf-8")
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", PROBLEM_JSON.encode()),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
