"""`seenbefore detect --prometheus URL` and `seenbefore watch --prometheus URL --once` on a daily
cycle, with the day of history they read before ``--since`` (the default, ``--history 1d``)
beside less: what a user sees, through the installed command, against a fake Prometheus on
loopback.

Two days' shapes, each at a 60 s and a 300 s step, seen at 8 phases of the day (the run's "now"
falls every 3 hours of the cycle):

- ``sine``: a daily cycle of amplitude 10 with unit noise (a traffic metric's day);
- ``opening``: business hours, +30 from 09:00 to 17:00 every day, unit noise.

For each: ``--since 6h`` with no change (any anomaly reported is a false one), and with a step
of +30 two hours before the end (found when an anomaly starts within 2 points of it; its delay
in points; anything else reported is a false one). ``detect`` runs with ``--history 1d`` and
``--history 0`` (``--since`` alone, how detect read Prometheus before); ``watch``'s first poll
with ``--history 1d`` and ``--history 18h`` (a day in all, ``--since`` inside it: how watch's
first poll read before ``--history``), its anomalies read from the lines it prints.

    .venv/bin/python benchmarks/detect_history.py [--write]

Writes benchmarks/results/detect_history.json with --write (command, commit, machine, date).
"""

from __future__ import annotations

import argparse
import datetime as dt
import http.server
import json
import math
import os
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

from provenance import RESULTS, provenance, write_results

DAY_S = 86_400
PHASES = 8
JUMP = 30.0
JUMP_BEFORE_END_S = 2 * 3600
STEPS = (60, 300)
SINCE = "6h"


FAMILIES = ("sine", "opening")
WATCHED = re.compile(r"^(?:SEV[1-4]|None) (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) ", re.MULTILINE)


class _Cycle:
    family = "sine"
    phase_s = 0.0
    jump_at: float | None = None  # epoch seconds of the step (None: none)


def _value(t: float) -> float:
    at = (t + _Cycle.phase_s) % DAY_S
    if _Cycle.family == "sine":
        day = 100.0 + 10.0 * math.sin(2 * math.pi * at / DAY_S)
    else:
        day = 100.0 + (30.0 if 9 * 3600 <= at < 17 * 3600 else 0.0)
    up = _Cycle.jump_at is not None and t >= _Cycle.jump_at
    return day + (JUMP if up else 0.0) + random.Random(round(t)).gauss(0, 1)


class _Prometheus(http.server.BaseHTTPRequestHandler):
    """``/api/v1/query_range`` over the cycle, on the requested grid."""

    def do_GET(self) -> None:
        asked = parse_qs(urlparse(self.path).query)
        start, end = float(asked["start"][0]), float(asked["end"][0])
        step = float(asked["step"][0])
        first = math.ceil(start / step) * step
        values = []
        t = first
        while t <= end:
            values.append([t, f"{_value(t):.3f}"])
            t += step
        labels = {"__name__": "orders_per_minute", "service": "orders"}
        body = json.dumps(
            {
                "status": "success",
                "data": {"resultType": "matrix", "result": [{"metric": labels, "values": values}]},
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def _cli(args: list[str], home: Path) -> str:
    cli = Path(sys.executable).with_name("seenbefore")
    env = {**os.environ, "SEENBEFORE_HOME": str(home), "SEENBEFORE_EMBEDDER": "none"}
    done = subprocess.run(
        [str(cli), *args], capture_output=True, text=True, env=env, timeout=300, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"seenbefore {' '.join(args)} failed:\n{done.stderr[-2000:]}")
    return done.stdout


def _detect(url: str, step: int, history: str, home: Path) -> list[float]:
    """The starts (epoch seconds) of the anomalies ``detect --json`` reports."""
    args = ["detect", "--prometheus", url, "--query", "orders_per_minute"]
    args += ["--since", SINCE, "--step", f"{step}s", "--history", history, "--json"]
    report: dict[str, Any] = json.loads(_cli(args, home))
    return [dt.datetime.fromisoformat(a["start"]).timestamp() for a in report["anomalies"]]


def _watch(url: str, step: int, history: str, home: Path) -> list[float]:
    """The starts of the anomalies ``watch --once`` prints (a new state each run)."""
    with tempfile.TemporaryDirectory() as tmp:
        args = ["watch", "--prometheus", url, "--query", "orders_per_minute", "--once"]
        args += ["--interval", f"{step}s", "--since", SINCE, "--history", history]
        args += ["--lag", "1ms", "--state", str(Path(tmp) / "state.json")]
        said = _cli(args, home)
    return [
        dt.datetime.strptime(m, "%Y-%m-%d %H:%M:%S").replace(tzinfo=dt.UTC).timestamp()
        for m in WATCHED.findall(said)
    ]


RUNS = (
    ("detect", "sine", ("1d", "0")),
    ("detect", "opening", ("1d", "0")),
    ("watch", "sine", ("1d", "18h")),
    ("watch", "opening", ("1d", "18h")),
)


def run(url: str, home: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for command, family, histories in RUNS:
        _Cycle.family = family
        reported = _detect if command == "detect" else _watch
        for step, history in ((s, h) for s in STEPS for h in histories):
            cell = {"runs": 0, "false_anomalies": 0, "step_found": 0, "delays": []}
            for k in range(PHASES):
                _Cycle.phase_s = k * DAY_S / PHASES
                for jump in (False, True):
                    now = time.time()
                    _Cycle.jump_at = (now - JUMP_BEFORE_END_S) // step * step if jump else None
                    starts = reported(url, step, history, home)
                    hit = []
                    if _Cycle.jump_at is not None:
                        hit = [s for s in starts if abs(s - _Cycle.jump_at) <= 2 * step]
                        cell["step_found"] += bool(hit)
                        if hit:
                            cell["delays"].append(round((min(hit) - _Cycle.jump_at) / step))
                    cell["false_anomalies"] += len(starts) - len(hit)
                    cell["runs"] += 1
            cell["steps"] = PHASES
            key = f"step {step}s, --history {history}"
            if (command, family) != ("detect", "sine"):  # the first cells' keys, as before
                key = f"{command}, {family}, {key}"
            out[key] = cell
            print(
                f"{key}: {cell['runs']} runs, false anomalies {cell['false_anomalies']}, "
                f"the +30 step found {cell['step_found']}/{PHASES} (delays {cell['delays']})",
                flush=True,
            )
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="write the results file")
    args = parser.parse_args(argv)
    record = provenance("benchmarks/detect_history.py", argv)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Prometheus)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    started = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory() as home:
            record["cells"] = run(url, Path(home))
    finally:
        server.shutdown()
        server.server_close()
    record["seconds"] = round(time.perf_counter() - started, 1)
    record["series"] = (
        "sine: daily cycle, amplitude 10, unit noise; opening: +30 from 09:00 to 17:00 every "
        "day, unit noise; --since 6h; 8 phases of the day, each without and with a +30 step "
        "two hours before the end; cells without a command and family: detect, sine"
    )
    if args.write:
        print(f"wrote {write_results(RESULTS / 'detect_history.json', record)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
