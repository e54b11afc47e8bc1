"""The NAB-scored streaming ensemble as the detector of a service with several metrics.

Per metric, :class:`~seenbefore.detection.ensemble.StreamingEnsemble` with its shipped
configuration (``DEFAULT_PARAMS``) scores every point, from the first, on NAB's log scale of
the anomaly likelihood (1.0 for a tail of 0, 0.5 for a tail of 1e-5, 0.3 for 1e-3; a range
break of the ``spatial`` member counts 1.0). The learning (probationary) period is NAB's: 15 %
of the points, at most 750; the likelihood reports 0.5 (0.03 on the log scale) through it.

**Service score = the maximum of its metrics' scores at each point** (equivalently, the
smallest likelihood tail among the metrics): an anomaly on any one metric is one on the
service. No correction for the number of metrics is made.

**Mapping to the event policy**: none is needed: the log scale is what
:class:`~seenbefore.detection.events.EventPolicy` thresholds read. An event opens at 0.5 (tail
<= 1e-5, the ensemble's own ``fire`` level) and stays open while scores stay >= 0.3 (tail <=
1e-3). The ensemble quietens the rows after each fire and reports a run of improbable rows
loudly once, so one point at 0.5 is enough to open an event (``min_points=1``, where the
Isolation Forest needs 2). Events (and rules) open only after the learning period; the scores
there are still computed and reported.

**Confirmation**: an event becomes an anomaly only when at least one metric deviates in it
as :func:`~seenbefore.detection.events.build_anomalies` measures it (|robust z| >= the policy's
``deviation_z``, 4, against the window before, or against the learning period's level for a
slow drift); those metrics are the ones the anomaly names. The ensemble says *when* a point is
improbable, the z-score *what* deviated. Without it, the ``spatial`` member's range breaks on
plain noise (a new extreme 5 % beyond the range so far) opened an anomaly every few hundred
points; fires left unconfirmed are counted in ``detect --json`` (``unconfirmed_fires``).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Sequence
from typing import Any

import numpy as np

from seenbefore.detection.ensemble import DEFAULT_PARAMS, StreamingEnsemble
from seenbefore.detection.events import EventPolicy
from seenbefore.detection.features import Array, robust_level
from seenbefore.detection.nab_scoring import probationary_length

ENSEMBLE_POLICY = EventPolicy(min_points=1)
COMBINE = "max over metrics of the per-metric ensemble score (NAB log scale of the likelihood)"
MIN_POINTS = 20


def learning_period(n: int, probation: int | None = None) -> int:
    """NAB's probationary period for ``n`` points unless one is given."""
    return max(1, probationary_length(n) if probation is None else int(probation))


def score_service(X: Array, *, probation: int) -> tuple[Array, Array]:
    """(service score per point, per-metric scores of shape (points, metrics))."""
    X = np.asarray(X, dtype=np.float64)
    per_metric = np.column_stack(
        [
            StreamingEnsemble(probation=probation, **DEFAULT_PARAMS).fit(X[:, j]).scores_
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
        **DEFAULT_PARAMS,
        "probation": probation,
        "combine_metrics": COMBINE,
        "event_policy": dataclasses.asdict(ENSEMBLE_POLICY),
    }
