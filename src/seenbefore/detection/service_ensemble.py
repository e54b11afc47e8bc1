"""The NAB-scored streaming ensemble as the detector of a service with several metrics.

Per metric, :class:`~seenbefore.detection.ensemble.StreamingEnsemble` with its shipped
configuration as events use it (``EVENT_PARAMS``: the range seen so far, sequence novelty
through its anomaly likelihood, and ARTime; no rest after a fire, see ``EVENT_PARAMS``) scores
every point, from the first. The range member reports 1.0 for a
break, the likelihood NAB's log scale (0.5 = a tail of 1e-5), ARTime its confidence in a new
cluster; all on [0, 1], combined by max.

**Learning period** (:func:`~seenbefore.detection.ensemble.learning_period`): NAB's 15 % of the
points (at most 750), or one day of points when that is longer, at most half the series: scored,
but no anomaly or rule hit opens in it.

**Service score = the maximum of its metrics' scores at each point**: an anomaly on any one
metric is one on the service; no correction for the number of metrics is made in the score.
What keeps ten metrics' noise from paging is the confirmation below.

**Events** open at ``DEFAULT_THRESHOLD`` (the NAB threshold of the shipped configuration on the
51 dev files) and stay open while scores stay >= 0.3; one point is enough
(``min_points=1``); an incident's repeat fires stay one anomaly by the event's closing rule and
triage's dedupe, not by resting the scores.

**Confirmation**: an event becomes an anomaly only when some metric deviates in it as
:func:`~seenbefore.detection.events.build_anomalies` measures it: |robust z| >= 4 against the
window before (or the learning period's level, for a slow drift) **on at least 2 points** of the
event or of its first 10 points, and, once a day of history exists, **also against the same time
one day earlier** (a morning ramp is no anomaly). Those metrics are the ones the anomaly names,
and it starts at the first point one of them deviated. On the simulator's six services of ten
metrics each, without these two conditions single-point noise on one metric of ten (a new
extreme, a blip of network errors) and the daily ramp made 8-13 false alarms per 48 h run; with
them 0-1 (``benchmarks/detection.py`` prints both detectors, several seeds). Fires left
unconfirmed are counted in ``detect --json`` (``unconfirmed_fires``).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Sequence
from typing import Any

import numpy as np

from seenbefore.detection import ensemble
from seenbefore.detection.ensemble import DEFAULT_THRESHOLD, EVENT_PARAMS, StreamingEnsemble
from seenbefore.detection.events import EventPolicy
from seenbefore.detection.features import Array, robust_level

ENSEMBLE_POLICY = EventPolicy(open_at=DEFAULT_THRESHOLD, min_points=1, sustain=2)
COMBINE = "max over metrics of the per-metric ensemble score"
MIN_POINTS = 20


def learning_period(n: int, probation: int | None = None, step_seconds: float | None = None) -> int:
    """The given learning period, else :func:`ensemble.learning_period` for ``n`` points."""
    if probation is not None:
        return max(1, int(probation))
    return ensemble.learning_period(n, step_seconds)


def confirmation_season(n: int, step_seconds: float | None) -> int | None:
    """Points per day for the same-time-yesterday check, when the series spans more than a
    day; None otherwise (the windowed z alone confirms)."""
    day = ensemble.points_per_day(step_seconds)
    return day if day is not None and n > day else None


def score_service(X: Array, *, probation: int) -> tuple[Array, Array]:
    """(service score per point, per-metric scores of shape (points, metrics))."""
    X = np.asarray(X, dtype=np.float64)
    per_metric = np.column_stack(
        [
            StreamingEnsemble(probation=probation, **EVENT_PARAMS).fit(X[:, j]).scores_
            for j in range(X.shape[1])
        ]
    )
    return np.asarray(per_metric.max(axis=1), dtype=np.float64), per_metric


def learned_level(X: Array, probation: int) -> tuple[Array, Array]:
    """Median and robust scale of the learning period (as the Isolation Forest's ``level_``):
    lets the event builder describe a slow drift against what was learned."""
    return robust_level(np.asarray(X, dtype=np.float64)[: max(1, probation)])


def describe(
    name: str,
    *,
    timestamps: Sequence[dt.datetime],
    learning: int,
    parameters: dict[str, Any],
    note: str,
) -> dict[str, Any]:
    """What ran, for ``detect --json``: the detector, its settings and its learning period."""
    n = len(timestamps)
    learning = min(learning, n)
    span = (timestamps[learning] - timestamps[0]) if 0 < learning < n else dt.timedelta(0)
    return {
        "name": name,
        "parameters": parameters,
        "scored_points": n if name == "ensemble" else n - learning,
        "learning_period": {
            "points": learning,
            "seconds": span.total_seconds(),
            "until": timestamps[learning].isoformat() if learning < n else None,
            "note": note,
        },
    }


def ensemble_parameters(probation: int) -> dict[str, Any]:
    return {
        **EVENT_PARAMS,
        "probation": probation,
        "combine_metrics": COMBINE,
        "event_policy": dataclasses.asdict(ENSEMBLE_POLICY),
    }
