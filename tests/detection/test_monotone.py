"""An answer that only grows with evidence (issue 32): a change confirmed on a window stays
confirmed, with the same start, on every longer window that holds it, for ``detect`` (batch) and
``watch`` alike; the baseline a change is confirmed against is made of points before it; a clean
shift of 6 sigma is reported within 2 points whatever the run's length."""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seenbefore.detection import service_ensemble as ens
from seenbefore.detection.confirm import Confirmed, Confirmer, Rule, Unconfirmed
from seenbefore.detection.live_watch import Watcher, WatchSettings
from seenbefore.detection.pipeline import DetectionParams, detect
from seenbefore.detection.telemetry import read_csv

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def _csv(path: Path, x: np.ndarray, step_s: float = 15.0) -> Path:
    lines = ["timestamp,newcomer_queue_depth"] + [
        f"{(T0 + dt.timedelta(seconds=step_s * i)).isoformat()},{v:.4f}" for i, v in enumerate(x)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def _issue_step(seed: int, after: int) -> np.ndarray:
    """The issue's series: 56 points at 100 +- 1.5, then ``after`` points at 160 +- 1.5."""
    rng = np.random.default_rng(seed)
    return np.concatenate([100 + rng.normal(0, 1.5, 56), 160 + rng.normal(0, 1.5, 40)[:after]])


class Replay:
    """A Prometheus reader over a fixed series on a grid of ``step``."""

    def __init__(self, x: np.ndarray, step: dt.timedelta) -> None:
        self.x, self.step = x, step

    def __call__(
        self, query: str, start: dt.datetime, end: dt.datetime, step: dt.timedelta
    ) -> list[dict[str, Any]]:
        first = max(0, math.ceil((start - T0) / self.step))
        last = min(len(self.x) - 1, math.floor((end - T0) / self.step))
        values = [
            [(T0 + i * self.step).timestamp(), repr(float(self.x[i]))]
            for i in range(first, last + 1)
        ]
        return [{"metric": {"__name__": "load", "service": "svc"}, "values": values}]


def _watch(x: np.ndarray, step: dt.timedelta, polls: int = 1) -> tuple[list[int], Watcher]:
    """Anomaly starts (as indices) a watcher reports over ``x`` in ``polls`` polls."""
    settings = WatchSettings(
        url="http://prom.test",
        queries=("load",),
        step=step,
        since=step * (len(x) + 10),
        lag=dt.timedelta(0),
    )
    watcher = Watcher(settings, Replay(x, step))
    starts: list[int] = []
    for k in range(1, polls + 1):
        upto = len(x) * k // polls
        found = watcher.poll(T0 + (upto - 1) * step + dt.timedelta(milliseconds=1))
        starts += [round((a.start - T0) / step) for a in found.anomalies]
    return starts, watcher


def _batch(x: np.ndarray, step_s: float, **kw: Any) -> ens.ServiceRun:
    return ens.run_service(
        service="svc",
        cloud="",
        region="",
        timestamps=[T0 + dt.timedelta(seconds=step_s * i) for i in range(len(x))],
        metrics=["load"],
        X=np.asarray(x, dtype=np.float64)[:, None],
        learning=kw.pop("learning", ens.DEFAULT_LEARNING),
        step_seconds=step_s,
        **kw,
    )


def _starts(run: ens.ServiceRun, step_s: float) -> list[int]:
    return [round((a.start - T0).total_seconds() / step_s) for a in run.anomalies]


# -- the issue's step test ----------------------------------------------------------------------
def test_the_issues_step_is_found_on_every_window_and_nothing_before_it(tmp_path: Path) -> None:
    found = 0
    for seed in range(8):
        for after in (8, 12, 16, 24, 40):
            csv = _csv(tmp_path / f"orders-{seed}-{after}.csv", _issue_step(seed, after))
            report = detect(read_csv(csv), params=DetectionParams())
            starts = [round((a.start - T0).total_seconds() / 15) for a in report.anomalies]
            assert all(s >= 56 for s in starts), (seed, after, starts)  # nothing before it
            found += starts == [56]
    assert found == 40


def test_the_watcher_finds_the_issues_step_as_detect_does() -> None:
    step = dt.timedelta(seconds=15)
    for seed in range(8):
        starts, watcher = _watch(_issue_step(seed, 40), step, polls=4)
        assert starts == [56], (seed, starts)
        assert watcher.learning() is None  # 30 points learned long before the step


# -- a clean shift, fast ------------------------------------------------------------------------
def test_a_6_sigma_shift_is_reported_within_2_points_on_every_run_length() -> None:
    """Unit noise, then a shift of 6 (either sign) after 40 to 300 points, 100 runs: each is
    reported where it began, by its 3rd point in all but a few (a shifted point can land under
    4 robust z: N(6, 1) < 4 is 2.3 % of points), and the shortest window that holds the report
    reports it the same."""
    late = 0
    for before in (40, 56, 120, 300):
        for seed in range(25):
            rng = np.random.default_rng([before, seed])
            sign = 1.0 if seed % 2 else -1.0
            x = 100 + rng.normal(0, 1, before + 40)
            x[before:] += 6.0 * sign
            run = _batch(x, 60.0)
            [anomaly] = run.anomalies  # one report, the change
            assert round((anomaly.start - T0).total_seconds() / 60) in (before, before + 1)
            assert anomaly.deviations[0].direction == ("up" if sign > 0 else "down")
            at = run.confirmed_at[anomaly.id]
            assert before <= at <= before + 4, (before, seed, at)
            late += at > before + 2
            short = _batch(x[: at + 1], 60.0)  # just long enough to hold the report
            assert [short.confirmed_at[a.id] for a in short.anomalies] == [at]
    assert late <= 2  # measured: 1 of 100 (benchmarks/synthetic_families.py: the step family)


# -- the baseline is made of points before the event --------------------------------------------
def test_the_baseline_is_the_window_before_the_fire_and_later_points_do_not_move_it() -> None:
    """Hand-worked: 20 points alternating 99 and 101, 3 at 100 (what a fire looks back at),
    then a fire at point 23 with values 110 and 112. The baseline is the 20 points before the
    3: median 100, MAD 1, scale 1.4826; z = 10 / 1.4826 = 6.74 and 12 / 1.4826 = 8.09. What
    follows (500, 500) never changes the baseline it was confirmed against."""
    rule = Rule(policy=ens.ENSEMBLE_POLICY, learning=10, window=20, lead=5)
    confirmer = Confirmer(["load"], rule)
    values = [99.0, 101.0] * 10 + [100.0] * 3 + [110.0, 112.0, 500.0, 500.0]
    scores = [0.0] * 23 + [1.0, 0.0, 0.0, 0.0]
    outcomes = [o for t, v in enumerate(values) for o in confirmer.update([v], scores[t], t)]
    [confirmed] = [o for o in outcomes if isinstance(o, Confirmed)]
    assert (confirmed.start, confirmed.at) == (23, 24)
    [d] = confirmed.deviations
    assert d.baseline == 100.0 and d.zscore == round(12.0 / 1.4826, 2) == 8.09
    assert d.value == 112.0  # the peak when it was confirmed; 500 came after


def test_a_fire_looks_back_3_points_for_where_the_change_began() -> None:
    """The same, but the change began 2 points before the detector fired: it starts there."""
    rule = Rule(policy=ens.ENSEMBLE_POLICY, learning=10, window=20, lead=5)
    confirmer = Confirmer(["load"], rule)
    values = [99.0, 101.0] * 10 + [100.0, 110.0, 112.0, 111.0]
    scores = [0.0] * 23 + [1.0]  # fires at 23; 21 and 22 were already away
    outcomes = [o for t, v in enumerate(values) for o in confirmer.update([v], scores[t], t)]
    [confirmed] = [o for o in outcomes if isinstance(o, Confirmed)]
    assert (confirmed.start, confirmed.at) == (21, 23)  # reported at the fire, from 21
    assert confirmed.deviations[0].baseline == 100.0


def test_an_unconfirmed_fire_says_why() -> None:
    rule = Rule(policy=ens.ENSEMBLE_POLICY, learning=10, window=20, lead=5)
    confirmer = Confirmer(["load"], rule)
    values = [99.0, 101.0] * 10 + [110.0] + [100.0] * 12  # one point away, then back
    scores = [0.0] * 20 + [1.0] + [0.0] * 12
    outcomes = [o for t, v in enumerate(values) for o in confirmer.update([v], scores[t], t)]
    [fire] = [o for o in outcomes if isinstance(o, Unconfirmed)]
    assert fire.start == 20 and fire.end == 30  # closed after 10 quiet points
    assert fire.why == "load deviated on 1 point only (needs |robust z| >= 4 on 2 points)"


# -- the property, over random series -----------------------------------------------------------
FAMILIES = ("step", "spike", "ramp", "variance", "seasonal", "noise")


@st.composite
def series(draw: st.DrawFn) -> tuple[np.ndarray, float]:
    family = draw(st.sampled_from(FAMILIES))
    n = draw(st.integers(60, 260))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    sigma = draw(st.sampled_from([0.5, 1.0, 5.0]))
    x = 100 + rng.normal(0, sigma, n)
    at = draw(st.integers(31, n - 1))
    size = draw(st.floats(-15, 15)) * sigma
    step_s = 60.0
    if family == "step":
        x[at:] += size
    elif family == "spike":
        x[at : at + draw(st.integers(1, 4))] += size
    elif family == "ramp":
        x[at:] += size * np.minimum(1.0, np.arange(n - at) / draw(st.integers(5, 60)))
    elif family == "variance":
        x[at:] = 100 + (x[at:] - 100) * draw(st.floats(2, 6))
    elif family == "seasonal":  # a 48-point day at a 30-minute step, and a step
        step_s = 1800.0
        x += 8 * sigma * np.sin(2 * np.pi * np.arange(n) / 48)
        x[at:] += size
    return x, step_s


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(series(), st.floats(0.2, 0.95), st.sampled_from([None, 40]))
def test_detect_only_grows_with_evidence(
    drawn: tuple[np.ndarray, float], cut: float, probation: int | None
) -> None:
    """``probation`` 40 wakes every member (the default keeps the likelihood asleep for 750)."""
    x, step_s = drawn
    m = max(2, int(len(x) * cut))
    short, long = _batch(x[:m], step_s, probation=probation), _batch(x, step_s, probation=probation)
    longer = {a.start: a for a in long.anomalies}
    for a in short.anomalies:
        assert a.start in longer, (a.start, [b.start for b in long.anomalies])
        grown = {d.metric: d for d in longer[a.start].deviations}
        assert {d.metric for d in a.deviations} <= set(grown)  # what it names only grows
        for d in a.deviations:  # and so does its peak (a variance change may peak the other way)
            assert abs(d.zscore) <= abs(grown[d.metric].zscore)
        assert short.confirmed_at[a.id] == long.confirmed_at[longer[a.start].id]
    assert all(s >= ens.DEFAULT_LEARNING - 3 for s in _starts(long, step_s))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(series(), st.floats(0.2, 0.95), st.integers(1, 4))
def test_watch_only_grows_with_evidence_and_agrees_with_detect(
    drawn: tuple[np.ndarray, float], cut: float, polls: int
) -> None:
    x, step_s = drawn
    step = dt.timedelta(seconds=step_s)
    m = max(2, int(len(x) * cut))
    early, _ = _watch(x[:m], step)
    late, _ = _watch(x, step, polls)
    assert set(early) <= set(late)
    assert late == _starts(_batch(x, step_s), step_s)  # one rule: watch reports what detect does
