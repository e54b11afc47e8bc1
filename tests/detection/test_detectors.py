"""The streaming detectors and the ensemble: hand-worked scores, the estimator contract, and
no look-ahead (appending rows never changes an earlier row's score)."""

from __future__ import annotations

import numpy as np
import pytest

from seenbefore.detection.detectors import REGISTRY, SequenceNovelty, SpatialRange, StreamDetector
from seenbefore.detection.ensemble import DEFAULT_PARAMS, StreamingEnsemble, rest_after_fire
from seenbefore.errors import InputError
from seenbefore.lab.members import MEMBERS, DeltaNovelty, LabEnsemble, RelativeEntropy

SMALL = {  # small settings so every detector has state to carry on a 1200-row series
    "forest": {
        "probation": 300,
        "window": 50,
        "season": None,
        "refit_every": 200,
        "n_estimators": 10,
    },
    "sequence": {"probation": 300},
    "delta": {"probation": 300},
    "entropy": {"probation": 300, "window": 20},
    "robust_z": {"window": 50},
    "spatial": {},
    "artime": {"probation": 300, "margin": 0.5, "grow": True},
}


def series(n: int = 1200, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = 10 + np.sin(np.arange(n) / 20) + rng.normal(0, 0.2, n)
    x[700:705] += 6  # an episode after the cut below
    x[400] -= 4
    return x


def test_spatial_range_hand_worked() -> None:
    # row 4: 10.6 > 10 + 5 % of 10; row 5: -1 < 0 - 5 % of 10.6
    x = np.array([0.0, 10.0, 5.0, 9.0, 10.6, -1.0])
    assert SpatialRange().fit(x).scores_.tolist() == [0, 0, 0, 0, 1, 1]


def test_sequence_novelty_hand_worked() -> None:
    # probation range [0, 1], 2 bins: symbols 0 1 0 1 0 1 1; share of new contexts
    # row 3: (0,1) seen, (1,0,1) new -> 1/2; row 6: (1,1) and (0,1,1) new -> 1
    x = np.array([0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 1.0])
    got = SequenceNovelty(probation=4, bins=2, order=2).fit(x).scores_
    assert got.tolist() == [0.0, 1.0, 1.0, 0.5, 0.0, 0.0, 1.0]


def test_delta_novelty_hand_worked() -> None:
    # changes 0 1 1 1 0 0 over the range [0, 1] in 2 bins; order 1: (0,1) (1,1) new,
    # (1,1) seen, (1,0) (0,0) new
    x = np.array([0.0, 1.0, 2.0, 3.0, 3.0, 3.0])
    got = DeltaNovelty(probation=4, bins=2, order=1).fit(x).scores_
    assert got.tolist() == [0.0, 1.0, 1.0, 0.0, 1.0, 1.0]


def test_relative_entropy_hand_worked() -> None:
    # windows of 4 alternate 0/1: one hypothesis, accepted again and again (score 0); the
    # window [0, 1, 0, 5] holds a value above the range: no hypothesis fits (KL infinite),
    # score 1; the next [1, 0, 5, 5] has 2 * 4 * KL = 1.386 < chi2.isf(0.01, 3) = 11.34
    # against that new hypothesis: accepted, seen twice, score 0
    x = np.array([0.0, 1.0] * 6 + [5.0, 5.0])
    got = RelativeEntropy(probation=8, bins=2, window=4).fit(x).scores_
    assert got.tolist() == [0.0] * 12 + [1.0, 0.0]


@pytest.mark.parametrize("name", sorted(MEMBERS))
def test_no_look_ahead_for_each_detector(name: str) -> None:
    x = series()
    full = MEMBERS[name](**SMALL[name]).fit(x).scores_
    part = MEMBERS[name](**SMALL[name]).fit(x[:650]).scores_
    assert len(full) == 1200 and np.array_equal(full[:650], part)
    assert np.all((full >= 0) & (full <= 1))


def test_no_look_ahead_for_the_ensemble() -> None:
    x = series()
    params = {"probation": 300, "members": tuple(sorted(MEMBERS)), "member_params": SMALL}
    full = LabEnsemble(**params).fit(x)
    part = LabEnsemble(**params).fit(x[:650])
    assert np.array_equal(full.scores_[:650], part.scores_)
    assert set(full.components_) == set(MEMBERS)
    assert full.scores_[700:706].max() > 0.5  # the episode is found


def test_rest_after_fire_hand_worked() -> None:
    scores = np.array([0.0, 0.9, 0.8, 0.2, 0.7, 0.6])
    assert rest_after_fire(scores, fire=0.5, rest=2, damp=0.5).tolist() == [
        0.0,
        0.9,
        0.4,
        0.1,
        0.7,
        0.3,
    ]


def test_estimator_contract() -> None:
    det = SequenceNovelty(bins=4)
    assert det.get_params() == {"probation": 750, "bins": 4, "order": 3, "differences": False}
    assert det.set_params(order=3) is det and det.order == 3
    assert isinstance(det.fit(np.arange(10.0)), StreamDetector)
    assert hasattr(det, "scores_") and det.n_seen_ == 10
    with pytest.raises(InputError, match="has no parameter 'nope'"):
        det.set_params(nope=1)
    with pytest.raises(InputError, match="NaN or infinite"):
        det.fit(np.array([1.0, np.nan]))
    shipped = StreamingEnsemble(probation=300, **DEFAULT_PARAMS).fit(series()).scores_
    assert np.array_equal(StreamingEnsemble(probation=300).fit(series()).scores_, shipped)
    with pytest.raises(InputError, match="unknown ensemble member 'nope'"):
        StreamingEnsemble(members=("nope",)).fit(np.arange(10.0))


def test_the_product_knows_the_shipped_members_and_the_lab_all_of_them() -> None:
    assert set(REGISTRY) == set(DEFAULT_PARAMS["members"])
    assert set(REGISTRY) < set(MEMBERS) and all(MEMBERS[n] is REGISTRY[n] for n in REGISTRY)
    with pytest.raises(InputError, match="unknown ensemble member 'forest'"):
        StreamingEnsemble(members=("forest",)).fit(np.arange(10.0))
    shipped = StreamingEnsemble(probation=300, **DEFAULT_PARAMS).fit(series()).scores_
    assert np.array_equal(
        LabEnsemble(probation=300, **DEFAULT_PARAMS).fit(series()).scores_, shipped
    )


def test_online_ensemble_matches_the_batch_point_by_point() -> None:
    from seenbefore.detection.online import OnlineEnsemble

    x = series(2000)
    x[1500:] += 1.5  # a level shift after probation
    batch = StreamingEnsemble(probation=300, **DEFAULT_PARAMS).fit(x).scores_
    online = OnlineEnsemble(probation=300)  # its defaults are the shipped configuration
    got = np.array([online.update(v) for v in x])
    assert np.allclose(got, batch, rtol=0, atol=1e-12)
    three = {"members": ["spatial", "sequence", "delta"], "member_params": {"delta": {"bins": 8}}}
    batch3 = LabEnsemble(probation=300, **three).fit(x).scores_
    online3 = OnlineEnsemble(probation=300, **three)
    assert np.allclose([online3.update(v) for v in x], batch3, rtol=0, atol=1e-12)
    with pytest.raises(InputError, match="the online ensemble runs"):
        OnlineEnsemble(members=("forest",)).update(1.0)
    assert got[700] == 1.0  # the episode leaves the range seen so far
    with pytest.raises(InputError, match="is not finite"):
        online.update(float("nan"))


def test_online_ensemble_memory_is_bounded() -> None:
    """Its state is what the arithmetic reads again, not the whole stream; the scores stay the
    batch's when ``history`` is short enough for old rows to be dropped."""
    from seenbefore.detection.online import OnlineEnsemble

    x = series(6000, seed=1)
    x[5000:5010] += 8
    online = OnlineEnsemble(probation=300, history=500)
    got, held = [], []
    for i, v in enumerate(x):
        got.append(online.update(v))
        if i + 1 in (1000, 3000, 6000):
            held.append(online.retained())
    batch = StreamingEnsemble(probation=300, history=500, **DEFAULT_PARAMS).fit(x).scores_
    assert np.allclose(got, batch, rtol=0, atol=1e-12)
    contexts = 2 * (15 + 15**2 + 15**3 + 15**4)  # sequence and delta: (3 * bins) ** (k + 1)
    bound = 501 + 2 * (4 + 10 + 501) + contexts
    assert all(h <= bound for h in held)
    assert held[2] - held[1] < 300  # only new contexts; the old state was 3 numbers per row
    # the flat test keeps segment summaries (one per 100-row re-estimation period), not values
    assert len(online.values_.segments) <= 10 and online.values_.count == 6000
    assert all(not n.inputs for n in online.novelty_.values())  # freed after probation


def test_shipped_ensemble_is_causal_inside_probation_too() -> None:

    x = series()
    full = StreamingEnsemble(probation=300, **DEFAULT_PARAMS).fit(x).scores_
    for cut in (100, 299, 301):
        part = StreamingEnsemble(probation=300, **DEFAULT_PARAMS).fit(x[:cut]).scores_
        assert np.array_equal(full[:cut], part)
