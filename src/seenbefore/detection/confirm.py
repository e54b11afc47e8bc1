"""The confirmation rule, one point at a time: from a detector's score and a service's metric
values to anomalies. ``detect`` (batch), ``POST /v1/detect`` and ``watch`` all run this one
class, so an answer only grows with evidence: every decision at point t reads points <= t only,
and a change confirmed on a window stays confirmed, with the same start, on every longer window
that holds it (tests/detection/test_monotone.py checks it over random series).

**Learning.** The first ``learning`` points are learned from: nothing opens in them, and at
their end each metric's median and robust scale (its learned *level*) are kept.

**Events.** After that, a point scored at or above ``open_at`` opens an event -- and so, with a
day seen and no event open or anomaly lasting, does a point ``DAY_JUMP_Z`` robust scales of the
day-over-day differences from its value a day earlier, at a level the day before the last hours
reached (a *day jump*: a level normal at another time of day, which the score, blind to the time
of day, cannot see; :meth:`Confirmer._day_jump`); its **baseline**
is frozen then: each metric's median and robust scale (1.4826 MAD, floored at 1 % of the
median) over the ``window`` points *before* the fire (never a point of the event itself). The
event stays open while scores stay >= ``close_below`` and closes after ``close_after`` points
below it. A fire more than ``lead`` points after an unconfirmed event opened closes it and opens
a fresh one (a stale baseline confirms nothing).

**Confirmation.** While an event is open, within ``lead`` points of its fire, a metric's point
**deviates** when its robust z against the frozen baseline reaches ``deviation_z`` -- or, for a
slow drift that the baseline window followed, its z against the learned level reaches 10 and is
twice the windowed one; or, on a daily cycle, its windowed z is at least half ``deviation_z``
and its z against the same time yesterday reaches it -- and, once a day of points has been seen,
it is also ``deviation_z`` from the value one day earlier (a daily ramp is no anomaly), in the
same scale or, on a daily cycle, in the cycle's. *On a daily cycle* means: with ``MIN_DIFFS`` of
the last ``DIFFS`` day-over-day differences kept, the window's scale is at least
``SEASONAL_RATIO`` times theirs (a cycle wider than its noise: the window's scale holds the
cycle, and a real step is no further from yesterday than the cycle's spread); the z against
yesterday is then the point's distance from yesterday's value plus the differences' median, in
the window's scale divided by ``SEASONAL_RATIO``. The event becomes an anomaly when one metric
has deviated on ``sustain`` points, each within ``close_after`` points of the one before (a lone
earlier point is forgotten); the anomaly names the metrics that have, and starts at the first of
those points. A fire that closes without that is **unconfirmed**, with the reason
(:attr:`Unconfirmed.why`).

*A day earlier* is the value kept then or, where a day keeps one value every few points, each
of the two kept either side of then: a check against yesterday holds against both.

**Lasting.** An anomaly lasts until its metrics have been back for ``close_after`` points in a
row (it ends at the first of them); a metric is back when it is no longer ``deviation_z`` (in
the scale it was named in) from the baseline it was named against, in its direction, or -- with
a day seen -- from the value a day earlier; on a daily cycle it is not back while it stays
``deviation_z`` from the same time yesterday, the way it went. An event confirmed while it lasts
is the same incident when it names only metrics of that anomaly (a new extreme of a shift that
lasts); with ``join_any`` any event of the service confirmed meanwhile joins it, and what it
names is added.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from seenbefore.detection.events import EventPolicy
from seenbefore.detection.features import CLIP, MIN_HISTORY, robust_level
from seenbefore.detection.packed import pack, pack32, single, unpack
from seenbefore.detection.signature import KEY_METRICS

LEVEL_Z = 10.0  # a drift is described against the learned level when that z is at least this
# Values kept for the day before: 288, one every 5 minutes at most (at a 1-minute step every
# 5th point, at 1 s every 300th), so the same-time-yesterday check reads a value from 0-4 minutes
# either side of a day earlier. Version 1 states kept 1,440 (one a minute, a quarter of a saved
# series at its defaults); they are thinned on reading (Confirmer.from_state).
DAY_SLOTS = 288
DAY_SLOTS_V1 = 1440
# Day-over-day differences kept (one per kept day slot, the latest): once MIN_DIFFS are held,
# their robust scale says whether a series has a daily cycle wider than its noise (module
# docstring). There the window's scale holds the cycle and a real step is no further from
# yesterday than the cycle's spread; the differences' scale holds only the noise.
DIFFS = 48
MIN_DIFFS = 12
# A daily cycle: the window's scale at least this many times the day-over-day differences' (on a
# series without one the differences' scale is about 1.4 times the window's, and an incident
# yesterday must not make today's normal values look like one); the z against yesterday is
# measured in the window's scale divided by it.
SEASONAL_RATIO = 3.0
# A point this many robust scales of the day-over-day differences from its value a day earlier
# (plus their median) opens an event though the detector's score did not fire: a move to a level
# the detector has learned as normal at another time of day (business hours: the daytime level
# at night) is no surprise to it, only to the day before. Chosen once, not tuned; the event
# still needs the rule's confirmation (docs/detection.md has what it changed).
DAY_JUMP_Z = 8.0
# A day jump is measured in the larger of the differences' robust scale and their 90th
# percentile distance from their median over a Gaussian's (1.645): the same on Gaussian noise,
# but on a series that idles and bursts (a CPU at 0.1 % that reaches 90 % for a few points)
# the robust scale is the idle hours' and every burst was "a jump" of dozens of it. And it
# applies only on a daily cycle: the day's kept values spread (10th to 90th percentile, over a
# Gaussian's 2.563) at least SEASONAL_RATIO times the noise, the larger of that scale and the
# same tail scale of the day's point-to-point differences (a day's range made of bursts is no
# cycle). On NAB's 51 files the unnarrowed jump raised the confirmed false alarms from 141 to
# 1,046 (benchmarks/learning_period.py); docs/detection.md has the figures.
TAIL_Q, TAIL_Z = 0.9, 1.645
SPREAD_Q, SPREAD_Z = 0.1, 2.563
# 2: the windows held at float32 precision (and packed so: detection/packed.py) and 288 day slots
STATE_VERSION = 2
READS = (1, 2)  # the versions from_state reads


def day_stride(day: int | None, slots: int | None = None) -> int:
    """Every how many points a day of values keeps one (at most ``slots`` kept, by default
    ``DAY_SLOTS``)."""
    return -(-day // (slots or DAY_SLOTS)) if day else 1


@dataclass(frozen=True)
class Rule:
    """The numbers of the confirmation rule (module docstring)."""

    policy: EventPolicy
    learning: int
    window: int = 240
    lead: int = 60
    day: int | None = None  # points in a day: the same-time-yesterday check's distance
    back: int = 3  # points before a fire that can start its event (a detector may fire late)
    join_any: bool = False

    @property
    def day_stride(self) -> int:
        """Every how many points the day of values keeps one (at most ``DAY_SLOTS`` kept)."""
        return day_stride(self.day)

    @property
    def day_kept(self) -> int:
        return self.day // self.day_stride if self.day else 0

    def day_capacity(self, slots: int | None = None, *, bracket: bool = True) -> int:
        """Values a day of values holds, with one kept every ``day_stride(day, slots)`` points:
        a day, the slots of the ``back`` points a fire looks back at beyond it and, with a
        stride, one more: a day before each of them lies between two kept values (not so
        in version 1 states: ``bracket=False``)."""
        if not self.day:
            return 1
        stride = day_stride(self.day, slots)
        return self.day // stride + -(-self.back // stride) + (bracket and stride > 1)


@dataclass(frozen=True)
class Deviation:
    """A metric named by a confirmed event: its peak (value and z) against ``baseline``."""

    metric: str
    direction: Literal["up", "down"]
    value: float
    baseline: float
    zscore: float
    first: int  # stamp of its first deviating point


@dataclass(frozen=True)
class Confirmed:
    """An event that became an anomaly (``joined``: one that joined the anomaly that lasts,
    whose start is ``start``)."""

    start: int  # stamp of the first deviating point (of the anomaly it joined, when joined)
    at: int  # stamp of the point that confirmed it
    score: float
    deviations: tuple[Deviation, ...]
    normal: tuple[str, ...]
    joined: bool = False


@dataclass(frozen=True)
class Unconfirmed:
    """A fire that closed without a sustained deviation, and why."""

    start: int
    end: int
    score: float
    why: str


@dataclass(frozen=True)
class Ended:
    """The anomaly that started at ``start`` no longer lasts from stamp ``at`` on."""

    start: int
    at: int


@dataclass(frozen=True)
class Described:
    """A confirmed event at the end of its ``lead`` points (or when it closed, or the series
    ended): every metric that deviated on ``sustain`` points in it by then, at its peak; for
    the anomaly that started at ``start`` (``joined``: one it joined)."""

    start: int
    score: float
    deviations: tuple[Deviation, ...]
    normal: tuple[str, ...]
    joined: bool = False


Outcome = Confirmed | Unconfirmed | Ended | Described


@dataclass
class _Event:
    t: int  # index of the fire that opened it
    stamp: int
    score: float
    base: list[tuple[float, float] | None]  # per metric, frozen at the fire
    quiet: int = 0
    hits: list[int] = field(default_factory=list)
    first: list[int | None] = field(default_factory=list)
    # per metric: (z, value, baseline, scale, day scale) at its peak
    best: list[tuple[float, float, float, float, float] | None] = field(default_factory=list)
    largest: list[float] = field(default_factory=list)  # max |z| per metric
    yesterday: list[int] = field(default_factory=list)  # points held back by the day check
    last_hit: list[int] = field(default_factory=list)  # index of each metric's latest hit
    confirmed: bool = False
    anomaly: int | None = None  # start stamp of the anomaly it confirmed or joined
    joined: bool = False
    described: bool = False


def _fmt(v: float) -> str:
    return f"{v:.1f}"


class Confirmer:
    """The rule over one service's metrics: ``update(values, score, stamp)`` per point, in
    order; ``stamp`` is whatever the caller reads points by (an index, epoch milliseconds)."""

    def __init__(self, metrics: Sequence[str], rule: Rule) -> None:
        self.metrics = tuple(metrics)
        self.rule = rule
        k = len(self.metrics)
        self.t = 0
        self.recent: list[deque[float]] = [deque(maxlen=rule.window + rule.back) for _ in range(k)]
        self.stamps: deque[int] = deque(maxlen=max(1, rule.back))  # of the last ``back`` points
        self.day: list[deque[float]] = [deque(maxlen=rule.day_capacity()) for _ in range(k)]
        self.diffs: list[deque[float]] = [deque(maxlen=DIFFS) for _ in range(k)]
        # their (median, robust scale), derived from ``diffs`` when first asked after a change
        self._diff_level: list[tuple[float, float] | None] = [None] * k
        self._diff_tail: list[float | None] = [None] * k  # their tail scale (_day_jump)
        self.head: list[list[float]] = [[] for _ in range(k)]
        self.level: list[tuple[float, float]] | None = None
        self.event: _Event | None = None
        # the anomaly that lasts: its start stamp, metric -> (baseline, scale, sign)
        # the anomaly that lasts: its start, metric -> (baseline, scale, sign, day scale)
        self.hold: tuple[int, dict[int, tuple[float, float, float, float]]] | None = None
        self.ended: list[Ended] = []  # a lasting anomaly another one replaced (said next)
        self.back = 0  # points in a row the lasting anomaly's metrics have been back
        self.back_since: int | None = None  # stamp of the first of them

    # -- one point ---------------------------------------------------------------------------
    def update(self, values: Sequence[float], score: float, stamp: int) -> list[Outcome]:
        rule, p, t = self.rule, self.rule.policy, self.t
        out: list[Outcome] = []
        if self.level is None:
            for j, v in enumerate(values):
                self.head[j].append(float(v))
            if t + 1 >= rule.learning:
                self.level = [_level(h) for h in self.head]
                self.head = [[] for _ in self.metrics]
        if self.hold is not None:
            if self._lasts(values):
                self.back, self.back_since = 0, None
            else:
                self.back += 1
                self.back_since = stamp if self.back_since is None else self.back_since
                if self.back >= rule.policy.close_after:
                    out.append(Ended(self.hold[0], self.back_since))
                    self.hold, self.back, self.back_since = None, 0, None
        event = self.event
        if t >= rule.learning:
            fire = score >= p.open_at
            if not fire and event is None and self.hold is None and self._day_jump(values):
                fire, score = True, p.open_at  # a day jump (module docstring)
            if event is not None and fire and not event.confirmed and t >= event.t + rule.lead:
                out.append(self._unconfirmed(event, stamp, "no metric deviated within"))
                event = self.event = None
            if event is None and fire:
                event = self.event = self._open(t, stamp, score)
                found = self._look_back(event, stamp)
                if found is not None:
                    out.append(found)
            elif event is not None:
                if score >= p.close_below:
                    event.quiet = 0
                    event.score = max(event.score, score)
                else:
                    event.quiet += 1
                    if event.quiet >= p.close_after:
                        if not event.confirmed:
                            out.append(self._unconfirmed(event, stamp, ""))
                        elif not event.described:
                            out.append(self._described(event))
                        event = self.event = None
            if event is not None and t < event.t + rule.lead:
                found = self._look(event, values, stamp)
                if found is not None:
                    out.append(found)
            out[:0], self.ended = self.ended, []
            if (
                event is not None
                and event.confirmed
                and not event.described
                and t + 1 >= event.t + rule.lead
            ):
                out.append(self._described(event))
        for j, v in enumerate(values):
            kept = single(v)  # float32 precision, as saved: a restart changes nothing
            self.recent[j].append(kept)
            if t % rule.day_stride == 0:
                day = self.day[j]
                if rule.day and len(day) >= rule.day_kept:
                    self.diffs[j].append(single(kept - day[len(day) - rule.day_kept]))
                    self._diff_level[j] = self._diff_tail[j] = None
                day.append(kept)
        self.stamps.append(stamp)
        self.t += 1
        return out

    def _thinned(self, old: Sequence[float]) -> list[float]:
        """A version 1 day of values (one kept every ``day_stride(day, DAY_SLOTS_V1)`` points)
        as this build keeps it: for each point this stride keeps, the value kept at it or the
        last one before it (the same value whenever the new stride is a multiple of the old,
        as at every step of a minute or less)."""
        if not old or not self.rule.day:
            return list(old)
        was, now = day_stride(self.rule.day, DAY_SLOTS_V1), self.rule.day_stride
        last = (self.t - 1) // was * was  # the point the newest old value was kept at
        first = last - (len(old) - 1) * was
        keep = (self.t - 1) // now * now
        out: list[float] = []
        while keep >= first and len(out) < self.rule.day_capacity():
            out.append(old[(keep - first) // was])
            keep -= now
        return out[::-1]

    def _open(self, t: int, stamp: int, score: float) -> _Event:
        """An event at the fire at ``t``: each metric's baseline is the ``window`` points
        before the ``back`` points the fire looks back at (fewer than ``MIN_HISTORY``: none)."""
        k, back = len(self.metrics), min(self.rule.back, len(self.stamps))
        base = []
        for r in self.recent:
            before = list(r)[: len(r) - back][-self.rule.window :]
            base.append(_level(before) if len(before) >= MIN_HISTORY else None)
        return _Event(
            t=t,
            stamp=stamp,
            score=score,
            base=base,
            hits=[0] * k,
            first=[None] * k,
            best=[None] * k,
            largest=[0.0] * k,
            yesterday=[0] * k,
            last_hit=[-1] * k,
        )

    def _z(
        self, j: int, value: float, event: _Event, ago: int = 0
    ) -> tuple[float, float, float, float] | None:
        """(z, baseline, scale, day scale) of ``value`` for metric ``j`` in this event (module
        docstring). The day scale, what a day-over-day difference is measured in, is the
        larger of the two: a level learned at night must not make the daytime's ordinary
        difference from yesterday look large."""
        base = event.base[j]
        z = baseline = scale = math.nan
        if base is not None:
            baseline, scale = base
            z = (value - baseline) / scale
        day_scale = scale
        if self.level is not None:
            med, lscale = self.level[j]
            lz = (value - med) / lscale
            if abs(lz) >= LEVEL_Z and (math.isnan(z) or abs(lz) > 2 * abs(z)):
                z, baseline, scale = lz, med, lscale
                day_scale = lscale if math.isnan(day_scale) else max(day_scale, lscale)
        limit = self.rule.policy.deviation_z
        if not math.isnan(z) and limit / 2 <= abs(z) < limit:
            seasonal = self._nearest(j, value, scale, ago)
            if seasonal is not None and abs(seasonal[0]) >= limit:
                z, baseline, scale = seasonal
                day_scale = scale
        if math.isnan(z):
            return None
        return max(-CLIP, min(CLIP, z)), baseline, scale, day_scale

    def _yesterday(self, j: int, ago: int = 0) -> tuple[float, ...]:
        """Metric ``j``'s kept values around a day before the point ``ago`` points before the
        current one: the one kept then, else the two kept either side of then (one is kept
        every ``day_stride`` points, and at a sharp edge, a business day's closing, one side
        of it is still the other level); none before a day has been seen (or when the rule
        has no day). A check against yesterday holds only against each of them."""
        kept, rule = self.day[j], self.rule
        then = self.t - ago - (rule.day or 0)
        if not rule.day or not kept or then < 0:
            return ()
        stride = rule.day_stride
        newest = (self.t - 1) // stride * stride  # the point the newest kept value is of
        found = []
        for at in sorted({-(-then // stride) * stride, then // stride * stride}, reverse=True):
            back = (newest - at) // stride
            if 0 <= back < len(kept):
                found.append(kept[len(kept) - 1 - back])
        return tuple(found)

    def _nearest(
        self, j: int, value: float, scale: float, ago: int = 0
    ) -> tuple[float, float, float] | None:
        """:meth:`_seasonal` against the value a day earlier it is nearest to."""
        found = [self._seasonal(j, value, scale, b) for b in self._yesterday(j, ago)]
        kept = [f for f in found if f is not None]
        return min(kept, key=lambda f: abs(f[0])) if kept else None

    def _seasonal(
        self, j: int, value: float, scale: float, before: float
    ) -> tuple[float, float, float] | None:
        """(z, expected, scale) of ``value`` against ``before``, its value a day earlier, plus
        the median of the last day-over-day differences -- on a daily cycle: where ``scale``
        (the window's) is at least ``SEASONAL_RATIO`` times the differences' robust scale, and
        in ``scale`` divided by it; None with fewer than ``MIN_DIFFS`` differences kept, or
        without a cycle."""
        level = self._diffs(j, value)
        if level is None:
            return None
        med, spread = level
        if spread * SEASONAL_RATIO > scale:
            return None
        expected = before + med
        cycle = scale / SEASONAL_RATIO
        return (value - expected) / cycle, expected, cycle

    def _day_jump(self, values: Sequence[float]) -> bool:
        """Whether a metric has jumped: it is :meth:`_apart` from its value a day earlier
        (``MIN_DIFFS`` day-over-day differences kept), at a level the day's kept values
        reached before the last ``DIFFS`` of them: a level the detector has seen as normal at
        another time of day. Beyond that range the score is left to judge it, having learned
        from more than a day: a weekday's opening after a quiet weekend is such a move (the
        weekdays before it were the same), and so, for hours, is every point after it."""
        for j, v in enumerate(values):
            level = self._diffs(j, v)
            before = self._yesterday(j)
            if level is None or not before or not all(self._apart(v - b, level) for b in before):
                continue
            noise = max(level[1], self._tail(j))  # apart in it implies apart in level's: after
            if not all(self._apart(v - b, (level[0], noise)) for b in before):
                continue
            # the day before the last DIFFS kept points: a change of the last hours is not
            # a level seen at another time of day
            kept = list(self.day[j])[: -len(self.diffs[j])]
            if kept and min(kept) <= v <= max(kept) and self._on_a_cycle(j, noise):
                return True
        return False

    def _tail(self, j: int) -> float:
        """The day-over-day differences' 90th percentile distance from their median, over a
        Gaussian's (``TAIL_Q``, ``TAIL_Z``); derived once per change of them."""
        tail = self._diff_tail[j]
        if tail is None:
            d = np.asarray(self.diffs[j], dtype=np.float64)
            tail = float(np.quantile(np.abs(d - np.median(d)), TAIL_Q)) / TAIL_Z
            self._diff_tail[j] = tail
        return tail

    def _on_a_cycle(self, j: int, noise: float) -> bool:
        """Whether metric ``j``'s kept day spreads ``SEASONAL_RATIO`` times its noise (the
        larger of ``noise`` and its point-to-point differences' tail scale): a day jump's
        premise, a level normal at another time of day (``DAY_JUMP_Z``'s comment)."""
        day = np.asarray(self.day[j], dtype=np.float64)
        if day.size < 2:
            return False
        lo, hi = np.quantile(day, [SPREAD_Q, 1.0 - SPREAD_Q])
        rough = float(np.quantile(np.abs(np.diff(day)), TAIL_Q)) / TAIL_Z
        return bool((hi - lo) / SPREAD_Z >= SEASONAL_RATIO * max(noise, rough))

    @staticmethod
    def _apart(diff: float, level: tuple[float, float]) -> bool:
        """Whether a day-over-day difference is ``DAY_JUMP_Z`` robust scales from both their
        median and 0: a move beyond the day-over-day trend (the median follows a change that
        lasts for hours, and its end would look like a jump from it)."""
        med, spread = level
        return min(abs(diff - med), abs(diff)) >= DAY_JUMP_Z * spread

    def _diffs(self, j: int, value: float) -> tuple[float, float] | None:
        """(median, robust scale) of metric ``j``'s kept day-over-day differences, the scale
        floored at 1 % of ``value``; None with fewer than ``MIN_DIFFS`` kept. Derived once per
        change of them."""
        if len(self.diffs[j]) < MIN_DIFFS:
            return None
        level = self._diff_level[j]
        if level is None:
            level = self._diff_level[j] = _level(self.diffs[j])
        return level[0], max(level[1], 0.01 * abs(value) + 1e-6)

    def _day_apart(self, j: int, value: float, scale: float, ago: int = 0) -> bool:
        """Whether ``value`` (of the point ``ago`` points before the current one) is
        ``deviation_z`` from the value a day before it (True before a day has been seen): in
        ``scale``, or -- on a daily cycle -- in the cycle's scale from that value plus the
        differences' median (:meth:`_seasonal`)."""
        before = self._yesterday(j, ago)
        if not before:
            return True
        limit = self.rule.policy.deviation_z
        if all(abs(value - b) / scale >= limit for b in before):
            return True
        seasonal = self._nearest(j, value, scale, ago)
        return seasonal is not None and abs(seasonal[0]) >= limit

    def _look_back(self, event: _Event, now: int) -> Confirmed | None:
        """The points a new event's fire (at stamp ``now``) looks back at, oldest first."""
        back = min(self.rule.back, len(self.stamps))
        found = None
        for i in range(back, 0, -1):
            values = [r[len(r) - i] for r in self.recent]
            stamp = self.stamps[len(self.stamps) - i]
            found = self._look(event, values, stamp, ago=i, now=now) or found
        return found

    def _look(
        self,
        event: _Event,
        values: Sequence[float],
        stamp: int,
        ago: int = 0,
        now: int | None = None,
    ) -> Confirmed | None:
        """Whether ``values`` (of the point at ``stamp``, ``ago`` points before the current
        one, at ``now``) confirm the event."""
        now = stamp if now is None else now
        p = self.rule.policy
        for j, raw in enumerate(values):
            v = float(raw)
            found = self._z(j, v, event, ago)
            if found is None:
                continue
            z, baseline, scale, day_scale = found
            event.largest[j] = max(event.largest[j], abs(z))
            if abs(z) < p.deviation_z:
                continue
            if not self._day_apart(j, v, day_scale, ago):
                event.yesterday[j] += 1
                continue
            gap = self.t - ago - event.last_hit[j]
            if event.last_hit[j] >= 0 and gap > p.close_after and event.hits[j] < p.sustain:
                # a lone earlier hit is not where a sustained deviation began: start afresh
                event.hits[j], event.first[j], event.best[j] = 0, None, None
            event.last_hit[j] = self.t - ago
            event.hits[j] += 1
            if event.first[j] is None:
                event.first[j] = stamp
            best = event.best[j]
            if best is None or abs(z) > abs(best[0]):
                event.best[j] = (z, v, baseline, scale, day_scale)
        if event.confirmed or max(event.hits) < max(1, p.sustain):
            return None
        event.confirmed = True
        named = [j for j, h in enumerate(event.hits) if h >= max(1, p.sustain)]
        deviations = tuple(self._deviation(j, event) for j in named)
        normal = tuple(
            m
            for j, m in enumerate(self.metrics)
            if m in KEY_METRICS and j not in named and event.largest[j] < p.normal_z
        )
        start = min(d.first for d in deviations)
        if self.hold is not None:
            held_start, held = self.hold
            if self.rule.join_any or set(named) <= set(held):
                for j in named:
                    held.setdefault(j, self._holding(j, event))
                event.anomaly, event.joined = held_start, True
                return Confirmed(held_start, now, event.score, deviations, normal, joined=True)
        if self.hold is not None:  # another incident: the one that lasted is over for the rule
            self.ended.append(Ended(self.hold[0], now))
            self.back, self.back_since = 0, None
        self.hold = (start, {j: self._holding(j, event) for j in named})
        event.anomaly = start
        return Confirmed(start, now, event.score, deviations, normal)

    def _described(self, event: _Event) -> Described:
        """The confirmed ``event`` as it stands: every metric that has deviated on ``sustain``
        points (these join how long its anomaly lasts), at its peak."""
        p = self.rule.policy
        assert event.anomaly is not None
        event.described = True
        named = [j for j, h in enumerate(event.hits) if h >= max(1, p.sustain)]
        if self.hold is not None and self.hold[0] == event.anomaly:
            for j in named:
                self.hold[1].setdefault(j, self._holding(j, event))
        normal = tuple(
            m
            for j, m in enumerate(self.metrics)
            if m in KEY_METRICS and j not in named and event.largest[j] < p.normal_z
        )
        deviations = tuple(self._deviation(j, event) for j in named)
        return Described(event.anomaly, event.score, deviations, normal, event.joined)

    def finish(self) -> Described | None:
        """At the end of a series: the open confirmed event as it stands, if not yet said."""
        event = self.event
        if event is None or not event.confirmed or event.described:
            return None
        return self._described(event)

    def _holding(self, j: int, event: _Event) -> tuple[float, float, float, float]:
        best = event.best[j]
        assert best is not None
        z, _, baseline, scale, day_scale = best
        return baseline, scale, 1.0 if z > 0 else -1.0, day_scale

    def _deviation(self, j: int, event: _Event) -> Deviation:
        best, first = event.best[j], event.first[j]
        assert best is not None and first is not None
        z, v, baseline, _, _ = best
        return Deviation(
            metric=self.metrics[j],
            direction="up" if z > 0 else "down",
            value=v,
            baseline=baseline,
            zscore=round(z, 2),
            first=first,
        )

    def _lasts(self, values: Sequence[float]) -> bool:
        assert self.hold is not None
        limit = self.rule.policy.deviation_z
        for j, (baseline, scale, sign, day_scale) in self.hold[1].items():
            v = float(values[j])
            if (v - baseline) * sign / scale >= limit and self._day_apart(j, v, day_scale):
                return True
            seasonal = self._nearest(j, v, scale)  # on a daily cycle: still apart from yesterday
            if seasonal is not None and seasonal[0] * sign >= limit:
                return True
        return False

    def _unconfirmed(self, event: _Event, stamp: int, prefix: str) -> Unconfirmed:
        return Unconfirmed(event.stamp, stamp, event.score, self._why(event, prefix))

    def _why(self, event: _Event, prefix: str) -> str:
        p, rule = self.rule.policy, self.rule
        need = f"|robust z| >= {p.deviation_z:g} on {max(1, p.sustain)} points"
        if prefix:
            return f"{prefix} {rule.lead} points of the fire (needs {need})"
        if all(b is None for b in event.base) and self.level is None:
            return f"fewer than {MIN_HISTORY} points before it to compare with"
        parts = []
        for j, m in enumerate(self.metrics):
            if event.hits[j]:
                n = event.hits[j]
                parts.append(f"{m} deviated on {n} point{'' if n == 1 else 's'} only")
            elif event.yesterday[j]:
                parts.append(f"{m} moved, but no further than a day earlier")
        if not parts:
            j = int(np.argmax(event.largest))
            parts.append(
                f"the largest move was {self.metrics[j]}'s, |robust z| {_fmt(event.largest[j])}"
            )
        return f"{'; '.join(parts)} (needs {need})"

    # -- progress and state -------------------------------------------------------------------
    @property
    def learning_left(self) -> int:
        return max(0, self.rule.learning - self.t)

    @property
    def lasting(self) -> int | None:
        """The start stamp of the anomaly that lasts, if one does."""
        return self.hold[0] if self.hold is not None else None

    def retained(self) -> int:
        """How many numbers the rule keeps now."""
        kept = zip(self.recent, self.day, self.head, self.diffs, strict=True)
        held = sum(len(r) + len(d) + len(h) + len(f) for r, d, h, f in kept)
        return held + (len(self.metrics) * 8 if self.event else 0)

    def to_state(self) -> dict[str, Any]:
        event = self.event
        return {
            "version": STATE_VERSION,
            "t": self.t,
            "recent": [pack32(r) for r in self.recent],
            "day": [pack32(d) for d in self.day],
            "diffs": [pack32(d) for d in self.diffs],
            "head": [pack(h) for h in self.head],
            "level": [list(v) for v in self.level] if self.level else None,
            "event": None if event is None else _event_state(event),
            "hold": None
            if self.hold is None
            else [self.hold[0], {str(j): list(v) for j, v in self.hold[1].items()}],
            "back": [self.back, self.back_since],
            # the last points' stamps: a fire just after a restart looks back over them
            "stamps": list(self.stamps),
        }

    @classmethod
    def from_state(cls, metrics: Sequence[str], rule: Rule, state: Mapping[str, Any]) -> Confirmer:
        from seenbefore.errors import InputError

        version = state.get("version")
        if version not in READS:
            raise InputError(
                f"confirmation state version {version!r}; this build reads versions "
                f"{', '.join(map(str, READS))}: start the series afresh"
            )
        c = cls(metrics, rule)
        c.t = int(state["t"])
        for j in range(len(c.metrics)):
            c.recent[j].extend(single(v) for v in unpack(state["recent"][j]))
            day = [single(v) for v in unpack(state["day"][j])]
            c.day[j].extend(day if version == STATE_VERSION else c._thinned(day))
            if "diffs" in state:  # written since the differences' scale (older: none kept)
                c.diffs[j].extend(single(v) for v in unpack(state["diffs"][j]))
            c.head[j] = unpack(state["head"][j])
        level = state["level"]
        c.level = [(float(a), float(b)) for a, b in level] if level else None
        c.event = None if state["event"] is None else _event_load(state["event"])
        c.back, c.back_since = int(state["back"][0]), state["back"][1]
        c.stamps.extend(int(v) for v in state.get("stamps", ()))  # older states kept none
        hold = state["hold"]
        if hold is not None:
            c.hold = (
                int(hold[0]),
                {
                    int(j): (float(v[0]), float(v[1]), float(v[2]), float(v[3]))
                    for j, v in hold[1].items()
                },
            )
        return c


