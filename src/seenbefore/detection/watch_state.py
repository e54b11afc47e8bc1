"""What a saved `watch --prometheus` state must look like, checked before any of it is used.

The state file is JSON this program wrote (``Watcher.to_state`` plus the triage memory),
gzip-compressed by :func:`encode_state` (older builds wrote it plain; such a file still reads),
read back from disk. :func:`read_state` bounds the file and the JSON it inflates to
(:data:`MAX_STATE_BYTES` each, inflating no further than that), refuses a damaged or truncated
gzip, and refuses JSON's NaN and Infinity; :func:`check_watch_state` checks every field's type,
bounds and length against the settings being resumed (the detectors' parameters must be the
ones these settings build, so no saved number sizes an allocation), the invariants the scoring
loop indexes by (ARTime's running median, the likelihoods' tails; the confirmation rule's
state, version 3: one entry per metric in every per-metric list, scales above 0, an open
event's hits, peaks and first points set together, a confirmed event's anomaly, a lasting
anomaly's metrics), and refuses a cursor, a last-seen point or any stamp the rule keeps after
now (it would score nothing until then, or name an instant no date holds). Packed arrays are
decoded, bounded (:data:`~seenbefore.detection.packed.MAX_PACKED_VALUES`) and checked finite
and within ±1e100 by :func:`~seenbefore.detection.packed.unpack`; the rule's windows are
decoded here too, to check their lengths against the rule. Every refusal is an
:class:`~seenbefore.errors.InputError` naming the field.
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import zlib
from collections.abc import Collection, Mapping
from itertools import pairwise
from pathlib import Path
from typing import Any, Protocol

from seenbefore.detection import state_schema as s
from seenbefore.detection.confirm import DAY_SLOTS, DAY_SLOTS_V1, DIFFS, Confirmer, Rule
from seenbefore.detection.confirm import READS as CONFIRM_READS
from seenbefore.detection.online import MAX_CONTEXTS, VALUES_VERSION, OnlineEnsemble, _plain
from seenbefore.detection.online import STATE_VERSION as ONLINE_VERSION
from seenbefore.detection.packed import unpack, whole_list
from seenbefore.detection.values import MAX_MAGNITUDE
from seenbefore.errors import InputError

STATE_VERSION = 3  # of Watcher.to_state: 2: packed arrays, the day of values, confirmation by
# sustained deviation; 3: the confirmation rule of detection/confirm.py, its own state


class WatchSettings(Protocol):
    """What the check reads of ``live_watch.WatchSettings`` (this module sits below it)."""

    @property
    def queries(self) -> tuple[str, ...]: ...

    @property
    def step_ms(self) -> int: ...

    @property
    def learning_points(self) -> int: ...

    @property
    def probation(self) -> int: ...

    def rule(self) -> Rule: ...

    def identity(self) -> dict[str, Any]: ...


def series_key(labels: Mapping[str, str]) -> str:
    """A series' key in the state: its labels, sorted, as compact JSON."""
    return json.dumps(sorted(labels.items()), separators=(",", ":"))


MAX_STATE_BYTES = 256 * 1024 * 1024  # about 600 series at the 400 KB each one holds at most
MAX_SERIES = 2_000  # series one watcher follows (a state holds one detector for each)
MAX_PACKED_CHARS = 24 * 1024 * 1024  # one packed array's text in the file
MAX_LABELS = 100  # labels of one series (Prometheus has no hard limit; real ones hold ~10-20)
MAX_LABEL_CHARS = 4_096
MAX_BACK = 1_000  # stamps a confirmation state keeps (the rule's ``back``: 3 by default)
MAX_ANOMALY_SIMS = 1_000_000  # ARTime keeps one per anomaly it scores
_INT = s.whole()
_NUM = s.number(-MAX_MAGNITUDE, MAX_MAGNITUDE)  # what the watcher scores (values.py)
_POSITIVE = s.number(0.0, MAX_MAGNITUDE, above=0.0)
_UNIT = s.number(0.0, 1.0)  # ARTime's levels (level / levels)
_PACKED = s.packed(MAX_PACKED_CHARS)
_MS = s.whole(0, 10**15)  # epoch milliseconds (year 33658)


