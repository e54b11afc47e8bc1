"""A hostile or odd `watch` state file (issue 33) is refused with the field it got wrong, never a
traceback: wrong types (8 kinds of traceback before), a NaN (which made every later save fail),
a zlib bomb (590 KB peaked at 2.5 GB), a gzip bomb or a damaged or truncated gzip file (the
state is written gzip-compressed; an older build's plain JSON still loads), a cursor in the
future (which silently scored nothing forever), damaged triage memory, the confirmation rule's
state (issue 32's ``Confirmer``, versions 1 and 2) out of shape; and a property test: any one
field of a real state replaced by any JSON value either loads and keeps scoring and saving, or
is refused with InputError."""

from __future__ import annotations

import base64
import copy
import gzip
import json
import tracemalloc
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seenbefore.detection.live_watch import Watcher, load_state, save_state
from seenbefore.detection.packed import pack
from seenbefore.detection.watch_state import encode_state
from seenbefore.errors import InputError
from tests.depth import examples
from tests.detection.test_live_watch import BASE_MS, FakePrometheus, _at, _settings

# six polls, 200 s to 950 s: 951 points, past the ensemble's warm-up of 750 (WARMUP), so
# ARTime has founded its categories; the level 100 -> 400 at 300 s is an anomaly that lasts
SAVE_POLLS = [_at(BASE_MS + s * 1000) for s in range(200, 1000, 150)]
NEXT = _at(BASE_MS + 1_100_000)  # the poll after: 150 new points


def _saved() -> dict[str, Any]:
    """A real state six polls in: learning done, ARTime categories founded, an anomaly seen
    and lasting (the confirmation rule holds it)."""
    watcher = Watcher(_settings(), FakePrometheus())
    for when in SAVE_POLLS:
        watcher.poll(when)
    state: dict[str, Any] = json.loads(json.dumps(watcher.to_state(), allow_nan=False))
    return state


SAVED = _saved()
KEY = next(iter(SAVED["series"]))


def _series(state: dict[str, Any]) -> dict[str, Any]:
    one: dict[str, Any] = state["series"][KEY]
    return one


def _rule(state: dict[str, Any]) -> dict[str, Any]:
    """The series' confirmation-rule state (``Confirmer.to_state``, state version 3)."""
    rule: dict[str, Any] = _series(state)["confirmer"]
    return rule


