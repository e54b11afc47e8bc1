"""The trust gate: whether the dense half of hybrid retrieval may vote, and with what weight.

Decided by evidence, not by the embedder's pedigree:

1. The origin floor: LSA fitted on fewer than ``MIN_CORPUS_SIZE_FOR_LSA`` documents is noise,
   so queries run sparse-only.
2. A measured gate: dense weights are swept on labelled cases (fit split) and checked on held-out
   cases; where dense does not measurably help, its weight is 0 and the gate says so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

MIN_CORPUS_SIZE_FOR_LSA = 50
WEIGHT_GRID = tuple(round(0.1 * i, 1) for i in range(11))
MIN_GAIN = 0.01  # held-out improvement dense must show over sparse-only to be kept


@dataclass(frozen=True)
class FusionWeights:
    """Weights in force: dense weight in [0, 1], sparse weight 1 - dense (both 0..1)."""

    dense: float
    source: str  # where the figure came from: "measured on ...", "shipped default ...", ...
    evidence: Mapping[str, Any] = field(default_factory=dict)

    @property
    def sparse(self) -> float:
        return round(1.0 - self.dense, 6)

    def as_dict(self) -> dict[str, float]:
        return {"sparse": self.sparse, "dense": self.dense}


@dataclass(frozen=True)
class GateDecision:
    dense_trusted: bool
    weights: FusionWeights
    reason: str
    evidence: Mapping[str, Any] = field(default_factory=dict)


def decide(
    *,
    embedder_name: str,
    is_lsa: bool,
    corpus_documents: int,
    measured: FusionWeights | None,
    default: FusionWeights,
) -> GateDecision:
    """The gate's decision for the current knowledge base."""
    if is_lsa and corpus_documents < MIN_CORPUS_SIZE_FOR_LSA:
        return GateDecision(
            False,
            FusionWeights(0.0, "origin floor"),
            f"LSA fitted on {corpus_documents} documents, below MIN_CORPUS_SIZE_FOR_LSA = "
            f"{MIN_CORPUS_SIZE_FOR_LSA}: dense is noise at this size, running sparse-only",
            {"corpus_documents": corpus_documents, "embedder": embedder_name},
        )
    weights = measured if measured is not None else default
    if weights.dense <= 0:
        return GateDecision(
            False,
            weights,
            f"dense ({embedder_name}) weight is 0: {weights.source}",
            dict(weights.evidence),
        )
    return GateDecision(
        True,
        weights,
        f"dense ({embedder_name}) weight {weights.dense}: {weights.source}",
        dict(weights.evidence),
    )


Scorer = Callable[[float, Sequence[Any]], float]


def choose_weight(
    fit_cases: Sequence[Any],
    held_out: Sequence[Any],
    score: Scorer,
    *,
    grid: Sequence[float] = WEIGHT_GRID,
    min_gain: float = MIN_GAIN,
    metric: str = "MRR",
) -> FusionWeights:
    """Sweep the dense weight on ``fit_cases``; keep the best only if, on ``held_out``, it beats
    sparse-only (weight 0) by more than ``min_gain``. ``score(weight, cases)`` returns the metric
    (higher is better)."""
    if not fit_cases or not held_out:
        raise ValueError("choose_weight needs non-empty fit and held-out case lists")
    sweep = {w: score(w, fit_cases) for w in grid}
    best = max(sweep, key=lambda w: (sweep[w], -w))  # ties go to the smaller dense weight
    held_best = score(best, held_out)
    held_sparse = score(0.0, held_out)
    evidence = {
        "metric": metric,
        "fit_cases": len(fit_cases),
        "held_out_cases": len(held_out),
        "fit_sweep": {str(w): round(v, 4) for w, v in sweep.items()},
        "chosen_on_fit": best,
        "held_out_at_chosen": round(held_best, 4),
        "held_out_sparse_only": round(held_sparse, 4),
    }
    if best > 0 and held_best - held_sparse > min_gain:
        return FusionWeights(
            best,
            f"measured: dense weight {best} chosen on {len(fit_cases)} cases; held-out {metric} "
            f"{held_best:.3f} vs sparse-only {held_sparse:.3f} on {len(held_out)} cases",
            evidence,
        )
    why = (
        "sparse-only was best on the fit split"
        if best == 0
        else f"held-out {metric} {held_best:.3f} did not beat sparse-only {held_sparse:.3f} "
        f"by more than {min_gain}"
    )
    return FusionWeights(
        0.0,
        f"measured: dense does not help ({why}; {len(fit_cases)} fit / {len(held_out)} "
        "held-out cases)",
        evidence,
    )


def choose_weight_cv(
    cases: Sequence[Any],
    score: Scorer,
    *,
    folds: int = 5,
    seed: int = 0,
    grid: Sequence[float] = WEIGHT_GRID,
    min_gain: float = MIN_GAIN,
    metric: str = "MRR",
) -> FusionWeights:
    """Cross-validated choice: in each fold the weight is chosen on the other folds and scored on
    the held-out fold, against sparse-only on the same fold. Dense is kept only when the mean
    held-out gain exceeds ``min_gain``; the weight kept is then the best on all cases."""
    import random

    if len(cases) < folds:
        raise ValueError(f"choose_weight_cv needs at least {folds} cases, got {len(cases)}")
    order = list(range(len(cases)))
    random.Random(seed).shuffle(order)
    parts = [[cases[i] for i in order[f::folds]] for f in range(folds)]
    chosen, gains, held_at, held_sparse = [], [], [], []
    for f in range(folds):
        fit = [c for g, part in enumerate(parts) if g != f for c in part]
        sweep = {w: score(w, fit) for w in grid}
        best = max(sweep, key=lambda w: (sweep[w], -w))
        at, sparse = score(best, parts[f]), score(0.0, parts[f])
        chosen.append(best)
        held_at.append(at)
        held_sparse.append(sparse)
        gains.append(at - sparse)
    overall = {w: score(w, list(cases)) for w in grid}
    best_all = max(overall, key=lambda w: (overall[w], -w))
    mean_gain = sum(gains) / folds
    mean_at, mean_sparse = sum(held_at) / folds, sum(held_sparse) / folds
    evidence = {
        "metric": metric,
        "cases": len(cases),
        "folds": folds,
        "seed": seed,
        "chosen_per_fold": chosen,
        "held_out_gain_per_fold": [round(g, 4) for g in gains],
        "held_out_at_chosen": round(mean_at, 4),
        "held_out_sparse_only": round(mean_sparse, 4),
        "sweep_all_cases": {str(w): round(v, 4) for w, v in overall.items()},
    }
    summary = (
        f"{folds}-fold held-out {metric} {mean_at:.3f} vs sparse-only {mean_sparse:.3f} "
        f"on {len(cases)} cases"
    )
    if best_all > 0 and mean_gain > min_gain:
        return FusionWeights(best_all, f"measured: dense weight {best_all}; {summary}", evidence)
    return FusionWeights(0.0, f"measured: dense does not help ({summary})", evidence)
