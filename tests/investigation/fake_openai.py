"""A real, local OpenAI-compatible HTTP server for tests: 127.0.0.1 on a free port, serving
``POST /v1/chat/completions`` from a scripted queue of replies, and recording every request.

    with FakeOpenAI([chat('{"summary": ...}'), http_error(500)]) as server:
        llm = OpenAICompatibleLLM(server.base_url, "fake-model")
        ...
        server.requests[0]["body"]["messages"]

It never binds or calls anything but the loopback address.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any


@dataclass(frozen=True)
class Reply:
    """One scripted HTTP reply: a status, a JSON body, and an optional delay before it."""

    status: int = 200
    body: dict[str, Any] = field(default_factory=dict)
    delay_s: float = 0.0


def chat(
    content: str,
    *,
    model: str = "fake-model",
    prompt_tokens: int = 120,
    completion_tokens: int = 40,
    delay_s: float = 0.0,
    finish_reason: str = "stop",
) -> Reply:
    """A successful chat completion whose message content is ``content`` (JSON or not)."""
    body = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }
    return Reply(200, body, delay_s)


def http_error(status: int = 500, message: str = "the fake server failed on purpose") -> Reply:
    return Reply(status, {"error": {"message": message, "type": "server_error", "code": None}})


class FakeOpenAI:
    """The server. Replies are served in order; when the script runs out the server answers 500
    and counts it in ``unexpected``, so a test that makes an extra call notices."""

    def __init__(self, replies: Iterable[Reply] = ()) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []
        self.unexpected = 0
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def messages(self, index: int = -1) -> list[dict[str, str]]:
        """The chat messages of one recorded request (the last by default)."""
        messages: list[dict[str, str]] = self.requests[index]["body"]["messages"]
        return messages

    def _next(self, record: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(record)
            if self.replies:
                return self.replies.pop(0)
            self.unexpected += 1
        return http_error(500, "fake server: no scripted reply left")

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(http_error(404, f"no route {self.path}"))
                    return
                try:
                    body = json.loads(raw)
                except json.JSONDecodeError:
                    body = {"unparsed": raw.decode("utf-8", "replace")}
                record = {
                    "path": self.path,
                    "headers": {k.lower(): v for k, v in self.headers.items()},
                    "body": body,
                }
                reply = server._next(record)
                if reply.delay_s and server._closing.wait(reply.delay_s):
                    return
                self._send(reply)

            def _send(self, reply: Reply) -> None:
                data = json.dumps(reply.body).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test): nobody is left to answer

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep test output quiet

        return Handler

    def close(self) -> None:
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAI:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
