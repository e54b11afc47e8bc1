"""From per-point anomaly scores to anomaly events with the metrics that deviated."""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from seenbefore.detection.features import Array, window_features
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
) -> list[Anomaly]:
    """Events from ``scores`` -> Anomalies, describing each metric by its robust z-score in the
    event's first ``lead`` points against the baseline just before the event."""
    policy = policy or EventPolicy()
    _, zs, baselines = window_features(X, window=window, lag=3, season=None)
    if level_median is not None and level_scale is not None:
        # a slow drift (a leak) is followed by the rolling window; against the learned normal
        # it stands out, so describe each metric by whichever deviation is larger
        level = (X - level_median) / level_scale
        use_level = (np.abs(level) >= 10) & (np.abs(level) > 2 * np.abs(zs))
        zs = np.where(use_level, level, zs)
        baselines = np.where(use_level, level_median, baselines)
    out = []
    for a, b in find_events(scores, policy):
        head = slice(a, min(b, a + lead))
        deviations, normal = [], []
        for j, metric in enumerate(metrics):
            z = zs[head, j]
            k = int(np.argmax(np.abs(z)))
            peak = float(z[k])
            if abs(peak) >= policy.deviation_z:
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
        started = timestamps[a]
        digest = hashlib.sha1(f"{service}{started.isoformat()}".encode()).hexdigest()[:10]
        out.append(
            Anomaly(
                id=f"anom-{digest}",
                service=service,
                cloud=cloud,
                region=region,
                start=started,
                end=timestamps[min(b, len(timestamps) - 1)],
                score=round(float(scores[a:b].max()), 4),
                deviations=tuple(deviations),
                normal=tuple(normal),
            )
        )
    return out