STATE_LEVEL = 6  # gzip level: on the JSON of 1,000 series, 5 % smaller than level 1 for 0.03 s
# more a poll; level 9 no smaller (detector.json "state_gzip_levels"; docs/decisions.md)
GZIP_MAGIC = b"\x1f\x8b"  # a JSON text cannot start with byte 0x1f, so the two never mix


def encode_state(state: Mapping[str, Any]) -> bytes:
    """``state`` as the file holds it: compact JSON, gzip-compressed (:data:`STATE_LEVEL`).

    The packed arrays inside are deflated already, but base64 spends a third more on them and
    the JSON keys repeat in every series: gzip takes about a third off a series at the watch
    defaults, which is what brings it under issue 32's 8 KB a series and 10 MB a poll of 1,000.
    Gzip rather than a bare zlib stream so ``zcat`` reads the file; its CRC-32 and length,
    checked on reading, tell a damaged file from a valid one. ``mtime=0`` so the same state
    always gives the same bytes. No NaN or Infinity: JSON has none, and :func:`read_state`
    refuses them."""
    text = json.dumps(state, separators=(",", ":"), allow_nan=False).encode()
    return gzip.compress(text, compresslevel=STATE_LEVEL, mtime=0)


def read_state(path: Path) -> dict[str, Any] | None:
    """The saved state as JSON values, or None when there is none yet: gzip-compressed JSON
    (:func:`encode_state`) or, as older builds wrote it, plain JSON (told by the first bytes)."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return None
    if size > MAX_STATE_BYTES:
        raise InputError(
            f"{path} is {size:,} bytes, over the {MAX_STATE_BYTES:,} a watch state may be "
            f"({MAX_SERIES:,} series at most); give another --state or delete it"
        )
    data = path.read_bytes()
    if data.startswith(GZIP_MAGIC):
        data = _inflate(path, data)
    try:
        state = json.loads(data, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        raise InputError(
            f"{path} is not a watch state (not JSON: {str(exc)[:80]}); give another --state "
            "or delete it"
        ) from None
    if not isinstance(state, dict):
        raise InputError(f"{path} is not a watch state; give another --state or delete it")
    return state


def _inflate(path: Path, data: bytes) -> bytes:
    """The JSON a gzip state holds, inflated no further than :data:`MAX_STATE_BYTES` (a small
    file can inflate to gigabytes); InputError if it would be more, or if the gzip is damaged
    (its CRC and length are checked), cut short, or followed by other bytes."""
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)  # gzip framing only
    try:
        text = inflater.decompress(data, MAX_STATE_BYTES + 1)
    except zlib.error as exc:
        raise InputError(
            f"{path} is a damaged gzip watch state ({exc}); give another --state or delete it"
        ) from None
    if len(text) > MAX_STATE_BYTES:
        raise InputError(
            f"{path} inflates to more than the {MAX_STATE_BYTES:,} bytes a watch state may be "
            f"({MAX_SERIES:,} series at most); give another --state or delete it"
        )
    if not inflater.eof:
        raise InputError(
            f"{path} is a truncated gzip watch state (its {len(data):,} bytes end before the "
            "compressed data does); give another --state or delete it"
        )
    if inflater.unused_data:
        raise InputError(
            f"{path} has {len(inflater.unused_data):,} bytes after its gzip watch state, which "
            "is one gzip stream only; give another --state or delete it"
        )
    return text


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is no number a state holds (it is written without NaN or Infinity)")


def check_watch_state(
    state: Mapping[str, Any], settings: WatchSettings, *, now: dt.datetime | None = None
) -> None:
    """InputError unless ``state`` is one that ``settings`` wrote (module docstring)."""
    fresh = OnlineEnsemble(probation=settings.probation, **_event_params())
    fresh._start()
    rule = settings.rule()
    metrics = 1  # a watched series is one metric
    queries = frozenset(settings.queries)
    query = _one_of(queries, "one of the watched queries")
    series = s.record(
        {
            "query": query,
            "labels": s.mapping(
                s.text(MAX_LABEL_CHARS), s.text(MAX_LABEL_CHARS), max_items=MAX_LABELS
            ),
            "detector": _online(fresh),
            "confirmer": _confirmer(metrics),
            "last_ms": s.optional(_MS),
            "seen": _INT,
            "last_score": _NUM,
            "anomalies": _INT,
            "unconfirmed": _INT,
            "merged": _INT,
        }
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
        _series_invariants(one, key, path, fresh, rule, limit)


def _series_invariants(
    one: Mapping[str, Any],
    key: str,
    path: str,
    fresh: OnlineEnsemble,
    rule: Rule,
    limit: int,
) -> None:
    if series_key(one["labels"]) != key:
        s.refuse(f"{path} key", key[:60], "the series' labels as JSON (series_key)")
    if one["last_ms"] is not None:
        _not_future(f"{path}.last_ms", one["last_ms"], limit)
    _confirmer_invariants(one["confirmer"], f"{path}.confirmer", rule, limit)
    _online_invariants(one["detector"], f"{path}.detector", fresh)


def _not_future(path: str, ms: int, limit: int) -> None:
    if ms > limit:
        when = dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).isoformat()
        raise InputError(
            f"the state: {path} is {when}, after now: this watcher would read and score nothing "
            "until then (the clock went back, or the state came from elsewhere); give another "
            "--state or delete it"
        )


def _one_of(allowed: Collection[str] | Collection[int], what: str) -> s.Check:
    """One of ``allowed``: text (a query, a metric's index) or whole numbers (a version); never
    a boolean, a float or anything else JSON holds."""

    def check(value: Any, path: str) -> None:
        if isinstance(value, bool) or not isinstance(value, str | int) or value not in allowed:
            s.refuse(path, value, f"{what} {sorted(allowed)}")

    return check


def _confirmer(k: int) -> s.Check:
    """``Confirmer.to_state`` for ``k`` metrics: every per-metric list holds exactly ``k``."""

    def each(item: s.Check) -> s.Check:
        return s.list_of(item, min_items=k, max_items=k)

    scaled = s.pair(_NUM, _POSITIVE)  # (median, robust scale): a scale divides
    event = s.record(
        {
            "t": _INT,
            "stamp": _MS,
            "score": _NUM,
            "base": each(s.optional(scaled)),
            "quiet": _INT,
            "hits": each(_INT),
            "first": each(s.optional(_MS)),
            # (z, value, baseline, scale, day scale) at the peak
            "best": each(s.optional(_record_list(_NUM, _NUM, _NUM, _POSITIVE, _POSITIVE))),
            "largest": each(s.number(0.0, MAX_MAGNITUDE)),
            "yesterday": each(_INT),
            "last_hit": each(s.whole(-1)),
            "confirmed": s.boolean,
            "anomaly": s.optional(_MS),
            "joined": s.boolean,
            "described": s.boolean,
        }
    )
    metric = _one_of(frozenset(str(j) for j in range(k)), "a metric's index")
    # (baseline, scale, sign, day scale) of each metric the lasting anomaly holds
    held = _record_list(_NUM, _POSITIVE, _sign, _POSITIVE)
    return s.record(
        {
            "version": _one_of(CONFIRM_READS, "a confirmation state version of"),
            "t": _INT,
            "recent": each(_PACKED),
            "day": each(_PACKED),
            "diffs": each(_PACKED),
            "head": each(_PACKED),
            "level": s.optional(each(scaled)),
            "event": s.optional(event),
            "hold": s.optional(s.pair(_MS, s.mapping(metric, held, max_items=k))),
            "back": s.pair(_INT, s.optional(_MS)),
            "stamps": s.list_of(_MS, max_items=MAX_BACK),
        },
        # written since a restart keeps them / since the day-over-day differences' scale
        optional_keys=frozenset({"stamps", "diffs"}),
    )


def _record_list(*items: s.Check) -> s.Check:
    """A list of exactly ``len(items)`` values, each checked by its own check."""

    def check(value: Any, path: str) -> None:
        if not isinstance(value, list) or len(value) != len(items):
            s.refuse(path, value, f"a list of {len(items)} numbers")
        for i, (v, item) in enumerate(zip(value, items, strict=True)):
            item(v, f"{path}[{i}]")

    return check


def _sign(value: Any, path: str) -> None:
    if isinstance(value, bool) or value not in (1, -1):
        s.refuse(path, value, "1 or -1 (the direction the anomaly holds)")


def _confirmer_invariants(state: Mapping[str, Any], path: str, rule: Rule, limit: int) -> None:
    """What the rule indexes and divides by, and the stamps it reports (module docstring)."""
    t = state["t"]
    learning = max(1, rule.learning)  # the level is learned once a point has been seen
    if (state["level"] is None) != (t < learning):
        s.refuse(f"{path}.level", state["level"], f"null while learning ({learning} points)")
    fresh = Confirmer(["x"], rule)
    bounds = {
        "recent": fresh.recent[0].maxlen or 0,
        # version 1 kept one a minute (DAY_SLOTS_V1); from_state thins it
        "day": rule.day_capacity(DAY_SLOTS)
        if state["version"] > 1
        else rule.day_capacity(DAY_SLOTS_V1, bracket=False),
        "diffs": DIFFS,
        "head": learning,
    }
    for name, most in bounds.items():
        for j, text in enumerate(state.get(name, ())):
            n = len(unpack(text))  # InputError past MAX_PACKED_VALUES, or if not finite
            if n > most:
                s.refuse(f"{path}.{name}[{j}]", f"{n} values", f"at most {most} (the rule's)")
    stamps = state.get("stamps", [])
    if len(stamps) > max(1, rule.back) or any(b <= a for a, b in pairwise(stamps)):
        s.refuse(f"{path}.stamps", stamps, f"at most {max(1, rule.back)} rising stamps")
    for i, stamp in enumerate(stamps):
        _not_future(f"{path}.stamps[{i}]", stamp, limit)
    back, since = state["back"]
    if (back == 0) != (since is None):
        s.refuse(f"{path}.back", state["back"], "[0, null] or [points back, first stamp]")
    if since is not None:
        _not_future(f"{path}.back[1]", since, limit)
    hold = state["hold"]
    if hold is not None:
        _not_future(f"{path}.hold[0]", hold[0], limit)
    event = state["event"]
    if event is None:
        return
    where = f"{path}.event"
    _not_future(f"{where}.stamp", event["stamp"], limit)
    for j, hits in enumerate(event["hits"]):
        first, best = event["first"][j], event["best"][j]
        if (hits > 0) != (first is not None) or (hits > 0) != (best is not None):
            s.refuse(f"{where}.hits[{j}]", hits, "first and best set exactly when hits > 0")
        if first is not None:
            _not_future(f"{where}.first[{j}]", first, limit)
    if event["confirmed"] != (event["anomaly"] is not None):
        s.refuse(f"{where}.anomaly", event["anomaly"], "a stamp exactly when confirmed")
    if event["anomaly"] is not None:
        _not_future(f"{where}.anomaly", event["anomaly"], limit)
    if (event["joined"] or event["described"]) and not event["confirmed"]:
        s.refuse(f"{where}.confirmed", False, "true when joined or described")


def _triage(value: Any, path: str) -> None:
    """Triage memory: read as ``Triage.from_state`` reads it (InputError if it cannot be)."""
    from seenbefore.detection.triage import Triage

    if not isinstance(value, dict):
        s.refuse(path, value, "an object (the triage memory)")
    Triage.from_state(value)


_TAIL = s.record({"count": _INT, "items": _PACKED})
_FLAT = s.record({"count": _INT, "segments": _PACKED})


def _online(fresh: OnlineEnsemble) -> s.Check:
    params = _plain(fresh.get_params())

    def member(seen: s.Check) -> s.Check:
        return s.record(
            {
                "inputs": _PACKED,
                "symbols": s.list_of(s.whole(-100, 100), max_items=16),
                "n_symbols": _INT,
                "seen": seen,
                "range": s.optional(s.pair(_NUM, _POSITIVE)),
                "raw": _PACKED,
                "avg": _TAIL,
                "dist": s.pair(_NUM, _POSITIVE),
                "prev_red": s.boolean,
            }
        )

    codes = member(s.wholes(s.whole(1), max_items=MAX_CONTEXTS))  # sorted context codes' gaps
    lists = member(s.list_of(s.list_of(s.whole(-100, 100), max_items=16), max_items=1_000_000))

    def outline(version: int) -> dict[str, s.Check]:
        return {
            "version": s.equals(version, f"the online ensemble's version {version}"),
            "params": s.equals(params, "the parameters these watch settings build"),
        }

    fields: dict[str, s.Check] = {
        **outline(ONLINE_VERSION),
        "t": _INT,
        "flat": _FLAT,
        "previous": s.optional(_NUM),
        "lo": s.optional(_NUM),
        "hi": s.optional(_NUM),
        "quiet_until": s.whole(-1),
        "members": s.record(dict.fromkeys(fresh.novelty_, codes)),
    }
    if fresh.artime_ is not None:
        fields["artime"] = _artime(fresh)
    unstarted, started = s.record(outline(ONLINE_VERSION)), s.record(fields)
    # version 2 (the last history + 1 values instead of the flat test's segments): still read
    fields_v2 = {k: v for k, v in fields.items() if k != "flat"}
    fields_v2.update(
        outline(VALUES_VERSION),
        values=_TAIL,
        members=s.record(dict.fromkeys(fresh.novelty_, lists)),
    )
    unstarted_v2, started_v2 = s.record(outline(VALUES_VERSION)), s.record(fields_v2)

    # by (a version 2 state, a detector that has seen a point: one that has not has no state)
    checks = {
        (False, False): unstarted,
        (False, True): started,
        (True, False): unstarted_v2,
        (True, True): started_v2,
    }

    def check(value: Any, path: str) -> None:
        shaped = isinstance(value, dict)
        old, begun = shaped and value.get("version") == VALUES_VERSION, shaped and "t" in value
        checks[old, begun](value, path)

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
            "hist": s.wholes(_INT, min_items=a.levels + 1, max_items=a.levels + 1),
            "median": s.list_of(_INT, min_items=3, max_items=3),
            "fwin": s.list_of(_UNIT, min_items=a.window, max_items=a.window),
            "probation_features": _PACKED,
            "art": s.record(
                {
                    "W": _PACKED,
                    "labels": s.wholes(_INT, min_items=1, max_items=a.art.max_categories),
                    "used": s.wholes(_INT, min_items=1, max_items=a.art.max_categories),
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
    kept = "flat" if "flat" in state else "values"  # version 2 kept the values
    if state[kept]["count"] != t:
        s.refuse(f"{path}.{kept}.count", state[kept]["count"], f"t ({t})")
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
        hist = whole_list(art["hist"])
        med, below, above = art["median"]
        ok = 0 <= med < len(hist) and below == sum(hist[:med]) and above == sum(hist[med + 1 :])
        if not ok or (sum(hist) > 0 and not hist[med]):
            s.refuse(f"{path}.artime.median", art["median"], "a running median over hist")
        rows = len(whole_list(art["art"]["labels"]))
        used = len(whole_list(art["art"]["used"]))
        if used != rows:
            s.refuse(f"{path}.artime.art.used", used, f"{rows} entries")


def _event_params() -> dict[str, Any]:
    from seenbefore.detection.ensemble import EVENT_PARAMS

    return dict(EVENT_PARAMS)


def _state_version() -> int:
    return STATE_VERSION
