"""The confirmation rule (detection/confirm.py), batch (``service_ensemble.confirm_service``, what
``detect`` runs for either detector) and live (Watcher): a fire becomes an anomaly only when a
metric deviates on ``sustain`` points and, once a day of points has been seen, also against the
same time one day earlier. A one-point blip and a daily ramp are not anomalies; a level shift
is, starting where it began, and lasts until it comes back."""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

import numpy as np

from seenbefore.detection import service_ensemble as ens
from seenbefore.detection.confirm import Rule
from seenbefore.detection.ensemble import median_step, points_per_day
from seenbefore.detection.events import EventPolicy
from seenbefore.detection.live_watch import Watcher, WatchSettings
from seenbefore.lab.nab import learning_period

DAY = 48  # points per day at a 30-minute step: small enough for fast tests
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
STEP = dt.timedelta(minutes=30)


MORNING, EVENING = 16, 40  # business hours, in points of the day


def daily(days: int, seed: int = 0) -> np.ndarray:
    """Traffic with business hours: 20 at night, 80 by day (the switch within one point), and
    small noise: the morning jump is far from the night before it, and the same as yesterday."""
    rng = np.random.default_rng(seed)
    hour = np.arange(days * DAY) % DAY
    level = np.where((hour >= MORNING) & (hour < EVENING), 80.0, 20.0)
    return level + rng.normal(0, 0.5, len(hour))


def _run(
    X: np.ndarray,
    fires: list[int],
    *,
    sustain: int = 2,
    day: int | None = None,
    window: int = 12,
    **kw: Any,
) -> ens.ServiceRun:
    """The rule over ``X`` with the detector firing (score 1) exactly at ``fires``."""
    X = X[:, None] if X.ndim == 1 else X
    scores = np.zeros(len(X))
    scores[fires] = 1.0
    rule = Rule(
        policy=EventPolicy(sustain=sustain), learning=20, window=window, day=day, join_any=True
    )
    return ens.confirm_service(
        service="svc",
        cloud="",
        region="",
        timestamps=[T0 + i * STEP for i in range(len(X))],
        metrics=kw.get("metrics", ["load"]),
        X=X,
        scores=scores,
        rule=rule,
    )


def _at(t: dt.datetime) -> int:
    return round((t - T0) / STEP)


def test_the_learning_period_never_depends_on_the_series_length() -> None:
    assert ens.learning_period() == ens.DEFAULT_LEARNING == 30  # detect, POST /v1/detect, watch
    assert ens.learning_period(1440) == 1440  # given: the simulator's clean day
    # NAB's harness keeps NAB's rule: 15 % of a file, or a day of points, at most half
    stamps = [T0 + i * dt.timedelta(minutes=1) for i in range(2880)]
    assert median_step(stamps) == 60.0 and points_per_day(60.0) == 1440
    assert learning_period(2880, 60.0) == 1440 and learning_period(2880, None) == 432
    assert learning_period(400, 60.0) == 200 and learning_period(40_000, 300.0) == 750


def test_a_one_point_blip_is_not_confirmed_with_sustain_two() -> None:
    x = 100 + np.random.default_rng(1).normal(0, 1, 200)
    x[150] += 30  # one point
    [once] = _run(x, [150], sustain=1).anomalies
    assert [d.metric for d in once.deviations] == ["load"] and _at(once.start) == 150
    twice = _run(x, [150])
    assert twice.anomalies == []  # the fire stays unconfirmed, and says why
    [fire] = twice.unconfirmed
    assert fire["why"] == "load deviated on 1 point only (needs |robust z| >= 4 on 2 points)"


def test_an_unconfirmed_fire_says_how_far_the_largest_move_went() -> None:
    x = 100 + np.random.default_rng(1).normal(0, 1, 200)
    x[150:156] += 1.0  # a small bump: never 4 robust z
    [fire] = _run(x, [150]).unconfirmed
    assert fire["why"].startswith("the largest move was load's, |robust z| ")
    assert fire["why"].endswith(" (needs |robust z| >= 4 on 2 points)")


def test_the_daily_ramp_is_not_an_anomaly_but_a_shift_is_and_starts_where_it_began() -> None:
    x = daily(4)
    morning = 3 * DAY + MORNING  # the jump up on day 4: far from the night before it
    shift = 3 * DAY + 30
    x[shift:] += 25
    [without] = _run(x, [morning, shift - 3]).anomalies  # the shift joins it, still lasting
    assert _at(without.start) == morning  # the windowed z alone confirms the ramp
    [moved] = _run(x, [morning, shift - 3], day=DAY).anomalies
    assert [d.metric for d in moved.deviations] == ["load"]  # the ramp is yesterday's ramp
    assert _at(moved.start) == shift  # the fire came 3 points early; the shift did not


def test_an_anomaly_lasts_while_its_metric_stays_shifted_and_repeat_fires_join_it() -> None:
    x = 100 + np.random.default_rng(3).normal(0, 1, 400)
    x[200:300] += 30  # up for 100 points, then back
    run = _run(x, [200, 240, 280, 350])
    [shifted] = run.anomalies
    assert _at(shifted.start) == 200
    assert _at(shifted.end) == 300  # the first point back, not the last fire
    assert run.joined == 2  # the fires at 240 and 280: repeats while it lasts, merged
    [later] = run.unconfirmed
    assert later["start"] == (T0 + 350 * STEP).isoformat()  # after it: its own event


