"""One calibrated number and the verdict derived from it. Pure: standard library only.

``p_precedent`` (also served as ``confidence``) estimates the probability that the top result is
a precedent: a postmortem an on-call engineer would want to read for this alert (the same
incident, a recurrence, or the same failure mode met elsewhere). It is a logistic model over
signals that each point the same way (more of a signal never means less confidence: weights are
fitted non-negative), so it is monotonic in every signal, recalibrated by isotonic regression.

The verdict comes from that number alone, through two thresholds, the same words on every
surface (:data:`VERDICTS`):

* ``p >= hi``: "precedent found";
* ``lo < p < hi``: "possible precedent — check" (read the match before trusting it);
* ``p <= lo``: "no precedent" (the nearest postmortems are still listed, marked as not matching).

``lo`` is set so that few queries whose precedent is ranked first are told "no precedent" (a
false "no precedent" hides the answer from a tired person: the costlier mistake), ``hi`` so that
few queries without one are told "precedent found" (calibration/fitting.py).

The same ``p`` does not mean the same in every shape of query: a five-word pager line that
covers a postmortem's title scores high whether or not it is the same failure, a long status
update lower even when it is. A model may carry thresholds per :data:`SHAPES` (``shapes``), set
on cases of that shape; a search picks its query's (:meth:`ConfidenceModel.for_shape`), and
its verdict and the thresholds it shows are that shape's.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

SIGNALS: tuple[str, ...] = (
    "sparse_coverage",  # share of the query's IDF mass found in the top document (whole text)
    "passage_coverage",  # the same share in the top document's best chunk
    "phrase_coverage",  # the same share of the query's word pairs, in the top document
    "sparse_margin",  # (s1 - s2) / s1 of BM25 scores
    "dense_cosine",  # cosine of the top hit's best chunk (0 when dense is off)
    "dense_margin",  # c1 - c2 of cosines
    "agreement",  # 1 if sparse and dense agree on the top document, else 0
    "signal_overlap",  # cosine of the anomaly's signals and the top hit's recorded signals
    "signal_agreement",  # 1 if the signals ranking and sparse agree on the top document
    "signal_coverage",  # share of the anomaly's IDF-weighted strength the top hit records
    "type_consensus",  # share of the next three hits that are the top hit's failure mode
    "mode_match",  # lift of the query's probability of the top hit's failure mode over an even share
    "mode_consistency",  # 1 - how plainly the query names another mode than the top hit's
    # measured against the query's own scores over the KB (retrieval/standing.py)
    "in_domain",
    "query_coverage",
    "sparse_gap",
    "covered_gap",
    "covered_margin",
    "dense_excess",
    "overlap",
)


FOUND = "precedent found"
POSSIBLE = "possible precedent — check"
NONE = "no precedent"
VERDICTS: tuple[str, ...] = (FOUND, POSSIBLE, NONE)
DEFAULT_LO, DEFAULT_HI = 0.2, 0.6
# the shapes of query a model may hold thresholds for: alert-style text (a metric name, a
# (cloud/region), a pager line: retrieval/identity.py) and prose
SHAPES: tuple[str, ...] = ("alert", "prose")
# one word in common is no evidence of the same failure: "precedent found" needs the top
# document to share at least this many distinct words with the query (else "possible")
MIN_SHARED_WORDS = 2


def verdict(p: float, lo: float, hi: float, shared: int | None = None) -> str:
    """The verdict for ``p`` between thresholds ``lo`` < ``hi``; ``shared``, when known, the
    distinct query words the top document holds (fewer than MIN_SHARED_WORDS: at most
    "possible precedent — check")."""
    if p >= hi:
        return FOUND if shared is None or shared >= MIN_SHARED_WORDS else POSSIBLE
    if p <= lo:
        return NONE
    return POSSIBLE


def verdict_of(record: Mapping[str, Any]) -> str:
    """The verdict a stored draft or evidence record carries; one stored before the three
    states reads "no precedent" when novel, else "possible precedent — check"."""
    stored = str(record.get("verdict") or "")
    if stored in VERDICTS:
        return stored
    return NONE if record.get("novel") else POSSIBLE


@dataclass(frozen=True)
class ConfidenceModel:
    """A fitted logistic model: p = sigmoid(bias + sum(w_i * x_i)), all w_i >= 0, then the
    isotonic ``calibration``; the verdict's thresholds ``lo`` < ``hi``."""

    weights: Mapping[str, float]
    bias: float
    lo: float = DEFAULT_LO
    hi: float = DEFAULT_HI
    source: str = ""
    metrics: Mapping[str, Any] = field(default_factory=dict)
    # optional monotone recalibration of the logistic output: (raw, calibrated) knots, raw
    # ascending, interpolated linearly (isotonic regression fitted on held-apart cases)
    calibration: tuple[tuple[float, float], ...] = ()
    # (lo, hi) per query shape (SHAPES) where cases of that shape set their own; the others
    # use lo and hi
    shapes: Mapping[str, tuple[float, float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        negative = {k: v for k, v in self.weights.items() if v < 0}
        if negative:
            raise ValueError(f"confidence weights must be >= 0 (monotonic); got {negative}")
        unknown = set(self.weights) - set(SIGNALS)
        if unknown:
            raise ValueError(f"unknown confidence signals {sorted(unknown)}; known: {SIGNALS}")
        if not 0.0 <= self.lo < self.hi <= 1.0:
            raise ValueError(
                f"verdict thresholds must satisfy 0 <= lo < hi <= 1; got {self.lo}, {self.hi}"
            )
        for shape, (lo, hi) in self.shapes.items():
            if shape not in SHAPES:
                raise ValueError(
                    f"thresholds for query shape {shape!r}: the shapes are {', '.join(SHAPES)}"
                )
            if not 0.0 <= lo < hi <= 1.0:
                raise ValueError(
                    f"{shape} thresholds must satisfy 0 <= lo < hi <= 1; got {lo}, {hi}"
                )

    def for_shape(self, shape: str | None) -> ConfidenceModel:
        """This model with the thresholds of ``shape`` as its ``lo`` and ``hi`` (itself when it
        holds none for that shape)."""
        if shape is None or shape not in self.shapes:
            return self
        lo, hi = self.shapes[shape]
        return replace(self, lo=lo, hi=hi, shapes={})

    def raw(self, signals: Mapping[str, float]) -> float:
        z = self.bias + sum(w * float(signals.get(name, 0.0)) for name, w in self.weights.items())
        return _sigmoid(z)

    def predict(self, signals: Mapping[str, float]) -> float:
        return recalibrate(self.raw(signals), self.calibration)

    def verdict(self, p: float, shared: int | None = None) -> str:
        return verdict(p, self.lo, self.hi, shared)

    def verdict_for(self, p: float, signals: Mapping[str, float]) -> str:
        """The verdict a search gives for ``p`` with these top-document ``signals`` (their
        ``shared_words``, when measured, caps it at "possible")."""
        shared = signals.get("shared_words")
        return self.verdict(p, None if shared is None else int(shared))

    def is_novel(self, p: float) -> bool:
        """True when the verdict is "no precedent"."""
        return self.verdict(p) == NONE

    def as_dict(self) -> dict[str, Any]:
        return {
            "weights": dict(self.weights),
            "bias": self.bias,
            "lo": self.lo,
            "hi": self.hi,
            "source": self.source,
            "metrics": dict(self.metrics),
            "calibration": [list(k) for k in self.calibration],
            "shapes": {s: list(t) for s, t in self.shapes.items()},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ConfidenceModel:
        """A stored model; one written before the three-state verdict (a single ``threshold``)
        keeps it as ``lo``, with ``hi`` the default or just above it."""
        lo = float(data.get("lo", data.get("threshold", DEFAULT_LO)))
        hi = float(data.get("hi", max(DEFAULT_HI, min(1.0, lo + 0.1))))
        return cls(
            weights={str(k): float(v) for k, v in data["weights"].items()},
            bias=float(data["bias"]),
            lo=min(lo, hi - 1e-4),
            hi=hi,
            source=str(data.get("source", "")),
            metrics=dict(data.get("metrics", {})),
            calibration=tuple((float(a), float(b)) for a, b in data.get("calibration") or ()),
            shapes={
                str(s): (float(t[0]), float(t[1])) for s, t in (data.get("shapes") or {}).items()
            },
        )


def recalibrate(p: float, knots: Sequence[tuple[float, float]]) -> float:
    """``p`` mapped through monotone (raw, calibrated) ``knots`` by linear interpolation;
    clamped to the end knots' values outside them; ``p`` itself without knots."""
    if not knots:
        return p
    if p <= knots[0][0]:
        return knots[0][1]
    for (x0, y0), (x1, y1) in itertools.pairwise(knots):
        if p <= x1:
            return y0 if x1 == x0 else y0 + (y1 - y0) * (p - x0) / (x1 - x0)
    return knots[-1][1]


def isotonic_knots(
    raw: Sequence[float],
    outcomes: Sequence[int],
    *,
    shrink: float = 1.0,
    weights: Sequence[float] | None = None,
) -> tuple[tuple[float, float], ...]:
    """Pool-adjacent-violators fit of outcome on raw score: non-decreasing knots at each
    block's mean raw score, cases weighted by ``weights`` (1 each by default). Each block's rate
    is shrunk toward the raw score by ``shrink`` pseudo-cases (a small block says little), so
    one lucky case cannot reach 0 or 1."""
    w = list(weights) if weights is not None else [1.0] * len(raw)
    pairs = sorted(zip(raw, outcomes, w, strict=True))
    blocks: list[list[float]] = []  # [sum_raw, sum_y, n] (weighted)
    for x, y, c in pairs:
        blocks.append([x * c, float(y) * c, c])
        while len(blocks) > 1 and blocks[-2][1] / blocks[-2][2] >= blocks[-1][1] / blocks[-1][2]:
            last = blocks.pop()
            for i in range(3):
                blocks[-1][i] += last[i]
    knots = []
    for sx, sy, n in blocks:
        x = sx / n
        knots.append((x, (sy + shrink * x) / (n + shrink)))
    out: list[tuple[float, float]] = []
    for kx, ky in knots:  # shrinking can break monotonicity by a hair: restore it
        out.append((kx, max(ky, out[-1][1]) if out else ky))
    return tuple((round(kx, 6), round(ky, 6)) for kx, ky in out)


def _sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


LABELS: tuple[str, ...] = ("very low", "low", "medium", "high")
_IN_VERDICT = {FOUND: ("high",), POSSIBLE: ("low", "medium"), NONE: ("very low",)}


def label(
    confidence: float,
    lo: float | None = None,
    hi: float | None = None,
    verdict: str | None = None,
) -> str:
    """A word for ``p_precedent``, for people, that never contradicts the verdict beside it.

    With the verdict's thresholds ``lo`` < ``hi``: "high" at or above ``hi``, "very low" at or
    below ``lo``, between them "medium" in the upper half of the band and "low" in the lower.
    Fixed quarters of [0, 1] read "no precedent" as "medium" where a knowledge base's ``lo`` is
    above 0.5 (38 of 268 such verdicts on the AWS replay) and "possible" as "high" (124 of 507).
    A ``verdict`` given (a search caps a p over ``hi`` at "possible" when the top document shares
    too few words; an investigation may hold it there) moves the word into that verdict's range.
    Without thresholds (a draft stored without them): the quarters, 0.75 / 0.5 / 0.25."""
    if lo is None or hi is None or not lo < hi:
        lo, mid, hi = 0.25, 0.5, 0.75
        word = "high" if confidence >= hi else "medium" if confidence >= mid else "low"
        word = word if confidence >= lo else "very low"
    elif confidence >= hi:
        word = "high"
    elif confidence <= lo:
        word = "very low"
    else:
        word = "medium" if confidence >= (lo + hi) / 2 else "low"
    allowed = _IN_VERDICT.get(verdict or "")
    if allowed and word not in allowed:
        # the nearest word the verdict allows
        word = min(allowed, key=lambda w: abs(LABELS.index(w) - LABELS.index(word)))
    return word


def expected_calibration_error(
    probabilities: Sequence[float], outcomes: Sequence[int], bins: int = 10
) -> float:
    """ECE with equal-width bins: sum over bins of |accuracy - mean confidence| * share."""
    if len(probabilities) != len(outcomes):
        raise ValueError("probabilities and outcomes differ in length")
    if not probabilities:
        return 0.0
    total = len(probabilities)
    error = 0.0
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        idx = [i for i, p in enumerate(probabilities) if lo <= p < hi or (b == bins - 1 and p == 1)]
        if idx:
            mean_p = sum(probabilities[i] for i in idx) / len(idx)
            acc = sum(outcomes[i] for i in idx) / len(idx)
            error += abs(acc - mean_p) * len(idx) / total
    return error


def brier(probabilities: Sequence[float], outcomes: Sequence[int]) -> float:
    if not probabilities:
        return 0.0
    return sum((p - o) ** 2 for p, o in zip(probabilities, outcomes, strict=True)) / len(outcomes)


def auroc(scores: Sequence[float], labels: Sequence[int]) -> float:
    """Area under the ROC curve (Mann-Whitney U; ties count half). NaN without both classes."""
    pos = [s for s, y in zip(scores, labels, strict=True) if y]
    neg = [s for s, y in zip(scores, labels, strict=True) if not y]
    if not pos or not neg:
        return float("nan")
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in pos for n in neg)
    return wins / (len(pos) * len(neg))
