"""The detector that reads the values as numbers: the range seen so far (HTM's "spatial anomaly").
The robust z-score and the Isolation Forest members, which the shipped ensemble does not use,
are in :mod:`seenbefore.lab.members`."""

from __future__ import annotations

import numpy as np

from seenbefore.detection.detectors.base import StreamDetector
from seenbefore.detection.features import Array


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
