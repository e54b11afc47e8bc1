"""Window features that use only the past: at time t, nothing after t is read.

For each metric: a robust z-score against the previous ``window`` points (median / MAD), a rate of
change over ``lag`` points, and the residual from the seasonal profile (the same phase in the
previous seasons), all in robust units.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import numpy.typing as npt
from numpy.lib.stride_tricks import sliding_window_view

Array = npt.NDArray[np.float64]
MIN_HISTORY = 5
CLIP = 50.0


def robust_level(x: npt.ArrayLike) -> tuple[Array, Array]:
    """Median and robust scale (1.4826 MAD, floored at 1 % of the median: a flat history still
    gets a finite scale) of ``x`` along its first axis: per metric for a matrix, scalars for a
    series. What "normal" is for a learning period or one past window."""
    a = np.asarray(x, dtype=np.float64)
    med = np.median(a, axis=0)
    mad = np.median(np.abs(a - med), axis=0)
    return med, np.maximum(1.4826 * mad, 0.01 * np.abs(med) + 1e-6)


def _past_windows(x: Array, window: int) -> tuple[Array, Array]:
    """Median and robust scale of x[t-window : t] for every t (expanding at the start)."""
    n = len(x)
    med = np.full(n, np.nan)
    scale = np.full(n, np.nan)
    if n <= 1:
        return med, scale
    padded = np.concatenate([np.full(window, np.nan), x])
    views = sliding_window_view(padded, window)[:n]  # views[t] = x[t-window : t]
    with np.errstate(all="ignore"), _quiet():
        med = np.nanmedian(views, axis=1)
        mad = np.nanmedian(np.abs(views - med[:, None]), axis=1)
    counts = np.sum(~np.isnan(views), axis=1)
    floor = 0.01 * np.abs(med) + 1e-6  # a flat history still gets a finite scale
    scale = np.maximum(1.4826 * mad, floor)
    med[counts < MIN_HISTORY] = np.nan
    return med, scale


def trailing_scale(X: Array, window: int) -> Array:
    """The robust scale of the ``window`` points before each point, per column (NaN-free: the
    1 % floor where there is no history), the unit of the windowed z."""
    X = np.asarray(X, dtype=np.float64)
    cols = X[:, None] if X.ndim == 1 else X
    out = np.column_stack([_past_windows(cols[:, j], window)[1] for j in range(cols.shape[1])])
    floor = 0.01 * np.abs(cols) + 1e-6
    out = np.where(np.isnan(out), floor, out)
    return out if X.ndim > 1 else out[:, 0]


@contextmanager
def _quiet() -> Iterator[None]:
    """Silence numpy's all-NaN-slice warnings (expected at the start of a series)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def metric_features(
    x: Array, *, window: int, lag: int, season: int | None, seasons: int = 3
) -> tuple[Array, Array, Array, Array]:
    """(robust z, rate of change, seasonal residual, baseline) for one metric, past-only."""
    x = np.asarray(x, dtype=np.float64)
    med, scale = _past_windows(x, window)
    z = np.nan_to_num((x - med) / scale)
    roc = np.zeros_like(x)
    if len(x) > lag:
        roc[lag:] = (x[lag:] - x[:-lag]) / scale[lag:]
    roc = np.nan_to_num(roc)
    resid = np.zeros_like(x)
    if season:
        history = []
        for k in range(1, seasons + 1):
            shifted = np.full_like(x, np.nan)
            if len(x) > k * season:
                shifted[k * season :] = x[: -k * season]
            history.append(shifted)
        with _quiet():
            profile = np.nanmean(np.vstack(history), axis=0)
        resid = np.nan_to_num((x - profile) / scale)
    baseline = np.where(np.isnan(med), x, med)
    return (
        np.clip(z, -CLIP, CLIP),
        np.clip(roc, -CLIP, CLIP),
        np.clip(resid, -CLIP, CLIP),
        baseline,
    )


def window_features(
    X: Array, *, window: int, lag: int, season: int | None
) -> tuple[Array, Array, Array]:
    """Features for a (time, metric) matrix: (features, z-scores, baselines)."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        X = X[:, None]
    blocks, zs, bases = [], [], []
    for j in range(X.shape[1]):
        z, roc, resid, base = metric_features(X[:, j], window=window, lag=lag, season=season)
        blocks.extend([z, roc, resid] if season else [z, roc])
        zs.append(z)
        bases.append(base)
    return np.column_stack(blocks), np.column_stack(zs), np.column_stack(bases)
