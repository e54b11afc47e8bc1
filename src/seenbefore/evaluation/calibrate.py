"""Fit the trust gate's fusion weight and the confidence models from labelled cases.

Everything is fitted on one split of the cases and reported on the other.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from seenbefore.core.confidence import (
    SIGNALS,
    ConfidenceModel,
    auroc,
    brier,
    expected_calibration_error,
)
from seenbefore.core.trust import FusionWeights, choose_weight
from seenbefore.evaluation import logistic
from seenbefore.evaluation.cases import Case, split
from seenbefore.evaluation.runner import CaseRun, fuse_offline, reciprocal_rank, run_case
from seenbefore.kb import KnowledgeBase

L2 = 0.01
Vector = npt.NDArray[np.float64]


def fit_logistic_nonnegative(x: Vector, y: Vector) -> tuple[Vector, float]:
    """Logistic regression with weights >= 0 (bias free), L2-regularised (evaluation/logistic.py:
    projected Newton in numpy, so a plain install self-calibrates)."""
    return logistic.fit_logistic_nonnegative(x, y, L2)


def fit_confidence(runs: Sequence[CaseRun], source: str) -> ConfidenceModel:
    """A confidence model from runs: label 1 when the top result is a true precedent."""
    names = [s for s in SIGNALS if any(r.signals.get(s, 0.0) for r in runs)]
    x = np.array([[r.signals.get(s, 0.0) for s in names] for r in runs], dtype=np.float64)
    y = np.array([r.top_correct for r in runs], dtype=np.float64)
    if len(set(y.tolist())) < 2:
        raise ValueError("confidence needs cases where the top hit is right and where it is not")
    w, b = fit_logistic_nonnegative(x, y)
    model = ConfidenceModel({n: float(v) for n, v in zip(names, w, strict=True)}, b, 0.5, source)
    return ConfidenceModel(model.weights, b, _best_threshold(model, runs), source)


def _best_threshold(model: ConfidenceModel, runs: Sequence[CaseRun]) -> float:
    """The novelty threshold that maximises F1 of detecting no-precedent cases on these runs
    (or, when they hold none, of detecting a wrong top hit)."""
    probs = [model.predict(r.signals) for r in runs]
    if any(r.case.expect_novel for r in runs):
        wrong = [int(r.case.expect_novel) for r in runs]
    else:
        wrong = [1 - r.top_correct for r in runs]
    best, best_f1 = 0.5, -1.0
    for t in np.linspace(0.05, 0.95, 19):
        flagged = [p < t for p in probs]
        tp = sum(f and w for f, w in zip(flagged, wrong, strict=True))
        fp = sum(f and not w for f, w in zip(flagged, wrong, strict=True))
        fn = sum((not f) and w for f, w in zip(flagged, wrong, strict=True))
        f1 = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
        if f1 > best_f1 + 1e-9:
            best, best_f1 = float(round(t, 2)), f1
    return best


def calibration_metrics(model: ConfidenceModel, runs: Sequence[CaseRun]) -> dict[str, Any]:
    probs = [model.predict(r.signals) for r in runs]
    correct = [r.top_correct for r in runs]
    has_precedent = [int(not r.case.expect_novel) for r in runs]
    novel_pred = [model.is_novel(p) for p in probs]
    expect = [r.case.expect_novel for r in runs]
    tp = sum(p and e for p, e in zip(novel_pred, expect, strict=True))
    return {
        "cases": len(runs),
        "ece": round(expected_calibration_error(probs, correct), 4),
        "brier": round(brier(probs, correct), 4),
        "auroc_precedent_vs_none": _round(auroc(probs, has_precedent)),
        "novel_precision": _round(tp / sum(novel_pred)) if sum(novel_pred) else None,
        "novel_recall": _round(tp / sum(expect)) if sum(expect) else None,
        "no_precedent_cases": sum(expect),
        # Hit@1 over the cases that have a precedent (a no-precedent case has no right answer)
        "hit_at_1": (
            round(sum(c for c, h in zip(correct, has_precedent, strict=True) if h) / n_prec, 4)
            if (n_prec := sum(has_precedent))
            else None
        ),
    }


def _round(v: float) -> float | None:
    return None if math.isnan(v) else round(v, 4)


def production_mrr(
    kb: KnowledgeBase, cases: Sequence[Case], weight: float, tiers: Sequence[str]
) -> float:
    """MRR of the served hybrid search at dense weight ``weight`` over ``cases``."""
    runs = [run_case(kb, c, "hybrid", tiers=tiers, dense_weight=weight) for c in cases]
    return sum(reciprocal_rank(r.ranking, r.case.relevant) for r in runs) / max(1, len(runs))


def mean_rr(runs: Sequence[tuple[CaseRun, CaseRun]], weight: float) -> float:
    scored = [(s, d) for s, d in runs if not s.case.expect_novel]
    if not scored:
        return 0.0
    return sum(
        reciprocal_rank(fuse_offline(s, d, weight), s.case.relevant) for s, d in scored
    ) / len(scored)


def calibrate(
    kb: KnowledgeBase,
    cases: Sequence[Case],
    *,
    tiers: Sequence[str],
    label: str,
    seed: int = 0,
    persist: bool = True,
) -> dict[str, Any]:
    """Choose the dense weight and fit confidence models on a split of ``cases``; report the
    held-out figures; persist them with the knowledge base when ``persist``."""
    fit, held = split(cases, seed=seed)
    family = kb.dense_family()
    has_dense = family != "none" and kb.index().dense is not None
    report: dict[str, Any] = {
        "cases": len(cases),
        "fit_cases": len(fit),
        "held_out_cases": len(held),
        "seed": seed,
        "family": family,
    }
    sparse = {c.id: run_case(kb, c, "sparse", tiers=tiers) for c in cases}
    weights: FusionWeights | None = None
    if has_dense:
        # the weight is chosen on the fit half and checked on the held-out half, each weight
        # run through the production hybrid search (its fuser and depth), not a top-k proxy
        weights = choose_weight(
            [c for c in fit if not c.expect_novel],
            [c for c in held if not c.expect_novel],
            lambda w, cs: production_mrr(kb, cs, w, tiers),
        )
        weights = FusionWeights(weights.dense, f"{weights.source} ({label})", weights.evidence)
        report["weights"] = {
            "dense": weights.dense,
            "source": weights.source,
            "evidence": dict(weights.evidence),
        }
    models: dict[str, Any] = {}
    sparse_model = fit_confidence(
        [sparse[c.id] for c in fit], f"fitted on {len(fit)} cases ({label})"
    )
    models["sparse"] = _with_metrics(
        sparse_model, [sparse[c.id] for c in held], [sparse[c.id] for c in fit]
    )
    if has_dense and weights is not None and weights.dense > 0:
        hybrid = {
            c.id: run_case(kb, c, "hybrid", tiers=tiers, dense_weight=weights.dense) for c in cases
        }
        model = fit_confidence([hybrid[c.id] for c in fit], f"fitted on {len(fit)} cases ({label})")
        models[f"hybrid:{family}"] = _with_metrics(
            model, [hybrid[c.id] for c in held], [hybrid[c.id] for c in fit]
        )
    report["confidence"] = {k: v.as_dict() for k, v in models.items()}
    if persist:
        if weights is not None:
            stored = kb.store.get_json("fusion_weights") or {}
            stored[family] = report["weights"]
            kb.store.set_json("fusion_weights", stored)
        stored_models = kb.store.get_json("confidence_models") or {}
        stored_models.update(report["confidence"])
        kb.store.set_json("confidence_models", stored_models)
    return report


def _with_metrics(
    model: ConfidenceModel, held: Sequence[CaseRun], fit: Sequence[CaseRun] = ()
) -> ConfidenceModel:
    """``model`` with its held-out figures; with no-precedent cases in ``fit``, its novelty
    threshold moves to the stated operating point (selfcal.novel_threshold)."""
    threshold = model.threshold
    if any(r.case.expect_novel for r in fit):
        from seenbefore.evaluation.verdict import novel_threshold

        threshold, _ = novel_threshold(
            [model.predict(r.signals) for r in fit], [r.case.expect_novel for r in fit]
        )
    model = ConfidenceModel(model.weights, model.bias, threshold, model.source)
    return ConfidenceModel(
        model.weights,
        model.bias,
        model.threshold,
        model.source,
        {"held_out": calibration_metrics(model, held)},
    )
