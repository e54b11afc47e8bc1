"""Detector scoring throughput (points/s), batch and streaming. Prints figures; asserts nothing.

- The Isolation Forest on simulated telemetry (10 metrics): batch scores a whole series at
  once; its streaming row scores one new point at a time from a buffer of the last ``window``
  points.
- The NAB ensemble on one series (a NAB file when --nab-file is given, else 20,000 simulated
  points): streaming is ``OnlineEnsemble.update`` one point at a time (what a live detector
  does); batch is ``StreamingEnsemble.fit`` on the whole series; each member alone in batch.
- The ensemble at scale (``--series``, default 1,000): that many ``OnlineEnsemble`` objects
  fed round-robin, one point per series per tick, as a live watcher over many series is; one
  core, points/s over every update, and memory per series (Python heap allocated by the
  ensembles, measured with tracemalloc, divided by the series; and the numbers each retains).
- The state file per series: what ``watch`` writes to disk (``encode_state``: compact JSON,
  gzip-compressed, all the series in one file as the watcher saves them), with the JSON before
  compression beside it; for the 1,000 series above (with the time to encode them, and size and
  time at other gzip levels), for a few run long (steady state), and for a ``watch`` series at
  its defaults (detector and confirmation rule).

    python benchmarks/detector.py [--series 1000 --ticks 1000]
        [--nab-file ../shared/data/nab/data/realTweets/Twitter_volume_AAPL.csv]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from seenbefore.detection.detector import WindowIsolationForest
from seenbefore.detection.watch_state import encode_state
from seenbefore.lab.simulator import simulate

REPO = Path(__file__).resolve().parents[1]
LIVE_LEARNING = 750
console = Console(width=120)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--stream-points", type=int, default=500)
    parser.add_argument("--nab-file", type=Path, default=None)
    parser.add_argument("--series", type=int, default=1000, help="concurrent series (scale row)")
    parser.add_argument("--ticks", type=int, default=2000, help="points per series (scale row)")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks/results/detector.json")
    args = parser.parse_args()
    telemetry = simulate(
        scenarios=["connection_pool_exhaustion"], hours=48, warmup_hours=24, seed=0
    )
    metrics, X = telemetry.matrix("payments-api")
    rows = {}
    started = time.perf_counter()
    detector = WindowIsolationForest().fit(X[:1440])
    rows["forest fit (1440 points x 10 metrics)"] = {"seconds": time.perf_counter() - started}
    started = time.perf_counter()
    detector.anomaly_score(X, start=1440)
    seconds = time.perf_counter() - started
    rows["forest batch"] = {
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
    rows["forest streaming: one point, buffer of window+5"] = {
        "points": args.stream_points,
        "seconds": float(lat.sum() / 1000),
        "points_per_s": args.stream_points / float(lat.sum() / 1000),
        "p50_ms": float(np.percentile(lat, 50)),
        "p95_ms": float(np.percentile(lat, 95)),
        "p99_ms": float(np.percentile(lat, 99)),
    }
    rows.update(ensemble_rows(args.nab_file))
    rows.update(scale_rows(args.series, args.ticks))
    rows.update(steady_rows())
    rows.update(watch_rows())
    table = Table(
        title=f"detector throughput (forest: {len(metrics)} metrics, window {detector.window})"
    )
    for col in (
        "mode",
        "points",
        "seconds",
        "points/s",
        "p50 ms",
        "p95 ms",
        "p99 ms",
        "heap bytes/series",
        "state bytes/series",
    ):
        table.add_column(col, justify="right")
    for name, r in rows.items():
        table.add_row(
            name,
            str(r.get("points", "-")),
            f"{r['seconds']:.2f}" if "seconds" in r else "-",
            f"{r['points_per_s']:.0f}" if "points_per_s" in r else "-",
            *(f"{r[k]:.2f}" if k in r else "-" for k in ("p50_ms", "p95_ms", "p99_ms")),
            f"{r['bytes_per_series']:.0f}" if "bytes_per_series" in r else "-",
            _state_bytes(r),
        )
    console.print(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "command": "python benchmarks/detector.py"
                + (f" --nab-file {args.nab_file}" if args.nab_file else "")
                + f" --series {args.series} --ticks {args.ticks}",
                "machine": {
                    "cpus": os.cpu_count(),
                    "python": platform.python_version(),
                    "load_average_at_end": os.getloadavg()[0],
                },
                "results": rows,
            },
            indent=2,
        )
    )
    return 0


def _state_bytes(row: dict[str, Any]) -> str:
    if "state_file_bytes_per_series" in row:
        return f"{row['state_file_bytes_per_series']:.0f}"
    by_points = row.get("state_file_bytes_per_series_by_points")
    return " / ".join(f"{v:.0f}" for v in by_points.values()) if by_points else "-"


def ensemble_rows(nab_file: Path | None) -> dict[str, dict[str, float]]:
    """Throughput of the NAB ensemble on one series, one core."""
    from seenbefore.detection.ensemble import DEFAULT_PARAMS, StreamingEnsemble
    from seenbefore.detection.online import OnlineEnsemble
    from seenbefore.lab.members import MEMBERS
    from seenbefore.lab.nab_io import read_series
    from seenbefore.lab.nab_scoring import probationary_length

    if nab_file is not None:
        x = read_series(nab_file, repair=True).values
        label = nab_file.name
    else:
        rng = np.random.default_rng(0)
        x = 10 + np.sin(np.arange(20_000) / 45) + rng.normal(0, 0.3, 20_000)
        x[15_000:15_020] += 5
        label = "simulated"
    n = len(x)
    console.print(f"ensemble series: {label}, {n} points")
    probation = probationary_length(n)
    out: dict[str, dict[str, float]] = {}
    online = OnlineEnsemble(probation=probation, **DEFAULT_PARAMS)
    latencies = np.empty(n)
    for i, v in enumerate(x.tolist()):
        clock = time.perf_counter()
        online.update(v)
        latencies[i] = time.perf_counter() - clock
    lat = latencies * 1000
    out["ensemble streaming: update() per point"] = {
        "points": n,
        "seconds": float(latencies.sum()),
        "points_per_s": n / float(latencies.sum()),
        "p50_ms": float(np.percentile(lat, 50)),
        "p95_ms": float(np.percentile(lat, 95)),
        "p99_ms": float(np.percentile(lat, 99)),
    }
    started = time.perf_counter()
    StreamingEnsemble(probation=probation, **DEFAULT_PARAMS).fit(x)
    seconds = time.perf_counter() - started
    out["ensemble batch: fit() on the series"] = {
        "points": n,
        "seconds": seconds,
        "points_per_s": n / seconds,
    }
    for name, cls in MEMBERS.items():
        params = {"probation": probation} if "probation" in cls().get_params() else {}
        started = time.perf_counter()
        cls(**params).fit(x)
        seconds = time.perf_counter() - started
        out[f"member {name} alone, batch"] = {
            "points": n,
            "seconds": seconds,
            "points_per_s": n / seconds,
        }
    return out


def scale_rows(series: int, ticks: int) -> dict[str, dict[str, Any]]:
    """``series`` online ensembles fed round-robin for ``ticks`` points each, one core."""
    import tracemalloc

    from seenbefore.detection.ensemble import DEFAULT_PARAMS
    from seenbefore.detection.online import OnlineEnsemble

    rng = np.random.default_rng(1)
    base = rng.uniform(5, 50, series)
    noise = rng.normal(0, 1, (ticks, series)) * (0.05 * base)
    phase = np.sin(np.arange(ticks)[:, None] / rng.uniform(20, 200, series)[None, :])
    x = (base * (1 + 0.2 * phase) + noise).tolist()
    # a live watcher's learning period (750, NAB's cap; a day of points when longer), not 15 %
    # of the run: ARTime downsamples by learning period / 104, so a short one costs far more
    probation = min(LIVE_LEARNING, ticks // 2)
    console.print(f"scale: {series} series x {ticks} points, learning period {probation}")
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    detectors = [OnlineEnsemble(probation=probation, **DEFAULT_PARAMS) for _ in range(series)]
    for row in x:
        for detector, value in zip(detectors, row, strict=True):
            detector.update(value)
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    # the same loop without tracemalloc's overhead, for the throughput figure
    detectors = [OnlineEnsemble(probation=probation, **DEFAULT_PARAMS) for _ in range(series)]
    started = time.perf_counter()
    for row in x:
        for detector, value in zip(detectors, row, strict=True):
            detector.update(value)
    seconds = time.perf_counter() - started
    states = {str(i): d.to_state() for i, d in enumerate(detectors)}  # one file, as watch saves
    started = time.perf_counter()
    text = _json(states)
    json_seconds = time.perf_counter() - started
    started = time.perf_counter()
    data = encode_state(states)
    encode_seconds = time.perf_counter() - started
    levels = {}  # what chose watch_state.STATE_LEVEL: gzip alone, on the same JSON
    for level in (1, 3, 4, 6, 9):
        started = time.perf_counter()
        size = len(gzip.compress(text, compresslevel=level, mtime=0))
        levels[str(level)] = {
            "bytes_per_series": size / series,
            "seconds": time.perf_counter() - started,
        }
    return {
        f"ensemble streaming: {series} series round-robin": {
            "points": series * ticks,
            "seconds": seconds,
            "points_per_s": series * ticks / seconds,
            "bytes_per_series": held / series,
            "retained_numbers_per_series": sum(d.retained() for d in detectors) / series,
            "state_file_bytes_per_series": len(data) / series,
            "json_bytes_per_series": len(text) / series,
            # one save of every series' state, once to_state has built it: JSON alone, and
            # JSON then gzip (what save_state writes)
            "state_json_seconds": json_seconds,
            "state_encode_seconds": encode_seconds,
            "state_gzip_levels": levels,
        }
    }


def steady_rows(series: int = 20, ticks: int = 12_000) -> dict[str, dict[str, Any]]:
    """Memory per series once every bounded buffer is full (the likelihood's 8,640-point
    history, ARTime's categories as they settle): a few series run long, a live watcher's
    state file (gzip-compressed JSON of them all, as written; the JSON beside it) per series."""
    from seenbefore.detection.ensemble import DEFAULT_PARAMS
    from seenbefore.detection.online import OnlineEnsemble

    rng = np.random.default_rng(2)
    base = rng.uniform(5, 50, series)
    t = np.arange(ticks)[:, None]
    x = base * (1 + 0.2 * np.sin(2 * np.pi * t / 288)) + rng.normal(0, 1, (ticks, series)) * (
        0.05 * base
    )
    detectors = [OnlineEnsemble(probation=750, **DEFAULT_PARAMS) for _ in range(series)]
    sizes: dict[int, float] = {}
    json_sizes: dict[int, float] = {}
    for i, row in enumerate(x.tolist(), start=1):
        for detector, value in zip(detectors, row, strict=True):
            detector.update(value)
        if i in (3_000, 9_000, ticks):
            states = {str(k): d.to_state() for k, d in enumerate(detectors)}
            sizes[i] = len(encode_state(states)) / series
            json_sizes[i] = len(_json(states)) / series
    console.print(
        f"steady state: {series} series x {ticks} points, state bytes {sizes} (JSON {json_sizes})"
    )
    return {
        f"ensemble state at steady state: {series} series x {ticks} points": {
            "points": series * ticks,
            "state_file_bytes_per_series_by_points": {str(k): v for k, v in sizes.items()},
            "json_bytes_per_series_by_points": {str(k): v for k, v in json_sizes.items()},
            "retained_numbers_per_series": sum(d.retained() for d in detectors) / series,
            "artime_categories_per_series": sum(
                len(d.artime_.art.labels) for d in detectors if d.artime_ is not None
            )
            / series,
        }
    }


def watch_rows(series: int = 5, ticks: int = 12_000) -> dict[str, dict[str, float]]:
    """What `seenbefore watch` saves for a series at its defaults (one-minute step): the
    detector's state and the confirmation rule's (its recent window and a day of values for
    the same-time-yesterday check), per series, after ``ticks`` points of a daily cycle. Each
    figure is a file as written (the series together, gzip-compressed JSON: the detectors
    alone, the rules alone, both), divided by the series; the JSON beside it."""

    from seenbefore.detection.confirm import Confirmer
    from seenbefore.detection.ensemble import DEFAULT_PARAMS
    from seenbefore.detection.live_watch import WatchSettings
    from seenbefore.detection.online import OnlineEnsemble

    settings = WatchSettings(url="http://127.0.0.1:9090", queries=("q",))
    step_ms = round(settings.step.total_seconds() * 1000)
    rng = np.random.default_rng(3)
    detectors: dict[str, dict[str, Any]] = {}
    confirmers: dict[str, dict[str, Any]] = {}
    for k in range(series):
        base, noise = rng.uniform(5, 50), rng.uniform(0.01, 0.1)
        t = np.arange(ticks)
        x = base * (1 + 0.2 * np.sin(2 * np.pi * t / settings.day)) + rng.normal(
            0, noise * base, ticks
        )
        detector = OnlineEnsemble(probation=settings.probation, **DEFAULT_PARAMS)
        confirmer = Confirmer(["m"], settings.rule())
        for i, v in enumerate(x.tolist()):
            confirmer.update([v], detector.update(v), i * step_ms)
        detectors[str(k)] = detector.to_state()
        confirmers[str(k)] = confirmer.to_state()
    both = {k: {"detector": detectors[k], "confirmer": confirmers[k]} for k in detectors}
    row: dict[str, float] = {"points": series * ticks}
    for key, states in (
        ("state_file_bytes_per_series", both),
        ("detector_bytes_per_series", detectors),
        ("confirmation_bytes_per_series", confirmers),
    ):
        row[key] = len(encode_state(states)) / series
        row[f"json_{key.removeprefix('state_file_')}"] = len(_json(states)) / series
    console.print(
        f"watch series state: {row['state_file_bytes_per_series']:.0f} B per series (detector "
        f"{row['detector_bytes_per_series']:.0f} B, confirmation "
        f"{row['confirmation_bytes_per_series']:.0f} B; JSON {row['json_bytes_per_series']:.0f} B)"
    )
    return {f"watch series state at its defaults: {series} series x {ticks} points": row}


def _json(state: Any) -> bytes:
    """The state's JSON before compression (as ``encode_state`` writes it), for comparison."""
    return json.dumps(state, separators=(",", ":"), allow_nan=False).encode()


if __name__ == "__main__":
    sys.exit(main())