def _set(edit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    state = copy.deepcopy(SAVED)
    edit(state)
    return state


EDITS: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "polls as text": (lambda s: s.update(polls="3"), "state.polls is '3'"),
    "cursor as text": (lambda s: s["cursor"].update({"demo_queue_depth": "soon"}), "cursor"),
    "score as text": (lambda s: _series(s).update(last_score="high"), "last_score"),
    "seen as a float": (lambda s: _series(s).update(seen=2.5), ".seen is 2.5"),
    "event as a list": (lambda s: _rule(s).update(event=[1, 2]), ".event is [1, 2]"),
    "hold as text": (lambda s: _rule(s).update(hold="x"), ".hold is 'x'"),
    "level of one": (lambda s: _rule(s).update(level=[[1.0]]), ".level[0] is [1.0]"),
    "level scale 0": (lambda s: _rule(s).update(level=[[100.0, 0.0]]), "level[0][1] is 0.0"),
    "level while learning": (lambda s: _rule(s).update(t=3), "null while learning"),
    "two levels for one metric": (
        lambda s: _rule(s).update(level=[[1.0, 1.0], [1.0, 1.0]]),
        "exactly 1 items",
    ),
    "rule of another version": (lambda s: _rule(s).update(version=0), "confirmer.version is 0"),
    "hold on a metric not watched": (
        lambda s: _rule(s).update(hold=[BASE_MS, {"1": [1.0, 1.0, 1.0, 1.0]}]),
        "a metric's index",
    ),
    "hold sign 0": (
        lambda s: _rule(s).update(hold=[BASE_MS, {"0": [1.0, 1.0, 0.0, 1.0]}]),
        "1 or -1",
    ),
    "hold day scale 0": (
        lambda s: _rule(s).update(hold=[BASE_MS, {"0": [1.0, 1.0, 1.0, 0.0]}]),
        "hold[1]['0'][3] is 0.0",
    ),
    "back without its stamp": (lambda s: _rule(s).update(back=[2, None]), ".back is [2, None]"),
    "recent longer than the rule keeps": (
        lambda s: _rule(s).update(recent=[pack([1.0] * 500)]),
        "recent[0] is '500 values'",
    ),
    "labels as numbers": (lambda s: _series(s)["labels"].update(pod=1), "labels['pod'] is 1"),
    "stamps not rising": (lambda s: _rule(s).update(stamps=[60_000, 0]), "rising stamps"),
    "stamps as text": (lambda s: _rule(s).update(stamps=["0"]), "stamps[0] is '0'"),
    "detector as null": (lambda s: _series(s).update(detector=None), ".detector is None"),
    "t negative": (lambda s: _series(s)["detector"].update(t=-1), ".detector.t is -1"),
    "t out of step": (lambda s: _series(s)["detector"].update(t=7), "flat.count"),
    "params edited": (
        lambda s: _series(s)["detector"]["params"].update(history=10**12),
        "detector.params",
    ),
    "hist short": (
        lambda s: _series(s)["detector"]["artime"].update(hist=[0, 1]),
        "artime.hist is [0, 1]",
    ),
    "median off": (
        lambda s: _series(s)["detector"]["artime"]["median"].__setitem__(0, 79),
        "artime.median",
    ),
    "unknown key": (lambda s: _series(s).update(extra=1), "unknown ['extra']"),
    "missing key": (lambda s: _rule(s).pop("recent"), "missing ['recent']"),
    "packed as a number": (lambda s: _rule(s).update(recent=[1.0]), ".recent[0] is 1.0"),
    "packed NaN": (lambda s: _rule(s).update(recent=[pack([1.0, float("nan")])]), "holds nan"),
    "packed beyond 1e100": (lambda s: _rule(s).update(day=[pack([1e101])]), "holds 1e+101"),
    "series key not its labels": (
        lambda s: s["series"].update({"other": s["series"].pop(KEY)}),
        "series_key",
    ),
    "query not watched": (lambda s: _series(s).update(query="rm -rf"), "watched queries"),
    "triage wrong": (
        lambda s: s.update(triage={"version": 1, "last": {"k": {"id": 1}}, "openings": {}}),
        "triage memory",
    ),
}


@pytest.mark.parametrize("name", list(EDITS))
def test_a_wrong_field_is_refused_naming_it(name: str) -> None:
    edit, expected = EDITS[name]
    with pytest.raises(InputError) as refused:
        Watcher.from_state(_set(edit), _settings(), FakePrometheus())
    assert expected in str(refused.value)
    assert "give another --state or delete it" in str(refused.value) or "afresh" in str(
        refused.value
    )


def test_the_real_state_loads_and_scores_on() -> None:
    watcher = Watcher.from_state(copy.deepcopy(SAVED), _settings(), FakePrometheus())
    assert watcher.poll(NEXT).points == 150


def test_a_version_1_rule_state_loads_and_its_day_is_bounded_by_its_own_slots() -> None:
    """Version 1 of the rule's state kept a day of values one a minute (1,440 slots; at this
    1 s step every 60th point, 1,441 with the look-back's); version 2 keeps 288 (every 300th;
    290 with the look-back's and the slot before a day earlier's):
    a version 1 state loads and is thinned, and each version is held to its own bound."""
    day = [pack([100.0 + i for i in range(1441)])]
    old = _set(lambda s: _rule(s).update(version=1, recent=[pack(_recent(s))], day=day))
    watcher = Watcher.from_state(old, _settings(), FakePrometheus())
    [series] = watcher.series.values()
    assert 0 < len(series.confirmer.day[0]) <= series.confirmer.rule.day_capacity() == 290
    watcher.poll(NEXT)  # and scores on
    over = [pack([100.0] * 1442)]
    with pytest.raises(InputError, match="at most 1441"):
        Watcher.from_state(
            _set(lambda s: _rule(s).update(version=1, day=over)), _settings(), FakePrometheus()
        )
    with pytest.raises(InputError, match="at most 290"):
        Watcher.from_state(
            _set(lambda s: _rule(s).update(day=[pack([100.0] * 291)])),
            _settings(),
            FakePrometheus(),
        )


