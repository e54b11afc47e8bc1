"""The detector users run (``detect``'s default: the streaming ensemble and its confirmation rule)
on synthetic families of change, beside the Isolation Forest and a plain rolling z-score.

Each family is a series of unit noise around 100 with one change at a random point (seeded):

- ``step``: a shift of 6 sigma (either sign) that stays;
- ``ramp``: a rise of 10 sigma over 50 points that stays;
- ``spike``: 3 points at +10 sigma, then back;
- ``variance``: the noise grows fourfold and stays;
- ``seasonal_step``: a daily cycle (amplitude 10 sigma, 96 points a day at a 15-minute step,
  five days) with a 6 sigma step on the fifth day;
- ``counter_reset``: a counter rising 1 a point (noise 1) from 5,000 that resets to 0 and rises
  again;
- ``noise`` and ``seasonal_noise``: no change at all (false alarms only).

Per family and detector: **detection rate** (a report from 3 points before the change to 50
after it), **delay in points** (the point the detector reported at, minus the change's first
point: the ensemble reports when an event is confirmed, the rolling z-score at its alarm, the
Isolation Forest likewise), and **false alarms per 10,000
points** (reports outside the change: before it, or more than 60 points after a change that
ended). The detectors:

- ``ensemble``: ``service_ensemble.run_service`` with the default learning period (the product);
- ``iforest``: ``WindowIsolationForest`` trained on the first 30 % (``detect --detector iforest``
  on a CSV), through the same confirmation rule (events open at its 0.5);
- ``rolling_z``: |x - mean| / std over the 240 points before >= 4 (after 30 points), a new alarm
  when none was raised in the 10 points before.

Two checks of the product's detector alone follow: **the 6 sigma shift** (unit noise, then a
shift of 6 of either sign after 40, 56, 120 or 300 points, 25 seeds each: at which point after
the shift's first it is reported, and whether the shortest window holding that report reports
it too; then the same runs with the shift 6 times the larger of the unit and the sample standard
deviation of the points before it, which is what "6 sigma of the pre-event noise" says where a
run's noise came out wider than its unit) and **the issue's step** (issue 32: 56 points at
100 +- 1.5, then 8, 12, 16, 24 or 40 points at 160 +- 1.5, 8 seeds: windows where the step is
found where it began, and anomalies before it).

Writes benchmarks/results/synthetic_families.json (command, commit, machine, date).

    python benchmarks/synthetic_families.py [--seeds 8] [--learning N]
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from provenance import RESULTS, provenance, write_results
from seenbefore.detection import service_ensemble as ens
from seenbefore.detection.detector import WindowIsolationForest
from seenbefore.detection.events import EventPolicy

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
N = 600  # points of a non-seasonal series (one-minute step)
DAY15 = 96  # points a day at a 15-minute step
BEFORE, AFTER, TAIL = 3, 50, 60  # detection window around a change; false alarms after it
DETECTORS = ("ensemble", "iforest", "rolling_z")


@dataclass(frozen=True)
class Case:
    family: str
    seed: int
    x: np.ndarray
    step_s: float
    onset: int | None  # first point of the change (None: no change)
    end: int | None  # first point after a change that ends (None: it stays)


def _noise(rng: np.random.Generator, n: int) -> np.ndarray:
    return 100.0 + rng.normal(0.0, 1.0, n)


def _daily(rng: np.random.Generator, days: int) -> np.ndarray:
    t = np.arange(days * DAY15)
    return 100.0 + 10.0 * np.sin(2 * np.pi * t / DAY15) + rng.normal(0.0, 1.0, len(t))


def make_case(family: str, seed: int) -> Case:
    rng = np.random.default_rng([seed, FAMILIES.index(family)])
    onset = int(rng.integers(300, 450))
    if family in ("seasonal_step", "seasonal_noise"):
        x = _daily(rng, 5)
        at = 4 * DAY15 + int(rng.integers(0, DAY15 - 30))
        if family == "seasonal_step":
            x[at:] += 6.0 * rng.choice([-1.0, 1.0])
            return Case(family, seed, x, 900.0, at, None)
        return Case(family, seed, x, 900.0, None, None)
    x = _noise(rng, N)
    if family == "noise":
        return Case(family, seed, x, 60.0, None, None)
    if family == "step":
        x[onset:] += 6.0 * rng.choice([-1.0, 1.0])
    elif family == "ramp":
        x[onset:] += 10.0 * np.minimum(1.0, (np.arange(N - onset) + 1) / 50.0)
    elif family == "spike":
        x[onset : onset + 3] += 10.0
        return Case(family, seed, x, 60.0, onset, onset + 3)
    elif family == "variance":
        x[onset:] = 100.0 + 4.0 * (x[onset:] - 100.0)
    elif family == "counter_reset":
        # a long-running counter (seen from 5,000 on) that drops to 0 when its process restarts
        count = 5000.0 + np.arange(N, dtype=np.float64) + rng.normal(0.0, 1.0, N)
        count[onset:] = np.arange(N - onset, dtype=np.float64) + rng.normal(0.0, 1.0, N - onset)
        x = count
    return Case(family, seed, x, 60.0, onset, None)


FAMILIES = (
    "step",
    "ramp",
    "spike",
    "variance",
    "seasonal_step",
    "counter_reset",
    "noise",
    "seasonal_noise",
)


def _stamps(case: Case) -> list[dt.datetime]:
    return [T0 + dt.timedelta(seconds=case.step_s * i) for i in range(len(case.x))]


def ensemble_reports(case: Case, learning: int) -> list[int]:
    run = ens.run_service(
        service="svc",
        cloud="",
        region="",
        timestamps=_stamps(case),
        metrics=["value"],
        X=case.x[:, None],
        learning=learning,
        step_seconds=case.step_s,
    )
    return sorted(run.confirmed_at.values())


def iforest_reports(case: Case, learning: int) -> list[int]:
    """``detect --detector iforest`` on a CSV: trained on the first 30 %, then the one
    confirmation rule with events opening at the forest's 0.5."""
    n = len(case.x)
    train = max(30, int(0.3 * n))
    X = case.x[:, None]
    detector = WindowIsolationForest(window=240).fit(X[:train])
    scores = np.zeros(n)
    scores[train:] = detector.anomaly_score(X, start=train)
    run = ens.confirm_service(
        service="svc",
        cloud="",
        region="",
        timestamps=_stamps(case),
        metrics=["value"],
        X=X,
        scores=scores,
        rule=ens.rule(train, case.step_s, open_at=EventPolicy().open_at),
    )
    return sorted(run.confirmed_at.values())


