"""What a saved `watch --prometheus` state must look like, checked before any of it is used.

The state file is JSON this program wrote (``Watcher.to_state`` plus the triage memory), read
back from disk. :func:`read_state` bounds the file (:data:`MAX_STATE_BYTES`) and refuses JSON's
NaN and Infinity; :func:`check_watch_state` checks every field's type, bounds and length
against the settings being resumed (the detectors' parameters must be the ones these settings
build, so no saved number sizes an allocation), the invariants the scoring loop indexes by
(ARTime's running median, the likelihoods' tails, an open event's fields), and refuses a cursor
or a last-seen point after now (it would score nothing until then). Packed arrays are decoded,
bounded and checked finite by :func:`~seenbefore.detection.packed.unpack` when they are read.
Every refusal is an :class:`~seenbefore.errors.InputError` naming the field.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from seenbefore.detection import state_schema as s
from seenbefore.detection.online import STATE_VERSION as ONLINE_VERSION
from seenbefore.detection.online import OnlineEnsemble, _plain
from seenbefore.detection.values import MAX_MAGNITUDE
from seenbefore.errors import InputError

STATE_VERSION = 2  # of Watcher.to_state: 2: packed arrays, the day of values, confirmation by
# sustained deviation


class WatchSettings(Protocol):
    """What the check reads of ``live_watch.WatchSettings`` (this module sits below it)."""

    @property
    def queries(self) -> tuple[str, ...]: ...

    @property
    def step_ms(self) -> int: ...

    @property
    def learning_points(self) -> int: ...

    def identity(self) -> dict[str, Any]: ...


def series_key(labels: Mapping[str, str]) -> str:
    """A series' key in the state: its labels, sorted, as compact JSON."""
    return json.dumps(sorted(labels.items()), separators=(",", ":"))


MAX_STATE_BYTES = 256 * 1024 * 1024  # about 600 series at the 400 KB each one holds at most
MAX_SERIES = 2_000  # series one watcher follows (a state holds one detector for each)
MAX_PACKED_CHARS = 24 * 1024 * 1024  # one packed array's text in the file
MAX_LABELS = 100  # labels of one series (Prometheus has no hard limit; real ones hold ~10-20)
MAX_LABEL_CHARS = 4_096
MAX_ANOMALY_SIMS = 1_000_000  # ARTime keeps one per anomaly it scores
_INT = s.whole()
_NUM = s.number(-MAX_MAGNITUDE, MAX_MAGNITUDE)  # what the watcher scores (values.py)
_POSITIVE = s.number(0.0, MAX_MAGNITUDE, above=0.0)
_UNIT = s.number(0.0, 1.0)  # ARTime's levels (level / levels)
_PACKED = s.packed(MAX_PACKED_CHARS)
_MS = s.whole(0, 10**15)  # epoch milliseconds (year 33658)


