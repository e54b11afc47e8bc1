"""The contract every streaming detector follows (scikit-learn style).

Keyword-only parameters are stored untouched in ``__init__``; ``fit(X)`` makes one online
pass over the series X (each row scored from the rows before it and itself, then learned
from) and returns self; learned state ends in ``_``: ``scores_`` holds one raw score in [0, 1]
per row, higher is stranger. Appending rows to X never changes the scores of earlier rows.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from seenbefore.detection.features import Array
from seenbefore.errors import InputError


def check_series(X: Any, name: str) -> Array:
    """A 1-d float series with finite values, or InputError saying what was received."""
    try:
        x = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name}: input is not numeric ({exc}); clean the series first") from exc
    if x.ndim == 2 and x.shape[1] == 1:
        x = x[:, 0]
    if x.ndim != 1:
        raise InputError(f"{name}: input has shape {x.shape}; expected one series (time,)")
    if not np.all(np.isfinite(x)):
        raise InputError(
            f"{name}: input has NaN or infinite values; repair them first "
            "(the NAB reader carries the last value forward)"
        )
    return x


MIN_SPAN = 1e-300  # far below any measurement; a span under it is treated as flat


def probation_range(x: Array, probation: int) -> tuple[float, float]:
    """(low, step-free span) of the first ``probation`` rows: the range quantisers use.
    A flat start gets a span of 1 % of its level (or 1), so quantising never divides by 0; so
    does a span under :data:`MIN_SPAN` (subnormal numbers, whose span divided by a bin count
    rounds to 0)."""
    head = x[: max(1, probation)]
    lo, hi = float(head.min()), float(head.max())
    span = hi - lo
    if span < MIN_SPAN:
        span = max(0.01 * abs(lo), 1.0)
    return lo, span


class StreamDetector:
    """Base class: parameters from ``__init__``'s keyword-only arguments; subclasses write
    ``_scores(x)`` (one raw score per row, past-only)."""

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        names = [
            p.name
            for p in inspect.signature(type(self).__init__).parameters.values()
            if p.kind is inspect.Parameter.KEYWORD_ONLY
        ]
        return {k: getattr(self, k) for k in names}

    def set_params(self, **params: Any) -> StreamDetector:
        known = self.get_params()
        for key, value in params.items():
            if key not in known:
                raise InputError(
                    f"{type(self).__name__} has no parameter {key!r}; known: {', '.join(known)}"
                )
            setattr(self, key, value)
        return self

    def fit(self, X: Any, y: Any = None) -> StreamDetector:
        x = check_series(X, type(self).__name__)
        scores = np.asarray(self._scores(x), dtype=np.float64)
        self.scores_ = np.clip(scores, 0.0, 1.0)
        self.n_seen_ = len(x)
        return self

    def _scores(self, x: Array) -> Array:
        raise NotImplementedError

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"
