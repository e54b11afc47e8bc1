"""ARTime (adaptive resonance) as a streaming member: its transform, its causality, its state."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from seenbefore.detection.detectors import REGISTRY
from seenbefore.detection.detectors.artime import ARTime, ARTimeStream, haar
from seenbefore.errors import InputError


def wave(n: int = 3000, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    return 100 + 10 * np.sin(2 * np.pi * t / 120) + rng.normal(0, 1.0, n)


def test_haar_is_wavelets_jl_ordering_and_sign() -> None:
    # [a3, d3, d2 (2), d1 (4)], details (second - first) / sqrt(2), as Wavelets.jl's dwt
    r2 = math.sqrt(2)
    got = haar(np.arange(1.0, 9.0))
    assert np.allclose(got, [36 / (2 * r2), 16 / (2 * r2), 2, 2, *[1 / r2] * 4])
    got = haar(np.array([1.0, 0, 0, 0, 0, 0, 0, 0]))
    assert np.allclose(got, [1 / (2 * r2), -1 / (2 * r2), -0.5, 0, -1 / r2, 0, 0, 0])
    x = np.random.default_rng(3).normal(size=8)
    assert math.isclose(float(np.sum(haar(x) ** 2)), float(np.sum(x**2)))  # orthonormal


def test_a_new_shape_after_probation_founds_a_cluster_and_scores() -> None:
    x = wave()
    x[2400:2440] = x[2400:2440] + np.where(np.arange(40) % 8 < 4, 25.0, -25.0)  # a square burst
    scores = ARTime(probation=450, margin=0.5).fit(x).scores_
    assert scores[:450].max() == 0.0  # nothing inside the probationary period
    burst = scores[2400:2460]
    assert burst.max() > 0.3
    assert (scores[900:2390] > 0.3).sum() <= 3  # the plain wave is learned, not re-reported


def test_appending_points_never_changes_earlier_scores() -> None:
    x = wave(2000, seed=4)
    x[1500:1520] += 30
    full = ARTime(probation=300, margin=0.5, grow=True).fit(x).scores_
    for cut in (150, 299, 300, 301, 1510):
        assert np.array_equal(
            ARTime(probation=300, margin=0.5, grow=True).fit(x[:cut]).scores_, full[:cut]
        )


@pytest.mark.parametrize("split", [0, 37, 299, 300, 1000, 1999])
def test_state_round_trips_through_json_exactly(split: int) -> None:
    x = wave(2000, seed=split)
    x[1200:1210] -= 40
    whole = ARTimeStream(probation=300, margin=0.25)
    expected = [whole.update(v) for v in x]
    first = ARTimeStream(probation=300, margin=0.25)
    head = [first.update(v) for v in x[:split]]
    second = ARTimeStream.from_state(json.loads(json.dumps(first.to_state(), allow_nan=False)))
    assert head + [second.update(v) for v in x[split:]] == expected
    assert second.to_state() == whole.to_state()


def test_categories_are_capped_least_recently_used_first() -> None:
    rng = np.random.default_rng(9)
    x = rng.uniform(0, 100, 4000)  # noise: a new category at nearly every step
    capped = ARTimeStream(probation=300, max_categories=16)
    free = ARTimeStream(probation=300)
    for v in x:
        capped.update(v)
        free.update(v)
    assert len(capped.art.labels) == 16 and capped.art.W.shape == (16, 32)
    assert len(free.art.labels) > 16
    assert capped.retained() < free.retained()


def test_bad_input_and_bad_state_are_refused() -> None:
    with pytest.raises(InputError, match="power of two"):
        ARTimeStream(window=6)
    with pytest.raises(InputError, match="not finite"):
        ARTimeStream().update(float("inf"))
    state = ARTimeStream(probation=50).to_state()
    with pytest.raises(InputError, match="state version"):
        ARTimeStream.from_state({**state, "version": 0})
    with pytest.raises(InputError, match="packed array"):
        ARTimeStream.from_state({**state, "pending": [1.0, 2.0]})
    assert REGISTRY["artime"] is ARTime
