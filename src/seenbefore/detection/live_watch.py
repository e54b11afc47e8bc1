"""`seenbefore watch --prometheus URL --query Q`: the streaming ensemble over live series, one point
at a time, with state that survives a restart.

**Series.** Each series a query returns (keyed by its full label set) gets its own
:class:`~seenbefore.detection.online.OnlineEnsemble` with the shipped configuration as events use
it (``EVENT_PARAMS``: no rest after a fire) and a learning period of ``learning`` points
(``service_ensemble.DEFAULT_LEARNING`` unless given: the one default ``detect`` uses too).

**Backfill.** The first poll reads, per query, ``since`` and a day before it (``history``; at
most ``MAX_HISTORY_POINTS`` steps, or the learning period if longer; with ``history`` 0,
``since`` or the learning period back if longer), with ``query_range`` on a grid aligned to the
step, so a restarted watcher evaluates the same instants: the watcher learns from the history
Prometheus holds and is useful from its first minute, and with a day seen a daily cycle is
learned rather than reported (the same-time-yesterday check is armed from the first point it
reports). Only anomalies confirmed in the last ``since``, or older ones that still last, are
reported; the rest of the history's are returned apart (``PollResult.history``), for the
record, and are not routed. Later polls read only the steps after the last one read (to
now - lag); points at or before a series' last timestamp,
non-finite values and values beyond ±1e100 (:data:`~seenbefore.detection.values.MAX_MAGNITUDE`)
are skipped.

**Confirmation**: :class:`~seenbefore.detection.confirm.Confirmer`, the rule ``detect`` runs
(one metric per series here): a fire after the learning period opens an event with its baseline
frozen over the ``window`` points before it; 2 points 4 robust z from it (and, with a day seen,
from the value a day earlier) make **one** Anomaly, starting at the first of them. Fires that
close unconfirmed are counted and reported with why (``PollResult.unconfirmed``). An anomaly
lasts while its value stays 4 robust z from its baseline; a fire confirmed meanwhile is the same
incident and opens no new anomaly.

**Memory** per series: the ensemble's retained state (``OnlineEnsemble.retained``) and the
rule's (``Confirmer.retained``: the last ``window`` values, the last day of values at most one a
minute, the learning period's values until it ends, one open event). Long arrays are packed in
the state file (:mod:`~seenbefore.detection.packed`), and the file is gzip-compressed JSON
(:func:`~seenbefore.detection.watch_state.encode_state`). A state read back is checked field by
field before use (:mod:`~seenbefore.detection.watch_state`, which holds ``STATE_VERSION``).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seenbefore.detection.confirm import Confirmed, Confirmer, Rule, Unconfirmed
from seenbefore.detection.ensemble import EVENT_PARAMS, points_per_day
from seenbefore.detection.events import EventPolicy
from seenbefore.detection.features import MIN_HISTORY, robust_level  # min values for a windowed z
from seenbefore.detection.online import OnlineEnsemble
from seenbefore.detection.service_ensemble import (
    DEFAULT_LEARNING,
    ENSEMBLE_POLICY,
    LEAD,
    WARMUP,
    WINDOW,
)
from seenbefore.detection.units import UNITS
from seenbefore.detection.values import in_range
from seenbefore.detection.watch_state import (
    MAX_SERIES,
    STATE_VERSION,
    check_watch_state,
    encode_state,
    read_state,
    series_key,
)
from seenbefore.errors import InputError
from seenbefore.types import Anomaly, MetricDeviation

# The first poll learns from a day of history before ``since``, so that a daily cycle has been
# seen (and the same-time-yesterday check armed) before the first point it reports; at most this
# many steps of it (a day at a 15 s step is 5,760; at 1 s, 10,000 steps are 2 h 47 min, and the
# check waits).
HISTORY = dt.timedelta(days=1)
MAX_HISTORY_POINTS = 10_000


def history_read(history: dt.timedelta, step: dt.timedelta, learning: int) -> dt.timedelta:
    """What a live read learns from before the window it reports (``watch``'s first poll,
    ``detect --prometheus URL``): ``history`` (at most ``MAX_HISTORY_POINTS`` steps) or the
    learning period if longer; none when ``history`` is 0."""
    if not history:
        return dt.timedelta(0)
    return max(min(history, step * MAX_HISTORY_POINTS), step * learning)


# (query, start, end, step) -> [{"metric": labels, "values": [[t, "v"], ...]}, ...]
Reader = Callable[[str, dt.datetime, dt.datetime, dt.timedelta], list[dict[str, Any]]]


@dataclass(frozen=True)
class WatchSettings:
    url: str
    queries: tuple[str, ...]
    step: dt.timedelta = dt.timedelta(seconds=60)
    since: dt.timedelta = dt.timedelta(hours=1)  # what the first poll reports (history before)
    lag: dt.timedelta = dt.timedelta(seconds=10)  # stay behind now: samples still arriving
    learning: int | None = None  # None: service_ensemble.DEFAULT_LEARNING
    window: int = WINDOW
    lead: int = LEAD
    policy: EventPolicy = ENSEMBLE_POLICY
    history: dt.timedelta = HISTORY  # learned from before ``since`` on the first poll

    @property
    def step_ms(self) -> int:
        return max(1, round(self.step.total_seconds() * 1000))

    @property
    def day(self) -> int:
        """Points in a day at this step: the same-time-yesterday check's distance."""
        return points_per_day(self.step.total_seconds()) or 1

    @property
    def learning_points(self) -> int:
        return self.learning if self.learning is not None else DEFAULT_LEARNING

    @property
    def probation(self) -> int:
        """The detector's probation: the learning period, or the ensemble's warm-up if longer
        (``service_ensemble.WARMUP``, as ``detect`` runs it)."""
        return max(self.learning_points, WARMUP)

    @property
    def backfill(self) -> dt.timedelta:
        """How far back the first poll reads: ``since``, and ``history`` before it (a day; at
        most ``MAX_HISTORY_POINTS`` steps, or the learning period if longer), so that what is
        reported has a day before it; with no history, ``since`` or the learning period if
        longer."""
        if not self.history:
            return max(self.since, self.step * self.learning_points)
        return self.since + history_read(self.history, self.step, self.learning_points)

    def rule(self) -> Rule:
        return Rule(
            policy=self.policy,
            learning=self.learning_points,
            window=self.window,
            lead=self.lead,
            day=self.day,
        )

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
    med, scale = robust_level(window)
    return (value - float(med)) / float(scale), float(med)


