"""The one dense-weight picker: the trust gate's weight (core/trust.py decides with it) chosen by
a sweep on fit cases and kept only when it beats the weight to beat on held-out cases.

``pick_weight`` takes one fit / held-out split (self-calibration, ``seenbefore calibrate CASES``);
``pick_weight_cv`` runs the same sweep in each fold of a cross-validation (the shipped defaults,
benchmarks/fit_defaults.py). Both keep a weight above ``baseline`` only when its held-out metric
beats both sparse-only (weight 0) and ``baseline`` by more than ``min_gain``; otherwise
``baseline`` stays and the source says why.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

from seenbefore.core.trust import FusionWeights

WEIGHT_GRID = tuple(round(0.1 * i, 1) for i in range(11))
MIN_GAIN = 0.01  # held-out improvement dense must show to be kept

Scorer = Callable[[float, Sequence[Any]], float]


def _sweep(cases: Sequence[Any], score: Scorer, grid: Sequence[float]) -> dict[float, float]:
    return {w: score(w, cases) for w in grid}


def _best(sweep: dict[float, float]) -> float:
    return max(sweep, key=lambda w: (sweep[w], -w))  # ties go to the smaller dense weight


def pick_weight(
    fit_cases: Sequence[Any],
    held_out: Sequence[Any],
    score: Scorer,
    *,
    baseline: float = 0.0,
    grid: Sequence[float] = WEIGHT_GRID,
    min_gain: float = MIN_GAIN,
    metric: str = "MRR",
    label: str = "",
) -> tuple[FusionWeights, bool]:
    """(weights, kept): the best weight on ``fit_cases``, kept when it is above ``baseline`` and,
    on ``held_out``, beats sparse-only and ``baseline`` by more than ``min_gain``; else
    ``baseline`` with the reason. ``score(weight, cases)``: higher is better."""
    if not fit_cases or not held_out:
        raise ValueError("a weight pick needs non-empty fit and held-out case lists")
    sweep = _sweep(fit_cases, score, grid)
    best = _best(sweep)
    at, sparse = score(best, held_out), score(0.0, held_out)
    at_base = sparse if baseline == 0 else (at if baseline == best else score(baseline, held_out))
    evidence = {
        "metric": metric,
        "fit_cases": len(fit_cases),
        "held_out_cases": len(held_out),
        "fit_sweep": {str(w): round(v, 4) for w, v in sweep.items()},
        "chosen_on_fit": best,
        "held_out_at_chosen": round(at, 4),
        "held_out_sparse_only": round(sparse, 4),
        "baseline": baseline,
        "held_out_at_baseline": round(at_base, 4),
    }
    figures = (
        f"dense weight {best} chosen on {len(fit_cases)} cases; held-out {metric} {at:.3f} vs "
        f"sparse-only {sparse:.3f}"
        + (f" and weight {baseline} {at_base:.3f}" if baseline else "")
        + f" on {len(held_out)}"
        + (f" ({label})" if label else "")
    )
    if best > baseline and at - max(sparse, at_base) > min_gain:
        return FusionWeights(best, f"measured: {figures}", evidence), True
    why = "dense does not help" if baseline == 0 else f"weight {baseline} kept"
    return FusionWeights(baseline, f"measured: {why} ({figures})", evidence), False


def pick_weight_cv(
    cases: Sequence[Any],
    score: Scorer,
    *,
    folds: int = 5,
    seed: int = 0,
    grid: Sequence[float] = WEIGHT_GRID,
    min_gain: float = MIN_GAIN,
    metric: str = "MRR",
) -> FusionWeights:
    """The same sweep cross-validated: in each fold the weight is chosen on the other folds and
    scored on the held-out fold against sparse-only; dense is kept only when the mean held-out
    gain exceeds ``min_gain``, at the weight that is best on all cases."""
    if len(cases) < folds:
        raise ValueError(
            f"a {folds}-fold weight pick needs at least {folds} cases, got {len(cases)}"
        )
    order = list(range(len(cases)))
    random.Random(seed).shuffle(order)
    parts = [[cases[i] for i in order[f::folds]] for f in range(folds)]
    chosen, gains, held_at, held_sparse = [], [], [], []
    for f in range(folds):
        fit = [c for g, part in enumerate(parts) if g != f for c in part]
        best = _best(_sweep(fit, score, grid))
        at, sparse = score(best, parts[f]), score(0.0, parts[f])
        chosen.append(best)
        held_at.append(at)
        held_sparse.append(sparse)
        gains.append(at - sparse)
    overall = _sweep(list(cases), score, grid)
    best_all = _best(overall)
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
