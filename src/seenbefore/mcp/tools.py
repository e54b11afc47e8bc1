"""What an AI agent may ask the incident memory, as plain functions over the service's state and a
caller: the same code paths, tokens, roles, tiers and audit entries as the HTTP API. Each returns
a model of ``mcp/outputs.py`` (its tool's ``outputSchema``).

- ``find_similar_incidents``: ranked postmortems with how each matched, root cause and fix, the
  calibrated p_precedent and the verdict derived from it — search, role viewer.
- ``investigate``: the cited, advisory draft, returned and not queued — role viewer.
- ``get_postmortem``: one postmortem the caller may see (a hidden id reads as absent), all its
  sections or those asked for — viewer.
- ``submit_for_review``: start an investigation whose draft waits in the review queue for a
  person; it never approves — role responder. ``get_review`` reads it back — viewer.
- ``list_postmortems``, ``find_related``, ``record_feedback``: ``mcp/browse.py``.

Tools run the HTTP routers' own functions (``service.routers``), so a rule added there holds here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from seenbefore.investigation.investigator import Investigator
from seenbefore.investigation.query import from_text
from seenbefore.mcp import browse, outputs, shaping
from seenbefore.mcp.catalog import (
    FindSimilarIncidents,
    GetPostmortem,
    GetReview,
    Investigate,
    SubmitForReview,
)
from seenbefore.service.deps import Caller, Ready
from seenbefore.service.models import InvestigationIn, SearchIn
from seenbefore.service.routers import investigations, postmortems
from seenbefore.service.routers import search as search_route

ADVISORY = (
    "Advisory only: a person decides. The verdict comes from p_precedent alone: 'possible "
    "precedent — check' means read the match before trusting it; with 'no precedent' the "
    "results are only the nearest postmortems, none scored as a match: glance at their titles "
    "before treating the incident as new."
)


def find_similar_incidents(
    app: Ready, who: Caller, args: FindSimilarIncidents
) -> outputs.SimilarIncidents:
    who.principal.require("viewer", "reading")
    body = SearchIn(
        query=args.query, k=args.k, services=args.services, since=args.since, until=args.until
    )
    found = search_route.search(body, app, who)
    docs = app.kb.store.documents_meta([r.id for r in found.results])  # all tier-filtered hits
    return shaping.similar(found, args.k, docs, app.settings.public_url, ADVISORY)


def draft_out(draft: dict[str, Any]) -> outputs.Draft:
    withheld = [
        outputs.WithheldText(
            doc_id=w.get("doc_id"),
            section=str(w.get("section", "")),
            kinds=[str(k) for k in w.get("kinds") or []],
            origin="model" if w.get("origin") == "model" else "evidence",
            note=str(w.get("note", "")),
        )
        for w in draft.get("withheld") or []
        if isinstance(w, dict)
    ]
    return outputs.Draft(
        summary=str(draft.get("summary", "")),
        hypothesis=str(draft.get("hypothesis", "")),
        cited_incidents=list(draft.get("cited_incidents") or []),
        suggested_checks=list(draft.get("suggested_checks") or []),
        mitigations=list(draft.get("mitigations") or []),
        p_precedent=float(draft.get("confidence", 0.0)),
        verdict=str(draft.get("verdict") or ""),
        novel=bool(draft.get("novel", False)),
        missing_information=list(draft.get("missing_information") or []),
        staleness_note=draft.get("staleness_note"),
        withheld=withheld,
        drafted_by=str(draft.get("drafted_by", "")),
        advisory=str(draft.get("advisory", "")),
    )


def investigate(app: Ready, who: Caller, args: Investigate) -> outputs.Draft:
    who.principal.require("viewer", "reading")
    request = from_text(args.text)
    if args.services:
        request = dataclasses.replace(request, services=tuple(args.services))
    investigator = Investigator(app.kb, tiers=who.principal.tiers, k=args.k)
    evidence = investigator.investigate(request)
    # the service's one reporter (LLM or offline), closed with the workflow at shutdown
    draft = app.workflow.engine.reporter().draft(evidence)
    app.audit.record(
        who.principal,
        "investigate",
        session=who.session,
        query=request.query,
        doc_ids=[i.doc_id for i in evidence.items],
        tiers=[i.access_tier for i in evidence.items],
        detail={"channel": "mcp", "novel": draft.novel, "confidence": round(draft.confidence, 4)},
    )
    return draft_out(draft.model_dump(mode="json"))


def get_postmortem(app: Ready, who: Caller, args: GetPostmortem) -> outputs.Postmortem:
    who.principal.require("viewer", "reading")
    doc = postmortems.get(args.doc_id, app, who)  # the API's read: tiers, audit
    return shaping.sections_of(doc, args.sections, app.settings.public_url)


def submit_for_review(app: Ready, who: Caller, args: SubmitForReview) -> outputs.Queued:
    who.principal.require("responder", "starting investigations")
    body = InvestigationIn(text=args.text, services=args.services, severity=args.severity)
    review = investigations.start(body, app, who)
    return outputs.Queued(
        review_id=review.id,
        status=review.status,
        link=shaping.link(app.settings.public_url, "investigations", review.id),
        draft=draft_out(review.draft) if review.draft else None,
        note="queued for a person to approve or dismiss; agents cannot approve "
        "(get_review follows it)",
    )


def get_review(app: Ready, who: Caller, args: GetReview) -> outputs.Review:
    who.principal.require("viewer", "reading")
    review = investigations.get(args.review_id, app, who)  # GET /v1/investigations/{id}
    return outputs.Review(
        id=review.id,
        status=review.status,
        outcome=review.outcome,
        round=review.round,
        severity=review.severity,
        requested_by=review.requested_by,
        created_at=review.created_at,
        updated_at=review.updated_at,
        query=str(review.request.get("query", "")),
        link=shaping.link(app.settings.public_url, "investigations", review.id),
        awaiting_decision=review.awaiting_decision,
        draft=draft_out(review.draft) if review.draft else None,
        evidence=[str(c.get("doc_id")) for c in review.evidence.get("candidates") or []],
        postmortem_id=review.postmortem_id,
        history=[
            outputs.ReviewEvent(
                at=e.at, actor=e.actor, action=e.action, round=e.round, reason=e.reason
            )
            for e in review.history
        ],
    )


RUN: dict[str, Callable[[Ready, Caller, Any], outputs.Output]] = {
    "find_similar_incidents": find_similar_incidents,
    "investigate": investigate,
    "get_postmortem": get_postmortem,
    "list_postmortems": browse.list_postmortems,
    "find_related": browse.find_related,
    "submit_for_review": submit_for_review,
    "get_review": get_review,
    "record_feedback": browse.record_feedback,
}
