import datetime as dt
import inspect
from pathlib import Path

import numpy as np
import pytest

from seenbefore.detection.detector import WindowIsolationForest
from seenbefore.errors import InputError
from seenbefore.lab.simulator import simulate
from seenbefore.lab.streaming import StreamingParams, stream_scores


def series(n: int = 600, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    return np.column_stack(
        [50 + 10 * np.sin(t / 30) + rng.normal(0, 1, n), 5 + rng.normal(0, 0.2, n)]
    )


def test_estimator_contract() -> None:
    params = inspect.signature(WindowIsolationForest.__init__).parameters
    assert all(p.kind is p.KEYWORD_ONLY for name, p in params.items() if name != "self")
    det = WindowIsolationForest(window=50, n_estimators=50)
    assert det.get_params()["window"] == 50 and det.set_params(window=40) is det
    assert not [a for a in vars(det) if a.endswith("_")]  # nothing learned before fit
    X = series()
    assert det.fit(X) is det
    assert {"forest_", "offset_", "n_features_in_", "level_median_"} <= set(vars(det))
    scores = det.score_samples(X)
    assert scores.shape == (600,)
    assert np.allclose(det.decision_function(X), scores - det.offset_)
    assert set(np.unique(det.predict(X))) <= {-1, 1}
    anomaly = det.anomaly_score(X)
    assert ((anomaly >= 0) & (anomaly <= 1)).all()


def test_no_look_ahead_scores_unchanged_when_future_points_are_appended() -> None:
    X = series(800)
    det = WindowIsolationForest(window=50, n_estimators=50).fit(X[:300])
    before = det.anomaly_score(X[:500])
    after = det.anomaly_score(X)  # 300 more points appended, including a spike
    X2 = X.copy()
    X2[600:] += 100
    spiked = det.anomaly_score(X2)
    assert np.allclose(before, after[:500]) and np.allclose(before, spiked[:500])
    streamed = stream_scores(
        X[:, 0],
        StreamingParams(window=50, season=None, refit_every=100, probation=200, n_estimators=30),
    )
    extended = stream_scores(
        np.concatenate([X[:, 0], np.full(200, 500.0)]),
        StreamingParams(window=50, season=None, refit_every=100, probation=200, n_estimators=30),
    )
    assert np.allclose(streamed, extended[:800])


def test_spike_scores_higher_than_normal_and_does_not_saturate() -> None:
    X = series(700)
    X[650:655, 1] += 20
    det = WindowIsolationForest(window=50).fit(X[:400])
    s = det.anomaly_score(X)
    assert s[650:655].min() > np.quantile(s[400:640], 0.99)
    assert (s < 1.0).all()  # a saturated score ties and NAB's optimiser would never alert


def test_bad_input_gives_clear_errors(tmp_path: Path) -> None:
    det = WindowIsolationForest(window=20)
    with pytest.raises(InputError, match="not fitted"):
        det.anomaly_score(series(50))
    with pytest.raises(InputError, match="NaN"):
        det.fit(np.array([1.0, np.nan, 2.0] * 20))
    with pytest.raises(InputError, match="not numeric"):
        det.fit(np.array(["a", "b"] * 20))
    with pytest.raises(InputError, match="at least"):
        det.fit(np.ones(5))
    fitted = det.fit(series(200))
    with pytest.raises(InputError, match="fitted on 2 metrics"):
        fitted.anomaly_score(np.ones((50, 3)))


def test_persistence_refits_without_pickle(tmp_path: Path) -> None:
    X = series(400)
    det = WindowIsolationForest(window=50, n_estimators=40).fit(X)
    det.save(tmp_path / "det.npz")
    again = WindowIsolationForest.load(tmp_path / "det.npz")
    assert again.get_params() == det.get_params()
    assert np.allclose(again.anomaly_score(X), det.anomaly_score(X))
    (tmp_path / "junk.npz").write_bytes(b"junk")
    with pytest.raises(InputError, match="not a saved detector"):
        WindowIsolationForest.load(tmp_path / "junk.npz")


def test_simulator_is_deterministic_and_has_ground_truth() -> None:
    a = simulate(scenarios=["bad_deploy"], hours=30, seed=4)
    b = simulate(scenarios=["bad_deploy"], hours=30, seed=4)
    assert a.incidents == b.incidents and len(a.incidents) == 1
    assert np.array_equal(
        a.series["checkout-api"]["error_rate"], b.series["checkout-api"]["error_rate"]
    )
    inc = a.incidents[0]
    i = a.timestamps.index(inc.start)
    err = a.series["checkout-api"]["error_rate"]
    assert err[i + 5] > 10 * np.median(err[:i])
    assert inc.end - inc.start == dt.timedelta(minutes=35)
    with pytest.raises(InputError, match="unknown scenario"):
        simulate(scenarios=["meteor"])
