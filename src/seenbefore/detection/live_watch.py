"""`seenbefore watch --prometheus URL --query Q`: the streaming ensemble over live series, one point
at a time, with state that survives a restart.

**Series.** Each series a query returns (keyed by its full label set) gets its own
:class:`~seenbefore.detection.online.OnlineEnsemble` with the shipped configuration as events use
it (``EVENT_PARAMS``: no rest after a fire) and a learning period of ``learning`` points (750 by
default: NAB's cap on its 15 %, since a live stream has no end to take 15 % of). Each poll reads,
per query, only the steps after the last one read (``query_range`` from last + step to now - lag,
on a grid aligned to the step, so a restarted watcher evaluates the same instants); points at or
before a series' last timestamp, non-finite values and values beyond ±1e100
(:data:`~seenbefore.detection.values.MAX_MAGNITUDE`) are skipped.

**Confirmation** (the rule of :mod:`~seenbefore.detection.service_ensemble`, for one series): a
point scored at or above the shipped threshold after the learning period opens an event; the
event stays open while scores stay >= 0.3 and closes after 10 points below. While it is open,
within its first ``lead`` (60) points, a point **deviates** when |robust z| >= 4 against the
``window`` (240) points before it (median, 1.4826 MAD, floored at 1 % of the median) -- or, for a
slow drift, against the learning period's level (when that is >= 10 and twice the windowed z, as
``build_anomalies`` does) -- and, once a day of points has been seen, also against the value
one day earlier (a daily ramp is no anomaly; with a step under a minute, the kept value nearest a
day earlier, at most ``day_stride`` points off). The event becomes **one** Anomaly when 2 points
have deviated; it starts at the first of them. Fires that close unconfirmed are counted
(``unconfirmed_fires``). An anomaly **lasts** while its value stays 4 robust z (in the scale it
was named in) from the baseline it was named against, in its direction, and -- with a day seen --
from the same time one day earlier: a fire confirmed meanwhile is the same incident (a new
extreme of a level shift that lasts) and opens no new anomaly, as ``build_anomalies`` joins it.

**Memory** per series: the ensemble's retained state (``OnlineEnsemble.retained``), the last
``window`` values, the last day of values (for the same-time-yesterday check), the learning
period's values until it ends, one open event, and the baseline of the anomaly that lasts. Long
arrays are packed in the state file (:mod:`~seenbefore.detection.packed`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import tempfile
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seenbefore.detection.ensemble import EVENT_PARAMS, points_per_day
from seenbefore.detection.events import EventPolicy
from seenbefore.detection.features import MIN_HISTORY, robust_level  # min values for a windowed z
from seenbefore.detection.online import OnlineEnsemble
from seenbefore.detection.packed import pack, unpack
from seenbefore.detection.service_ensemble import ENSEMBLE_POLICY
from seenbefore.detection.telemetry import UNITS
from seenbefore.detection.values import in_range
from seenbefore.detection.watch_state import (
    MAX_SERIES,
    STATE_VERSION,
    check_watch_state,
    read_state,
    series_key,
)
from seenbefore.errors import InputError
from seenbefore.types import Anomaly, MetricDeviation

DAY_SLOTS = (
    1440  # values kept for the day before: one a minute at most (a 1 s step keeps every 60th)
)

# (query, start, end, step) -> [{"metric": labels, "values": [[t, "v"], ...]}, ...]
Reader = Callable[[str, dt.datetime, dt.datetime, dt.timedelta], list[dict[str, Any]]]


@dataclass(frozen=True)
class WatchSettings:
    url: str
    queries: tuple[str, ...]
    step: dt.timedelta = dt.timedelta(seconds=60)
    since: dt.timedelta = dt.timedelta(hours=1)  # how far back the first poll reads
    lag: dt.timedelta = dt.timedelta(seconds=10)  # stay behind now: samples still arriving
    learning: int | None = None  # None: NAB's cap of 750 points, or a day of points if longer
    window: int = 240
    lead: int = 60
    policy: EventPolicy = ENSEMBLE_POLICY

    @property
    def step_ms(self) -> int:
        return max(1, round(self.step.total_seconds() * 1000))

    @property
    def day(self) -> int:
        """Points in a day at this step: the same-time-yesterday check's distance."""
        return points_per_day(self.step.total_seconds()) or 1

    @property
    def day_stride(self) -> int:
        """Every how many points the day of values keeps one (at most ``DAY_SLOTS`` kept)."""
        return -(-self.day // DAY_SLOTS)

    @property
    def learning_points(self) -> int:
        return self.learning if self.learning is not None else max(750, self.day)

    def identity(self) -> dict[str, Any]:
        """What a saved state must match to be continued."""
        return {
            "url": self.url.rstrip("/"),
            "queries": list(self.queries),
            "step_ms": self.step_ms,
            "learning": self.learning_points,
            "window": self.window,
        }


def robust_z(value: float, window: Sequence[float]) -> tuple[float, float]:
    """(z, baseline) of ``value`` against ``window``; (0, value) with under 5 values."""
    if len(window) < MIN_HISTORY:
        return 0.0, value
    med, scale = _level(window)
    return (value - med) / scale, med


def _level(values: Sequence[float]) -> tuple[float, float]:
    med, scale = robust_level(values)
    return float(med), float(scale)


@dataclass
class Series:
    """One series' detector and what the confirmation rule reads."""

    query: str
    labels: dict[str, str]
    detector: OnlineEnsemble
    recent: deque[float]
    day: deque[float]  # the last day of values, for the same-time-yesterday check
    head: list[float] = field(default_factory=list)  # the learning period, until it ends
    level: tuple[float, float] | None = None
    last_ms: int | None = None
    seen: int = 0
    last_score: float = 0.0
    anomalies: int = 0
    unconfirmed: int = 0
    event: dict[str, Any] | None = None
    hold: list[float] | None = None  # [baseline, scale, sign] while the last anomaly lasts

    @property
    def name(self) -> str:
        return self.labels.get("__name__", self.query)

    @property
    def service(self) -> str:
        return self.labels.get("service") or self.labels.get("job") or "prometheus"

    def to_state(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "labels": self.labels,
            "detector": self.detector.to_state(),
            "recent": pack(self.recent),
            "day": pack(self.day),
            "head": pack(self.head),
            "level": list(self.level) if self.level else None,
            "last_ms": self.last_ms,
            "seen": self.seen,
            "last_score": self.last_score,
            "anomalies": self.anomalies,
            "unconfirmed": self.unconfirmed,
            "event": self.event,
            "hold": self.hold,
        }

    @classmethod
    def from_state(cls, state: Mapping[str, Any], window: int, day: int) -> Series:
        level = state["level"]
        return cls(
            query=state["query"],
            labels=dict(state["labels"]),
            detector=OnlineEnsemble.from_state(state["detector"]),
            recent=deque(unpack(state["recent"]), maxlen=window),
            day=deque(unpack(state["day"]), maxlen=day),
            head=unpack(state["head"]),
            level=(float(level[0]), float(level[1])) if level else None,
            last_ms=state["last_ms"],
            seen=int(state["seen"]),
            last_score=float(state["last_score"]),
            anomalies=int(state["anomalies"]),
            unconfirmed=int(state["unconfirmed"]),
            event=state["event"],
            hold=state.get("hold"),  # absent in state files written before it existed
        )


@dataclass
class PollResult:
    points: int = 0  # new points scored
    seconds: float = 0.0  # spent scoring them (not reading)
    anomalies: list[Anomaly] = field(default_factory=list)
    scores: dict[str, list[tuple[int, float]]] = field(default_factory=dict)  # key -> (ms, s)


class Watcher:
    """Per-series streaming detection over polls of a Prometheus server."""

    def __init__(self, settings: WatchSettings, reader: Reader) -> None:
        self.settings = settings
        self.reader = reader
        self.series: dict[str, Series] = {}
        self.cursor: dict[str, int] = {}  # query -> the last instant read (epoch ms)
        self.polls = 0

    def poll(self, now: dt.datetime | None = None) -> PollResult:
        """Read each query's new steps and score every new point as it comes."""
        s = self.settings
        now = now or dt.datetime.now(dt.UTC)
        end_ms = (round((now - s.lag).timestamp() * 1000) // s.step_ms) * s.step_ms
        result = PollResult()
        for query in s.queries:
            last = self.cursor.get(query)
            if last is None:
                since_ms = round(s.since.total_seconds() * 1000)
                start_ms = ((end_ms - since_ms) // s.step_ms) * s.step_ms
            else:
                start_ms = last + s.step_ms
            if start_ms > end_ms:
                continue
            found = self.reader(query, _at(start_ms), _at(end_ms), s.step)
            for item in found:
                labels = {str(k): str(v) for k, v in dict(item.get("metric", {})).items()}
                key = series_key(labels)
                if key not in self.series and len(self.series) >= MAX_SERIES:
                    raise InputError(
                        f"query {query[:80]!r} brings the watched series past {MAX_SERIES:,} "
                        "(one detector and its state each); narrow the queries (a label "
                        "matcher, or sum by the labels you page on)"
                    )
                series = self.series.get(key) or self._new(query, labels)
                self.series[key] = series
                started = time.perf_counter()
                scored = self._score(series, item.get("values", []), result.anomalies)
                result.seconds += time.perf_counter() - started
                result.points += len(scored)
                result.scores.setdefault(key, []).extend(scored)
            self.cursor[query] = end_ms
        self.polls += 1
        return result

    def _new(self, query: str, labels: dict[str, str]) -> Series:
        s = self.settings
        detector = OnlineEnsemble(probation=s.learning_points, **EVENT_PARAMS)
        return Series(
            query=query,
            labels=labels,
            detector=detector,
            recent=deque(maxlen=s.window),
            day=deque(maxlen=s.day // s.day_stride),
        )

    def _score(
        self, series: Series, values: Sequence[Any], out: list[Anomaly]
    ) -> list[tuple[int, float]]:
        scored = []
        for pair in sorted(values, key=lambda p: float(p[0])):
            ms, value = round(float(pair[0]) * 1000), float(pair[1])
            if (series.last_ms is not None and ms <= series.last_ms) or not in_range(value):
                continue
            series.last_ms = ms
            score = series.detector.update(value)
            anomaly = self._confirm(series, ms, value, score)
            if anomaly is not None:
                out.append(anomaly)
            series.recent.append(value)
            if series.seen % self.settings.day_stride == 0:
                series.day.append(value)
            series.seen += 1
            series.last_score = score
            scored.append((ms, score))
        return scored

    def _confirm(self, series: Series, ms: int, value: float, score: float) -> Anomaly | None:
        """The confirmation rule (module docstring) for the point at index ``series.seen``."""
        s, p, t = self.settings, self.settings.policy, series.seen
        if series.level is None:
            series.head.append(value)
            if len(series.head) >= s.learning_points:
                series.level, series.head = _level(series.head), []
        if series.hold is not None and not self._lasts(series, value):
            series.hold = None
        event = series.event
        if event is None:
            if t < s.learning_points or score < p.open_at:
                return None
            event = series.event = {"start": t, "start_ms": ms, "quiet": 0, "score": score}
            event.update(confirmed=False, best=None, baseline=None, hits=0, first_ms=None)
        elif score >= p.close_below:
            event["quiet"] = 0
            event["score"] = max(event["score"], score)
        else:
            event["quiet"] += 1
            if event["quiet"] >= p.close_after:
                series.unconfirmed += 0 if event["confirmed"] else 1
                series.event = None
                return None
        if event["confirmed"] or t >= event["start"] + s.lead:
            return None
        z, baseline = self._deviation(series, value)
        if z is None:
            return None
        event["hits"] += 1
        if event["first_ms"] is None:
            event["first_ms"], event["baseline"] = ms, baseline
        if event["best"] is None or abs(z) > abs(event["best"][0]):
            event["best"] = [z, value]
        if event["hits"] < p.sustain:
            return None
        event["confirmed"] = True
        if series.hold is not None:  # the last anomaly's value never came back: the same one
            return None
        z, peak = event["best"]
        scale = abs(peak - event["baseline"]) / abs(z) if z else 0.0
        series.hold = [float(event["baseline"]), scale, 1.0 if z > 0 else -1.0] if scale else None
        series.anomalies += 1
        return self._anomaly(series, event, ms)

    def _lasts(self, series: Series, value: float) -> bool:
        """Whether the last anomaly's value is still away from where it was named against (and,
        with a day seen, from the same time one day earlier)."""
        assert series.hold is not None
        baseline, scale, sign = series.hold
        limit = self.settings.policy.deviation_z
        if (value - baseline) * sign / scale < limit:
            return False
        full_day = len(series.day) == series.day.maxlen
        return not full_day or abs(value - series.day[0]) / scale >= limit

    def _deviation(self, series: Series, value: float) -> tuple[float | None, float]:
        """(z, baseline) when ``value`` deviates (module docstring), else (None, baseline)."""
        p = self.settings.policy
        z, baseline = robust_z(value, series.recent)
        scale = _level(series.recent)[1] if len(series.recent) >= MIN_HISTORY else None
        if series.level is not None:
            level = (value - series.level[0]) / series.level[1]
            if abs(level) >= 10 and abs(level) > 2 * abs(z):
                z, baseline, scale = level, series.level[0], series.level[1]
        z = max(-50.0, min(50.0, z))  # as features.CLIP
        if abs(z) < p.deviation_z:
            return None, baseline
        full_day = len(series.day) == series.day.maxlen
        if scale is not None and full_day and abs(value - series.day[0]) / scale < p.deviation_z:
            return None, baseline  # no further from the same time one day earlier
        return z, baseline

    def _anomaly(self, series: Series, event: Mapping[str, Any], ms: int) -> Anomaly:
        z, value = event["best"]
        started = _at(event["first_ms"])
        digest = hashlib.sha1(
            f"{series.service}{series_key(series.labels)}{started.isoformat()}".encode()
        ).hexdigest()[:10]
        return Anomaly(
            id=f"anom-{digest}",
            service=series.service,
            cloud=series.labels.get("cloud", ""),
            region=series.labels.get("region", ""),
            start=started,
            end=_at(ms),
            score=round(float(event["score"]), 4),
            deviations=(
                MetricDeviation(
                    metric=series.name,
                    direction="up" if z > 0 else "down",
                    value=float(value),
                    baseline=float(event["baseline"]),
                    zscore=round(float(z), 2),
                    unit=UNITS.get(series.name, ""),
                ),
            ),
        )

    def to_state(self) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "settings": self.settings.identity(),
            "polls": self.polls,
            "cursor": self.cursor,
            "series": {key: series.to_state() for key, series in self.series.items()},
        }

    @classmethod
    def from_state(
        cls,
        state: Mapping[str, Any],
        settings: WatchSettings,
        reader: Reader,
        *,
        now: dt.datetime | None = None,
    ) -> Watcher:
        """The watcher ``to_state`` saved, once :func:`~seenbefore.detection.watch_state.
        check_watch_state` has found every field as these settings write it (InputError, naming
        the field, otherwise); ``now`` (the clock by default) bounds the cursors."""
        check_watch_state(state, settings, now=now)
        if state.get("version") != STATE_VERSION:
            raise InputError(
                f"watch state version {state.get('version')!r}; this build reads version "
                f"{STATE_VERSION}: give another --state (or delete it) to start afresh"
            )
        if state.get("settings") != settings.identity():
            raise InputError(
                f"the saved watch state is for {state.get('settings')}, not for "
                f"{settings.identity()}: give another --state to watch these queries"
            )
        watcher = cls(settings, reader)
        watcher.polls = int(state["polls"])
        watcher.cursor = {str(k): int(v) for k, v in state["cursor"].items()}
        watcher.series = {
            key: Series.from_state(value, settings.window, settings.day // settings.day_stride)
            for key, value in state["series"].items()
        }
        return watcher

    def unconfirmed_fires(self) -> int:
        return sum(series.unconfirmed for series in self.series.values())


def _at(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)


def save_state(path: Path, state: Mapping[str, Any]) -> int:
    """Write ``state`` as JSON atomically (a temporary file in the same folder, then a rename);
    the bytes written."""
    data = json.dumps(state, separators=(",", ":"), allow_nan=False).encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return len(data)


def load_state(path: Path) -> dict[str, Any] | None:
    """The saved state, or None when there is none yet (bounded in size, no NaN: see
    :func:`~seenbefore.detection.watch_state.read_state`)."""
    return read_state(path)


def prometheus_reader(url: str, *, timeout_s: float = 30.0) -> Reader:
    """The live reader: ``query_range`` on ``url`` (detection/prometheus_live.py)."""
    from seenbefore.detection.prometheus_live import fetch_series

    def read(
        query: str, start: dt.datetime, end: dt.datetime, step: dt.timedelta
    ) -> list[dict[str, Any]]:
        return fetch_series(url, query, start=start, end=end, step=step, timeout_s=timeout_s)

    return read
