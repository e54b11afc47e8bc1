"""The online ensemble keeps summaries, not values, for the likelihoods' flat test (state
version 3): the variance it reads equals the values' own, and a version 2 state (the last
history + 1 values, contexts as lists) still loads and scores on exactly as before."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from seenbefore.detection.ensemble import DEFAULT_PARAMS
from seenbefore.detection.likelihood import FLAT_VARIANCE
from seenbefore.detection.online import (
    VALUES_VERSION,
    OnlineEnsemble,
    _context_codes,
    _contexts,
)
from seenbefore.detection.packed import pack


def _series(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = 50 + rng.normal(0, 2, n)
    x[n // 3 : n // 3 + 1300] = 7.25  # a flat stretch, longer than the longest window here
    x[n // 3 + 1300 : n // 3 + 1500] = 7.25 + rng.normal(0, 1e-4, 200)  # below the threshold
    return x


@pytest.mark.parametrize("history", [500, 640, 1000])
def test_the_window_variance_is_the_values_own(history: int) -> None:
    x = _series(4000, seed=history)
    detector = OnlineEnsemble(probation=300, history=history, **DEFAULT_PARAMS)
    flat_decisions = 0
    for t, v in enumerate(x):
        detector.update(float(v))
        nxt = t + 1  # the row the next re-estimation would read up to
        if nxt % 100 or nxt < 300:
            continue
        lo = max(150, nxt - history, 0)
        got = detector.values_.variance(lo, nxt)
        want = float(np.var(x[lo:nxt]))
        assert (got < FLAT_VARIANCE) == (want < FLAT_VARIANCE), (lo, nxt, got, want)
        if math.isfinite(got):
            assert got == pytest.approx(want, rel=1e-9, abs=1e-12)
        flat_decisions += got < FLAT_VARIANCE
    assert flat_decisions > 0  # the flat stretch was met, not only loud windows


def test_a_version_2_state_loads_and_scores_on_as_if_never_stopped() -> None:
    x = _series(3000, seed=7)
    x[2500:2510] += 30
    whole = OnlineEnsemble(probation=300, history=500, **DEFAULT_PARAMS)
    first = [whole.update(float(v)) for v in x[:1800]]
    state = json.loads(json.dumps(whole.to_state()))
    # the same state as version 2 wrote it: the last history + 1 values, contexts as lists
    old = dict(state, version=VALUES_VERSION)
    del old["flat"]
    old["values"] = {"count": 1800, "items": pack(x[1800 - 501 : 1800].tolist())}
    old["members"] = {
        name: dict(member, seen=sorted(list(k) for k in whole.novelty_[name].seen))
        for name, member in state["members"].items()
    }
    resumed = OnlineEnsemble.from_state(old)
    rest = [float(v) for v in x[1800:]]
    assert [resumed.update(v) for v in rest] == [whole.update(v) for v in rest]
    assert first  # (scored before the save)
    assert resumed.to_state()["version"] == 3


def test_context_codes_round_trip() -> None:
    rng = np.random.default_rng(3)
    bins, order = 5, 3
    seen = {
        tuple(int(s) for s in rng.integers(-bins, 2 * bins, size=int(rng.integers(2, order + 2))))
        for _ in range(500)
    }
    gaps = _context_codes(seen, bins)
    assert all(g >= 1 for g in gaps) and len(gaps) == len(seen)
    assert _contexts(gaps, bins, order) == seen


def test_state_per_series_stays_small() -> None:
    """What a watcher saves for one series at steady state (the benchmark measures 20 of them:
    benchmarks/detector.py): under 12 KB, from about 97 KB when it kept the values."""
    rng = np.random.default_rng(2)
    t = np.arange(10_000)
    x = 30 * (1 + 0.2 * np.sin(2 * np.pi * t / 288)) + rng.normal(0, 1.5, len(t))
    detector = OnlineEnsemble(probation=750, **DEFAULT_PARAMS)
    for v in x:
        detector.update(float(v))
    size = len(json.dumps(detector.to_state(), separators=(",", ":")))
    assert size < 12_000, size


@pytest.mark.parametrize(
    ("segments", "message"),
    [
        ([0.0, 10.0, 1.0], "multiple of 4"),
        ([0.0, 10.0, 1.0, 0.0, 20.0, 5.0, 1.0, 0.0], "back to back"),  # a gap from 10 to 20
        ([0.0, 10.0, 1.0, 0.0, 10.0, 5.0, 1.0, 0.0], "back to back"),  # ends at 15, count 40
    ],
)
def test_damaged_segments_are_refused(segments: list[float], message: str) -> None:
    from seenbefore.errors import InputError

    detector = OnlineEnsemble(probation=300, history=500, **DEFAULT_PARAMS)
    for v in np.random.default_rng(1).normal(50, 2, 40):
        detector.update(float(v))
    state = json.loads(json.dumps(detector.to_state()))
    state["flat"]["segments"] = pack(segments)
    with pytest.raises(InputError, match=message):
        OnlineEnsemble.from_state(state)
