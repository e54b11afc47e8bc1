"""Rank fusion. Pure: standard library only.

``rrf`` is weighted reciprocal rank fusion (Cormack et al. 2009): a document at 1-based rank ``r``
in list ``i`` contributes ``w_i / (k + r)``; a document missing from a list contributes nothing
from it. It is the only fuser: a z-score fuser and its registry, used by no search path, were
removed (issue 15); add another when a benchmark shows it beats RRF.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

RRF_K = 60

Rankings = Mapping[str, Sequence[str]]


def rrf(
    rankings: Rankings, k: int = RRF_K, weights: Mapping[str, float] | None = None
) -> dict[str, float]:
    """Weighted reciprocal rank fusion of named rankings (best first). Missing weights are 1."""
    if k < 0:
        raise ValueError(f"rrf k is {k}, expected k >= 0")
    fused: dict[str, float] = {}
    for name, ranking in rankings.items():
        weight = 1.0 if weights is None else float(weights.get(name, 1.0))
        if weight < 0 or math.isnan(weight):
            raise ValueError(f"weight for {name!r} is {weight}, expected a number >= 0")
        if weight == 0:
            continue
        for rank, doc in enumerate(ranking, start=1):
            fused[doc] = fused.get(doc, 0.0) + weight / (k + rank)
    return fused


def ranked(fused: Mapping[str, float]) -> list[str]:
    """Documents by fused score, best first; ties broken by id for determinism."""
    return sorted(fused, key=lambda d: (-fused[d], d))
