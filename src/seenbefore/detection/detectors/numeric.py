"""Detectors that read the values as numbers: the range seen so far (HTM's "spatial anomaly"),
a robust z-score against a past window, and the Isolation Forest on window features."""

from __future__ import annotations

import numpy as np

from seenbefore.detection.detectors.base import StreamDetector
from seenbefore.detection.features import Array, _past_windows


class SpatialRange(StreamDetector):
    """1.0 when a value leaves the range of every value before it by more than ``tolerance``
    times that range (numenta's HTM detector in NAB uses 5 %), else 0.0."""

    def __init__(self, *, tolerance: float = 0.05) -> None:
        self.tolerance = tolerance

    def _scores(self, x: Array) -> Array:
        out = np.zeros(len(x))
        if len(x) < 2:
            return out
        hi = np.maximum.accumulate(x)[:-1]
        lo = np.minimum.accumulate(x)[:-1]
        margin = (hi - lo) * self.tolerance
        hit = (hi > lo) & ((x[1:] > hi + margin) | (x[1:] < lo - margin))
        out[1:] = hit
        return out


class RobustZ(StreamDetector):
    """``min(|z|, clip) / clip`` where z is the value's distance from the median of the
    previous ``window`` values in MAD units (windowedGaussian's idea, made robust)."""

    def __init__(self, *, window: int = 288, clip: float = 10.0) -> None:
        self.window = window
        self.clip = clip

    def _scores(self, x: Array) -> Array:
        med, scale = _past_windows(x, self.window)
        z = np.abs(np.nan_to_num((x - med) / scale))
        return np.asarray(np.minimum(z, self.clip) / self.clip, dtype=np.float64)


class ForestDetector(StreamDetector):
    """The origin's Isolation Forest on past-only window features, fitted on the first
    ``probation`` rows and refitted every ``refit_every`` rows on everything seen so far;
    rows inside the first fit score 0."""

    def __init__(
        self,
        *,
        probation: int = 750,
        window: int = 288,
        season: int | None = 288,
        lag: int = 3,
        refit_every: int | None = 1000,
        n_estimators: int = 50,
        random_state: int = 0,
    ) -> None:
        self.probation = probation
        self.window = window
        self.season = season
        self.lag = lag
        self.refit_every = refit_every
        self.n_estimators = n_estimators
        self.random_state = random_state

    def _scores(self, x: Array) -> Array:
        from seenbefore.detection.streaming import StreamingParams, stream_scores

        params = StreamingParams(
            window=self.window,
            season=self.season,
            lag=self.lag,
            probation=self.probation,
            refit_every=self.refit_every,
            n_estimators=self.n_estimators,
            random_state=self.random_state,
        )
        return stream_scores(x, params)
