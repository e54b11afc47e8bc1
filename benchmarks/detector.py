"""Detector scoring throughput (points/s), batch and streaming, on simulated telemetry.

Streaming scores one new point at a time from a buffer of the last ``window`` points (what a live
detector does); batch scores a whole series at once. Prints figures; asserts nothing.

    python benchmarks/detector.py
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from seenbefore.detection.detector import WindowIsolationForest
from seenbefore.detection.telemetry import simulate

REPO = Path(__file__).resolve().parents[1]
console = Console()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--stream-points", type=int, default=500)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks/results/detector.json")
    args = parser.parse_args()
    telemetry = simulate(
        scenarios=["connection_pool_exhaustion"], hours=48, warmup_hours=24, seed=0
    )
    metrics, X = telemetry.matrix("payments-api")
    rows = {}
    started = time.perf_counter()
    detector = WindowIsolationForest().fit(X[:1440])
    rows["fit (1440 points x 10 metrics)"] = {"seconds": time.perf_counter() - started}
    started = time.perf_counter()
    detector.anomaly_score(X, start=1440)
    seconds = time.perf_counter() - started
    rows["batch"] = {
        "points": len(X) - 1440,
        "seconds": seconds,
        "points_per_s": (len(X) - 1440) / seconds,
    }
    latencies = []
    history = detector.window + 5
    for t in range(1440, 1440 + args.stream_points):
        buffer = X[t - history : t + 1]
        clock = time.perf_counter()
        detector.anomaly_score(buffer, start=len(buffer) - 1)
        latencies.append(time.perf_counter() - clock)
    lat = np.array(latencies) * 1000
    rows["streaming"] = {
        "points": args.stream_points,
        "seconds": float(lat.sum() / 1000),
        "points_per_s": args.stream_points / float(lat.sum() / 1000),
        "p50_ms": float(np.percentile(lat, 50)),
        "p95_ms": float(np.percentile(lat, 95)),
        "p99_ms": float(np.percentile(lat, 99)),
    }
    table = Table(title=f"detector throughput ({len(metrics)} metrics, window {detector.window})")
    for col in ("mode", "points", "seconds", "points/s", "p50 ms", "p95 ms", "p99 ms"):
        table.add_column(col, justify="right")
    for name, r in rows.items():
        table.add_row(
            name,
            str(r.get("points", "-")),
            f"{r['seconds']:.2f}",
            f"{r['points_per_s']:.0f}" if "points_per_s" in r else "-",
            *(f"{r[k]:.2f}" if k in r else "-" for k in ("p50_ms", "p95_ms", "p99_ms")),
        )
    console.print(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
                "results": rows,
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
