"""A search result as plain JSON: one shape for the CLI's ``--json`` (version 1) and the HTTP
API's ``SearchOut``, so the two never drift apart. ``verdict`` (one of core.confidence.VERDICTS)
comes from ``p_precedent`` alone through ``thresholds``; ``confidence`` is the same number under
its older name, and ``novel`` is true exactly when the verdict is "no precedent" (the results
are then the nearest postmortems, none scored as a match). Each result's ``type`` is the author's,
as written; ``failure_mode`` ({slug, inferred, p, known}: seenbefore.knowledge.failure_modes) is
the author's type or the mode inferred from the text, null where the caller gave none;
``query_failure_mode`` is the query's own, as the classifier reads it, and ``another_failure``
says in words when the query plainly names a mode the first postmortem is known not to be
(:func:`another_failure`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from seenbefore.core.confidence import FOUND
from seenbefore.types import Candidate, SearchResult

FailureModes = Mapping[str, Mapping[str, Any]]  # doc id -> FailureMode.as_dict()


def candidate_json(
    rank: int, c: Candidate, failure_mode: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    return {
        "rank": rank,
        "id": c.doc_id,
        "title": c.title,
        "date": c.date.isoformat() if c.date else None,
        "type": c.type,
        "failure_mode": dict(failure_mode) if failure_mode is not None else None,
        "status": c.status,
        "superseded_by": c.superseded_by,
        "access_tier": c.access_tier,
        "services": list(c.services),
        "score": round(c.score, 6),
        "matched_by": c.matched_by,
        "retrievers": {
            k: {"rank": v.rank, "score": round(v.score, 6)} for k, v in c.retrievers.items()
        },
        "section": c.section_key,
        "chunk_id": c.chunk_id,
        "snippet": c.snippet,
    }


def another_failure(
    verdict: str | None, query_mode: Mapping[str, Any] | None, top_mode: Mapping[str, Any] | None
) -> str | None:
    """Where the verdict is not "found", the evidence of absence the failure modes give, in
    words (what the ``mode_consistency`` signal weighs): the query plainly names one failure
    mode (``known``: the classifier's p >= 0.5) and the first postmortem is known to be of
    another. None where either mode is unknown or they agree, so a vague or misread query says
    nothing, and beside "found" (the modes are one signal among several)."""
    if verdict is None or verdict == FOUND or not query_mode or not top_mode:
        return None
    if not query_mode.get("known") or not top_mode.get("known"):
        return None
    if query_mode["slug"] == top_mode["slug"]:
        return None
    top = top_mode["slug"] + (f" (inferred, p {top_mode['p']:.2f})" if top_mode["inferred"] else "")
    return (
        f"the query reads as {query_mode['slug']} (inferred, p {query_mode['p']:.2f}); the first "
        f"postmortem is {top}: another failure"
    )


def result_json(
    result: SearchResult,
    *,
    explain: bool = False,
    failure_modes: FailureModes | None = None,
    query_mode: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``query_mode``: the query's failure mode (FailureMode.as_dict), null where not given."""
    modes = failure_modes or {}
    scored = result.scored  # the FTS path scores nothing: its figures are null
    top = modes.get(result.candidates[0].doc_id) if result.candidates else None
    payload: dict[str, Any] = {
        "query": result.query,
        "mode": result.mode,
        "verdict": result.verdict if scored else None,
        "p_precedent": result.confidence if scored else None,
        "thresholds": _thresholds(result) if scored else None,
        "confidence": result.confidence if scored else None,
        "confidence_label": result.confidence_label if scored else None,
        "novel": result.novel if scored else None,
        "dense_trusted": result.gate.dense_trusted if result.gate else None,
        "weights": dict(result.weights) if scored else None,
        "results": [
            candidate_json(i, c, modes.get(c.doc_id)) for i, c in enumerate(result.candidates, 1)
        ],
        "query_failure_mode": dict(query_mode) if query_mode is not None else None,
        "another_failure": another_failure(result.verdict, query_mode, top) if scored else None,
    }
    if explain:
        payload["explain"] = result.explain()
    return payload


def _thresholds(result: SearchResult) -> dict[str, float] | None:
    """The verdict's thresholds: "no precedent" at p_precedent <= lo, "found" at >= hi."""
    fit = result.confidence_model_fit
    return {"lo": fit.lo, "hi": fit.hi} if fit is not None else None
