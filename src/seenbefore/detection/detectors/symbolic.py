"""Detectors that read the values as symbols: each value is put in one of ``bins`` equal
bins over the range of the first ``probation`` rows (values outside that range fall in bins
below 0 or above ``bins - 1``, capped at one range's width beyond it).

- :class:`SequenceNovelty`, in the spirit of CAD OSE (Smirnov's Contextual Anomaly Detector,
  NAB 69.9): how many of the contexts ending at row t -- the last k symbols followed by this
  one, for k = 1 .. ``order`` -- have never been seen before.
- :class:`RelativeEntropy`, after Wang et al. (2011) as in NAB's relativeEntropy detector: the
  histogram of the last ``window`` symbols is tested against every histogram accepted as a
  hypothesis so far (relative entropy against a chi-square threshold); a window no hypothesis
  explains, or one explained only by a rare hypothesis, scores 1.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from seenbefore.detection.detectors.base import StreamDetector, probation_range
from seenbefore.detection.features import Array
from seenbefore.extras import requires


def quantise(x: Array, probation: int, bins: int) -> npt.NDArray[np.int64]:
    """Bin index of each value over the first ``probation`` rows' range, capped at one range's
    width below and above it."""
    q = _bins(x, probation, bins)
    return np.clip(q, -bins, 2 * bins - 1).astype(np.int64)


def _bins(x: Array, probation: int, bins: int) -> Array:
    """Unclipped bin numbers; the probation range's top value is in the top bin."""
    lo, span = probation_range(x, probation)
    q = np.floor((x - lo) / (span / bins))
    q[(q == bins) & (x <= lo + span)] = bins - 1
    return q


class SequenceNovelty(StreamDetector):
    """Share of the contexts ending at row t (k previous symbols then this one, k = 1 ..
    ``order``; fewer at the start) seen for the first time. Every context is remembered."""

    def __init__(
        self, *, probation: int = 750, bins: int = 5, order: int = 3, differences: bool = False
    ) -> None:
        self.probation = probation
        self.bins = bins
        self.order = order
        self.differences = differences

    def _scores(self, x: Array) -> Array:
        if self.differences:  # symbols of the change from the previous row (0 for the first)
            x = np.diff(x, prepend=x[:1])
        symbols = quantise(x, self.probation, self.bins).tolist()
        seen: set[tuple[int, ...]] = set()
        out = np.zeros(len(symbols))
        order = self.order
        for t in range(len(symbols)):
            k_max = min(order, t)
            if k_max == 0:
                continue
            new = 0
            for k in range(1, k_max + 1):
                key = tuple(symbols[t - k : t + 1])
                if key not in seen:
                    seen.add(key)
                    new += 1
            out[t] = new / k_max
        return out


class DeltaNovelty(SequenceNovelty):
    """:class:`SequenceNovelty` over the change from the previous row instead of the value."""

    def __init__(
        self, *, probation: int = 750, bins: int = 5, order: int = 3, differences: bool = True
    ) -> None:
        super().__init__(probation=probation, bins=bins, order=order, differences=differences)


class RelativeEntropy(StreamDetector):
    """Binary: 1 when the last ``window`` symbols' histogram matches no hypothesis (a new one
    is made from it) or matches one seen at most ``rare`` times; 0 otherwise. The match test
    is ``2 * window * KL(window || hypothesis) < chi2.isf(significance, bins - 1)``."""

    def __init__(
        self,
        *,
        probation: int = 750,
        bins: int = 5,
        window: int = 52,
        significance: float = 0.01,
        rare: int = 1,
    ) -> None:
        self.probation = probation
        self.bins = bins
        self.window = window
        self.significance = significance
        self.rare = rare

    def _scores(self, x: Array) -> Array:
        n, w = len(x), self.window
        out = np.zeros(n)
        if n < w:
            return out
        # bins inside the probation range, plus one below and one above it
        q = np.clip(_bins(x, self.probation, self.bins), -1, self.bins) + 1
        symbols = q.astype(np.int64)
        categories = self.bins + 2
        with requires("detect", "the symbolic (chi-squared) detector"):
            from scipy.stats import chi2

        threshold = float(chi2.isf(self.significance, categories - 1))
        counts = np.bincount(symbols[:w], minlength=categories).astype(np.float64)
        hypotheses = np.zeros((0, categories))
        log_h = np.zeros((0, categories))
        seen_counts: list[int] = []
        for t in range(w - 1, n):
            if t >= w:
                counts[symbols[t - w]] -= 1.0
                counts[symbols[t]] += 1.0
            p = counts / w
            if not seen_counts:
                hypotheses = p[None, :].copy()
                log_h = _safe_log(hypotheses)
                seen_counts.append(1)
                continue
            nz = p > 0
            with np.errstate(invalid="ignore"):
                kl = (p[nz] * (np.log(p[nz]) - log_h[:, nz])).sum(axis=1)
            stat = 2.0 * w * kl
            ok = np.flatnonzero(stat < threshold)
            if ok.size:
                best = int(ok[np.argmin(stat[ok])])
                seen_counts[best] += 1
                if seen_counts[best] <= self.rare:
                    out[t] = 1.0
            else:
                out[t] = 1.0
                hypotheses = np.vstack([hypotheses, p])
                log_h = np.vstack([log_h, _safe_log(p[None, :])])
                seen_counts.append(1)
        return out


def _safe_log(p: Array) -> Array:
    with np.errstate(divide="ignore"):
        return np.where(p > 0, np.log(np.where(p > 0, p, 1.0)), -math.inf)