def _as_written_before(state: dict[str, Any]) -> None:
    """``state`` as the build before packed whole numbers wrote it: JSON lists."""
    from seenbefore.detection.packed import unpack_whole

    detector = _series(state)["detector"]
    art = detector["artime"]
    art["hist"] = unpack_whole(art["hist"])
    for key in ("labels", "used"):
        art["art"][key] = unpack_whole(art["art"][key])
    for member in detector["members"].values():
        member["seen"] = unpack_whole(member["seen"])


def test_whole_numbers_are_packed_and_an_earlier_builds_lists_still_score_the_same() -> None:
    detector = _series(SAVED)["detector"]
    assert detector["artime"]["hist"].startswith("i1z:")
    assert all(m["seen"].startswith(("i1z:", "i2z:", "i4z:")) for m in detector["members"].values())
    packed = Watcher.from_state(copy.deepcopy(SAVED), _settings(), FakePrometheus())
    earlier = Watcher.from_state(_set(_as_written_before), _settings(), FakePrometheus())
    assert packed.to_state() == earlier.to_state()  # read back to the same detector
    packed.poll(NEXT)
    earlier.poll(NEXT)
    [a], [b] = packed.series.values(), earlier.series.values()
    assert a.last_score == b.last_score and packed.to_state() == earlier.to_state()


def test_packed_whole_numbers_out_of_shape_are_refused() -> None:
    from seenbefore.detection.packed import pack_whole

    cases = {
        "hist of 3": (
            lambda s: _series(s)["detector"]["artime"].update(hist=pack_whole([0, 1, 2]))
        ),
        "used short": (
            lambda s: _series(s)["detector"]["artime"]["art"].update(used=pack_whole([1]))
        ),
        "seen as floats": (
            lambda s: next(iter(_series(s)["detector"]["members"].values())).update(
                seen=pack([1.0])
            )
        ),
        "seen gap 0": (
            lambda s: next(iter(_series(s)["detector"]["members"].values())).update(
                seen=pack_whole([3, 0])
            )
        ),
    }
    for name, edit in cases.items():
        with pytest.raises(InputError) as refused:
            Watcher.from_state(_set(edit), _settings(), FakePrometheus())
        assert "afresh" in str(refused.value) or "--state" in str(refused.value), name


def _recent(state: dict[str, Any]) -> list[float]:
    from seenbefore.detection.packed import unpack

    return unpack(_rule(state)["recent"][0])


def test_nan_in_the_file_is_refused_when_read(tmp_path: Path) -> None:
    """JSON's NaN once loaded into last_score, and every save after it failed."""
    path = tmp_path / "state.json"
    text = json.dumps(SAVED).replace('"last_score": ', '"last_score": NaN, "x": ', 1)
    path.write_text(text)
    with pytest.raises(InputError, match="NaN is no number a state holds"):
        load_state(path)
    path.write_text(json.dumps(SAVED).replace('"polls": 6', '"polls": Infinity'))
    with pytest.raises(InputError, match="Infinity"):
        load_state(path)


def test_a_zlib_bomb_is_refused_without_inflating_it() -> None:
    """~100 KB of base64 that inflates to 800 MB: refused after at most 16 MiB."""
    bomb = "f8z:" + base64.b64encode(zlib.compress(bytes(8 * 10**8), 9)).decode()
    assert len(bomb) < 1_200_000
    state = _set(lambda s: _rule(s).update(recent=[bomb]))
    tracemalloc.start()
    try:
        with pytest.raises(InputError, match="more than 2,097,152 values"):
            Watcher.from_state(state, _settings(), FakePrometheus())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 2**20, peak


