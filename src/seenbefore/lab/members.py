"""Detector members the shipped ensemble does not use, kept for the experiments that chose it
(``benchmarks/nab_sweep.py`` tries every design over all seven members): a robust z-score,
novelty of the changes, relative entropy and the Isolation Forest. Each follows the product's
estimator contract (:mod:`seenbefore.detection.detectors.base`).

:data:`MEMBERS` names all seven, the product's (``detectors.REGISTRY``: range, sequence,
ARTime) among them; :class:`LabEnsemble` is the streaming ensemble over them.
"""

from __future__ import annotations

import math

import numpy as np

from seenbefore.detection.detectors import REGISTRY
from seenbefore.detection.detectors.base import StreamDetector
from seenbefore.detection.detectors.symbolic import SequenceNovelty, bin_numbers
from seenbefore.detection.ensemble import StreamingEnsemble
from seenbefore.detection.features import Array, _past_windows
from seenbefore.extras import requires
from seenbefore.lab.streaming import StreamingParams, stream_scores


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


class DeltaNovelty(SequenceNovelty):
    """:class:`SequenceNovelty` over the change from the previous row instead of the value."""

    def __init__(
        self, *, probation: int = 750, bins: int = 5, order: int = 3, differences: bool = True
    ) -> None:
        super().__init__(probation=probation, bins=bins, order=order, differences=differences)


class RelativeEntropy(StreamDetector):
    """After Wang et al. (2011) as in NAB's relativeEntropy detector. Binary: 1 when the last
    ``window`` symbols' histogram matches no hypothesis (a new one
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
        q = np.clip(bin_numbers(x, self.probation, self.bins), -1, self.bins) + 1
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


MEMBERS: dict[str, type[StreamDetector]] = {
    "spatial": REGISTRY["spatial"],
    "robust_z": RobustZ,
    "sequence": REGISTRY["sequence"],
    "delta": DeltaNovelty,
    "entropy": RelativeEntropy,
    "forest": ForestDetector,
    "artime": REGISTRY["artime"],
}
"""Every member by name (the product's three and the four above), in the order the experiments
list them."""


class LabEnsemble(StreamingEnsemble):
    """:class:`~seenbefore.detection.ensemble.StreamingEnsemble` whose members may be any of
    :data:`MEMBERS`; with the shipped members it scores exactly as the product's."""

    registry = MEMBERS