def _level(values: Sequence[float]) -> tuple[float, float]:
    med, scale = robust_level(np.asarray(values, dtype=np.float64))
    return float(med), float(scale)


def _event_state(event: _Event) -> dict[str, Any]:
    return {
        "t": event.t,
        "stamp": event.stamp,
        "score": event.score,
        "base": [list(b) if b else None for b in event.base],
        "quiet": event.quiet,
        "hits": event.hits,
        "first": event.first,
        "best": [list(b) if b else None for b in event.best],
        "largest": event.largest,
        "yesterday": event.yesterday,
        "last_hit": event.last_hit,
        "confirmed": event.confirmed,
        "anomaly": event.anomaly,
        "joined": event.joined,
        "described": event.described,
    }


def _event_load(state: Mapping[str, Any]) -> _Event:
    def pair(v: Any) -> tuple[float, float] | None:
        return (float(v[0]), float(v[1])) if v else None

    def five(v: Any) -> tuple[float, float, float, float, float] | None:
        return (float(v[0]), float(v[1]), float(v[2]), float(v[3]), float(v[4])) if v else None

    return _Event(
        t=int(state["t"]),
        stamp=int(state["stamp"]),
        score=float(state["score"]),
        base=[pair(b) for b in state["base"]],
        quiet=int(state["quiet"]),
        hits=[int(h) for h in state["hits"]],
        first=[None if f is None else int(f) for f in state["first"]],
        best=[five(b) for b in state["best"]],
        largest=[float(v) for v in state["largest"]],
        yesterday=[int(v) for v in state["yesterday"]],
        last_hit=[int(v) for v in state["last_hit"]],
        confirmed=bool(state["confirmed"]),
        anomaly=None if state["anomaly"] is None else int(state["anomaly"]),
        joined=bool(state["joined"]),
        described=bool(state["described"]),
    )
