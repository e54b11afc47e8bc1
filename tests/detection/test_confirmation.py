"""The ensemble's confirmation rule, batch (build_anomalies) and live (Watcher): a fire becomes an
anomaly only when a metric deviates on ``sustain`` points and, once a day of history exists, also
against the same time one day earlier. A one-point blip and a daily ramp are not anomalies; a
level shift is, starting where it began."""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

import numpy as np

from seenbefore.detection.ensemble import learning_period, median_step, points_per_day
from seenbefore.detection.events import EventPolicy, build_anomalies, seasonal_change
from seenbefore.detection.live_watch import Watcher, WatchSettings

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


def _anomalies(x: np.ndarray, fires: list[int], policy: EventPolicy, season: int | None) -> Any:
    scores = np.zeros(len(x))
    scores[fires] = 1.0
    stamps = [T0 + i * STEP for i in range(len(x))]
    return build_anomalies(
        service="svc",
        cloud="",
        region="",
        timestamps=stamps,
        metrics=["load"],
        X=x[:, None],
        scores=scores,
        window=12,
        policy=policy,
        season=season,
    )


def test_the_learning_period_covers_a_day_when_the_step_says_so() -> None:
    stamps = [T0 + i * dt.timedelta(minutes=1) for i in range(2880)]
    assert median_step(stamps) == 60.0 and points_per_day(60.0) == 1440
    assert learning_period(2880, 60.0) == 1440  # a day, not NAB's 432
    assert learning_period(2880, None) == 432  # no step known: NAB's 15 %
    assert learning_period(400, 60.0) == 200  # never more than half the series
    assert learning_period(40_000, 300.0) == 750  # NAB's cap already holds more than a day


def test_a_one_point_blip_is_not_confirmed_with_sustain_two() -> None:
    x = 100 + np.random.default_rng(1).normal(0, 1, 200)
    x[150] += 30  # one point
    once = _anomalies(x, [150], EventPolicy(min_points=1), None)
    twice = _anomalies(x, [150], EventPolicy(min_points=1, sustain=2), None)
    assert [d.metric for d in once[0].deviations] == ["load"]
    assert twice[0].deviations == ()  # the fire stays unconfirmed


def test_the_daily_ramp_is_not_an_anomaly_but_a_shift_is_and_starts_where_it_began() -> None:
    x = daily(4)
    morning = 3 * DAY + MORNING  # the jump up on day 4: far from the night before it
    shift = 3 * DAY + 30
    x[shift:] += 25
    policy = EventPolicy(min_points=1, sustain=2)
    without = _anomalies(x, [morning], policy, None)
    assert [d.metric for d in without[0].deviations] == ["load"]  # the windowed z alone fires
    ramp, moved = _anomalies(x, [morning, shift - 3], policy, DAY)
    assert ramp.deviations == ()  # the same as yesterday at this time
    assert [d.metric for d in moved.deviations] == ["load"]
    assert moved.start == T0 + shift * STEP  # the fire came 3 points early; the shift did not
    change = seasonal_change(x[:, None], DAY)
    assert change is not None and math.isinf(change[0, 0]) and abs(change[DAY + 5, 0]) < 5


def test_an_anomaly_lasts_while_its_metric_stays_shifted_and_repeat_fires_join_it() -> None:
    x = 100 + np.random.default_rng(3).normal(0, 1, 400)
    x[200:300] += 30  # up for 100 points, then back
    policy = EventPolicy(min_points=1, sustain=2)
    [shifted, later] = _anomalies(x, [200, 240, 280, 350], policy, None)
    assert shifted.start == T0 + 200 * STEP
    assert shifted.end == T0 + 300 * STEP  # the first point back, not the last fire
    assert later.start == T0 + 350 * STEP and later.deviations == ()  # after it: its own event


def test_a_fire_on_another_metric_during_a_shift_is_its_own_anomaly() -> None:
    rng = np.random.default_rng(4)
    X = 100 + rng.normal(0, 1, (400, 2))
    X[200:, 0] += 30  # load stays up to the end
    X[300:, 1] += 30  # errors start later: another incident
    scores = np.zeros(400)
    scores[[200, 300]] = 1.0
    first, second = build_anomalies(
        service="svc",
        cloud="",
        region="",
        timestamps=[T0 + i * STEP for i in range(400)],
        metrics=["load", "errors"],
        X=X,
        scores=scores,
        window=12,
        policy=EventPolicy(min_points=1, sustain=2),
    )
    assert [d.metric for d in first.deviations] == ["load"] and first.end == T0 + 399 * STEP
    assert [d.metric for d in second.deviations] == ["errors"]  # not folded into the first
    assert second.start == T0 + 300 * STEP


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
