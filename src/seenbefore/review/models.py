"""The review workflow's values as they cross into the HTTP service, the web UI and the CLI.

Pydantic models (JSON-serialisable, like :class:`~seenbefore.investigation.reporter.Draft`), plus
the conversions of an investigation's request and evidence to and from plain JSON, which is what
the LangGraph checkpoint and the ``reviews`` table hold.
"""

from __future__ import annotations

import datetime as dt
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, Field

from seenbefore.investigation.evidence import Evidence, EvidenceItem
from seenbefore.investigation.query import InvestigationRequest

ReviewStatus = Literal["pending", "approved", "closed"]
STATUSES: tuple[str, ...] = ("pending", "approved", "closed")
OUTCOMES: tuple[str, ...] = ("approved", "no_precedent", "alert_resolved", "feedback")


class DismissReason(StrEnum):
    WRONG_PRECEDENT = "wrong_precedent"
    RIGHT_PRECEDENT_WRONG_CAUSE = "right_precedent_wrong_cause"
    NOT_ENOUGH_EVIDENCE = "not_enough_evidence"
    OTHER = "other"


class DraftEdits(BaseModel):
    """What a reviewer wrote before approving; ``None`` keeps the drafted text. A "no
    precedent" draft, or one whose precedent a reviewer already dismissed, needs
    ``root_cause``, ``resolution`` and ``type`` (review/account.py)."""

    title: str | None = None
    summary: str | None = None
    hypothesis: str | None = None
    root_cause: str | None = Field(default=None, description="what it was, in a person's words")
    resolution: str | None = Field(default=None, description="what fixed it")
    type: str | None = Field(
        default=None,
        description="the failure mode, a slug such as connection-pool-exhaustion (a new one "
        "is allowed)",
    )


class ReviewEvent(BaseModel):
    """One line of a review's history: started, drafted, dismissed, approved, closed."""

    id: int
    at: str
    actor: str
    action: str
    round: int
    reason: str | None = None
    note: str | None = None
    detail: dict[str, Any] = Field(default_factory=dict)


class Review(BaseModel):
    """A review as the service lists it. ``tiers``: tiers of every document the review's
    evidence has held in any round (a reader must hold all of them, and ``access_tier``, to see
    it); ``access_tier``: the tier the approved postmortem gets (the most restrictive among the
    current round's evidence). ``awaiting_decision`` is False while a round is being drafted."""

    id: str
    status: ReviewStatus
    outcome: str | None = None
    round: int
    severity: str | None = None
    access_tier: str
    tiers: list[str]
    source_key: str | None = None
    source: dict[str, Any] | None = None
    requested_by: str
    created_at: str
    updated_at: str
    request: dict[str, Any]
    draft: dict[str, Any]
    evidence: dict[str, Any]
    excluded_doc_ids: list[str]
    postmortem_id: str | None = None
    history: list[ReviewEvent] = Field(default_factory=list)
    awaiting_decision: bool = False


# -- request and evidence <-> JSON ---------------------------------------------------------------
def request_to_dict(request: InvestigationRequest) -> dict[str, Any]:
    return {
        "query": request.query,
        "source": request.source,
        "services": list(request.services),
        "signals": list(request.signals),
        "started_at": request.started_at.isoformat() if request.started_at else None,
        "fingerprint": request.fingerprint,
        "labels": dict(request.labels),
        "display": request.display,
    }


def request_from_dict(data: dict[str, Any]) -> InvestigationRequest:
    started = data.get("started_at")
    return InvestigationRequest(
        query=str(data["query"]),
        source=str(data.get("source", "text")),
        services=tuple(data.get("services") or ()),
        signals=tuple(data.get("signals") or ()),
        started_at=dt.datetime.fromisoformat(started) if started else None,
        fingerprint=data.get("fingerprint"),
        labels=dict(data.get("labels") or {}),
        display=str(data.get("display") or ""),
    )


def _item_to_dict(item: EvidenceItem) -> dict[str, Any]:
    return {
        "doc_id": item.doc_id,
        "title": item.title,
        "date": item.date.isoformat() if item.date else None,
        "type": item.type,
        "status": item.status,
        "superseded_by": item.superseded_by,
        "access_tier": item.access_tier,
        "matched_by": item.matched_by,
        "retrievers": item.retrievers,
        "score": item.score,
        "matched_section": item.matched_section,
        "sections": dict(item.sections),
        "signals_shared": list(item.signals_shared),
        "signals_not_in_precedent": list(item.signals_not_in_precedent),
        "signals_only_in_precedent": list(item.signals_only_in_precedent),
        "injection_flags": list(item.injection_flags),
        "inferred_type": item.inferred_type,
        "inferred_slug": item.inferred_slug,
    }


def _item_from_dict(data: dict[str, Any]) -> EvidenceItem:
    return EvidenceItem(
        doc_id=str(data["doc_id"]),
        title=str(data["title"]),
        date=dt.date.fromisoformat(data["date"]) if data.get("date") else None,
        type=str(data.get("type", "")),
        status=str(data.get("status", "current")),
        superseded_by=data.get("superseded_by"),
        access_tier=str(data["access_tier"]),
        matched_by=str(data.get("matched_by", "sparse")),
        retrievers={k: dict(v) for k, v in (data.get("retrievers") or {}).items()},
        score=float(data.get("score", 0.0)),
        matched_section=str(data.get("matched_section", "")),
        sections=dict(data.get("sections") or {}),
        signals_shared=tuple(data.get("signals_shared") or ()),
        signals_not_in_precedent=tuple(data.get("signals_not_in_precedent") or ()),
        signals_only_in_precedent=tuple(data.get("signals_only_in_precedent") or ()),
        injection_flags=tuple(data.get("injection_flags") or ()),
        inferred_type=str(data.get("inferred_type", "")),
        inferred_slug=str(data.get("inferred_slug", "")),
    )


def evidence_to_dict(evidence: Evidence) -> dict[str, Any]:
    """The evidence record a review keeps: candidates (with matched_by, retriever ranks and the
    whole detection / root cause / resolution sections), confidence, novelty and its signals."""
    return {
        "candidates": [_item_to_dict(i) for i in evidence.items],
        "confidence": evidence.confidence,
        "confidence_label": evidence.confidence_label,
        "novel": evidence.novel,
        "verdict": evidence.verdict,
        "novel_reason": evidence.novel_reason,
        "searched": dict(evidence.searched),
        "gate": dict(evidence.gate),
        "timings": dict(evidence.timings),
        "signals": dict(evidence.signals),
        "confidence_model_key": evidence.confidence_model_key,
    }


def evidence_from_dict(data: dict[str, Any], request: InvestigationRequest) -> Evidence:
    return Evidence(
        request=request,
        items=tuple(_item_from_dict(i) for i in data.get("candidates") or ()),
        confidence=float(data["confidence"]),
        confidence_label=str(data["confidence_label"]),
        novel=bool(data["novel"]),
        verdict=str(data.get("verdict") or ("no precedent" if data["novel"] else "")),
        searched=dict(data.get("searched") or {}),
        gate=dict(data.get("gate") or {}),
        timings=dict(data.get("timings") or {}),
        novel_reason=str(data.get("novel_reason", "")),
        signals={k: float(v) for k, v in (data.get("signals") or {}).items()},
        confidence_model_key=str(data.get("confidence_model_key", "")),
    )