def read_state(path: Path) -> dict[str, Any] | None:
    """The saved state as JSON values, or None when there is none yet."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return None
    if size > MAX_STATE_BYTES:
        raise InputError(
            f"{path} is {size:,} bytes, over the {MAX_STATE_BYTES:,} a watch state may be "
            f"({MAX_SERIES:,} series at most); give another --state or delete it"
        )
    try:
        state = json.loads(path.read_bytes(), parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        raise InputError(
            f"{path} is not a watch state (not JSON: {str(exc)[:80]}); give another --state "
            "or delete it"
        ) from None
    if not isinstance(state, dict):
        raise InputError(f"{path} is not a watch state; give another --state or delete it")
    return state


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is no number a state holds (it is written without NaN or Infinity)")


def check_watch_state(
    state: Mapping[str, Any], settings: WatchSettings, *, now: dt.datetime | None = None
) -> None:
    """InputError unless ``state`` is one that ``settings`` wrote (module docstring)."""
    fresh = OnlineEnsemble(probation=settings.learning_points, **_event_params())
    fresh._start()
    queries = frozenset(settings.queries)
    query = _one_of(queries, "one of the watched queries")
    series = s.record(
        {
            "query": query,
            "labels": s.mapping(
                s.text(MAX_LABEL_CHARS), s.text(MAX_LABEL_CHARS), max_items=MAX_LABELS
            ),
            "detector": _online(fresh),
            "recent": _PACKED,
            "day": _PACKED,
            "head": _PACKED,
            "level": s.optional(s.pair(_NUM, _POSITIVE)),
            "last_ms": s.optional(_MS),
            "seen": _INT,
            "last_score": _NUM,
            "anomalies": _INT,
            "unconfirmed": _INT,
            "event": s.optional(_EVENT),
            "hold": s.optional(s.list_of(_NUM, min_items=3, max_items=3)),  # checked below
        },
        optional_keys=frozenset({"hold"}),
    )
    watcher = s.record(
        {
            "version": s.equals(_state_version(), "this build's watch state version"),
            "settings": s.equals(settings.identity(), f"these settings {settings.identity()}"),
            "polls": _INT,
            "cursor": s.mapping(query, _MS, max_items=len(queries)),
            "series": s.mapping(s.text(1 << 20), series, max_items=MAX_SERIES),
            "triage": _triage,
        },
        optional_keys=frozenset({"triage"}),
    )
    if state.get("version") != _state_version() or state.get("settings") != settings.identity():
        return  # Watcher.from_state says which, as it always has
    watcher(state, "state")
    limit = round(((now or dt.datetime.now(dt.UTC)).timestamp()) * 1000) + settings.step_ms
    for q, ms in state["cursor"].items():
        _not_future(f"state.cursor[{q[:40]!r}]", ms, limit)
    for key, one in state["series"].items():
        path = f"state.series[{key[:60]!r}]"
        _series_invariants(one, key, path, fresh, limit)


def _series_invariants(
    one: Mapping[str, Any], key: str, path: str, fresh: OnlineEnsemble, limit: int
) -> None:
    if series_key(one["labels"]) != key:
        s.refuse(f"{path} key", key[:60], "the series' labels as JSON (series_key)")
    if one["last_ms"] is not None:
        _not_future(f"{path}.last_ms", one["last_ms"], limit)
    hold = one.get("hold")
    if hold is not None and (hold[1] <= 0 or hold[2] not in (1.0, -1.0)):
        s.refuse(f"{path}.hold", hold, "[baseline, scale > 0, sign 1 or -1]")
    event = one["event"]
    if event is not None:
        started = [event[k] is not None for k in ("best", "baseline", "first_ms")]
        if any(started) != (event["hits"] > 0) or not (all(started) or not any(started)):
            s.refuse(f"{path}.event", event, "best, baseline and first_ms set once hits > 0")
    _online_invariants(one["detector"], f"{path}.detector", fresh)


def _not_future(path: str, ms: int, limit: int) -> None:
    if ms > limit:
        when = dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).isoformat()
        raise InputError(
            f"the state: {path} is {when}, after now: this watcher would read and score nothing "
            "until then (the clock went back, or the state came from elsewhere); give another "
            "--state or delete it"
        )


def _one_of(allowed: frozenset[str], what: str) -> s.Check:
    def check(value: Any, path: str) -> None:
        if not isinstance(value, str) or value not in allowed:
            s.refuse(path, value, f"{what} {sorted(allowed)}")

    return check


_EVENT = s.record(
    {
        "start": _INT,
        "start_ms": _MS,
        "quiet": _INT,
        "score": _NUM,
        "confirmed": s.boolean,
        "best": s.optional(s.pair(_NUM, _NUM)),
        "baseline": s.optional(_NUM),
        "hits": _INT,
        "first_ms": s.optional(_MS),
    }
)


def _triage(value: Any, path: str) -> None:
    """Triage memory: read as ``Triage.from_state`` reads it (InputError if it cannot be)."""
    from seenbefore.detection.triage import Triage

    if not isinstance(value, dict):
        s.refuse(path, value, "an object (the triage memory)")
    Triage.from_state(value)


_TAIL = s.record({"count": _INT, "items": _PACKED})


def _online(fresh: OnlineEnsemble) -> s.Check:
    params = _plain(fresh.get_params())
    member = s.record(
        {
            "inputs": _PACKED,
            "symbols": s.list_of(s.whole(-100, 100), max_items=16),
            "n_symbols": _INT,
            "seen": s.list_of(s.list_of(s.whole(-100, 100), max_items=16), max_items=1_000_000),
            "range": s.optional(s.pair(_NUM, _POSITIVE)),
            "raw": _PACKED,
            "avg": _TAIL,
            "dist": s.pair(_NUM, _POSITIVE),
            "prev_red": s.boolean,
        }
    )
    outline: dict[str, s.Check] = {
        "version": s.equals(ONLINE_VERSION, f"the online ensemble's version {ONLINE_VERSION}"),
        "params": s.equals(params, "the parameters these watch settings build"),
    }
    fields: dict[str, s.Check] = {
        **outline,
        "t": _INT,
        "values": _TAIL,
        "previous": s.optional(_NUM),
        "lo": s.optional(_NUM),
        "hi": s.optional(_NUM),
        "quiet_until": s.whole(-1),
        "members": s.record(dict.fromkeys(fresh.novelty_, member)),
    }
    if fresh.artime_ is not None:
        fields["artime"] = _artime(fresh)
    unstarted, started = s.record(outline), s.record(fields)

    def check(value: Any, path: str) -> None:  # a detector that has seen no point has no state
        (started if isinstance(value, dict) and "t" in value else unstarted)(value, path)

    return check


def _artime(fresh: OnlineEnsemble) -> s.Check:
    a = fresh.artime_
    assert a is not None  # only called with an ARTime member
    return s.record(
        {
            "version": s.equals(a.to_state()["version"], "this build's ARTime state version"),
            "params": s.equals(a.params(), "the parameters these watch settings build"),
            "t": _INT,
            "block": s.list_of(_NUM, max_items=a.step),
            "avg": _NUM,
            "dsi": _INT,
            "pending": _PACKED,
            "range": s.optional(s.pair(_NUM, _NUM)),
            "seen": s.optional(s.pair(_NUM, _NUM)),
            "hist": s.list_of(_INT, min_items=a.levels + 1, max_items=a.levels + 1),
            "median": s.list_of(_INT, min_items=3, max_items=3),
            "fwin": s.list_of(_UNIT, min_items=a.window, max_items=a.window),
            "probation_features": _PACKED,
            "art": s.record(
                {
                    "W": _PACKED,
                    "labels": s.list_of(_INT, min_items=1, max_items=a.art.max_categories),
                    "used": s.list_of(_INT, min_items=1, max_items=a.art.max_categories),
                    "clusters": _INT,
                    "rho": s.pair(_NUM, _NUM),
                    "steps": _INT,
                }
            ),
            "last_anomaly": s.pair(_INT, _NUM),
            "last_rho_update_i": _INT,
            "mask_after_cat": s.boolean,
            "no_new_cat": _INT,
            "anomaly_sims": s.list_of(_NUM, max_items=MAX_ANOMALY_SIMS),
            "match": s.pair(_NUM, _INT),
            "sims": _PACKED,
            "diffs": _PACKED,
        }
    )


def _online_invariants(state: Mapping[str, Any], path: str, fresh: OnlineEnsemble) -> None:
    """What the scoring loop indexes by: the tails' counts, the members' progress, ARTime's
    running median (below and above count the levels under and over it)."""
    if "t" not in state:
        return
    t = state["t"]
    if state["values"]["count"] != t:
        s.refuse(f"{path}.values.count", state["values"]["count"], f"t ({t})")
    learning = t < fresh.probation
    for name, member in state["members"].items():
        where = f"{path}.members.{name}"
        if (member["range"] is None) != learning:
            s.refuse(f"{where}.range", member["range"], "null while learning, else [lo, span]")
        done = 0 if learning else t
        if member["n_symbols"] != done or member["avg"]["count"] != done:
            s.refuse(f"{where}.n_symbols", member["n_symbols"], f"{done} (t is {t})")
    art = state.get("artime")
    if art is not None:
        hist, (med, below, above) = art["hist"], art["median"]
        ok = 0 <= med < len(hist) and below == sum(hist[:med]) and above == sum(hist[med + 1 :])
        if not ok or (sum(hist) and not hist[med]):
            s.refuse(f"{path}.artime.median", art["median"], "a running median over hist")
        rows = len(art["art"]["labels"])
        if len(art["art"]["used"]) != rows:
            s.refuse(f"{path}.artime.art.used", len(art["art"]["used"]), f"{rows} entries")


def _event_params() -> dict[str, Any]:
    from seenbefore.detection.ensemble import EVENT_PARAMS

    return dict(EVENT_PARAMS)


def _state_version() -> int:
    return STATE_VERSION