def rolling_z_reports(case: Case, learning: int, window: int = 240, k: float = 4.0) -> list[int]:
    x, alarms, last = case.x, [], -(10**9)
    for t in range(30, len(x)):
        past = x[max(0, t - window) : t]
        sd = float(past.std())
        if sd > 0 and abs(x[t] - float(past.mean())) / sd >= k:
            if t - last > 10:
                alarms.append(t)
            last = t
    return alarms


RUNNERS: dict[str, Callable[[Case, int], list[int]]] = {
    "ensemble": ensemble_reports,
    "iforest": iforest_reports,
    "rolling_z": rolling_z_reports,
}


def score_case(case: Case, reports: Sequence[int]) -> dict[str, Any]:
    """Found (and the delay of the first report in the window), false alarms."""
    if case.onset is None:
        return {"found": None, "delay": None, "false_alarms": len(reports)}
    lo, hi = case.onset - BEFORE, case.onset + AFTER
    inside = [r for r in reports if lo <= r <= hi]
    until = None if case.end is None else case.end + TAIL
    false = [r for r in reports if r < lo or (until is not None and r > until)]
    delay = inside[0] - case.onset if inside else None
    return {"found": bool(inside), "delay": delay, "false_alarms": len(false)}


def summarise(rows: list[dict[str, Any]], points: int) -> dict[str, Any]:
    changes = [r for r in rows if r["found"] is not None]
    delays = [r["delay"] for r in changes if r["delay"] is not None]
    false = sum(r["false_alarms"] for r in rows)
    return {
        "series": len(rows),
        "detected": sum(bool(r["found"]) for r in changes) if changes else None,
        "changes": len(changes) or None,
        "detection_rate": round(sum(bool(r["found"]) for r in changes) / len(changes), 3)
        if changes
        else None,
        "delay_median": float(np.median(delays)) if delays else None,
        "delay_max": max(delays) if delays else None,
        "false_alarms": false,
        "points": points,
        "false_alarms_per_10k": round(10_000 * false / points, 2) if points else None,
    }


