"""Streaming use of the Isolation Forest (the lab's ``forest`` member,
:class:`.members.ForestDetector`): each point is scored with a model fitted only on the past.

The model is fitted on the first ``probation`` points (NAB passes its probationary period, 15%
of the file, as its own detectors receive it), then refitted every ``refit_every`` points on
everything seen so far. Features at t read only points <= t, so appending future points never
changes an earlier score (tested).

Quietening after an alert lives in :func:`seenbefore.detection.ensemble.rest_after_fire`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from seenbefore.detection.detector import WindowIsolationForest
from seenbefore.detection.features import Array


@dataclass(frozen=True)
class StreamingParams:
    window: int = 288  # one day of 5-minute points
    season: int | None = 288
    lag: int = 3
    probation: int = 500  # points of history before the first fit
    refit_every: int | None = 288
    n_estimators: int = 100
    random_state: int = 0


def stream_scores(values: Array, params: StreamingParams) -> Array:
    x = np.asarray(values, dtype=np.float64)
    n = len(x)
    first_fit = min(n, max(2 * params.lag + 5, params.probation))
    scores = np.zeros(n)
    fit_end = first_fit
    detector = _fit(x[:fit_end], params)
    position = fit_end
    scores[:fit_end] = 0.0  # probationary: not scored (NAB ignores it too)
    while position < n:
        stop = n if params.refit_every is None else min(n, position + params.refit_every)
        # features for rows [position, stop) read rows <= each row only
        scores[position:stop] = detector.anomaly_score(x[:stop], start=position)
        position = stop
        if params.refit_every is not None and position < n:
            detector = _fit(x[:position], params)
    return scores


def _fit(x: Array, params: StreamingParams) -> WindowIsolationForest:
    return WindowIsolationForest(
        window=params.window,
        lag=params.lag,
        season=params.season,
        n_estimators=params.n_estimators,
        random_state=params.random_state,
    ).fit(x)