@dataclass
class Series:
    """One series' detector and its confirmation rule."""

    query: str
    labels: dict[str, str]
    detector: OnlineEnsemble
    confirmer: Confirmer
    last_ms: int | None = None
    seen: int = 0
    last_score: float = 0.0
    anomalies: int = 0
    unconfirmed: int = 0
    merged: int = 0  # fires confirmed while an anomaly lasted: part of it, not reported again

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
            "confirmer": self.confirmer.to_state(),
            "last_ms": self.last_ms,
            "seen": self.seen,
            "last_score": self.last_score,
            "anomalies": self.anomalies,
            "unconfirmed": self.unconfirmed,
            "merged": self.merged,
        }

    @classmethod
    def from_state(cls, state: Mapping[str, Any], rule: Rule) -> Series:
        labels = dict(state["labels"])
        name = labels.get("__name__", state["query"])
        return cls(
            query=state["query"],
            labels=labels,
            detector=OnlineEnsemble.from_state(state["detector"]),
            confirmer=Confirmer.from_state([name], rule, state["confirmer"]),
            last_ms=state["last_ms"],
            seen=int(state["seen"]),
            last_score=float(state["last_score"]),
            anomalies=int(state["anomalies"]),
            unconfirmed=int(state["unconfirmed"]),
            merged=int(state["merged"]),
        )


@dataclass(frozen=True)
class Fire:
    """A fire that closed unconfirmed, and why (for the watcher's output)."""

    series: str
    start: dt.datetime
    score: float
    why: str


