"""Streaming use of the detector: each point is scored with a model fitted only on the past.

The model is fitted on the first ``probation`` points (NAB passes its probationary period, 15%
of the file, as its own detectors receive it), then refitted every ``refit_every`` points on
everything seen so far. Features at t read only points <= t, so appending future points never
changes an earlier score (tested).

``dampen`` (optional, causal): after a point scores s, the next ``dampen`` points are scaled by
(1 - s) unless they are stranger: one alert per episode instead of a run of repeats.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Sequence
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
    dampen: int = 0
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
    return _dampen(scores, params.dampen) if params.dampen else scores


def _fit(x: Array, params: StreamingParams) -> WindowIsolationForest:
    return WindowIsolationForest(
        window=params.window,
        lag=params.lag,
        season=params.season,
        n_estimators=params.n_estimators,
        random_state=params.random_state,
    ).fit(x)


def _dampen(scores: Array, horizon: int) -> Array:
    out = scores.copy()
    recent: list[tuple[int, float]] = []
    for i, s in enumerate(scores):
        recent = [(j, v) for j, v in recent if i - j <= horizon]
        prior = max((v for _, v in recent), default=0.0)
        if s <= prior:
            out[i] = s * (1.0 - prior)
        recent.append((i, s))
    return out


def nab_stream(params: StreamingParams) -> Callable[[Array, Sequence[dt.datetime]], Array]:
    """A ``ScoreStream`` for the NAB runner: the probationary length is NAB's, from the file's
    length, as NAB hands it to every detector."""
    from seenbefore.detection.nab_scoring import probationary_length

    def score(values: Array, timestamps: Sequence[dt.datetime]) -> Array:
        probation = probationary_length(len(values))
        return stream_scores(values, dataclasses.replace(params, probation=probation))

    return score
