"""The detector: an Isolation Forest over past-only window features, following the scikit-learn
estimator contract (keyword-only params stored untouched; ``fit`` returns self; learned state ends
in ``_``).

``score_samples`` follows scikit-learn (higher = more normal); ``anomaly_score`` maps it to [0, 1]
(higher = stranger) with a logistic calibrated on the training scores, which never saturates in
practice: ties at exactly 1.0 would make NAB's threshold sweep prefer never alerting.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np

from seenbefore.detection.features import Array, robust_level, window_features
from seenbefore.errors import InputError
from seenbefore.extras import requires

FORMAT = 1


class WindowIsolationForest:
    def __init__(
        self,
        *,
        window: int = 240,
        lag: int = 3,
        season: int | None = None,
        n_estimators: int = 200,
        max_samples: int | str = "auto",
        contamination: float = 0.01,
        random_state: int = 0,
    ) -> None:
        self.window = window
        self.lag = lag
        self.season = season
        self.n_estimators = n_estimators
        self.max_samples = max_samples
        self.contamination = contamination
        self.random_state = random_state

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {
            k: getattr(self, k)
            for k in (
                "window",
                "lag",
                "season",
                "n_estimators",
                "max_samples",
                "contamination",
                "random_state",
            )
        }

    def set_params(self, **params: Any) -> WindowIsolationForest:
        for key, value in params.items():
            if key not in self.get_params():
                raise ValueError(f"unknown parameter {key!r}")
            setattr(self, key, value)
        return self

    # -- fitting ----------------------------------------------------------------------------
    def _check(self, X: Any) -> Array:
        try:
            arr = np.asarray(X, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise InputError(
                f"detector input is not numeric ({exc}); clean the series first"
            ) from exc
        if arr.ndim == 1:
            arr = arr[:, None]
        if arr.ndim != 2 or len(arr) == 0:
            raise InputError(
                f"detector input has shape {arr.shape}; expected (time, metrics) with data"
            )
        if not np.all(np.isfinite(arr)):
            raise InputError(
                "detector input has NaN or infinite values; fill gaps first "
                "(telemetry readers carry the last value forward)"
            )
        return arr

    def fit(self, X: Any, y: Any = None) -> WindowIsolationForest:
        with requires("detect", "the IsolationForest detector"):
            from sklearn.ensemble import IsolationForest

        arr = self._check(X)
        if len(arr) < 2 * self.lag + 5:
            raise InputError(f"fit needs at least {2 * self.lag + 5} points, got {len(arr)}")
        self.X_fit_ = arr
        self.level_median_, self.level_scale_ = robust_level(arr)
        # the first `window` points have little history behind their features: leave them out
        # of what "normal" looks like when there is enough data after them
        features = self._with_level(arr)
        if len(arr) >= 2 * self.window:
            features = features[self.window :]
        self.forest_ = IsolationForest(
            n_estimators=self.n_estimators,
            max_samples=self.max_samples,
            contamination=self.contamination,
            random_state=self.random_state,
        ).fit(features)
        train = self.forest_.score_samples(features)
        self.offset_ = float(self.forest_.offset_)
        self.train_median_ = float(np.median(train))
        self.train_spread_ = float(max(1e-6, self.train_median_ - np.min(train)))
        self.n_features_in_ = arr.shape[1]
        return self

    def _features(self, X: Any) -> Array:
        if not hasattr(self, "forest_"):
            raise InputError("the detector is not fitted; call fit() on clean history first")
        arr = self._check(X)
        if arr.shape[1] != self.n_features_in_:
            raise InputError(
                f"detector was fitted on {self.n_features_in_} metrics, got {arr.shape[1]}"
            )
        return self._with_level(arr)

    def _with_level(self, arr: Array) -> Array:
        """Per metric, the strongest of its window features (rolling z, rate of change, seasonal
        residual) and its level against the training period (the learned normal, which catches
        slow drifts such as leaks that a rolling window follows); then the largest value and the
        number of metrics beyond 3 across metrics. Compact on purpose: an Isolation Forest over
        many weak dimensions dilutes a point that is extreme on one metric. With a single metric
        there is nothing to dilute, and the separate features are kept."""
        features, _, _ = window_features(arr, window=self.window, lag=self.lag, season=self.season)
        level = np.clip((arr - self.level_median_) / self.level_scale_, -50.0, 50.0)
        if arr.shape[1] == 1:  # one metric: nothing to dilute, keep every feature
            return np.column_stack([features, level])
        per_metric = np.abs(features).reshape(len(arr), arr.shape[1], -1).max(axis=2)
        strength = np.maximum(per_metric, np.abs(level))
        aggregates = np.column_stack([strength.max(axis=1), (strength > 3).sum(axis=1)])
        return np.column_stack([strength, aggregates])

    # -- scoring ----------------------------------------------------------------------------
    def score_samples(self, X: Any, *, start: int = 0) -> Array:
        """scikit-learn convention: higher is more normal. Past-only: row t reads rows <= t.
        ``start`` scores only rows from there on (earlier rows are still read as history)."""
        features = self._features(X)[start:]
        return np.asarray(self.forest_.score_samples(features), dtype=np.float64)

    def decision_function(self, X: Any) -> Array:
        return self.score_samples(X) - self.offset_

    def predict(self, X: Any) -> Array:
        return np.where(self.decision_function(X) < 0, -1, 1)

    def anomaly_score(self, X: Any, *, start: int = 0) -> Array:
        """[0, 1], higher is stranger: a logistic of how far below the training median a point's
        forest score lies, in units of the training median-to-minimum spread; 0.5 is the
        strangest point seen in training."""
        samples = self.score_samples(X, start=start)  # raises a clear error when not fitted
        z = (self.train_median_ - samples) / self.train_spread_
        return np.asarray(1.0 / (1.0 + np.exp(-6.0 * (z - 1.0))), dtype=np.float64)

    # -- persistence without executing code: parameters + training data, refit on load ------
    def save(self, path: Path) -> None:
        buffer = io.BytesIO()
        meta = json.dumps({"format": FORMAT, "params": self.get_params()}).encode()
        np.savez_compressed(buffer, X=self.X_fit_, meta=np.frombuffer(meta, dtype=np.uint8))
        path.write_bytes(buffer.getvalue())

    @classmethod
    def load(cls, path: Path) -> WindowIsolationForest:
        try:
            with np.load(path, allow_pickle=False) as npz:
                meta = json.loads(npz["meta"].tobytes().decode())
                X = npz["X"]
        except (OSError, ValueError, KeyError) as exc:
            raise InputError(f"{path}: not a saved detector ({exc})") from exc
        if meta.get("format") != FORMAT:
            raise InputError(f"{path}: detector format {meta.get('format')} is not {FORMAT}")
        return cls(**meta["params"]).fit(X)
