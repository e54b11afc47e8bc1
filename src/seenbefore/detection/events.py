"""From per-point anomaly scores to anomaly events with the metrics that deviated."""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from seenbefore.detection.features import Array, trailing_scale, window_features
from seenbefore.detection.signature import KEY_METRICS
from seenbefore.detection.telemetry import UNITS
from seenbefore.types import Anomaly, MetricDeviation


@dataclass(frozen=True)
class EventPolicy:
    open_at: float = 0.5  # anomaly score that opens an event (0.5 = beyond anything in training)
    close_below: float = 0.3  # hysteresis
    close_after: int = 10  # points below close_below that close it
    min_points: int = 2
    deviation_z: float = 4.0  # |robust z| for a metric to count as deviated
    normal_z: float = 2.0
    sustain: int = 1  # points at that |z| (within the event, or its first close_after points)


def seasonal_change(X: Array, season: int | None) -> Array | None:
    """Each point minus the same time one ``season`` earlier; +inf where there is no earlier
    season (the windowed z alone decides there). None without a season or a series shorter
    than one."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        X = X[:, None]
    if not season or len(X) <= season:
        return None
    out = np.full_like(X, np.inf)
    out[season:] = X[season:] - X[:-season]
    return out


def find_events(scores: Array, policy: EventPolicy) -> list[tuple[int, int]]:
    """[start, end) index ranges of events, with hysteresis."""
    events: list[tuple[int, int]] = []
    start: int | None = None
    quiet = 0
    last_high = 0
    for i, s in enumerate(scores):
        if start is None:
            if s >= policy.open_at:
                start, quiet, last_high = i, 0, i
            continue
        if s >= policy.close_below:
            quiet = 0
            if s >= policy.open_at:
                last_high = i
        else:
            quiet += 1
            if quiet >= policy.close_after:
                if last_high + 1 - start >= policy.min_points:
                    events.append((start, last_high + 1))
                start = None
    if start is not None and last_high + 1 - start >= policy.min_points:
        events.append((start, last_high + 1))
    return events


def build_anomalies(
    *,
    service: str,
    cloud: str,
    region: str,
    timestamps: Sequence[dt.datetime],
    metrics: Sequence[str],
    X: Array,
    scores: Array,
    window: int,
    policy: EventPolicy | None = None,
    lead: int = 60,
    level_median: Array | None = None,
    level_scale: Array | None = None,
    season: int | None = None,
) -> list[Anomaly]:
    """Events from ``scores`` -> Anomalies, describing each metric by its robust z-score in the
    event's first ``lead`` points against the baseline just before the event.

    A metric is named when its |z| reaches ``policy.deviation_z`` on at least
    ``policy.sustain`` points; with ``sustain`` > 1 those points are looked for over at least
    the event's first ``close_after`` points, however short the fire that opened it. With a
    ``season`` (points per day), a point counts only if it is also that far from the same time
    one season earlier (a morning ramp is not an anomaly). The anomaly starts at the first
    point where a named metric deviated."""
    policy = policy or EventPolicy()
    _, zs, baselines = window_features(X, window=window, lag=3, season=None)
    seasonal = seasonal_change(X, season)
    seasonal_raw = seasonal
    if seasonal is not None:  # in the unit of the trailing window's z
        seasonal = seasonal / trailing_scale(X, window)
    if level_median is not None and level_scale is not None:
        # a slow drift (a leak) is followed by the rolling window; against the learned normal
        # it stands out, so describe each metric by whichever deviation is larger
        level = (X - level_median) / level_scale
        use_level = (np.abs(level) >= 10) & (np.abs(level) > 2 * np.abs(zs))
        zs = np.where(use_level, level, zs)
        baselines = np.where(use_level, level_median, baselines)
        if seasonal is not None:  # and then in the learned unit
            seasonal = np.where(
                use_level, seasonal * trailing_scale(X, window) / level_scale, seasonal
            )
    out: list[Anomaly] = []
    held: _Held | None = None  # the last anomaly, while its named metrics stay deviated
    for a, b in find_events(scores, policy):
        # a sustained deviation is looked for while the event could still be open (it closes
        # after ``close_after`` quiet points), however short the fire that opened it
        last = b if policy.sustain <= 1 else max(b, a + policy.close_after)
        head = slice(a, min(len(X), last, a + lead))
        deviations, normal, first = [], [], None
        for j, metric in enumerate(metrics):
            z = zs[head, j]
            hit = np.abs(z) >= policy.deviation_z
            if seasonal is not None:  # and unlike the same time on the days before
                hit &= np.abs(seasonal[head, j]) >= policy.deviation_z
            if hit.any() and int(hit.sum()) >= policy.sustain:
                k = int(np.argmax(np.where(hit, np.abs(z), -1.0)))
                peak = float(z[k])
                at = int(np.argmax(hit))
                first = at if first is None else min(first, at)
                deviations.append(
                    MetricDeviation(
                        metric=metric,
                        direction="up" if peak > 0 else "down",
                        value=float(X[head, j][k]),
                        baseline=float(baselines[a, j]),
                        zscore=round(peak, 2),
                        unit=UNITS.get(metric, ""),
                    )
                )
            elif metric in KEY_METRICS and float(np.max(np.abs(z))) < policy.normal_z:
                normal.append(metric)
        # the anomaly starts where its first named metric first deviated
        start = a + (first or 0)
        named = {d.metric for d in deviations}
        if held is not None and start < held.until and named <= held.metrics:
            # a fire inside an anomaly whose metrics never came back: the same incident
            until = _held_until(X, metrics, held.anomaly.deviations, b, seasonal_raw, policy)
            held = dataclasses.replace(held, until=max(held.until, until))
            out[-1] = dataclasses.replace(
                held.anomaly,
                end=timestamps[min(held.until, len(timestamps) - 1)],
                score=max(held.anomaly.score, round(float(scores[a:b].max()), 4)),
            )
            held = dataclasses.replace(held, anomaly=out[-1])
            continue
        started = timestamps[start]
        digest = hashlib.sha1(f"{service}{started.isoformat()}".encode()).hexdigest()[:10]
        until = _held_until(X, metrics, deviations, max(b, start + 1), seasonal_raw, policy)
        anomaly = Anomaly(
            id=f"anom-{digest}",
            service=service,
            cloud=cloud,
            region=region,
            start=started,
            end=timestamps[min(until, len(timestamps) - 1)],
            score=round(float(scores[a:b].max()), 4),
            deviations=tuple(deviations),
            normal=tuple(normal),
        )
        out.append(anomaly)
        held = _Held(anomaly, until, named) if named else None
    return out


@dataclass(frozen=True)
class _Held:
    anomaly: Anomaly
    until: int  # index: the first point at which none of its metrics deviates any more
    metrics: set[str]


def _held_until(
    X: Array,
    metrics: Sequence[str],
    deviations: Sequence[MetricDeviation],
    after: int,
    seasonal_raw: Array | None,
    policy: EventPolicy,
) -> int:
    """The first index from ``after`` at which none of ``deviations``' metrics is still
    ``policy.deviation_z`` from the baseline it was named against (in the scale it was named
    in) and, with a season, from the same time one season earlier: an anomaly lasts while its
    metrics have not come back, not only while the detector's scores stay high."""
    still = np.zeros(max(0, len(X) - after), dtype=bool)
    for d in deviations:
        if not d.zscore:
            continue
        j = list(metrics).index(d.metric)
        scale = abs(d.value - d.baseline) / abs(d.zscore)
        if scale <= 0:
            continue
        apart = (X[after:, j] - d.baseline) * np.sign(d.zscore) / scale >= policy.deviation_z
        if seasonal_raw is not None:
            apart &= np.abs(seasonal_raw[after:, j]) / scale >= policy.deviation_z
        still |= apart
    back = np.flatnonzero(~still)
    return after + (int(back[0]) if len(back) else len(still))
