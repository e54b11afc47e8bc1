"""Metrics for the harness: IR metrics through ranx, calibration, abstention, token overlap."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from seenbefore.core.confidence import auroc, brier, expected_calibration_error
from seenbefore.extras import requires
from seenbefore.retrieval.tokenize import query_terms

IR_METRICS = ("hit_rate@1", "hit_rate@3", "mrr")


def ir_metrics(
    rankings: Mapping[str, Sequence[str]], relevant: Mapping[str, frozenset[str]]
) -> dict[str, float]:
    """Hit@1, Hit@3 and MRR over the cases that have relevant documents (via ranx)."""
    with requires("eval", "IR metrics (ranx)"):
        from ranx import Qrels, Run, evaluate

    ids = [q for q, rel in relevant.items() if rel]
    if not ids:
        return dict.fromkeys(("hit@1", "hit@3", "mrr"), float("nan"))
    qrels = Qrels({q: dict.fromkeys(relevant[q], 1) for q in ids})
    run = Run(
        {
            q: {doc: 1.0 / rank for rank, doc in enumerate(rankings.get(q, ()), 1)}
            or {"__none__": 0.0}
            for q in ids
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba's cast warnings inside ranx
        scores = evaluate(qrels, run, list(IR_METRICS), make_comparable=True)
    return {
        "hit@1": float(scores["hit_rate@1"]),
        "hit@3": float(scores["hit_rate@3"]),
        "mrr": float(scores["mrr"]),
    }


def abstention(
    predicted_novel: Sequence[bool], expect_novel: Sequence[bool]
) -> dict[str, float | None]:
    tp = sum(p and e for p, e in zip(predicted_novel, expect_novel, strict=True))
    flagged, actual = sum(predicted_novel), sum(expect_novel)
    return {
        "novel_precision": tp / flagged if flagged else None,
        "novel_recall": tp / actual if actual else None,
        "novel_flagged": flagged,
        "novel_expected": actual,
    }


def calibration(
    confidences: Sequence[float], correct: Sequence[int], has_precedent: Sequence[int]
) -> dict[str, Any]:
    return {
        "ece": expected_calibration_error(confidences, correct),
        "brier": brier(confidences, correct),
        "auroc": auroc(confidences, has_precedent),
    }


def token_overlap(query: str, document_text: str) -> float:
    """Share of the query's distinct content terms that occur in the document."""
    terms = query_terms(query, max_terms=10_000)
    if not terms:
        return 0.0
    doc = set(query_terms(document_text, max_terms=1_000_000))
    return sum(t in doc for t in terms) / len(terms)


def percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]
