"""The figures of one cell of benchmarks/verdict.py: a dev query, what the KB answered for it,
and the cell's shares (Hit@1 per mode, the three verdict states split by whether the top result
is a precedent, ECE, AUROC, and the naive baseline's states beside ours).

The three groups every verdict share is split by:

* ``top_right``: the query has a precedent in the KB and the ranking's top result is one;
* ``top_wrong``: the query has a precedent in the KB and the top result is not one (or there is
  no result at all);
* ``no_precedent``: nothing in the KB the query runs against is a precedent for it.

Ours is split by the default mode's top result; the naive baseline (a threshold on the top BM25
score, two states only) by the sparse mode's top result, the one its score is read from.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from seenbefore.core.confidence import FOUND, NONE, POSSIBLE, auroc, expected_calibration_error

GROUPS = ("top_right", "top_wrong", "no_precedent")
STATES = {"found": FOUND, "possible": POSSIBLE, "none": NONE}


@dataclass(frozen=True)
class Query:
    """One dev query: its text, style, precedents in the KB it runs against, the documents left
    out for it and, for a replay, the last date it may see (``SearchFilters.date_to``)."""

    id: str
    text: str
    style: str
    precedents: frozenset[str] = frozenset()
    exclude: tuple[str, ...] = ()
    until: dt.date | None = None

    @property
    def has_precedent(self) -> bool:
        return bool(self.precedents)


@dataclass
class Outcome:
    query: Query
    tops: dict[str, str | None] = field(default_factory=dict)  # mode -> top id
    rankings: dict[str, list[str]] = field(default_factory=dict)  # mode -> ranked ids
    p: float = 0.0
    verdict: str = ""
    novel: bool = False
    signals: dict[str, float] = field(default_factory=dict)
    top_bm25: float = 0.0  # the sparse mode's top score (what the naive baseline thresholds)
    naive: str = ""  # the naive baseline's verdict

    def right(self, mode: str = "default") -> bool:
        return self.tops.get(mode) in self.query.precedents


def group_of(o: Outcome, mode: str) -> str:
    """Which of GROUPS ``o`` falls in, judged by ``mode``'s top result."""
    if not o.query.has_precedent:
        return "no_precedent"
    return "top_right" if o.right(mode) else "top_wrong"


def states(
    outcomes: Sequence[Outcome], mode: str, verdict: Callable[[Outcome], str]
) -> dict[str, dict[str, Any]]:
    """Per group: its size and the shares told each verdict (None for an empty group)."""
    return group_shares((group_of(o, mode), verdict(o)) for o in outcomes)


def group_shares(told: Iterable[tuple[str, str]]) -> dict[str, dict[str, Any]]:
    """Per group of GROUPS, from (group, verdict told) pairs: its size and the shares told each
    verdict (None for an empty group)."""
    by_group: dict[str, list[str]] = {group: [] for group in GROUPS}
    for group, verdict in told:
        by_group[group].append(verdict)
    return {
        group: {"n": len(said)}
        | {
            key: round(sum(v == verdict for v in said) / len(said), 4) if said else None
            for key, verdict in STATES.items()
        }
        for group, said in by_group.items()
    }


def share(rows: Sequence[Outcome], verdict: str, naive: bool = False) -> float | None:
    said = [o.naive if naive else o.verdict for o in rows]
    return round(sum(v == verdict for v in said) / len(rows), 4) if rows else None


def cell(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    n = len(outcomes)
    with_p = [o for o in outcomes if o.query.has_precedent]
    without = [o for o in outcomes if not o.query.has_precedent]
    first = [o for o in with_p if o.right()]
    hit = {
        m: round(sum(o.right(m) for o in with_p) / len(with_p), 4)
        for m in ("default", "sparse", "dense")
        if with_p and all(m in o.tops for o in with_p)
    }
    best_single = max((v for m, v in hit.items() if m != "default"), default=None)
    labels = [int(o.right()) for o in outcomes]
    ps = [o.p for o in outcomes]
    area = auroc(ps, [int(o.query.has_precedent) for o in outcomes])
    return {
        "queries": n,
        "with_precedent": len(with_p),
        "hit_at_1": hit,
        "default_minus_best_single": (
            round(hit["default"] - best_single, 4)
            if best_single is not None and "default" in hit
            else None
        ),
        "states": states(outcomes, "default", lambda o: o.verdict),
        "false_no_precedent_when_first": share(first, NONE),
        "no_precedent_when_none": share(without, NONE),
        "found_when_none": share(without, FOUND),
        "possible_when_first": share(first, POSSIBLE),
        "ece": round(expected_calibration_error(ps, labels), 4) if n else None,
        "auroc": None if area != area else round(area, 4),
        "mean_p": round(sum(ps) / n, 4) if n else None,
        "naive": {  # the top-BM25-threshold baseline on the same queries (sparse's top result)
            "states": states(outcomes, "sparse", lambda o: o.naive),
            "false_no_precedent_when_first": share(
                [o for o in with_p if o.right("sparse")], NONE, naive=True
            ),
            "no_precedent_when_none": share(without, NONE, naive=True),
            "found_when_none": share(without, FOUND, naive=True),
        },
    }
