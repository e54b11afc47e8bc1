"""The shipped ensemble one point at a time: ``OnlineEnsemble.update(value) -> score``.

The same arithmetic as :class:`~seenbefore.detection.ensemble.StreamingEnsemble` for the
members that have an online form here (the range seen so far; sequence novelty over values
and over changes, each through its own anomaly likelihood; ARTime, which is online by nature),
kept as running state so a live detector pays a constant cost per point; a test checks that
feeding a series point by point gives the batch scores. Sequence quantisers need the
probationary period's range, so their raw scores for those rows are computed when the period
ends; the likelihood reports 0.5 until then, as in the batch.

Memory is bounded: what is kept is what the arithmetic reads again, i.e. the inputs of the
probationary period until it ends, the last ``order + 1`` symbols and the contexts seen (at most
``(3 * bins) ** (order + 1)``), the last ``averaging_window`` raw scores, the last
``history + 1`` averaged scores (the likelihood's Gaussian reads at most ``history`` rows back),
running summaries of the values over the same rows for the flat test (``_FlatWindow``; none
without a likelihood member), and ARTime's categories (at most ``max_categories``).
:meth:`OnlineEnsemble.retained` counts it; :meth:`OnlineEnsemble.to_state` and
:meth:`OnlineEnsemble.from_state` carry it through JSON, long arrays packed
(:mod:`~seenbefore.detection.packed`): a restarted series scores as if never stopped (tested).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from itertools import pairwise
from typing import Any

import numpy as np

from seenbefore.detection.detectors.artime import ARTimeStream
from seenbefore.detection.ensemble import DEFAULT_MEMBERS, member_settings
from seenbefore.detection.likelihood import (
    FLAT_VARIANCE,
    LOG_EPSILON,
    MEAN_FLOOR,
    RED_ZONE,
    VARIANCE_FLOOR,
    YELLOW_ZONE,
)
from seenbefore.detection.packed import pack, pack_whole, unpack, whole_list
from seenbefore.errors import InputError

ONLINE_MEMBERS = ("spatial", "sequence", "delta", "artime")
# of to_state(): a change to what it holds bumps it (2: packed arrays, ARTime; 3: the flat
# test's segment summaries instead of the last ``history + 1`` values, and the contexts seen as
# sorted codes; from_state still reads version 2)
STATE_VERSION = 3
VALUES_VERSION = 2
_LOG_EPS = math.log(LOG_EPSILON)


def _log(tail: float) -> float:
    return min(1.0, max(0.0, math.log(tail + LOG_EPSILON) / _LOG_EPS))


class _Tail:
    """The last ``keep`` items of a sequence, read by their absolute index."""

    def __init__(self, keep: int) -> None:
        self.items: deque[float] = deque(maxlen=max(1, keep))
        self.count = 0  # items appended so far

    def append(self, v: float) -> None:
        self.items.append(v)
        self.count += 1

    def __getitem__(self, i: int) -> float:
        return self.items[i - (self.count - len(self.items))]

    def slice(self, lo: int, hi: int) -> list[float]:
        first = self.count - len(self.items)
        if lo < first:
            raise AssertionError(f"row {lo} is no longer kept (from {first})")
        return [self.items[i - first] for i in range(lo, hi)]


class _FlatWindow:
    """What the likelihoods' flat test reads of the raw values -- the variance of the values in
    a window ``[lo, t)`` -- without keeping the values (8,641 of them were nine tenths of a
    watched series' saved state).

    The windows it is asked about start and end only at known rows (the re-estimation rows,
    those rows less ``history``, and the learning period's edges: ``is_edge``), so the values
    are kept as running summaries of the segments between consecutive edges: a count, and for
    a segment quiet enough to matter its mean and sum of squared deviations (Welford), merged
    per window by Chan's formula. A *loud* segment -- its own squared deviations already over
    ``loud`` -- makes every window that holds it not flat (a window's variance is at least
    that sum over the window's length, at most ``history``), so only its count is kept."""

    def __init__(self, is_edge: Callable[[int], bool], keep: int, loud: float) -> None:
        self.is_edge, self.keep, self.loud = is_edge, keep, loud
        self.count = 0  # values appended so far
        # closed segments: [start, count, mean, m2], m2 < 0 for a loud one (mean, m2 dropped)
        self.segments: deque[list[float]] = deque()
        self.open = [0.0, 0.0, 0.0, 0.0]  # the segment being filled: start, count, mean, m2

    def append(self, v: float) -> None:
        i = self.count
        if self.open[1] and self.is_edge(i):
            self._close()
            self.open = [float(i), 0.0, 0.0, 0.0]
        seg = self.open
        seg[1] += 1
        delta = v - seg[2]
        seg[2] += delta / seg[1]
        seg[3] += delta * (v - seg[2])
        self.count += 1

    def _close(self) -> None:
        start, n, mean, m2 = self.open
        self.segments.append([start, n, 0.0, -1.0] if m2 > self.loud else [start, n, mean, m2])
        while self.segments and self.segments[0][0] + self.segments[0][1] <= self.count - self.keep:
            self.segments.popleft()

    def variance(self, lo: int, hi: int) -> float:
        """The population variance of the values of rows ``[lo, hi)``; ``inf`` when a loud
        segment lies in it. ``lo`` and ``hi`` must be edges (or ``hi`` the next row)."""
        n = mean = m2 = 0.0
        covered = 0
        parts = [*self.segments, self.open]
        for start, count, seg_mean, seg_m2 in parts:
            if start < lo or start + count > hi:
                continue
            covered += int(count)
            if seg_m2 < 0:
                return math.inf
            total = n + count
            delta = seg_mean - mean
            mean += delta * count / total
            m2 += seg_m2 + delta * delta * n * count / total
            n = total
        if covered != hi - lo:
            raise AssertionError(f"rows {lo}-{hi} are not whole kept segments ({covered} rows)")
        return m2 / n if n else 0.0

    def replay(self, first: int, values: Sequence[float]) -> None:
        """Start at row ``first`` and append ``values`` (a version 2 state's kept values)."""
        self.count, self.segments, self.open = first, deque(), [float(first), 0.0, 0.0, 0.0]
        for v in values:
            self.append(v)

    def to_state(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "segments": pack(v for seg in [*self.segments, self.open] for v in seg),
        }

    def load(self, state: Mapping[str, Any]) -> None:
        flat = unpack(state["segments"])
        self.count = int(state["count"])
        if not flat or len(flat) % 4:
            raise InputError(
                f"the flat test's saved segments hold {len(flat)} numbers, expected a multiple "
                "of 4 (at least one segment): the state is damaged, start the series afresh"
            )
        rows = [flat[i : i + 4] for i in range(0, len(flat), 4)]
        *closed, self.open = rows
        self.segments = deque(closed)
        end = self.open[0] + self.open[1]
        if end != self.count or any(a[0] + a[1] != b[0] for a, b in pairwise(rows)):
            raise InputError(
                f"the flat test's saved segments do not run back to back to row {self.count}: "
                "the state is damaged, start the series afresh"
            )


MAX_CONTEXTS = 1_000_000  # contexts a sequence member's saved state may hold (a bound on reading)


def _context_codes(seen: set[tuple[int, ...]], bins: int) -> list[int]:
    """The contexts seen, each as one whole number (its symbols as the digits of base
    ``3 * bins + 1``, each shifted to 1..3*bins so lengths differ), sorted and kept as the gaps
    between them: about 3 characters of JSON a context instead of 12."""
    radix = 3 * bins + 1
    codes = []
    for key in seen:
        code = 0
        for symbol in key:
            code = code * radix + symbol + bins + 1
        codes.append(code)
    codes.sort()
    return [b - a for a, b in pairwise([0, *codes])]


def _contexts(gaps: Sequence[int], bins: int, order: int) -> set[tuple[int, ...]]:
    radix = 3 * bins + 1
    seen: set[tuple[int, ...]] = set()
    code = 0
    for gap in gaps:
        if gap < 1:
            raise InputError(
                f"a saved context code gap is {gap}; codes are sorted and distinct: the state "
                "is damaged, start the series afresh"
            )
        code += int(gap)
        digits, rest = [], code
        while rest:
            rest, digit = divmod(rest, radix)
            digits.append(digit - bins - 1)
        if not 2 <= len(digits) <= order + 1 or min(digits) < -bins:
            raise InputError(
                f"a saved context code {code} is not a context of 2 to {order + 1} symbols: "
                "the state is damaged, start the series afresh"
            )
        seen.add(tuple(reversed(digits)))
    return seen


class _Novelty:
    """Sequence novelty of a stream of inputs (values or changes), quantised over the range of
    the first ``probation`` inputs; ``push`` returns the raw scores it completes (none during
    the probationary period, all of them when it ends, then one per input)."""

    def __init__(self, probation: int, bins: int, order: int) -> None:
        self.probation, self.bins, self.order = probation, bins, order
        self.inputs: list[float] = []  # only until the range is known
        self.symbols: deque[int] = deque(maxlen=order + 1)
        self.n_symbols = 0
        self.seen: set[tuple[int, ...]] = set()
        self.range: tuple[float, float] | None = None

    def push(self, v: float) -> list[float]:
        if self.range is not None:
            return [self._novelty(self._symbol(v))]
        self.inputs.append(v)
        if len(self.inputs) < self.probation:
            return []
        head = self.inputs[: max(1, self.probation)]
        lo, span = min(head), max(head) - min(head)
        self.range = (lo, span if span > 0.0 else max(0.01 * abs(lo), 1.0))
        inputs, self.inputs = self.inputs, []
        return [self._novelty(self._symbol(u)) for u in inputs]

    def _symbol(self, v: float) -> int:
        lo, span = self.range or (0.0, 1.0)
        q = math.floor((v - lo) / (span / self.bins))
        if q == self.bins and v <= lo + span:
            q = self.bins - 1
        return int(min(max(q, -self.bins), 2 * self.bins - 1))

    def _novelty(self, symbol: int) -> float:
        self.symbols.append(symbol)
        t = self.n_symbols
        self.n_symbols += 1
        k_max = min(self.order, t)
        if k_max == 0:
            return 0.0
        last = list(self.symbols)
        new = 0
        for k in range(1, k_max + 1):
            key = tuple(last[len(last) - k - 1 :])
            if key not in self.seen:
                self.seen.add(key)
                new += 1
        return new / k_max


class _Likelihood:
    """The anomaly likelihood of one member's raw scores, row by row (see ``likelihood``)."""

    def __init__(self, probation: int, window: int, history: int, period: int) -> None:
        self.learning = probation // 2
        self.start = max(1, probation)
        self.window, self.history, self.period = window, history, max(1, period)
        self.raw: deque[float] = deque(maxlen=max(1, window))
        self.avg = _Tail(max(2, history + 1))
        self.dist = (0.5, 1e3)
        self.prev_red = False

    def feed(self, raw: list[float]) -> None:
        for r in raw:
            self.raw.append(r)
            self.avg.append(math.fsum(self.raw) / len(self.raw))

    def score(self, t: int, values: _FlatWindow) -> float:
        if t < self.start:
            self.prev_red = False
            return _log(0.5)
        if t == self.start or t % self.period == 0:
            lo = max(self.learning, t - self.history, 0)
            lo = max(0, t - 1) if lo >= t else lo
            a = np.asarray(self.avg.slice(lo, t))
            mean, var = max(float(a.mean()), MEAN_FLOOR), max(float(a.var()), VARIANCE_FLOOR)
            if values.variance(lo, t) < FLAT_VARIANCE:
                mean, var = 0.5, 1e6
            self.dist = (mean, math.sqrt(var))
        mean, std = self.dist
        tail = 0.5 * math.erfc((self.avg[t] - mean) / std / math.sqrt(2.0))
        red = tail <= RED_ZONE
        reported = YELLOW_ZONE if red and self.prev_red else tail
        self.prev_red = red
        return _log(reported)


def _num(v: float) -> float | None:
    return None if math.isnan(v) else v


def _float(v: float | None) -> float:
    return math.nan if v is None else float(v)


def _plain(value: Any) -> Any:
    """Parameters as JSON values (tuples as lists, mappings as dicts)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _tail_state(tail: _Tail) -> dict[str, Any]:
    return {"count": tail.count, "items": pack(tail.items)}


def _tail_load(tail: _Tail, state: Mapping[str, Any]) -> None:
    items = unpack(state["items"])
    tail.items.extend(items)
    tail.count = int(state["count"])
    if len(items) != min(tail.count, tail.items.maxlen or 0):
        raise InputError(
            f"a saved tail holds {len(items)} items for a count of {tail.count} (it keeps the "
            f"last {tail.items.maxlen}): the state is damaged, start the series afresh"
        )


class OnlineEnsemble:
    """scikit-learn style parameters (those of ``StreamingEnsemble`` for the online members);
    ``update(value)`` returns that point's score; learned state ends in ``_``."""

    def __init__(
        self,
        *,
        probation: int = 750,
        members: Sequence[str] = DEFAULT_MEMBERS,
        member_params: Mapping[str, Mapping[str, Any]] | None = None,
        tolerance: float = 0.05,
        averaging_window: int = 10,
        history: int = 8640,
        reestimation_period: int = 100,
        fire: float = 0.5,
        rest_fraction: float = 0.1,
        damp: float = 0.0,
    ) -> None:
        self.probation = probation
        self.members = members
        self.member_params = member_params
        self.tolerance = tolerance
        self.averaging_window = averaging_window
        self.history = history
        self.reestimation_period = reestimation_period
        self.fire = fire
        self.rest_fraction = rest_fraction
        self.damp = damp

    def _start(self) -> None:
        unknown = [m for m in self.members if m not in ONLINE_MEMBERS]
        if unknown or not self.members:
            raise InputError(
                f"members {list(self.members)!r}: the online ensemble runs "
                f"{', '.join(ONLINE_MEMBERS)}; use StreamingEnsemble for the others"
            )
        params = member_settings(self.member_params)
        self.t_ = 0
        self.previous_ = math.nan
        self.lo_ = self.hi_ = math.nan
        self.quiet_until_ = -1
        self.novelty_: dict[str, _Novelty] = {}
        self.likelihood_: dict[str, _Likelihood] = {}
        self.artime_: ARTimeStream | None = None
        for name in self.members:
            if name == "spatial":
                continue
            if name == "artime":
                self.artime_ = ARTimeStream(probation=self.probation, **params.get(name, {}))
                continue
            p = {"bins": 5, "order": 3}  # the members' defaults
            p.update({k: v for k, v in params.get(name, {}).items() if k in ("bins", "order")})
            self.novelty_[name] = _Novelty(self.probation, int(p["bins"]), int(p["order"]))
            self.likelihood_[name] = _Likelihood(
                self.probation, self.averaging_window, self.history, self.reestimation_period
            )
        # what the likelihoods' flat test reads (nothing to keep without a likelihood member)
        self.values_ = self._flat_window()

    def _flat_window(self) -> _FlatWindow:
        """Edges: every row a window of the likelihoods' flat test starts or ends at."""
        period, history = max(1, self.reestimation_period), self.history
        learning, start = self.probation // 2, max(1, self.probation)
        fixed = {learning, start, start - 1, start - history}

        def is_edge(i: int) -> bool:
            return history < 1 or i % period == 0 or (i + history) % period == 0 or i in fixed

        keep = history + 2 * period + 2 if self.likelihood_ else 1
        return _FlatWindow(is_edge, keep, 2.0 * FLAT_VARIANCE * max(1, history))

    def update(self, value: float) -> float:
        if not hasattr(self, "t_"):
            self._start()
        v = float(value)
        if not math.isfinite(v):
            raise InputError(f"value {value!r} at row {self.t_} is not finite; repair it first")
        t = self.t_
        previous = v if t == 0 else self.previous_
        self.previous_ = v
        self.values_.append(v)
        score = self._spatial(v) if "spatial" in self.members else 0.0
        for name, novelty in self.novelty_.items():
            likelihood = self.likelihood_[name]
            likelihood.feed(novelty.push(v - previous if name == "delta" else v))
            score = max(score, likelihood.score(t, self.values_))
        if self.artime_ is not None:  # direct: its score is already a confidence
            score = max(score, self.artime_.update(v))
        self.t_ += 1
        if t <= self.quiet_until_:
            return score * self.damp
        if score >= self.fire:
            self.quiet_until_ = t + int(self.rest_fraction * self.probation)
        return score

    def retained(self) -> int:
        """How many numbers (values, scores, symbols, seen contexts) the state holds now."""
        if not hasattr(self, "t_"):
            return 0
        held = 4 * (len(self.values_.segments) + 1)
        for name, novelty in self.novelty_.items():
            likelihood = self.likelihood_[name]
            held += len(novelty.inputs) + len(novelty.symbols) + len(novelty.seen)
            held += len(likelihood.raw) + len(likelihood.avg.items)
        if self.artime_ is not None:
            held += self.artime_.retained()
        return held

    def to_state(self) -> dict[str, Any]:
        """The parameters and the learned state as plain JSON values (NaN as None), versioned:
        ``from_state(to_state())`` scores the rest of a series exactly as this object would."""
        state: dict[str, Any] = {"version": STATE_VERSION, "params": _plain(self.get_params())}
        if not hasattr(self, "t_"):
            return state
        state["t"] = self.t_
        state["flat"] = self.values_.to_state()
        state["previous"], state["lo"], state["hi"] = (
            _num(self.previous_),
            _num(self.lo_),
            _num(self.hi_),
        )
        state["quiet_until"] = self.quiet_until_
        state["members"] = {
            name: {
                "inputs": pack(novelty.inputs),
                "symbols": list(novelty.symbols),
                "n_symbols": novelty.n_symbols,
                "seen": pack_whole(_context_codes(novelty.seen, novelty.bins)),
                "range": list(novelty.range) if novelty.range else None,
                "raw": pack(self.likelihood_[name].raw),
                "avg": _tail_state(self.likelihood_[name].avg),
                "dist": list(self.likelihood_[name].dist),
                "prev_red": self.likelihood_[name].prev_red,
            }
            for name, novelty in self.novelty_.items()
        }
        if self.artime_ is not None:
            state["artime"] = self.artime_.to_state()
        return state

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> OnlineEnsemble:
        """The object :meth:`to_state` described."""
        if state.get("version") not in (VALUES_VERSION, STATE_VERSION):
            raise InputError(
                f"online ensemble state version {state.get('version')!r}; this build reads "
                f"versions {VALUES_VERSION} and {STATE_VERSION}: start the series afresh"
            )
        params = dict(state["params"])
        params["members"] = tuple(params["members"])
        detector = cls(**params)
        if "t" not in state:
            return detector
        detector._start()
        detector.t_ = int(state["t"])
        if state["version"] == VALUES_VERSION:  # the kept values: summarised as this build does
            kept = unpack(state["values"]["items"])
            first = int(state["values"]["count"]) - len(kept)
            if first < 0:
                raise InputError(
                    f"a saved tail holds {len(kept)} values for a count of "
                    f"{state['values']['count']}: the state is damaged, start the series afresh"
                )
            detector.values_.replay(first, kept)
        else:
            detector.values_.load(state["flat"])
        detector.previous_ = _float(state["previous"])
        detector.lo_, detector.hi_ = _float(state["lo"]), _float(state["hi"])
        detector.quiet_until_ = int(state["quiet_until"])
        for name, member in state["members"].items():
            novelty, likelihood = detector.novelty_[name], detector.likelihood_[name]
            novelty.inputs = unpack(member["inputs"])
            if len(novelty.inputs) != (detector.t_ if detector.t_ < detector.probation else 0):
                raise InputError(
                    f"member {name!r} holds {len(novelty.inputs)} learning inputs at point "
                    f"{detector.t_} (probation {detector.probation}): the state is damaged, "
                    "start the series afresh"
                )
            novelty.symbols.extend(int(v) for v in member["symbols"])
            novelty.n_symbols = int(member["n_symbols"])
            if state["version"] == VALUES_VERSION:  # version 2 kept each context as a list
                novelty.seen = {tuple(int(v) for v in key) for key in member["seen"]}
            else:
                novelty.seen = _contexts(
                    whole_list(member["seen"], max_values=MAX_CONTEXTS), novelty.bins, novelty.order
                )
            found = member["range"]
            novelty.range = (float(found[0]), float(found[1])) if found else None
            likelihood.raw.extend(unpack(member["raw"]))
            _tail_load(likelihood.avg, member["avg"])
            likelihood.dist = (float(member["dist"][0]), float(member["dist"][1]))
            likelihood.prev_red = bool(member["prev_red"])
        if "artime" in state:
            detector.artime_ = ARTimeStream.from_state(state["artime"])
        return detector

    def _spatial(self, v: float) -> float:
        lo, hi = self.lo_, self.hi_
        hit = False
        if hi > lo:
            margin = (hi - lo) * self.tolerance
            hit = v > hi + margin or v < lo - margin
        self.lo_ = v if math.isnan(lo) else min(lo, v)
        self.hi_ = v if math.isnan(hi) else max(hi, v)
        return 1.0 if hit else 0.0

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {
            k: getattr(self, k)
            for k in (
                "probation",
                "members",
                "member_params",
                "tolerance",
                "averaging_window",
                "history",
                "reestimation_period",
                "fire",
                "rest_fraction",
                "damp",
            )
        }
