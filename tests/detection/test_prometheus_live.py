"""`seenbefore detect --prometheus URL` against a real Prometheus (Debian's /usr/bin/prometheus) on
loopback, scraping an exporter this test runs: the exporter's queue depth jumps partway through,
and detect must find that change in the live query_range and investigate it.

Bounded: the exporter serves about 45 s of samples at a 100 ms scrape interval; every process is
stopped by the test. Unit tests of the reader's error handling use httpx.MockTransport."""

from __future__ import annotations

import datetime as dt
import http.server
import json
import random
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from seenbefore.cli.app import app
from seenbefore.detection.prometheus_live import parse_duration, query_range
from seenbefore.errors import InputError

PROMETHEUS = "/usr/bin/prometheus"
SCRAPE_S = 0.1
RUN_S = 45.0
JUMP_AT_S = 30.0  # the injected change: queue depth 100 → 400 after this many seconds


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Exporter(http.server.BaseHTTPRequestHandler):
    started = time.monotonic()
    rng = random.Random(7)

    def do_GET(self) -> None:
        elapsed = time.monotonic() - _Exporter.started
        level = 400.0 if elapsed >= JUMP_AT_S else 100.0
        body = (
            "# TYPE demo_queue_depth gauge\n"
            f'demo_queue_depth{{service="checkout-api"}} {level + _Exporter.rng.gauss(0, 4):.3f}\n'
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def prometheus(tmp_path: Path) -> Iterator[str]:
    if not Path(PROMETHEUS).exists():
        pytest.fail(f"{PROMETHEUS} is missing: `make test` installs it (scripts/system_deps.sh)")
    exporter = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Exporter)
    _Exporter.started = time.monotonic()
    threading.Thread(target=exporter.serve_forever, daemon=True).start()
    port = _free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        f"global:\n  scrape_interval: {int(SCRAPE_S * 1000)}ms\n"
        f"  scrape_timeout: {int(SCRAPE_S * 1000)}ms\n"
        "scrape_configs:\n  - job_name: demo\n    static_configs:\n"
        f"      - targets: ['127.0.0.1:{exporter.server_address[1]}']\n"
    )
    process = subprocess.Popen(
        [
            PROMETHEUS,
            f"--config.file={config}",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--log.level=error",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{url}/-/ready", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                err = process.stderr.read().decode(errors="replace") if process.stderr else ""
                pytest.fail(f"prometheus did not become ready: {err[-2000:]}")
            time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
        if process.stderr is not None:
            process.stderr.close()
        exporter.shutdown()
        exporter.server_close()
        shutil.rmtree(tmp_path / "tsdb", ignore_errors=True)


@pytest.mark.integration
@pytest.mark.slow
def test_detect_reads_a_live_prometheus_and_investigates(
    prometheus: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("SEENBEFORE_HOME", str(home))
    monkeypatch.setenv("SEENBEFORE_EMBEDDER", "none")
    examples = Path(__file__).resolve().parents[2] / "examples" / "postmortems"
    runner = CliRunner()  # result.stdout is stdout alone: the JSON, without stderr's notes
    assert runner.invoke(app, ["ingest", str(examples)]).exit_code == 0
    time.sleep(max(0.0, RUN_S - (time.monotonic() - _Exporter.started)))  # let it scrape
    telemetry = query_range(
        prometheus,
        "demo_queue_depth",
        since=dt.timedelta(seconds=RUN_S),
        step=dt.timedelta(seconds=SCRAPE_S),
    )
    [service] = telemetry.series
    assert service == "checkout-api"
    [values] = telemetry.series[service].values()
    assert len(values) >= 200  # scraped for real, at 100 ms
    assert values[:50].max() < 150 and values[-20:].min() > 300

    result = runner.invoke(
        app,
        [
            "detect",
            "--prometheus",
            prometheus,
            "--query",
            "demo_queue_depth",
            "--since",
            f"{int(RUN_S)}s",
            "--step",
            f"{int(SCRAPE_S * 1000)}ms",
            "--investigate",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    try:
        report = json.loads(result.stdout)
    except ValueError:
        pytest.fail(f"detect --json did not print one JSON document:\n{result.stdout[-3000:]}")
    anomalies = report["anomalies"]
    assert anomalies, "the jump from 100 to 400 was not detected"
    first = min(dt.datetime.fromisoformat(a["start"]) for a in anomalies)
    last_sample = telemetry.timestamps[-1]
    # the change sits in the last third of the window; the first anomaly starts there
    assert first >= last_sample - dt.timedelta(seconds=RUN_S - JUMP_AT_S + 5)
    assert all(a["service"] == "checkout-api" for a in anomalies)
    assert report["drafts"], "detect --investigate drafted nothing"


def test_durations_parse_like_prometheus() -> None:
    assert parse_duration("90s", "--since") == dt.timedelta(seconds=90)
    assert parse_duration("15m", "--since") == dt.timedelta(minutes=15)
    assert parse_duration("100ms", "--step") == dt.timedelta(milliseconds=100)
    assert parse_duration("2d", "--since") == dt.timedelta(days=2)
    with pytest.raises(InputError, match="expected a duration such as 30s"):
        parse_duration("six hours", "--since")


def _query(
    handler: object, *, query: str = "up", since: dt.timedelta = dt.timedelta(hours=1)
) -> None:
    """query_range against a mock server answering with ``handler`` (one-minute steps)."""
    query_range(
        "http://prom.test/",
        query,
        since=since,
        step=dt.timedelta(minutes=1),
        transport=httpx.MockTransport(handler),  # type: ignore[arg-type]
    )


def test_a_promql_error_is_reported_with_the_servers_words() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            400, json={"status": "error", "errorType": "bad_data", "error": "parse error at 3"}
        )

    with pytest.raises(InputError, match="parse error at 3"):
        _query(handler, query="up{")


def test_an_empty_result_says_so_and_long_windows_come_in_pieces() -> None:
    calls: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return httpx.Response(
            200, json={"status": "success", "data": {"resultType": "matrix", "result": []}}
        )

    with pytest.raises(InputError, match="returned no series"):
        _query(handler, since=dt.timedelta(days=30))  # 43,200 steps: five pieces of <= 10,000
    assert len(calls) == 5
    assert all(c.url.path == "/api/v1/query_range" for c in calls)


def test_an_unreachable_server_is_a_clear_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    with pytest.raises(InputError, match="did not answer"):
        _query(handler)
