"""Anomaly likelihood: how improbable the recent raw anomaly scores are against their own past.

After Ahmad, Lavin, Purdy and Agha (2017), "Unsupervised real-time anomaly detection for
streaming data", section 4 (and NAB's HTM detector). Detector-independent: any raw score
stream in [0, 1] goes in; at each row t

1. ``avg[t]`` is the mean of the last ``averaging_window`` raw scores (rows t-W'+1 .. t);
2. a Gaussian (mean, variance) is fitted on ``avg`` over the past rows
   ``[max(learning_period, t - history), t)``, re-fitted every ``reestimation_period`` rows
   (the mean is floored at 0.03 and the variance at 0.0003, as in numenta's code, so a
   silent detector's first blip is not an infinitely unlikely event); a flat input series
   (variance of its values under 1.5e-5 over the same rows) gets a very broad Gaussian;
3. ``tail[t] = Q((avg[t] - mean) / std)``, the Gaussian tail probability, and the likelihood
   is ``1 - tail``; for the first ``learning_period + estimation_samples`` rows it is 0.5;
4. a tail in the red zone (<= 1e-5) right after another red one is raised to 1e-3, so a run
   of improbable rows reports its first row loudly and the rest softly;
5. the reported score is NAB's log scale ``log(1.0000000001 - likelihood) / log(1e-10)``:
   1.0 for a tail of 0, 0.5 for 1e-5, 0.3 for 1e-3.

Every quantity at row t reads rows <= t only: appending rows never changes an earlier score.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from seenbefore.detection.features import Array
from seenbefore.errors import InputError
from seenbefore.extras import requires

MEAN_FLOOR = 0.03
VARIANCE_FLOOR = 0.0003
FLAT_VARIANCE = 1.5e-5
RED_ZONE = 1e-5
YELLOW_ZONE = 1e-3
LOG_EPSILON = 1e-10


def log_score(tail: Array) -> Array:
    """NAB's log scale of a likelihood given as its tail ``1 - likelihood``, in [0, 1]."""
    out = np.log(np.asarray(tail, dtype=np.float64) + LOG_EPSILON) / math.log(LOG_EPSILON)
    return np.asarray(np.clip(out, 0.0, 1.0), dtype=np.float64)


def moving_average(x: Array, window: int) -> Array:
    """Mean of the last ``window`` values at each row (fewer at the start)."""
    c = np.concatenate([[0.0], np.cumsum(np.asarray(x, dtype=np.float64))])
    n = len(x)
    hi = np.arange(1, n + 1)
    lo = np.maximum(0, hi - window)
    return np.asarray((c[hi] - c[lo]) / (hi - lo), dtype=np.float64)


class AnomalyLikelihood:
    """scikit-learn style: keyword-only parameters kept as given; ``fit(raw, values=...)``
    computes, online, ``tail_`` (1 - likelihood), ``likelihood_`` and ``score_`` (log scale)
    for every row, and returns self."""

    def __init__(
        self,
        *,
        learning_period: int = 288,
        estimation_samples: int = 100,
        averaging_window: int = 10,
        history: int = 8640,
        reestimation_period: int = 100,
        filter_red: bool = True,
    ) -> None:
        self.learning_period = learning_period
        self.estimation_samples = estimation_samples
        self.averaging_window = averaging_window
        self.history = history
        self.reestimation_period = reestimation_period
        self.filter_red = filter_red

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {
            k: getattr(self, k)
            for k in (
                "learning_period",
                "estimation_samples",
                "averaging_window",
                "history",
                "reestimation_period",
                "filter_red",
            )
        }

    @classmethod
    def for_probation(cls, probation: int, **params: Any) -> AnomalyLikelihood:
        """NAB's HTM split of a probationary period: half learning, half estimation."""
        learning = probation // 2
        return cls(learning_period=learning, estimation_samples=probation - learning, **params)

    def fit(self, raw: Any, y: Any = None, *, values: Any = None) -> AnomalyLikelihood:
        r = np.asarray(raw, dtype=np.float64)
        if r.ndim != 1 or not np.all(np.isfinite(r)):
            raise InputError(
                f"anomaly likelihood needs a 1-d series of finite raw scores, got shape "
                f"{r.shape}; clean the detector's output first"
            )
        v = None if values is None else np.asarray(values, dtype=np.float64)
        if v is not None and v.shape != r.shape:
            raise InputError(f"values of shape {v.shape} do not match raw scores {r.shape}")
        with requires("detect", "the anomaly likelihood (a Gaussian tail)"):
            from scipy.special import erfc

        n = len(r)
        avg = moving_average(r, max(1, self.averaging_window))
        tail = np.full(n, 0.5)
        start = max(1, self.learning_period + self.estimation_samples)
        c1 = np.concatenate([[0.0], np.cumsum(avg)])
        c2 = np.concatenate([[0.0], np.cumsum(avg * avg)])
        if v is not None:
            centred = v - (v[0] if n else 0.0)  # precision: sums of squares of a shifted series
            d1 = np.concatenate([[0.0], np.cumsum(centred)])
            d2 = np.concatenate([[0.0], np.cumsum(centred * centred)])
        period = max(1, self.reestimation_period)
        t = start
        while t < n:
            stop = min(n, (t // period + 1) * period)
            lo = max(self.learning_period, t - self.history, 0)
            if lo >= t:
                lo = max(0, t - 1)
            count = t - lo
            mean = (c1[t] - c1[lo]) / count
            var = max(0.0, (c2[t] - c2[lo]) / count - mean * mean)
            mean, var = max(mean, MEAN_FLOOR), max(var, VARIANCE_FLOOR)
            if v is not None:
                m = (d1[t] - d1[lo]) / count
                if (d2[t] - d2[lo]) / count - m * m < FLAT_VARIANCE:
                    mean, var = 0.5, 1e6  # a flat metric: nothing is unlikely
            z = (avg[t:stop] - mean) / math.sqrt(var)
            tail[t:stop] = 0.5 * erfc(z / math.sqrt(2.0))
            t = stop
        if self.filter_red and n > 1:
            red = tail <= RED_ZONE
            again = np.zeros(n, dtype=bool)
            again[1:] = red[1:] & red[:-1]
            tail = np.where(again, YELLOW_ZONE, tail)
        self.average_ = avg
        self.tail_ = tail
        self.likelihood_ = 1.0 - tail
        self.score_ = log_score(tail)
        return self