def test_a_fire_on_another_metric_during_a_shift_joins_it_as_the_incident_spreads() -> None:
    rng = np.random.default_rng(4)
    X = 100 + rng.normal(0, 1, (400, 2))
    X[200:, 0] += 30  # load stays up to the end
    X[300:, 1] += 30  # errors follow 100 points later, while load is still up
    run = _run(X, [200, 300], metrics=["load", "errors"])
    [anomaly] = run.anomalies  # one incident, one anomaly, read as it began
    assert [d.metric for d in anomaly.deviations] == ["load"]
    assert _at(anomaly.start) == 200 and _at(anomaly.end) == 399
    assert run.joined == 1


class Replay:
    """A Prometheus reader over a fixed series on a 30-minute grid."""

    def __init__(self, x: np.ndarray) -> None:
        self.x = x

    def __call__(
        self, query: str, start: dt.datetime, end: dt.datetime, step: dt.timedelta
    ) -> list[dict[str, Any]]:
        first = max(0, math.ceil((start - T0) / STEP))
        last = min(len(self.x) - 1, math.floor((end - T0) / STEP))
        values = [[(T0 + i * STEP).timestamp(), f"{self.x[i]:.4f}"] for i in range(first, last + 1)]
        return [{"metric": {"__name__": "load", "service": "svc"}, "values": values}]


def watch_settings() -> WatchSettings:
    """A watcher over one series on the 30-minute grid, learning two days."""
    return WatchSettings(
        url="http://prom.test",
        queries=("load",),
        step=STEP,
        since=dt.timedelta(days=7),
        lag=dt.timedelta(0),
        learning=2 * DAY,
        window=12,
    )


def test_the_live_watcher_applies_the_same_rule() -> None:
    x = daily(6, seed=2)
    blip = 4 * DAY + 5
    x[blip] += 75  # one point, at night, beyond the day's range (the range member fires)
    shift = 5 * DAY + 20
    x[shift:] += 30
    settings = watch_settings()
    assert settings.day == DAY and settings.rule().day_stride == 1
    watcher = Watcher(settings, Replay(x))
    polled = watcher.poll(T0 + len(x) * STEP)
    [scores] = polled.scores.values()
    assert scores[blip][1] >= settings.policy.open_at  # the blip fires the detector ...
    starts = [round((a.start - T0) / STEP) for a in polled.anomalies]
    assert blip not in starts and watcher.unconfirmed_fires() >= 1  # ... but is not sustained
    assert any(shift <= s <= shift + 2 for s in starts), starts  # the shift, where it began
    days = {s // DAY for s in starts}
    assert days <= {5}, starts  # nothing on the ordinary days: the ramp is yesterday's ramp
    [series] = watcher.series.values()
    assert len(series.confirmer.day[0]) == DAY + series.confirmer.rule.back  # a day, and 3 more


def test_the_live_watcher_joins_a_fire_inside_a_lasting_shift_to_its_anomaly() -> None:
    x = daily(6, seed=2)
    shift, worse = 5 * DAY + 20, 5 * DAY + 26
    x[shift:] += 30
    x[worse:] += 30  # it gets worse, and stays: the same incident
    settings = watch_settings()
    watcher = Watcher(settings, Replay(x))
    polled = watcher.poll(T0 + len(x) * STEP)
    [scores] = polled.scores.values()
    assert scores[worse][1] >= settings.policy.open_at  # the escalation fires the detector
    [anomaly] = polled.anomalies
    assert shift <= round((anomaly.start - T0) / STEP) <= shift + 2
    [series] = watcher.series.values()
    assert series.confirmer.hold is not None  # still lasting at the end, kept in the state file
    assert (
        Watcher.from_state(watcher.to_state(), settings, Replay(x))
        .series[next(iter(watcher.series))]
        .confirmer.hold
        == series.confirmer.hold
    )


def test_a_step_on_a_daily_cycle_wider_than_it_is_confirmed_against_yesterday() -> None:
    """A +20 step on a cycle of amplitude 10 (noise 0.5) is about 2.4 robust z against a window
    that holds the cycle, so not a deviation there; with a day seen it is 20 from what yesterday
    says for that time, where the day-over-day differences spread about 0.7: it deviates."""
    t = np.arange(4 * DAY)
    x = 100 + 10 * np.sin(2 * np.pi * t / DAY) + np.random.default_rng(5).normal(0, 0.5, len(t))
    step = 3 * DAY + 20
    x[step:] += 20
    assert _run(x, [step], window=DAY).anomalies == []  # the window alone: the cycle's spread
    [found] = _run(x, [step], day=DAY, window=DAY).anomalies
    assert _at(found.start) == step
    [deviation] = found.deviations
    # against what yesterday says for that time: the step, give or take the noise
    assert deviation.direction == "up" and abs(deviation.value - deviation.baseline - 20) < 2


def test_an_incident_yesterday_does_not_make_todays_normal_values_an_anomaly() -> None:
    """Without a daily cycle (the window's scale is the noise's), a point is not judged against
    yesterday's value alone: yesterday's +8 for ten points does not make today's 100 a drop."""
    x = 100 + np.random.default_rng(6).normal(0, 1, 4 * DAY)
    x[2 * DAY + 20 : 2 * DAY + 30] += 8
    run = _run(x, [3 * DAY + 20], day=DAY, window=DAY)
    assert run.anomalies == [] and len(run.unconfirmed) == 1
