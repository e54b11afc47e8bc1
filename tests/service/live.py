"""The service on a real socket (uvicorn in a thread, 127.0.0.1, a free port) for the browser,
Alertmanager and benchmark runs."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn
from fastapi import FastAPI


@contextmanager
def live_server(app: FastAPI, *, startup_timeout_s: float = 60.0) -> Iterator[str]:
    """Serve ``app`` on 127.0.0.1 and yield its base URL; stops it (lifespan included) after."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + startup_timeout_s
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            sock.close()
            raise RuntimeError(f"the service did not start on 127.0.0.1:{port}")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


def wait_ready(
    client: Any, timeout_s: float = 60, until: Callable[[dict[str, Any]], bool] | None = None
) -> dict[str, Any]:
    """Poll ``/readyz`` of a TestClient until it says ready (or ``until`` holds), at most
    ``timeout_s``: for an app whose startup work runs behind the socket. Returns the last body."""
    done = until or (lambda body: body["status"] == "ready")
    deadline = time.monotonic() + timeout_s
    while True:
        body: dict[str, Any] = client.get("/readyz").json()
        if done(body) or time.monotonic() > deadline:
            return body
        time.sleep(0.05)
