"""`seenbefore watch --prometheus URL --query Q` with its default settings against a real
Prometheus (Debian's /usr/bin/prometheus and promtool) on loopback: ten minutes of history are
backfilled into Prometheus's TSDB with ``promtool tsdb create-blocks-from openmetrics`` before it
starts, so the watcher's first poll learns from that history (``query_range``) and is useful from
its first minute; then the live gauge steps from 100 +- 1.5 to 160 and the watcher reports it,
once, within 2 points of where it began.

Only ``--interval 5s`` is given (the step follows it: 5 s), to keep the test to about a minute;
learning (30 points), ``--since``, ``--lag`` (10 s) are the defaults. Every process is stopped by
the test."""

from __future__ import annotations

import datetime as dt
import http.server
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
from seenbefore.detection.live_watch import load_state

PROMETHEUS, PROMTOOL = "/usr/bin/prometheus", "/usr/bin/promtool"
QUERY = "newcomer_queue_depth"
STEP_S = 5.0  # --interval 5s, and so the step
HISTORY_S = 600  # backfilled: twice the learning period's 150 s, and more
JUMP_AFTER_S = 20.0  # the live step, this long after Prometheus is ready
DEADLINE_S = 60.0  # after the jump: the lag (10 s), 2 points (10 s), polls, and slack


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Gauge(http.server.BaseHTTPRequestHandler):
    jump_at = float("inf")  # epoch seconds
    rng = random.Random(32)

    def do_GET(self) -> None:
        level = 160.0 if time.time() >= _Gauge.jump_at else 100.0
        body = (
            f"# TYPE {QUERY} gauge\n"
            f'{QUERY}{{service="orders-worker"}} {level + _Gauge.rng.gauss(0, 1.5):.3f}\n'
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def _backfill(tsdb: Path, now: float, instance: str) -> None:
    """Ten minutes of the gauge at 100 +- 1.5, one sample per step, as TSDB blocks, with the
    labels the live scrape gives it (job and instance): the same series."""
    rng = random.Random(7)
    labels = f'instance="{instance}",job="orders",service="orders-worker"'
    lines = [f"# TYPE {QUERY} gauge"]
    t = now - HISTORY_S
    while t < now - 2:
        lines.append(f"{QUERY}{{{labels}}} {100 + rng.gauss(0, 1.5):.3f} {t:.3f}")
        t += STEP_S
    source = tsdb.parent / "history.om"
    source.write_text("\n".join([*lines, "# EOF"]) + "\n")
    tsdb.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", "-q", str(source), str(tsdb)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


@pytest.fixture
def prometheus(tmp_path: Path) -> Iterator[str]:
    if not Path(PROMETHEUS).exists() or not Path(PROMTOOL).exists():
        pytest.fail(f"{PROMETHEUS} is missing: `make test` installs it (scripts/system_deps.sh)")
    _Gauge.jump_at = float("inf")
    exporter = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Gauge)
    threading.Thread(target=exporter.serve_forever, daemon=True).start()
    tsdb = tmp_path / "tsdb"
    instance = f"127.0.0.1:{exporter.server_address[1]}"
    _backfill(tsdb, time.time(), instance)
    port = _free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
        "scrape_configs:\n  - job_name: orders\n    static_configs:\n"
        f"      - targets: ['{instance}']\n"
    )
    process = subprocess.Popen(
        [
            PROMETHEUS,
            f"--config.file={config}",
            f"--storage.tsdb.path={tsdb}",
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
        shutil.rmtree(tsdb, ignore_errors=True)


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.skipif(not Path(PROMETHEUS).exists(), reason=f"{PROMETHEUS} is not installed")
def test_watch_with_defaults_learns_from_history_and_catches_a_step_within_2_points(
    prometheus: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEENBEFORE_HOME", str(tmp_path / "home"))
    state = tmp_path / "state.json"
    args = ["watch", "--prometheus", prometheus, "--query", QUERY, "--interval", "5s"]
    args += ["--state", str(state), "--once"]
    runner = CliRunner()
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    said = " ".join(first.output.split())
    assert "learning period 30 points (2 min 30 s at a 5 s step)" in said
    # --since 1h and a day of history before it, at most 10,000 steps (13 h 53 min at 5 s;
    # Prometheus holds the last HISTORY_S of it)
    assert "the first poll backfills 14 h 53 min from Prometheus" in said
    assert "learning:" not in said  # the backfill held the whole learning period
    assert "0 anomalies over 1 series" in said
    saved = load_state(state)  # gzip-compressed JSON
    assert saved is not None
    [series] = saved["series"].values()  # the history and the live scrape: one series
    assert series["seen"] >= HISTORY_S / STEP_S - 2  # the history, scored in the first poll

    _Gauge.jump_at = jump = time.time() + JUMP_AFTER_S
    outputs = []
    while time.time() < jump + DEADLINE_S:
        time.sleep(STEP_S)
        polled = runner.invoke(app, args)
        assert polled.exit_code == 0, polled.output
        outputs.append(" ".join(polled.output.split()))
        if "1 anomaly over 1 series" in outputs[-1]:
            break
    assert "1 anomaly over 1 series" in outputs[-1], outputs[-3:]
    assert all("1 anomaly over" not in o for o in outputs[:-1])  # reported once
    resumed = load_state(state)
    assert resumed is not None
    [anomaly] = resumed["triage"]["last"].values()
    start = dt.datetime.fromisoformat(anomaly["start"]).timestamp()
    confirmed = dt.datetime.fromisoformat(anomaly["end"]).timestamp()  # the watcher's end
    assert jump - 1 <= start <= jump + STEP_S + 1  # the first step point at 160 (1 s scrapes)
    assert confirmed - start <= 2 * STEP_S  # within 2 points of it
    assert anomaly["deviations"][0]["direction"] == "up"