def test_an_oversized_file_is_refused_before_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from seenbefore.detection import watch_state

    monkeypatch.setattr(watch_state, "MAX_STATE_BYTES", 1000)
    path = tmp_path / "state.json"
    save_state(path, SAVED)
    with pytest.raises(InputError, match=r"bytes, over the 1,000 a watch state may be"):
        load_state(path)


def test_the_state_is_saved_gzipped_and_reads_back_the_same(tmp_path: Path) -> None:
    """The file is gzip (``zcat`` reads it), the same state gives the same bytes, and what reads
    back is the state saved: a watcher resumed from it scores the next poll as one resumed from
    the state never written would."""
    path = tmp_path / "state.json"
    written = save_state(path, SAVED)
    data = path.read_bytes()
    assert data.startswith(b"\x1f\x8b") and written == len(data) == len(encode_state(SAVED))
    assert encode_state(SAVED) == data  # no timestamp in the header
    assert json.loads(gzip.decompress(data)) == SAVED
    assert written < 0.8 * len(json.dumps(SAVED, separators=(",", ":")))
    loaded = load_state(path)
    assert loaded == SAVED
    resumed = Watcher.from_state(loaded, _settings(), FakePrometheus()).poll(NEXT)
    direct = Watcher.from_state(copy.deepcopy(SAVED), _settings(), FakePrometheus()).poll(NEXT)
    assert resumed.scores == direct.scores and len(next(iter(direct.scores.values()))) == 150
    assert resumed.anomalies == direct.anomalies


def test_a_plain_json_state_from_an_older_build_still_loads(tmp_path: Path) -> None:
    """Older builds wrote the state as plain JSON: it loads, scores on, and is saved gzipped."""
    path = tmp_path / "state.json"
    path.write_text(json.dumps(SAVED, separators=(",", ":")))
    loaded = load_state(path)
    assert loaded == SAVED
    watcher = Watcher.from_state(loaded, _settings(), FakePrometheus())
    watcher.poll(NEXT)
    save_state(path, watcher.to_state())
    assert path.read_bytes().startswith(b"\x1f\x8b")
    again = load_state(path)
    assert again is not None and again["polls"] == SAVED["polls"] + 1


