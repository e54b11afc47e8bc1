"""A confirmation rule saved and restored just as a change begins confirms it exactly as one that
never stopped: the last points' stamps are kept, so a fire right after a restart still looks back
to where the change began (issue 32)."""

from __future__ import annotations

import datetime as dt
import json

import numpy as np
import pytest

from seenbefore.detection.confirm import DIFFS, Confirmed, Confirmer
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


def test_the_day_over_day_differences_are_saved_and_an_older_state_without_them_loads() -> None:
    settings = WatchSettings(url="http://127.0.0.1:9", queries=("q",), learning=30)
    rule = settings.rule()
    confirmer = Confirmer(["m"], rule)
    rng = np.random.default_rng(0)
    for i in range(rule.day + 100 * rule.day_stride):  # a day, then 100 kept slots more
        confirmer.update([100.0 + rng.normal()], 0.0, i * STEP_MS)
    state = json.loads(json.dumps(confirmer.to_state()))
    restored = Confirmer.from_state(["m"], rule, state)
    assert len(restored.diffs[0]) == DIFFS and list(restored.diffs[0]) == list(confirmer.diffs[0])
    del state["diffs"]  # as written before the differences were kept
    assert list(Confirmer.from_state(["m"], rule, state).diffs[0]) == []


def _version_1(confirmer: Confirmer) -> dict[str, object]:
    """``confirmer``'s state as version 1 wrote it: float64 arrays and a day of values kept one
    a minute (``confirmer`` must have been run with ``DAY_SLOTS`` at version 1's 1,440)."""
    from seenbefore.detection.packed import pack

    state = confirmer.to_state()
    state["version"] = 1
    state["recent"] = [pack(r) for r in confirmer.recent]
    state["day"] = [pack(d) for d in confirmer.day]
    return state


@pytest.mark.parametrize("points", [1439, 1800, 3000, 3001, 3003])
def test_a_version_1_state_is_thinned_to_every_fifth_minute_and_scores_on_as_a_fresh_one(
    points: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    import seenbefore.detection.confirm as confirm

    settings = WatchSettings(url="http://127.0.0.1:9", queries=("q",), learning=30)
    rule = settings.rule()
    assert rule.day == 1440 and rule.day_stride == 5  # a day at the default one-minute step
    rng = np.random.default_rng(points)
    t = np.arange(points + 200)
    x = 100 + 20 * np.sin(2 * np.pi * t / 1440) + rng.normal(0, 1, len(t))
    x[points + 100 :] += 40  # a step after the restart: both must report it alike

    def run(c: Confirmer, lo: int, hi: int) -> list[object]:
        out: list[object] = []
        for i in range(lo, hi):
            out += c.update([float(x[i])], 1.0 if i == points + 100 else 0.0, i * STEP_MS)
        return out

    with monkeypatch.context() as m:  # the version 1 build: one value a minute, float64
        m.setattr(confirm, "DAY_SLOTS", confirm.DAY_SLOTS_V1)
        m.setattr(confirm, "single", float)
        old = Confirmer(["m"], confirm.Rule(**{**rule.__dict__}))
        run(old, 0, points)
        assert old.rule.day_stride == 1
        saved = json.loads(json.dumps(_version_1(old)))
    fresh = Confirmer(["m"], rule)
    run(fresh, 0, points)
    loaded = Confirmer.from_state(["m"], rule, saved)
    # the same slots with the same values, but for the oldest one or two when version 1 had
    # dropped them (it kept a day and 3 points; this keeps a day, the slot of those 3 points
    # and the slot before it, so that a day before each point lies between two kept values)
    day, want = list(loaded.day[0]), list(fresh.day[0])
    assert day == want[len(want) - len(day) :] and len(day) >= len(want) - 2
    assert list(loaded.recent[0]) == list(fresh.recent[0])
    assert all(fresh.to_state()[k][0].startswith("f4z:") for k in ("recent", "day"))  # float32
    after = run(loaded, points, len(t))
    assert after == run(fresh, points, len(t)) and after  # the step, reported alike


def test_the_windows_come_back_bit_for_bit_at_any_magnitude() -> None:
    settings = WatchSettings(url="http://127.0.0.1:9", queries=("q",), learning=30)
    confirmer = Confirmer(["m"], settings.rule())
    values = [1e-50, 3.3e-39, 1e-30, 0.1, 100.123456789, 1e38, 3.5e38, 1e100, -1e100, 0.0]
    for i in range(300):
        confirmer.update([values[i % len(values)] * (1 - i * 1e-9)], 0.0, i * STEP_MS)
    state = json.loads(json.dumps(confirmer.to_state()))
    again = Confirmer.from_state(["m"], settings.rule(), state)
    assert list(again.recent[0]) == list(confirmer.recent[0])
    assert list(again.day[0]) == list(confirmer.day[0])
    kept = list(confirmer.recent[0])
    assert any(v > 1e99 for v in kept) and any(v < -1e99 for v in kept)  # beyond float32
    assert any(0 < v < 1e-45 for v in kept)  # below float32's smallest: kept, not flushed to 0
    assert "f8z:" in state["recent"][0][:4]  # such a window is packed in float64
