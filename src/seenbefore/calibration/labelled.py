"""``seenbefore calibrate CASES``: the gate's dense weight and the confidence models fitted from
labelled cases (case files or the KB's self-test), on one split of the cases and reported on the
other; kept only where they beat what is live (the precedence rule, fitting.beats).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from seenbefore.calibration import fitting, record
from seenbefore.calibration.cases import Case, split
from seenbefore.calibration.runs import CaseRun, fuse_offline, reciprocal_rank, run_case
from seenbefore.calibration.weights import pick_weight
from seenbefore.core.confidence import (
    FOUND,
    NONE,
    ConfidenceModel,
    auroc,
    brier,
    expected_calibration_error,
)
from seenbefore.core.trust import FusionWeights

if TYPE_CHECKING:
    from seenbefore.kb import KnowledgeBase


def as_labelled(runs: Sequence[CaseRun], style: str = "labelled") -> list[fitting.Labelled]:
    """Runs of labelled cases as the fit pipeline reads them, all of one ``style``."""
    return [
        fitting.Labelled(
            r.signals, bool(r.top_correct), style, bool(r.case.relevant) and not r.case.expect_novel
        )
        for r in runs
    ]


def fit_confidence(
    runs: Sequence[CaseRun], source: str, held: Sequence[CaseRun] | None = None
) -> ConfidenceModel:
    """``p_precedent`` and its thresholds from runs (label: the top result is a precedent),
    through the one fit pipeline (calibration/fitting.py); the thresholds and figures come from
    ``held`` when given, else from the same runs. ValueError with one class only."""
    rows = as_labelled(runs)
    return fitting.fit(rows, as_labelled(held) if held else rows, source=source).model


def calibration_metrics(model: ConfidenceModel, runs: Sequence[CaseRun]) -> dict[str, Any]:
    probs = [model.predict(r.signals) for r in runs]
    correct = [r.top_correct for r in runs]
    has_precedent = [int(not r.case.expect_novel) for r in runs]
    # each verdict as the search would give it: its query shape's thresholds, its shared words
    verdicts = [
        model.for_shape(r.shape).verdict_for(p, r.signals) for r, p in zip(runs, probs, strict=True)
    ]
    novel_pred = [v == NONE for v in verdicts]
    found = [v == FOUND for v in verdicts]
    expect = [r.case.expect_novel for r in runs]
    tp = sum(p and e for p, e in zip(novel_pred, expect, strict=True))
    return {
        "cases": len(runs),
        "ece": round(expected_calibration_error(probs, correct), 4),
        "brier": round(brier(probs, correct), 4),
        "auroc_precedent_vs_none": _round(auroc(probs, has_precedent)),
        "novel_precision": _round(tp / sum(novel_pred)) if sum(novel_pred) else None,
        "novel_recall": _round(tp / sum(expect)) if sum(expect) else None,
        "found_when_none": (
            _round(sum(f and e for f, e in zip(found, expect, strict=True)) / sum(expect))
            if sum(expect)
            else None
        ),
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
    who: str = "local",
) -> dict[str, Any]:
    """Choose the dense weight and fit confidence models on a split of ``cases``; report the
    held-out figures; persist what was kept with the knowledge base when ``persist`` (``who``
    is recorded in the record's history)."""
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
        weights, _ = pick_weight(
            [c for c in fit if not c.expect_novel],
            [c for c in held if not c.expect_novel],
            lambda w, cs: production_mrr(kb, cs, w, tiers),
            label=label,
        )
        report["weights"] = {
            "dense": weights.dense,
            "source": weights.source,
            "evidence": dict(weights.evidence),
        }
    models: dict[str, Any] = {}
    kept_models: dict[str, Any] = {}
    runs_by_key = {"sparse": sparse}
    if has_dense and weights is not None and weights.dense > 0:
        runs_by_key[f"hybrid:{family}"] = {
            c.id: run_case(kb, c, "hybrid", tiers=tiers, dense_weight=weights.dense) for c in cases
        }
    report["kept"] = {}
    for key, runs in runs_by_key.items():
        fit_runs, held_runs = [runs[c.id] for c in fit], [runs[c.id] for c in held]
        model = fit_confidence(fit_runs, f"fitted on {len(fit)} cases ({label})", held_runs)
        model = replace(
            model,
            metrics={**dict(model.metrics), "calibration": calibration_metrics(model, held_runs)},
        )
        # the precedence rule: it replaces the live model only by beating it on held-out cases
        kept, why = fitting.beats(model, kb.confidence_model(key), as_labelled(held_runs))
        report["kept"][key] = why
        models[key] = model.as_dict()
        if kept:
            kept_models[key] = model
    report["confidence"] = models
    if persist:
        if weights is not None:
            record.keep_gate(kb.store, family, weights, who=who)
        for key, model in kept_models.items():
            line = f"{key}: fitted by `seenbefore calibrate` on {len(fit)} {label}"
            record.keep_model(kb.store, key, model, by="cases", line=line, who=who)
    return report
