"""A confirmation rule saved and restored just as a change begins confirms it exactly as one that
never stopped: the last points' stamps are kept, so a fire right after a restart still looks back
to where the change began (issue 32)."""

from __future__ import annotations

import datetime as dt
import json

import numpy as np
import pytest

from seenbefore.detection.confirm import Confirmed, Confirmer
from seenbefore.detection.ensemble import EVENT_PARAMS
from seenbefore.detection.live_watch import WatchSettings
from seenbefore.detection.online import OnlineEnsemble

STEP_MS = 60_000


def _run(x: np.ndarray, save_at: int | None) -> list[tuple[int, int]]:
    settings = WatchSettings(url="http://127.0.0.1:9", queries=("q",), learning=30)
    detector = OnlineEnsemble(probation=settings.probation, **EVENT_PARAMS)
    confirmer = Confirmer(["m"], settings.rule())
    found = []
    for i, v in enumerate(x.tolist()):
        if i == save_at:  # a watcher restarted here: both read back from their saved state
            detector = OnlineEnsemble.from_state(json.loads(json.dumps(detector.to_state())))
            state = json.loads(json.dumps(confirmer.to_state()))
            confirmer = Confirmer.from_state(["m"], settings.rule(), state)
        for outcome in confirmer.update([v], detector.update(v), i * STEP_MS):
            if isinstance(outcome, Confirmed):
                found.append((outcome.start // STEP_MS, outcome.at // STEP_MS))
    return found


# ramps whose fire comes a point or more after the change began (found by running these seeds
# with the stamps dropped on restart: each of these restarts then started the event late)
@pytest.mark.parametrize(
    ("seed", "width", "rise", "restart"),
    [(1, 10, 30, 1002), (1, 10, 15, 1005), (0, 20, 8, 1012), (0, 20, 8, 1014)],
)
def test_a_restart_as_a_change_begins_confirms_it_as_before(
    seed: int, width: int, rise: float, restart: int
) -> None:
    rng = np.random.default_rng(seed)
    x = 100 + rng.normal(0, 1.5, 1200)
    x[1000 : 1000 + width] += np.linspace(0, rise, width)
    x[1000 + width :] += rise
    whole = _run(x, None)
    assert whole and 1000 <= whole[0][0] <= restart  # found, from before the restart
    assert _run(x, restart) == whole


def test_an_old_state_without_stamps_still_loads() -> None:
    settings = WatchSettings(url="http://127.0.0.1:9", queries=("q",), learning=30)
    confirmer = Confirmer(["m"], settings.rule())
    for i in range(50):
        confirmer.update([100.0 + i % 3], 0.0, i * STEP_MS)
    state = confirmer.to_state()
    assert state["stamps"] == [47 * STEP_MS, 48 * STEP_MS, 49 * STEP_MS]
    del state["stamps"]
    restored = Confirmer.from_state(["m"], settings.rule(), state)
    assert list(restored.stamps) == []
    assert dt.timedelta(milliseconds=STEP_MS) == settings.step
