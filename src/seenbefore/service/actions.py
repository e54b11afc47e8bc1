"""What the API routers and the web pages both do, in one place: search, start an investigation,
decide a review. Each records its audit entry, metrics and (for investigations) the sampled
full-context log."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from seenbefore.investigation.query import InvestigationRequest
from seenbefore.retrieval.hybrid import SearchOptions
from seenbefore.review.models import DismissReason, DraftEdits, Review
from seenbefore.security.tokens import Principal
from seenbefore.service.deps import Caller, Ready
from seenbefore.service.metrics import Observation
from seenbefore.types import SearchFilters, SearchResult


def search(
    app: Ready, who: Caller, text: str, filters: SearchFilters, options: SearchOptions
) -> SearchResult:
    """Hybrid search pre-filtered by the caller's tiers (whatever ``filters`` says)."""
    filters = SearchFilters(
        tiers=who.principal.tiers,
        include_superseded=filters.include_superseded,
        services=filters.services,
        date_from=filters.date_from,
        date_to=filters.date_to,
        exclude_ids=filters.exclude_ids,
    )
    result = app.kb.search(text, filters, options)
    app.audit.record(
        who.principal,
        "search",
        session=who.session,
        query=text,
        doc_ids=[c.doc_id for c in result.candidates],
        tiers=[c.access_tier for c in result.candidates],
        detail={"mode": result.mode, "k": options.k},
    )
    return result


def _cited(review: Review) -> tuple[list[str], list[str]]:
    """The review's cited ids, and the tiers an audit record of it names: its evidence's and
    its own (so the record is visible exactly to those who may see the review)."""
    items = [c for c in review.evidence.get("candidates") or [] if isinstance(c, Mapping)]
    tiers = [str(c.get("access_tier")) for c in items]
    return [str(c.get("doc_id")) for c in items], [*tiers, *review_tiers(review)]


def review_tiers(review: Review) -> list[str]:
    return sorted({*review.tiers, review.access_tier})


def start_investigation(
    app: Ready,
    who: Caller,
    request: InvestigationRequest,
    *,
    channel: str,
    principal: Principal | None = None,
    severity: str | None = None,
    source_key: str | None = None,
    source: dict[str, Any] | None = None,
) -> tuple[Review, bool]:
    """Start (or, for a known ``source_key``, find) an investigation; (review, newly started).
    ``principal`` runs it (the caller unless a service principal is given)."""
    runner = principal or who.principal
    # Keyed starts (alerts, anomalies) hold the lock so that "was it new?" is exact; the
    # workflow itself is idempotent on the key either way. Plain investigations run in parallel.
    guard = app.write_lock if source_key is not None else contextlib.nullcontext()
    try:
        with guard:
            fresh = source_key is None or app.workflow.records.by_source(source_key) is None
            review = app.workflow.start(
                request,
                principal=runner,
                severity=severity,
                source_key=source_key,
                source=source,
                on_behalf=principal is not None,
            )
    except Exception:
        app.metrics.investigation_failed(channel)
        raise
    doc_ids, tiers = _cited(review)
    detail: dict[str, Any] = {"channel": channel, "round": review.round, "new": fresh}
    if principal is not None:
        detail["delivered_by"] = who.principal.name
    if source_key:
        detail["source_key"] = source_key[:200]
    app.audit.record(
        runner,
        "review.start",
        session=who.session,
        query=request.query,
        doc_ids=doc_ids,
        tiers=tiers,
        draft_id=review.id,
        detail=detail,
    )
    if fresh:
        observe(app, review, channel, runner)
    return review, fresh


def observe(app: Ready, review: Review, channel: str, runner: Principal) -> None:
    """Metrics and the sampled log for a review's current draft."""
    if not review.draft:
        return
    app.metrics.observe_investigation(
        channel, Observation.from_review(review.draft, review.evidence)
    )
    app.sampler.record(
        investigation_id=review.id,
        source=channel,
        principal=runner.name,
        principal_tiers=runner.tiers,
        query=str(review.request.get("query", "")),
        draft=review.draft,
        evidence=review.evidence,
        cited_tiers=[*review.tiers, review.access_tier],
        prompt=review.draft.get("prompt") if isinstance(review.draft.get("prompt"), str) else None,
    )


def approve(app: Ready, who: Caller, review_id: str, edits: DraftEdits | None) -> Review:
    app.workflow.get(review_id, tiers=who.principal.tiers)  # 404 outside the caller's tiers
    with app.write_lock:
        review = app.workflow.approve(review_id, reviewer=who.principal, edits=edits)
        app.kb.index()  # rebuilt once here, not by every concurrent search
    doc_ids, tiers = _cited(review)
    app.audit.record(
        who.principal,
        "review.approve",
        session=who.session,
        doc_ids=[*doc_ids, *([review.postmortem_id] if review.postmortem_id else [])],
        tiers=[*tiers, *([review.access_tier] if review.postmortem_id else [])],
        draft_id=review.id,
        decision="approved",
        detail={
            "edited": edits is not None and any(v is not None for v in edits.model_dump().values()),
            "postmortem_id": review.postmortem_id,
            "round": review.round,
        },
    )
    app.metrics.observe_decision("approved")
    return review


def dismiss(app: Ready, who: Caller, review_id: str, reason: DismissReason, note: str) -> Review:
    before = app.workflow.get(review_id, tiers=who.principal.tiers)
    dismissed_ids, dismissed_tiers = _cited(before)
    with app.write_lock:
        review = app.workflow.dismiss(review_id, reviewer=who.principal, reason=reason, note=note)
    detail: dict[str, Any] = {"round": before.round, "next_status": review.status}
    if note:
        detail["note_hash"] = app.audit.hash_text(note)
    app.audit.record(
        who.principal,
        "review.dismiss",
        session=who.session,
        doc_ids=dismissed_ids,
        tiers=dismissed_tiers,
        draft_id=review.id,
        decision=f"dismissed:{reason.value}",
        detail=detail,
    )
    app.metrics.observe_decision("dismissed", reason.value)
    if review.status == "pending" and review.round > before.round:
        observe(app, review, "reinvestigation", who.principal)
    elif review.status == "closed":
        app.metrics.observe_decision("closed", review.outcome or "")
    return review
