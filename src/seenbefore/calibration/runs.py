"""Run labelled cases through a knowledge base: rankings, signals and latency per case and mode.

Sparse and dense rankings are computed once per case; fusing them at other weights is offline,
so sweeping the dense weight costs nothing extra.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from seenbefore.calibration.cases import Case
from seenbefore.core.fusion import ranked, rrf
from seenbefore.retrieval.hybrid import SearchOptions
from seenbefore.types import SearchFilters

if TYPE_CHECKING:
    from seenbefore.kb import KnowledgeBase


@dataclass
class CaseRun:
    """One case's retrieval under one mode: ranked ids, confidence signals, latency."""

    case: Case
    mode: str
    ranking: list[str]
    signals: dict[str, float] = field(default_factory=dict)
    confidence: float = 0.0
    novel: bool = False
    latency_ms: float = 0.0
    # the query's shape as the search saw it (core/confidence.SHAPES; None: unscored), so a
    # verdict recomputed from these signals uses the thresholds that search would have shown
    shape: str | None = None

    @property
    def top_correct(self) -> int:
        return int(bool(self.ranking) and self.ranking[0] in self.case.relevant)


def run_case(
    kb: KnowledgeBase,
    case: Case,
    mode: str,
    *,
    tiers: Sequence[str],
    dense_weight: float | None = None,
    depth: int = 100,
    k: int = 10,
) -> CaseRun:
    options = SearchOptions(k=k, mode=mode, dense_weight=dense_weight, depth=depth)
    return timed_search(kb, case, case.query, tiers=tiers, options=options)


def timed_search(
    kb: KnowledgeBase, case: Case, query: str, *, tiers: Sequence[str], options: SearchOptions
) -> CaseRun:
    """One search for ``case`` (its excluded documents hidden), timed, as a CaseRun."""
    filters = SearchFilters(tiers=tuple(tiers), exclude_ids=case.exclude)
    started = time.perf_counter()
    result = kb.search(query, filters, options)
    latency = (time.perf_counter() - started) * 1000
    return CaseRun(
        case,
        options.mode,
        [c.doc_id for c in result.candidates],
        dict(result.signals),
        result.confidence,
        result.novel,
        latency,
        result.query_weights.shape if result.query_weights is not None else None,
    )


def fuse_offline(sparse: CaseRun, dense: CaseRun, weight: float, k: int = 60) -> list[str]:
    return ranked(
        rrf(
            {"sparse": sparse.ranking, "dense": dense.ranking},
            k=k,
            weights={"sparse": 1 - weight, "dense": weight},
        )
    )


def reciprocal_rank(ranking: Sequence[str], relevant: frozenset[str]) -> float:
    for i, doc in enumerate(ranking, 1):
        if doc in relevant:
            return 1.0 / i
    return 0.0