def shift_runs(learning: int, *, of_the_noise: bool = False) -> dict[str, Any]:
    """The 6 sigma shift, 100 runs (module docstring); ``of_the_noise``: 6 times the larger of
    the unit and the sample standard deviation of the points before the shift."""
    delays: list[int | None] = []
    same_on_shortest = 0
    for before in (40, 56, 120, 300):
        for seed in range(25):
            rng = np.random.default_rng([before, seed])
            x = 100 + rng.normal(0, 1, before + 40)
            sigma = max(1.0, float(x[:before].std(ddof=1))) if of_the_noise else 1.0
            x[before:] += (6.0 if seed % 2 else -6.0) * sigma
            case = Case("step", seed, x, 60.0, before, None)
            reports = [r for r in ensemble_reports(case, learning) if r >= before - BEFORE]
            delays.append(reports[0] - before if reports else None)
            if reports:
                shortest = Case("step", seed, x[: reports[0] + 1], 60.0, before, None)
                same_on_shortest += ensemble_reports(shortest, learning) == [reports[0]]
    found = [d for d in delays if d is not None]
    return {
        "runs": len(delays),
        "found": len(found),
        "by_delay": {str(d): found.count(d) for d in sorted(set(found))},
        "within_2_points": sum(d <= 2 for d in found),
        "same_on_the_shortest_window": same_on_shortest,
    }


def issue_step(learning: int) -> dict[str, Any]:
    """The issue's step test, 40 windows (module docstring)."""
    found = before = 0
    for seed in range(8):
        rng = np.random.default_rng(seed)
        head, tail = 100 + rng.normal(0, 1.5, 56), 160 + rng.normal(0, 1.5, 40)
        for after in (8, 12, 16, 24, 40):
            case = Case("step", seed, np.concatenate([head, tail[:after]]), 15.0, 56, None)
            run = ens.run_service(
                service="svc",
                cloud="",
                region="",
                timestamps=_stamps(case),
                metrics=["newcomer_queue_depth"],
                X=case.x[:, None],
                learning=learning,
                step_seconds=case.step_s,
            )
            starts = [_stamps(case).index(a.start) for a in run.anomalies]
            found += starts == [56]
            before += sum(s < 56 for s in starts)
    return {"windows": 40, "found_where_it_began": found, "anomalies_before_it": before}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--learning", type=int, default=None, help="ensemble learning period")
    parser.add_argument("--detectors", default=",".join(DETECTORS))
    parser.add_argument("--out", type=Path, default=RESULTS / "synthetic_families.json")
    args = parser.parse_args(argv)
    learning = ens.learning_period(args.learning)
    detectors = [d for d in args.detectors.split(",") if d]
    record: dict[str, Any] = {
        **provenance("benchmarks/synthetic_families.py", argv),
        "families": list(FAMILIES),
        "seeds": args.seeds,
        "ensemble_learning": learning,
        "windows": {"before": BEFORE, "after": AFTER, "tail": TAIL},
        "results": {},
    }
    print(f"{'family':15} {'detector':10} {'found':>7} {'delay med/max':>14} {'FA/10k':>8}")
    for detector in detectors:
        per_family: dict[str, Any] = {}
        started = time.perf_counter()
        for family in FAMILIES:
            rows, points = [], 0
            for seed in range(args.seeds):
                case = make_case(family, seed)
                rows.append({"seed": seed, **score_case(case, RUNNERS[detector](case, learning))})
                points += len(case.x)
            summary = summarise(rows, points)
            per_family[family] = {**summary, "runs": rows}
            found = f"{summary['detected']}/{summary['changes']}" if summary["changes"] else "-"
            delay = (
                f"{summary['delay_median']:g}/{summary['delay_max']}"
                if summary["delay_median"] is not None
                else "-"
            )
            print(
                f"{family:15} {detector:10} {found:>7} {delay:>14} "
                f"{summary['false_alarms_per_10k']:>8}"
            )
        everything = [r for f in per_family.values() for r in f["runs"]]
        total = sum(f["points"] for f in per_family.values())
        per_family["all"] = summarise(everything, total)
        per_family["seconds"] = round(time.perf_counter() - started, 1)
        record["results"][detector] = per_family
        a = per_family["all"]
        print(
            f"{'all':15} {detector:10} {a['detected']}/{a['changes']:<4} "
            f"{'':>14} {a['false_alarms_per_10k']:>8}"
        )
    record["six_sigma_shift"] = shift = shift_runs(learning)
    record["six_sigma_of_the_pre_event_noise"] = noise = shift_runs(learning, of_the_noise=True)
    record["issue_step"] = step = issue_step(learning)
    for name, runs in (("6 sigma shift", shift), ("6 sigma of the pre-event noise", noise)):
        print(
            f"{name}: found {runs['found']}/{runs['runs']}, within 2 points "
            f"{runs['within_2_points']}, by delay {runs['by_delay']}, the same on the shortest "
            f"window {runs['same_on_the_shortest_window']}"
        )
    print(
        f"the issue's step: found where it began in {step['found_where_it_began']} of "
        f"{step['windows']} windows, {step['anomalies_before_it']} anomalies before it"
    )
    print(f"wrote {write_results(args.out, record)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
