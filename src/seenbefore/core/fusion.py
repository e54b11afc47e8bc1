"""Rank fusion. Pure: standard library only.

``rrf`` is weighted reciprocal rank fusion (Cormack et al. 2009): a document at 1-based rank ``r``
in list ``i`` contributes ``w_i / (k + r)``; a document missing from a list contributes nothing
from it. Other fusers live in ``FUSERS`` under their own names.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

RRF_K = 60

Rankings = Mapping[str, Sequence[str]]
Fuser = Callable[..., dict[str, float]]


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


def zscore(
    scores: Mapping[str, Mapping[str, float]], weights: Mapping[str, float] | None = None
) -> dict[str, float]:
    """Weighted sum of per-list z-scored scores; a document missing from a list gets that list's
    minimum z-score (it was not retrieved, so it is treated as the worst seen)."""
    normalised: dict[str, dict[str, float]] = {}
    for name, per_doc in scores.items():
        values = list(per_doc.values())
        if not values:
            continue
        mean = sum(values) / len(values)
        std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values)) or 1.0
        normalised[name] = {d: (v - mean) / std for d, v in per_doc.items()}
    docs = {d for per_doc in normalised.values() for d in per_doc}
    fused = dict.fromkeys(docs, 0.0)
    for name, per_doc in normalised.items():
        weight = 1.0 if weights is None else float(weights.get(name, 1.0))
        floor = min(per_doc.values())
        for doc in docs:
            fused[doc] += weight * per_doc.get(doc, floor)
    return fused


def ranked(fused: Mapping[str, float]) -> list[str]:
    """Documents by fused score, best first; ties broken by id for determinism."""
    return sorted(fused, key=lambda d: (-fused[d], d))


FUSERS: dict[str, Fuser] = {"rrf": rrf, "zscore": zscore}
