"""Real HTTP receivers on 127.0.0.1 (port 0) that record requests and answer from a script."""

from __future__ import annotations

import datetime as dt
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from seenbefore.types import Anomaly, MetricDeviation

HANG = -1  # a scripted status that makes the receiver never answer (until teardown)


def make_anomaly(**overrides: Any) -> Anomaly:
    values: dict[str, Any] = {
        "id": "A-1",
        "service": "checkout",
        "cloud": "aws",
        "region": "us-east-1",
        "start": dt.datetime(2024, 3, 14, 10, 0, tzinfo=dt.UTC),
        "end": dt.datetime(2024, 3, 14, 10, 20, tzinfo=dt.UTC),
        "score": 0.934,
        "deviations": (
            MetricDeviation("latency_p99_ms", "up", 850.0, 120.0, 7.5, "ms"),
            MetricDeviation("db_connections", "up", 100.0, 40.0, 5.0),
        ),
        "normal": ("cpu_utilization",),
        "severity": "SEV1",
        "rules": ("latency_slo", "pool_saturation"),
    }
    values.update(overrides)
    return Anomaly(**values)


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Receiver:
    """Answers each POST with the next scripted (status, body, headers), then ``default``."""

    default: tuple[int, str, dict[str, str]] = (200, "ok", {})
    script: list[tuple[int, str, dict[str, str]]] = field(default_factory=list)
    requests: list[Received] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    port: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def answer(self, *responses: tuple[int, str] | tuple[int, str, dict[str, str]]) -> None:
        """Queue responses: ``(500, "rollup_error")``, ``(429, "", {"Retry-After": "3"})``."""
        with self._lock:
            for response in responses:
                status, body, *rest = response
                self.script.append((status, body, rest[0] if rest else {}))

    def next_response(self, received: Received) -> tuple[int, str, dict[str, str]]:
        with self._lock:
            self.requests.append(received)
            return self.script.pop(0) if self.script else self.default


def _handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length)
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, text, extra = receiver.next_response(Received(self.path, headers, body))
            if status == HANG:
                receiver.release.wait(5)
                return
            payload = text.encode()
            try:
                self.send_response(status)
                for name, value in extra.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except OSError:  # the client gave up (timeout test)
                pass

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    yield from _serve()


@pytest.fixture
def receiver2() -> Iterator[Receiver]:
    yield from _serve()


def _serve() -> Iterator[Receiver]:
    rec = Receiver()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(rec))
    rec.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01})
    thread.start()
    try:
        yield rec
    finally:
        rec.release.set()
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(trust_env=False) as c:
        yield c


class Sleeps(list[float]):
    """An injectable sleep that records the waits instead of sleeping."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port
