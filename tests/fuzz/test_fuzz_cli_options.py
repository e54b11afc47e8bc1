"""Fuzz what the CLI makes of option values and mapping text: any number for the simulator
(``detect``/``watch --hours``, ``--seed``), any ``--since``/``--step`` text, any ``--tier`` list
and any ``--map`` template. Each is accepted, with the bounds the commands promise, or refused
with an error of the tree (InputError / MappingError, which the CLI maps to exit code 2); nothing
else escapes, and nothing is allocated past the bounds."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from seenbefore.cli.common import caller_tiers
from seenbefore.cli.detect_live import MAX_LIVE_POINTS, MAX_SINCE, LiveQuery, _window
from seenbefore.config import Settings
from seenbefore.errors import InputError, MappingError, PostmortemInvalid
from seenbefore.knowledge.jsonl import FieldMapping, record_to_postmortem
from seenbefore.lab.simbounds import MAX_HOURS, simulated_minutes
from tests.fuzz.strategies import FUZZ, atoms, json_values

numbers = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.sampled_from([0.0, 24.0, 25.0, 336.0, 336.0001, 1e9, -0.0, 5e-324]),
)


@FUZZ
@given(
    hours=numbers, warmup=numbers, seed=st.integers(-(2**40), 2**40), scenarios=st.integers(0, 9)
)
def test_simulator_bounds(hours: float, warmup: float, seed: int, scenarios: int) -> None:
    try:
        minutes, warm = simulated_minutes(hours, warmup, seed, scenarios)
    except InputError as exc:
        assert str(exc).split(" is ")[0] in {"hours", "warmup_hours", "seed"}, str(exc)
        return
    assert math.isfinite(hours) and 0 <= warm < minutes <= MAX_HOURS * 60
    assert minutes - warm >= max(1, scenarios) and 0 <= seed <= 2**32 - 1


durations = st.one_of(
    st.tuples(
        st.one_of(st.integers(0, 10**16).map(str), st.floats(0, 1e6).map(lambda f: f"{f:.3f}")),
        st.sampled_from(["ms", "s", "m", "h", "d", "w", "", "y"]),
    ).map("".join),
    atoms,
)


@FUZZ
@given(since=durations, step=durations)
def test_live_window_bounds(since: str, step: str) -> None:
    try:
        start, every = _window(LiveQuery(query="up", since=since, step=step))
    except InputError as exc:
        assert "--since" in str(exc) or "--step" in str(exc), str(exc)
        return
    assert start <= MAX_SINCE and every.total_seconds() >= 0.001
    assert start / every <= MAX_LIVE_POINTS


tier_text = st.one_of(
    st.lists(st.sampled_from(["general", "restricted", "Security", "", " ", ",", "a b"])).map(
        ",".join
    ),
    atoms,
)


@FUZZ
@given(given=st.lists(tier_text, max_size=4))
def test_tier_lists(given: list[str]) -> None:
    try:
        tiers = caller_tiers(given, Settings(tiers=("general",)))
    except InputError as exc:
        assert str(exc).startswith("--tier"), str(exc)
        return
    assert tiers and len(set(tiers)) == len(tiers)
    assert all(t == t.lower() and "," not in t and " " not in t for t in tiers)


templates = st.lists(
    st.one_of(
        atoms,
        st.sampled_from(["{", "}", "{{", "}}", "{a}", "{b}", "{a!r}", "{a:>9}", "{a.b}", "{a[0]}"]),
    ),
    max_size=8,
).map("".join)
records = st.dictionaries(st.sampled_from(["a", "b", "id", "c"]), json_values, max_size=4)


@FUZZ
@given(template=templates, record=records)
def test_map_templates(template: str, record: dict[str, object]) -> None:
    spec = f"id='X-1',title={template},summary='the body'"
    try:
        mapping = FieldMapping.parse(spec)
    except MappingError:
        return
    try:
        record_to_postmortem("x#L1", record, mapping)
    except MappingError as exc:  # a field the record lacks: named, with what it has
        assert "does not have" in str(exc), str(exc)
    except PostmortemInvalid:  # e.g. an empty title: a quarantine reason
        pass
