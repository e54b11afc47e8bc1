"""The numbers the detectors accept: finite and at most :data:`MAX_MAGNITUDE` in size.

The detectors square differences, sum squares over a learning period and divide spans into
bins; a finite value near the float64 limit (±1e308) overflows that arithmetic to infinity and
NaN, which then crashed the scoring (ARTime rounds a NaN level) or scored nothing. No metric a
system reports comes near 1e100 (a 64-bit byte counter tops out at 1.8e19), so values beyond it
are refused with the number, where it is and the fix (rescale the unit), rather than scored
wrongly; within it, the squared spread of the longest series stays far below the float64 limit
((2e100)^2 x 10^7 points = 4e207).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from seenbefore.errors import InputError

MAX_MAGNITUDE = 1e100


def in_range(value: float) -> bool:
    """Whether one value is one the detectors accept (finite, |value| <= MAX_MAGNITUDE)."""
    return -MAX_MAGNITUDE <= value <= MAX_MAGNITUDE


def check_series(series: Mapping[str, Mapping[str, npt.NDArray[np.float64]]]) -> None:
    """InputError naming the first service, metric and point whose value is non-finite or
    beyond :data:`MAX_MAGNITUDE` (``series``: service -> metric -> values)."""
    for service, metrics in series.items():
        for metric, values in metrics.items():
            x = np.asarray(values, dtype=np.float64)
            bad = ~(np.abs(x) <= MAX_MAGNITUDE)  # NaN compares False: bad too
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise InputError(
                    f"{service} {metric[:60]}: point {i} is {float(x[i]):g} "
                    f"({int(bad.sum())} of {len(x)} points are non-finite or beyond "
                    f"±{MAX_MAGNITUDE:g}); the detector takes finite values within "
                    f"±{MAX_MAGNITUDE:g}: rescale the metric's unit (e.g. bytes to GB) or "
                    "drop the broken samples"
                )
