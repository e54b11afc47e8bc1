"""What the learning period costs and buys on real series: the product's detector (``detect``'s
default: the streaming ensemble per point and the confirmation rule) over NAB's labelled files we
hold (never realKnownCause), once per learning period.

Per learning period: **windows found** (labelled anomaly windows with a confirmed report inside,
out of the windows that start after the learning period), **false alarms per 10,000 points**
(reports outside every window, per point scored after the learning period) and **files with a
false alarm**. ``old`` is the rule shipped before issue 32 (NAB's 15 % of the file, or a day of
points when longer, at most half the file), which depends on the file's length.

Writes benchmarks/results/learning_period.json (command, commit, machine, date).

    python benchmarks/learning_period.py --data ../shared/data/nab/data \\
        --labels ../shared/data/nab/labels/combined_windows.json [--learning 30,100,old]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from provenance import RESULTS, provenance, write_results
from seenbefore.detection import ensemble
from seenbefore.detection import service_ensemble as ens
from seenbefore.lab.nab import learning_period
from seenbefore.lab.nab_io import read_series, read_windows


def one_file(path: Path, key: str, windows: Any, learning: str) -> dict[str, Any]:
    series = read_series(path, allow_repeated_timestamps=True)
    n = len(series.values)
    step = ensemble.median_step(series.timestamps)
    learn, _, warm = learning.partition("/")
    period = learning_period(n, step) if learn == "old" else int(learn)
    run = ens.run_service(
        probation=int(warm) if warm else None,
        service=key,
        cloud="",
        region="",
        timestamps=series.timestamps,
        metrics=["value"],
        X=series.values[:, None],
        learning=period,
        step_seconds=step,
    )
    stamps = series.timestamps
    index = {a.id: run.confirmed_at[a.id] for a in run.anomalies}
    reported = [stamps[i] for i in index.values()]
    scored_from = stamps[min(period, n - 1)]
    live = [(a, b) for a, b in windows if a >= scored_from]
    found = sum(any(a <= r <= b for r in reported) for a, b in live)
    false = [r for r in reported if not any(a <= r <= b for a, b in windows)]
    return {
        "file": key,
        "points": n,
        "learning": period,
        "scored": max(0, n - period),
        "windows": len(live),
        "found": found,
        "reports": len(reported),
        "false_alarms": len(false),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--labels", type=Path, required=True)
    parser.add_argument("--learning", default="30,100,old")
    parser.add_argument("--out", type=Path, default=RESULTS / "learning_period.json")
    args = parser.parse_args(argv)
    windows = read_windows(args.labels)
    files = sorted(
        k for k in windows if not k.startswith("realKnownCause/") and (args.data / k).is_file()
    )
    record: dict[str, Any] = {
        **provenance("benchmarks/learning_period.py", argv),
        "files": len(files),
        "results": {},
    }
    print(f"{len(files)} files")
    for learning in [v.strip() for v in args.learning.split(",") if v.strip()]:
        started = time.perf_counter()
        rows = [one_file(args.data / k, k, windows[k], learning) for k in files]
        scored = sum(r["scored"] for r in rows)
        false = sum(r["false_alarms"] for r in rows)
        summary = {
            "windows": sum(r["windows"] for r in rows),
            "found": sum(r["found"] for r in rows),
            "reports": sum(r["reports"] for r in rows),
            "false_alarms": false,
            "scored_points": scored,
            "false_alarms_per_10k": round(10_000 * false / scored, 2) if scored else None,
            "files_with_false_alarm": sum(r["false_alarms"] > 0 for r in rows),
            "seconds": round(time.perf_counter() - started, 1),
        }
        record["results"][learning] = {**summary, "per_file": rows}
        print(
            f"learning {learning:>5}: windows found {summary['found']}/{summary['windows']}, "
            f"{false} false alarms ({summary['false_alarms_per_10k']} per 10k points), "
            f"{summary['files_with_false_alarm']} files with one; {summary['seconds']} s"
        )
    print(f"wrote {write_results(args.out, record)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