@dataclass
class PollResult:
    points: int = 0  # new points scored
    seconds: float = 0.0  # spent scoring them (not reading)
    anomalies: list[Anomaly] = field(default_factory=list)
    unconfirmed: list[Fire] = field(default_factory=list)
    # confirmed in the backfill before the last ``since``: history learned from, not reported
    history: list[Anomaly] = field(default_factory=list)
    history_fires: int = 0  # unconfirmed fires there: counted, not listed
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
        """Read each query's new steps (the first time: the backfill) and score every new
        point as it comes."""
        s = self.settings
        now = now or dt.datetime.now(dt.UTC)
        end_ms = (round((now - s.lag).timestamp() * 1000) // s.step_ms) * s.step_ms
        result = PollResult()
        for query in s.queries:
            last = self.cursor.get(query)
            report_from = None  # stamps before it are history (the first poll's backfill)
            if last is None:
                since_ms = round(s.backfill.total_seconds() * 1000)
                start_ms = ((end_ms - since_ms) // s.step_ms) * s.step_ms
                report_from = end_ms - round(s.since.total_seconds() * 1000)
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
                scored = self._score(series, item.get("values", []), result, report_from)
                result.seconds += time.perf_counter() - started
                result.points += len(scored)
                result.scores.setdefault(key, []).extend(scored)
            self.cursor[query] = end_ms
        self.polls += 1
        return result

    def _new(self, query: str, labels: dict[str, str]) -> Series:
        s = self.settings
        detector = OnlineEnsemble(probation=s.probation, **EVENT_PARAMS)
        name = labels.get("__name__", query)
        return Series(
            query=query, labels=labels, detector=detector, confirmer=Confirmer([name], s.rule())
        )

    def _score(
        self,
        series: Series,
        values: Sequence[Any],
        result: PollResult,
        report_from: int | None = None,
    ) -> list[tuple[int, float]]:
        """Score ``values`` one point at a time; an anomaly confirmed at a stamp before
        ``report_from`` goes to ``result.history`` instead of ``result.anomalies``, unless it
        still lasts at the last of them (an incident older than ``since`` that is still going
        is reported)."""
        scored = []
        history: list[tuple[int, Anomaly]] = []
        for pair in sorted(values, key=lambda p: float(p[0])):
            ms, value = round(float(pair[0]) * 1000), float(pair[1])
            if (series.last_ms is not None and ms <= series.last_ms) or not in_range(value):
                continue
            series.last_ms = ms
            score = series.detector.update(value)
            for outcome in series.confirmer.update([value], score, ms):
                if isinstance(outcome, Confirmed) and outcome.joined:
                    series.merged += 1
                elif (
                    isinstance(outcome, Confirmed)
                    and report_from is not None
                    and (outcome.at < report_from)
                ):
                    history.append((outcome.start, self._anomaly(series, outcome)))
                elif isinstance(outcome, Confirmed):
                    series.anomalies += 1
                    result.anomalies.append(self._anomaly(series, outcome))
                elif isinstance(outcome, Unconfirmed):
                    series.unconfirmed += 1
                    if report_from is not None and outcome.start < report_from:
                        result.history_fires += 1  # the history's: learned from, not listed
                        continue
                    result.unconfirmed.append(
                        Fire(series.name, _at(outcome.start), outcome.score, outcome.why)
                    )
                # an anomaly is reported when it is confirmed; what its event adds later (Described)
                # and where it ends (Ended) are not reported again
            series.seen += 1
            series.last_score = score
            scored.append((ms, score))
        for start, anomaly in history:
            if start == series.confirmer.lasting:
                series.anomalies += 1
                result.anomalies.append(anomaly)
            else:
                result.history.append(anomaly)
        return scored

    def _anomaly(self, series: Series, found: Confirmed) -> Anomaly:
        started = _at(found.start)
        digest = hashlib.sha1(
            f"{series.service}{series_key(series.labels)}{started.isoformat()}".encode()
        ).hexdigest()[:10]
        return Anomaly(
            id=f"anom-{digest}",
            service=series.service,
            cloud=series.labels.get("cloud", ""),
            region=series.labels.get("region", ""),
            start=started,
            end=_at(found.at),
            score=round(float(found.score), 4),
            deviations=tuple(
                MetricDeviation(
                    metric=d.metric,
                    direction=d.direction,
                    value=float(d.value),
                    baseline=float(d.baseline),
                    zscore=float(d.zscore),
                    unit=UNITS.get(d.metric, ""),
                )
                for d in found.deviations
            ),
        )

    def learning(self) -> tuple[int, int] | None:
        """(points learned, points to learn) of the series furthest from done, while one is
        still learning; None when every series has learned (or none was seen yet)."""
        left = [s for s in self.series.values() if s.confirmer.learning_left > 0]
        if not left:
            return None
        least = min(left, key=lambda s: s.seen)
        return least.seen, self.settings.learning_points

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
        rule = settings.rule()
        watcher.series = {
            key: Series.from_state(value, rule) for key, value in state["series"].items()
        }
        return watcher

    def unconfirmed_fires(self) -> int:
        return sum(series.unconfirmed for series in self.series.values())

    def merged_fires(self) -> int:
        return sum(series.merged for series in self.series.values())


def _at(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)


def save_state(path: Path, state: Mapping[str, Any]) -> int:
    """Write ``state`` as gzip-compressed JSON
    (:func:`~seenbefore.detection.watch_state.encode_state`) atomically (a temporary file in the
    same folder, then a rename); the bytes written."""
    data = encode_state(state)
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
