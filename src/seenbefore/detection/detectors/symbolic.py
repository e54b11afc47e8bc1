"""Detectors that read the values as symbols: each value is put in one of ``bins`` equal
bins over the range of the first ``probation`` rows (values outside that range fall in bins
below 0 or above ``bins - 1``, capped at one range's width beyond it).

:class:`SequenceNovelty`, in the spirit of CAD OSE (Smirnov's Contextual Anomaly Detector,
NAB 69.9): how many of the contexts ending at row t -- the last k symbols followed by this one,
for k = 1 .. ``order`` -- have never been seen before. The symbolic members the shipped
ensemble does not use (change novelty, relative entropy) are in :mod:`seenbefore.lab.members`.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from seenbefore.detection.detectors.base import StreamDetector, probation_range
from seenbefore.detection.features import Array


def quantise(x: Array, probation: int, bins: int) -> npt.NDArray[np.int64]:
    """Bin index of each value over the first ``probation`` rows' range, capped at one range's
    width below and above it."""
    q = bin_numbers(x, probation, bins)
    return np.clip(q, -bins, 2 * bins - 1).astype(np.int64)


def bin_numbers(x: Array, probation: int, bins: int) -> Array:
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
