"""The shipped ensemble one point at a time: ``OnlineEnsemble.update(value) -> score``.

The same arithmetic as :class:`~seenbefore.detection.ensemble.StreamingEnsemble` with its
default members (the range seen so far, and sequence novelty through the anomaly
likelihood), kept as running state so that a live detector pays a constant cost per point;
a test checks that feeding a series point by point gives the batch scores. The sequence
member's quantiser needs the probationary period's range, so its raw scores for those rows
are computed when the period ends; the likelihood reports 0.5 until then, as in the batch.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from seenbefore.detection.likelihood import (
    FLAT_VARIANCE,
    LOG_EPSILON,
    MEAN_FLOOR,
    RED_ZONE,
    VARIANCE_FLOOR,
    YELLOW_ZONE,
)
from seenbefore.errors import InputError

_LOG_EPS = math.log(LOG_EPSILON)


class OnlineEnsemble:
    """scikit-learn style parameters (those of the shipped ``StreamingEnsemble``);
    ``update(value)`` returns the score of that point, learned state ends in ``_``."""

    def __init__(
        self,
        *,
        probation: int = 750,
        bins: int = 5,
        order: int = 3,
        tolerance: float = 0.05,
        averaging_window: int = 10,
        history: int = 8640,
        reestimation_period: int = 100,
        fire: float = 0.5,
        rest_fraction: float = 0.2,
        damp: float = 0.0,
    ) -> None:
        self.probation = probation
        self.bins = bins
        self.order = order
        self.tolerance = tolerance
        self.averaging_window = averaging_window
        self.history = history
        self.reestimation_period = reestimation_period
        self.fire = fire
        self.rest_fraction = rest_fraction
        self.damp = damp

    def _start(self) -> None:
        self.t_ = 0
        self.values_: list[float] = []
        self.raw_: list[float] = []  # sequence novelty, filled in at the end of probation
        self.avg_: list[float] = []
        self.symbols_: list[int] = []
        self.seen_: set[tuple[int, ...]] = set()
        self.ranged_ = False  # the probationary period's range is known
        self.range_ = (0.0, 1.0)
        self.lo_ = self.hi_ = math.nan
        self.dist_: tuple[float, float] = (0.5, 1e3)
        self.prev_red_ = False
        self.quiet_until_ = -1

    def update(self, value: float) -> float:
        if not hasattr(self, "t_"):
            self._start()
        v = float(value)
        if not math.isfinite(v):
            raise InputError(f"value {value!r} at row {self.t_} is not finite; repair it first")
        t = self.t_
        self.values_.append(v)
        spatial = self._spatial(v)
        if not self.ranged_ and t >= self.probation - 1:
            self._end_probation()
        elif self.ranged_:
            self.raw_.append(self._novelty(self._symbol(v)))
        score = max(spatial, self._likelihood(t))
        self.t_ += 1
        return self._rest(t, score)

    # -- members -------------------------------------------------------------------------
    def _spatial(self, v: float) -> float:
        lo, hi = self.lo_, self.hi_
        hit = False
        if hi > lo:
            margin = (hi - lo) * self.tolerance
            hit = v > hi + margin or v < lo - margin
        self.lo_ = v if math.isnan(lo) else min(lo, v)
        self.hi_ = v if math.isnan(hi) else max(hi, v)
        return 1.0 if hit else 0.0

    def _end_probation(self) -> None:
        head = self.values_[: max(1, self.probation)]
        lo, hi = min(head), max(head)
        span = hi - lo
        if span <= 0.0:
            span = max(0.01 * abs(lo), 1.0)
        self.range_ = (lo, span)
        self.ranged_ = True
        for v in self.values_:
            self.raw_.append(self._novelty(self._symbol(v)))

    def _symbol(self, v: float) -> int:
        lo, span = self.range_
        q = math.floor((v - lo) / (span / self.bins))
        if q == self.bins and v <= lo + span:
            q = self.bins - 1
        return int(min(max(q, -self.bins), 2 * self.bins - 1))

    def _novelty(self, symbol: int) -> float:
        self.symbols_.append(symbol)
        t = len(self.symbols_) - 1
        k_max = min(self.order, t)
        if k_max == 0:
            return 0.0
        new = 0
        for k in range(1, k_max + 1):
            key = tuple(self.symbols_[t - k : t + 1])
            if key not in self.seen_:
                self.seen_.add(key)
                new += 1
        return new / k_max

    # -- calibration and rest --------------------------------------------------------------
    def _likelihood(self, t: int) -> float:
        learning = self.probation // 2
        start = max(1, learning + (self.probation - learning))
        # the moving average of raw scores: rows before the end of probation have their raw
        # scores only once it ends; the likelihood does not read them before then
        while len(self.avg_) < len(self.raw_):
            i = len(self.avg_)
            window = self.raw_[max(0, i - self.averaging_window + 1) : i + 1]
            self.avg_.append(math.fsum(window) / len(window))
        if t < start:
            self.prev_red_ = False
            return _log(0.5)
        period = max(1, self.reestimation_period)
        if t == start or t % period == 0:
            self._estimate(t, learning)
        mean, std = self.dist_
        tail = 0.5 * math.erfc((self.avg_[t] - mean) / std / math.sqrt(2.0))
        red = tail <= RED_ZONE
        reported = YELLOW_ZONE if red and self.prev_red_ else tail
        self.prev_red_ = red
        return _log(reported)

    def _estimate(self, t: int, learning: int) -> None:
        lo = max(learning, t - self.history, 0)
        if lo >= t:
            lo = max(0, t - 1)
        a = np.asarray(self.avg_[lo:t])
        mean, var = float(a.mean()), float(a.var())
        mean, var = max(mean, MEAN_FLOOR), max(var, VARIANCE_FLOOR)
        if float(np.var(np.asarray(self.values_[lo:t]))) < FLAT_VARIANCE:
            mean, var = 0.5, 1e6
        self.dist_ = (mean, math.sqrt(var))

    def _rest(self, t: int, score: float) -> float:
        if t <= self.quiet_until_:
            return score * self.damp
        if score >= self.fire:
            self.quiet_until_ = t + int(self.rest_fraction * self.probation)
        return score

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {k: getattr(self, k) for k in _PARAMS}


_PARAMS = (
    "probation",
    "bins",
    "order",
    "tolerance",
    "averaging_window",
    "history",
    "reestimation_period",
    "fire",
    "rest_fraction",
    "damp",
)


def _log(tail: float) -> float:
    return min(1.0, max(0.0, math.log(tail + LOG_EPSILON) / _LOG_EPS))