def test_a_gzip_bomb_is_refused_without_inflating_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 64 KB file that inflates to 64 MB, against a bound of 1 MB: refused, naming the
    bound, having inflated no more than it."""
    from seenbefore.detection import watch_state

    monkeypatch.setattr(watch_state, "MAX_STATE_BYTES", 1_000_000)
    squeeze = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    chunk = b" " * 2**20  # JSON whitespace: valid, were it not for its size
    bomb = b"".join(squeeze.compress(chunk) for _ in range(64)) + squeeze.flush()
    assert len(bomb) < 100_000
    path = tmp_path / "state.json"
    path.write_bytes(bomb)
    tracemalloc.start()
    try:
        with pytest.raises(InputError) as refused:
            load_state(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    said = str(refused.value)
    assert "inflates to more than the 1,000,000 bytes a watch state may be" in said
    assert "give another --state or delete it" in said
    assert peak < 8 * 2**20, peak


def test_a_damaged_or_truncated_gzip_state_is_refused(tmp_path: Path) -> None:
    """Cut short, a byte flipped (the CRC catches what inflates), bytes after it, or gzip with
    no JSON inside: each an InputError that says so and how to go on, never a traceback."""
    data = encode_state(SAVED)
    middle = len(data) // 2
    cases = {
        "cut in half": (data[:middle], "truncated gzip watch state"),
        "cut before its trailer": (data[:-4], "truncated gzip watch state"),
        "a byte flipped": (
            data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1 :],
            "damaged gzip watch state",
        ),
        "its CRC flipped": (
            data[:-8] + bytes([data[-8] ^ 0xFF]) + data[-7:],
            "damaged gzip watch state",
        ),
        "bytes after it": (data + b"more", "4 bytes after its gzip watch state"),
        "no JSON inside": (gzip.compress(b"not json", mtime=0), "is not a watch state (not JSON"),
        "only the magic": (b"\x1f\x8b", "truncated gzip watch state"),
    }
    for name, (content, expected) in cases.items():
        path = tmp_path / "state.json"
        path.write_bytes(content)
        with pytest.raises(InputError) as refused:
            load_state(path)
        said = str(refused.value)
        assert expected in said and "give another --state or delete it" in said, (name, said)


def test_a_cursor_or_a_last_point_after_now_is_refused() -> None:
    """A cursor in the future made every poll read nothing, silently, until that time came."""
    now = _at(BASE_MS + 1_000_000)
    later = BASE_MS + 10 * 86_400_000
    ahead = _set(lambda s: s["cursor"].update({"demo_queue_depth": later}))
    with pytest.raises(InputError, match=r"state.cursor\['demo_queue_depth'\] is .* after now"):
        Watcher.from_state(ahead, _settings(), FakePrometheus(), now=now)
    last = _set(lambda s: _series(s).update(last_ms=later))
    with pytest.raises(InputError, match=r"last_ms is .* after now"):
        Watcher.from_state(last, _settings(), FakePrometheus(), now=now)
    # one step ahead is a clock's jitter, not a future
    near = _set(lambda s: s["cursor"].update({"demo_queue_depth": BASE_MS + 951_000}))
    Watcher.from_state(near, _settings(), FakePrometheus(), now=_at(BASE_MS + 950_000))
    stamp = _set(lambda s: _rule(s)["hold"].__setitem__(0, later))
    with pytest.raises(InputError, match=r"confirmer.hold\[0\] is .* after now"):
        Watcher.from_state(stamp, _settings(), FakePrometheus(), now=now)


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON value (objects' keys and lists' items, the leaves included)."""
    found = [path] if path else []
    if isinstance(value, dict):
        for k, v in value.items():
            found += _paths(v, (*path, k))
    elif isinstance(value, list) and len(value) <= 12:  # long lists: their place, not each item
        for i, v in enumerate(value):
            found += _paths(v, (*path, i))
    return found


PATHS = _paths(SAVED)
json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**20), 10**20),
    st.sampled_from([0, 1, -1, 2, 7, 80, 1e308, -1e308, 1e-320, 0.5, 10**15 + 1]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.sampled_from(["f8z:", "f8z:eJwDAAAAAAE=", pack([1.0] * 3), pack([1e300, -1e300])]),
)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=examples(300), deadline=None, database=None, derandomize=True)
@given(st.sampled_from(PATHS), json_value)
def test_any_one_field_replaced_loads_and_runs_or_is_refused(
    path: tuple[Any, ...], value: Any
) -> None:
    state = copy.deepcopy(SAVED)
    parent = state
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = value
    try:
        watcher = Watcher.from_state(state, _settings(), FakePrometheus())
    except InputError:
        return
    watcher.poll(NEXT)  # anything accepted scores on ...
    json.dumps(watcher.to_state(), allow_nan=False)  # ... and saves


def test_the_cli_says_what_is_wrong(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from seenbefore.cli import watch_live
    from seenbefore.cli.app import app

    monkeypatch.setattr(watch_live, "prometheus_reader", lambda url: FakePrometheus())
    state = tmp_path / "s.json"
    bad = _set(lambda s: _rule(s).update(event=[1, 2]))
    bad["settings"] = json.loads(json.dumps(bad["settings"]))
    state.write_text(json.dumps(bad))
    args = ["watch", "--prometheus", "http://prom.test", "--query", "demo_queue_depth"]
    args += ["--step", "1s", "--since", "200s", "--learning", "100", "--once"]
    result = CliRunner().invoke(app, [*args, "--state", str(state)])
    assert result.exit_code != 0
    assert "Traceback" not in result.output
    assert ".event is [1, 2]" in result.output, result.output
