"""ARTime: anomaly detection by adaptive resonance (Hampton's ARTimeNAB, NAB 74.9 on all 58 files).

A re-implementation in Python of the algorithm of ARTimeNAB.jl (Mark Hampton; MIT-licensed
AdaptiveResonance.jl underneath), with its published constants; nothing here was tuned on our
data. One point at a time, :meth:`ARTimeStream.update` does what the Julia detector does:

1. **Downsample** by ``step = max(1, (probation // (window * windows_per_probation)))``: every
   ``step`` points, the block's maximum or minimum (whichever lies further from a running
   average of block means), or the block's mean when that extreme is within 10 % of it.
2. **Normalise** over the value range, **discretise** to ``levels`` levels, and snap a level
   within ``chomp`` of an approximate running median to the median (slow drift and noise
   around the usual level become one symbol).
3. **Features**: the last ``window`` (8) downsampled values, min-max scaled, through a full
   Haar wavelet transform and min-max scaled again, beside the 8 values themselves: 16 numbers.
4. **Dual-vigilance fuzzy ART** (complement coding, fast commit): a feature vector that
   resonates with a category above the upper vigilance refines it; one above the lower
   vigilance only becomes a new category of an existing cluster; one below both founds a new
   cluster, and that is the anomaly candidate. Match = feature similarity^3 * energy
   similarity^2, the energy being the newest value and its complement.
5. **Vigilance** starts from the mean match of a trial pass over the probationary features
   (ordered least-similar first); after the probation the upper vigilance follows the running
   mean match (capped at 0.97) and the lower one rises towards the least match of the last half
   trend window or falls back towards recent anomalies', every half trend window and 12
   downsampled steps after each anomaly.
6. **Masking**: after a new cluster and after an anomaly, a further new cluster counts only
   when its match is well below the last anomaly's (0.9 x while masked by an anomaly, else
   0.7 x); the reported score is a confidence from the match's distance to both vigilances and
   from the energy mismatch.

The range. NAB hands every detector the minimum and maximum of the whole file; a live stream
has no such thing. ``value_range`` given = NAB's convention (used only to check this port
against the published figures); otherwise the range of the probationary period's downsampled
values, widened by ``margin`` of its span on each side, with values beyond it clipped. The
probationary period's features are computed once its range is known, from the downsampled
values kept until then (the Julia detector also processes that period in one batch at its end).

State is bounded: the categories (at most one per downsampled step, in practice a few hundred
of 32 numbers), a handful of windows of the trend length, and the level histogram.
:meth:`ARTimeStream.to_state` / :meth:`ARTimeStream.from_state` carry it through JSON.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from typing import Any

import numpy as np

from seenbefore.detection.detectors.base import StreamDetector
from seenbefore.detection.features import Array
from seenbefore.detection.packed import pack, pack_grid, pack_whole, unpack, whole_list
from seenbefore.errors import InputError

STATE_VERSION = 1
RHO_UB_CAP = 0.97
SQRT_HALF = math.sqrt(0.5)


def haar(x: Array) -> Array:
    """Full orthonormal Haar transform of a power-of-two-length vector, ordered as
    Wavelets.jl's ``dwt(x, wavelet(WT.haar))``: [approximation, coarsest detail, ..., finest
    details]; a detail is (second - first) / sqrt(2) of each pair."""
    s = np.asarray(x, dtype=np.float64)
    parts: list[Array] = []
    while len(s) > 1:
        first, second = s[0::2], s[1::2]
        parts.append((second - first) * SQRT_HALF)
        s = (first + second) * SQRT_HALF
    parts.append(s)
    return np.asarray(np.concatenate(parts[::-1]), dtype=np.float64)


def _scale01(x: Array) -> Array:
    out: Array = x - x.min()
    top = float(out.max())
    return out / top if top != 0 else out


def _single(x: Array) -> Array:
    """``x`` rounded to float32 precision (kept as float64): the categories' weights are held
    so in memory and packed so (detection/packed.py ``pack32``), which halves the largest part
    of a saved series; a weight in [0, 1] moves by at most 3e-8."""
    return np.asarray(x, dtype=np.float32).astype(np.float64)


class _FuzzyART:
    """Dual-vigilance fuzzy ART over complement-coded inputs (fast commit). ``learn`` returns
    (cluster label or -1 for a new cluster, best match, its energy similarity).

    At most ``max_categories`` categories are kept: past it, the one that resonated least
    recently makes room (never reached on NAB, where the most any file founds is 575; it bounds
    a stream that runs for months)."""

    def __init__(self, dim: int, max_categories: int) -> None:
        self.dim = dim
        self.max_categories = max(2, max_categories)
        self.W = np.ones((1, 2 * dim))  # the uncommitted first category, as AdaptiveResonance
        self.labels: list[int] = [1]
        self.used: list[int] = [0]  # the step each category last resonated or was founded
        self.clusters = 1
        self.rho_lb = 0.0
        self.rho_ub = 0.0
        self.steps = 0  # samples offered, the first (which only initialises) included

    def match(self, x: Array) -> tuple[Array, Array, Array]:
        em = np.minimum(x, self.W)
        norm_w = self.W.sum(axis=1)
        norm_w[norm_w == 0] = 0.001
        feature = em.sum(axis=1) / norm_w
        e = self.dim - 1
        energy_w = self.W[:, e] + self.W[:, -1]
        energy = np.divide(
            em[:, e] + em[:, -1], energy_w, out=np.zeros_like(energy_w), where=energy_w > 0
        )
        return feature**3 * energy**2, energy, em

    def learn(self, features: Array, *, learning: bool = True) -> tuple[int, float, float]:
        self.steps += 1
        if self.steps == 1:
            return -1, 0.0, 0.0
        x = np.concatenate([features, 1.0 - features])
        m, energy, em = self.match(x)
        best = int(np.argmax(m))
        top, top_energy = float(m[best]), float(energy[best])
        if top <= 0.0:
            top, top_energy = 0.0, 0.0
        if not learning:
            return -1, top, top_energy
        resonant = m >= self.rho_ub
        if resonant.any():
            self.W[resonant] = _single(em[resonant])
            for j in np.flatnonzero(resonant).tolist():
                self.used[j] = self.steps
            return self.labels[best], top, top_energy
        if top >= self.rho_lb:
            label = self.labels[best]
            self._add(x, label)
            return label, top, top_energy
        self.clusters += 1
        self._add(x, self.clusters)
        return -1, top, top_energy

    def _add(self, x: Array, label: int) -> None:
        x = _single(x)
        if len(self.labels) >= self.max_categories:
            j = int(np.argmin(self.used))
            self.W[j], self.labels[j], self.used[j] = x, label, self.steps
            return
        self.W = np.vstack([self.W, x])
        self.labels.append(label)
        self.used.append(self.steps)

    def state(self, grid: int) -> dict[str, Any]:
        """``grid``: the levels the inputs are discretised to (most weights lie on them)."""
        return {
            "W": pack_grid(self.W.ravel(), grid),
            "labels": pack_whole(self.labels),
            "used": pack_whole(self.used),
            "clusters": self.clusters,
            "rho": [self.rho_lb, self.rho_ub],
            "steps": self.steps,
        }

    @classmethod
    def load(cls, dim: int, max_categories: int, state: Mapping[str, Any]) -> _FuzzyART:
        art = cls(dim, max_categories)
        w = np.asarray(unpack(state["W"]), dtype=np.float64)
        art.labels = whole_list(state["labels"], max_values=max_categories)
        art.used = whole_list(state["used"], max_values=max_categories)
        if w.size != len(art.labels) * 2 * dim or len(art.used) != len(art.labels):
            raise InputError(
                f"ARTime's saved categories: {w.size} weights, {len(art.labels)} labels and "
                f"{len(art.used)} last uses, expected {2 * dim} weights per label and a use each: "
                "the state is damaged, start the series afresh"
            )
        art.W = _single(w.reshape(-1, 2 * dim))  # a float64 state (before float32) rounds once
        art.clusters = int(state["clusters"])
        art.rho_lb, art.rho_ub = (float(v) for v in state["rho"])
        art.steps = int(state["steps"])
        return art


def _similarity(a: Array, b: Array) -> float:
    """Cosine similarity, with ARTime's rule for a zero vector (1 - the other's norm)."""
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0.0:
        return 1.0 - nb
    if nb == 0.0:
        return 1.0 - na
    return float(a @ b) / (na * nb)


class ARTimeStream:
    """One series, one point at a time: ``update(value) -> score`` (0 except on a downsampled
    step that founds an anomalous cluster)."""

    def __init__(
        self,
        *,
        probation: int = 750,
        window: int = 8,
        windows_per_probation: int = 13,
        chomp: float = 0.075,
        levels: int = 80,
        initial_rho: float = 0.80,
        value_range: tuple[float, float] | None = None,
        margin: float = 0.0,
        grow: bool = False,
        max_categories: int = 1024,
    ) -> None:
        if window < 2 or window & (window - 1):
            raise InputError(f"window {window}: ARTime's wavelet needs a power of two, e.g. 8")
        if levels < 2:
            raise InputError(f"levels {levels}: use at least 2 (ARTime uses 80)")
        self.probation = probation - probation % 2
        self.window = window
        self.windows_per_probation = windows_per_probation
        self.chomp = chomp
        self.levels = levels
        self.initial_rho = initial_rho
        self.value_range = value_range
        self.margin = margin
        self.grow = grow
        self.max_categories = max_categories
        self._seen: tuple[float, float] | None = None
        self.step = max(1, self.probation // (window * windows_per_probation))
        self.trend = max(window + 1, self.probation // self.step)
        self.mask = int(window * 1.5)
        self._t = 0  # points seen
        self._block: deque[float] = deque(maxlen=self.step)
        self._avg = 0.0  # running average of block means
        self._dsi = 0  # downsampled steps taken
        self._pending: list[float] = []  # downsampled values awaiting the range
        self._range: tuple[float, float] | None = None
        if value_range is not None:
            self._range = self._widen(*value_range)
        self._hist = [0] * (levels + 1)
        self._med = 0
        self._below = self._above = 0
        self._fwin: deque[float] = deque([0.0] * window, maxlen=window)
        self._probation_features: list[Array] = []
        self.art = _FuzzyART(2 * window, max_categories)
        # detect! state
        self._last_anomaly_i = 0
        self._last_anomaly_sim = 0.0
        self._last_rho_update_i = 0
        self._mask_after_cat = False
        self._no_new_cat = 0
        self._anomaly_sims: list[float] = []
        self._match_sum = 0.0
        self._match_n = 0
        self._sims: deque[float] = deque([1.0] * (self.trend // 2 + 1), maxlen=self.trend // 2 + 1)
        self._diffs: deque[float] = deque([0.0] * (self.trend + 1), maxlen=self.trend + 1)

    def _widen(self, lo: float, hi: float) -> tuple[float, float]:
        span = hi - lo
        return lo - self.margin * span, hi + self.margin * span

    # 1. downsampling ------------------------------------------------------------------------
    def update(self, value: float) -> float:
        v = float(value)
        if not math.isfinite(v):
            raise InputError(f"value {value!r} at point {self._t} is not finite; repair it first")
        self._t += 1
        self._block.append(v)
        if self._t % self.step:
            return 0.0
        block = self._block
        mean = math.fsum(block) / len(block)
        top, bottom = max(block), min(block)
        if self._dsi == 0:
            self._avg = mean
        self._avg = (self._avg + mean) / 2
        ds = bottom if abs(top - self._avg) < abs(bottom - self._avg) else top
        if abs(ds - mean) < 0.1 * mean:  # a spike must stand 10 % out of its block
            ds = mean
        self._dsi += 1
        if self._range is None:
            self._pending.append(ds)
            if self._dsi < self.trend:
                return 0.0
            self._seen = (min(self._pending), max(self._pending))
            self._range = self._widen(*self._seen)
            pending, self._pending = self._pending, []
            for i, d in enumerate(pending, start=1):
                self._features(d, i)
            return 0.0
        if self.grow and self._seen is not None and not self._seen[0] <= ds <= self._seen[1]:
            self._seen = (min(self._seen[0], ds), max(self._seen[1], ds))
            self._range = self._widen(*self._seen)
        return self._features(ds, self._dsi)

    # 2-3. levels and features ---------------------------------------------------------------
    def _level(self, ds: float, i: int) -> float:
        lo, hi = self._range or (0.0, 1.0)
        x = ds - lo
        if hi != lo:
            x /= hi - lo
        level = min(self.levels, max(0, round(x * self.levels)))
        hist = self._hist
        hist[level] += 1
        if i == 1:
            self._med = level
        if self._med > level:
            self._below += 1
        elif self._med < level:
            self._above += 1
        half = i // 2  # an approximate running median, as ARTime keeps it
        if half < self._above:
            self._below += hist[self._med]
            self._med += 1
            while hist[self._med] == 0:
                self._med += 1
            self._above -= hist[self._med]
        elif half < self._below:
            self._above += hist[self._med]
            self._med -= 1
            while hist[self._med] == 0:
                self._med -= 1
            self._below -= hist[self._med]
        value = level / self.levels
        median = self._med / self.levels
        return median if abs(value - median) < self.chomp else value

    def _features(self, ds: float, i: int) -> float:
        self._fwin.append(self._level(ds, i))
        features = np.zeros(2 * self.window)
        if i >= self.window:
            recent = np.fromiter(self._fwin, dtype=np.float64, count=self.window)
            features = np.concatenate([_scale01(haar(_scale01(recent))), recent])
        if i < self.trend:
            self._probation_features.append(features)
            return 0.0
        if i == self.trend:
            self._probation_features.append(features)
            batch, self._probation_features = self._probation_features, []
            rho = self._initial_rho(np.vstack(batch[self.window - 1 :]))
            self.art.rho_lb = self.art.rho_ub = rho
            for j, f in enumerate(batch, start=1):
                self._detect(f, j)
            return 0.0
        return self._detect(features, i)

    def _initial_rho(self, batch: Array) -> float:
        """Mean match of a trial ART over the probation's features, least-similar first."""
        norms = np.linalg.norm(batch, axis=1)
        safe = np.where(norms > 0, norms, 1.0)
        sim = (batch @ batch.T) / np.outer(safe, safe)
        zero = norms == 0  # ARTime's rule for a zero vector: 1 - the other's norm
        sim[zero, :] = 1.0 - norms[None, :]
        sim[:, zero] = 1.0 - norms[:, None]
        np.fill_diagonal(sim, 1.0)
        trial = _FuzzyART(2 * self.window, self.max_categories)
        trial.rho_lb = trial.rho_ub = self.initial_rho
        order = np.argsort(sim.sum(axis=0), kind="stable")
        matches = [trial.learn(batch[k])[1] for k in order]
        return float(np.mean(matches[self.trend // 2 - 1 :]))

    # 4-6. resonance, vigilance, masking -----------------------------------------------------
    def _detect(self, f: Array, i: int) -> float:
        since = i - self._last_anomaly_i
        rho_after_anomaly = since == self.mask
        rho_for_trend = (i - self._last_rho_update_i) >= self.trend // 2
        masked_by_anomaly = since <= self.mask
        if i > self.trend + self.mask and self._mask_after_cat and self._no_new_cat >= self.mask:
            self._mask_after_cat = False
        if i < self.window:
            cat, sim, energy = self.art.learn(f, learning=False)
            cat = -1
        else:
            cat, sim, energy = self.art.learn(f)
        self._no_new_cat = 0 if cat == -1 else self._no_new_cat + 1
        self._match_sum += sim
        self._match_n += 1
        self._sims.append(sim)
        self._diffs.append(self.art.rho_ub - sim)
        if since < self.mask and self._anomaly_sims and sim < self._anomaly_sims[-1]:
            self._anomaly_sims[-1] = sim
        masking = self._mask_after_cat or masked_by_anomaly
        below_last = sim < self._last_anomaly_sim * (0.90 if masked_by_anomaly else 0.70)
        score = 0.0
        if i > self.trend and cat == -1 and (not masking or below_last):
            score = self._confidence(sim, energy)
            self._anomaly_sims.append(sim)
            self._last_anomaly_sim = sim
            self._last_anomaly_i = i
        self._mask_after_cat = cat == -1 or self._mask_after_cat
        if i > self.trend and (rho_after_anomaly or rho_for_trend):
            self._update_rho(i)
        return score

    def _update_rho(self, i: int) -> None:
        least = min(self._sims)
        ub = min(RHO_UB_CAP, self._match_sum / self._match_n)
        lb = self.art.rho_lb
        if lb <= least:
            lb += (least - lb) * 0.19
        else:
            fall = 0.0
            if i > 2 * self.trend:
                below = [min(0.37, d) for d in self._diffs if d > 0.05]
                if below:
                    fall = sum(below) / len(below)
            lb -= max(0.01, fall) / 2
            if self._anomaly_sims:
                lb = max(sum(self._anomaly_sims) / len(self._anomaly_sims), lb)
        self.art.rho_lb, self.art.rho_ub = min(ub, lb), ub
        self._last_rho_update_i = i
        self._mask_after_cat = True

    def _confidence(self, sim: float, energy: float) -> float:
        sim = min(0.999, sim)
        ub = ((1 - sim) - (1 - self.art.rho_ub)) / (1 - sim)
        lb = ((1 - sim) - (1 - self.art.rho_lb)) / (1 - sim)
        return round(min(1.0, ub * 0.35 + lb * 0.65 + (1.0 - energy) * 1.5), 6)

    # state ----------------------------------------------------------------------------------
    def params(self) -> dict[str, Any]:
        return {
            "probation": self.probation,
            "window": self.window,
            "windows_per_probation": self.windows_per_probation,
            "chomp": self.chomp,
            "levels": self.levels,
            "initial_rho": self.initial_rho,
            "value_range": list(self.value_range) if self.value_range else None,
            "margin": self.margin,
            "grow": self.grow,
            "max_categories": self.max_categories,
        }

    def retained(self) -> int:
        """How many numbers the state holds now (categories, windows, histogram)."""
        return (
            self.art.W.size
            + len(self.art.labels)
            + len(self._pending)
            + sum(len(f) for f in self._probation_features)
            + len(self._hist)
            + len(self._sims)
            + len(self._diffs)
            + len(self._anomaly_sims)
            + self.window
            + self.step
        )

    def to_state(self) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "params": self.params(),
            "t": self._t,
            "block": list(self._block),
            "avg": self._avg,
            "dsi": self._dsi,
            "pending": pack(self._pending),
            "range": list(self._range) if self._range else None,
            "seen": list(self._seen) if self._seen else None,
            "hist": pack_whole(self._hist),
            "median": [self._med, self._below, self._above],
            "fwin": list(self._fwin),
            "probation_features": pack(np.concatenate(self._probation_features or [np.zeros(0)])),
            "art": self.art.state(self.levels),
            "last_anomaly": [self._last_anomaly_i, self._last_anomaly_sim],
            "last_rho_update_i": self._last_rho_update_i,
            "mask_after_cat": self._mask_after_cat,
            "no_new_cat": self._no_new_cat,
            "anomaly_sims": list(self._anomaly_sims),
            "match": [self._match_sum, self._match_n],
            "sims": pack(self._sims),
            "diffs": pack(self._diffs),
        }

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> ARTimeStream:
        if state.get("version") != STATE_VERSION:
            raise InputError(
                f"ARTime state version {state.get('version')!r}; this build reads version "
                f"{STATE_VERSION}: start the series afresh"
            )
        params = dict(state["params"])
        if params.get("value_range") is not None:
            params["value_range"] = tuple(params["value_range"])
        s = cls(**params)
        s._t = int(state["t"])
        s._block.extend(float(v) for v in state["block"])
        s._avg = float(state["avg"])
        s._dsi = int(state["dsi"])
        s._pending = unpack(state["pending"])
        s._range = _pair(state["range"])
        s._seen = _pair(state["seen"])
        s._hist = whole_list(state["hist"], max_values=s.levels + 1)
        s._med, s._below, s._above = (int(v) for v in state["median"])
        s._fwin.extend(float(v) for v in state["fwin"])
        held = np.asarray(unpack(state["probation_features"]), dtype=np.float64)
        if held.size % (2 * s.window) or held.size > 2 * s.window * s.trend:
            raise InputError(
                f"ARTime's saved probation features hold {held.size} values, expected whole "
                f"rows of {2 * s.window} and at most {s.trend} rows: the state is damaged, start "
                "the series afresh"
            )
        s._probation_features = list(held.reshape(-1, 2 * s.window))
        s.art = _FuzzyART.load(2 * s.window, s.max_categories, state["art"])
        s._last_anomaly_i = int(state["last_anomaly"][0])
        s._last_anomaly_sim = float(state["last_anomaly"][1])
        s._last_rho_update_i = int(state["last_rho_update_i"])
        s._mask_after_cat = bool(state["mask_after_cat"])
        s._no_new_cat = int(state["no_new_cat"])
        s._anomaly_sims = [float(v) for v in state["anomaly_sims"]]
        s._match_sum, s._match_n = float(state["match"][0]), int(state["match"][1])
        s._sims.extend(unpack(state["sims"]))
        s._diffs.extend(unpack(state["diffs"]))
        return s


def _pair(value: Any) -> tuple[float, float] | None:
    return (float(value[0]), float(value[1])) if value else None


class ARTime(StreamDetector):
    """:class:`ARTimeStream` over a whole series (the batch form the ensemble and NAB use)."""

    def __init__(
        self,
        *,
        probation: int = 750,
        window: int = 8,
        windows_per_probation: int = 13,
        chomp: float = 0.075,
        levels: int = 80,
        initial_rho: float = 0.80,
        value_range: tuple[float, float] | None = None,
        margin: float = 0.0,
        grow: bool = False,
        max_categories: int = 1024,
    ) -> None:
        self.probation = probation
        self.window = window
        self.windows_per_probation = windows_per_probation
        self.chomp = chomp
        self.levels = levels
        self.initial_rho = initial_rho
        self.value_range = value_range
        self.margin = margin
        self.grow = grow
        self.max_categories = max_categories

    def _scores(self, x: Array) -> Array:
        stream = ARTimeStream(**self.get_params())
        return np.fromiter((stream.update(v) for v in x.tolist()), dtype=np.float64, count=len(x))
