"""What an AI agent may ask the incident memory, as plain functions over the service's state and a
caller: the same code paths, tokens, roles, tiers and audit entries as the HTTP API.

- ``find_similar_incidents``: ranked postmortems with how each matched, a calibrated confidence and
  the verdict derived from it (found / possible — check / no precedent) — search, role viewer.
- ``investigate``: the cited, advisory draft, returned and not queued — role viewer.
- ``get_postmortem``: one postmortem the caller may see (a hidden id reads as absent) — viewer.
- ``submit_for_review``: start an investigation whose draft waits in the review queue for a
  person; it never approves — role responder.

Tools run the HTTP routers' own functions (``service.routers``), so a rule added there holds here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from seenbefore.investigation.investigator import Investigator
from seenbefore.investigation.query import from_text
from seenbefore.mcp.catalog import FindSimilarIncidents, GetPostmortem, Investigate, SubmitForReview
from seenbefore.service.deps import Caller, Ready
from seenbefore.service.models import InvestigationIn, SearchIn
from seenbefore.service.routers import investigations, postmortems
from seenbefore.service.routers import search as search_route

ADVISORY = (
    "Advisory only: a person decides. 'verdict' comes from 'p_precedent' alone: 'precedent "
    "found', 'possible precedent — check' (read the match before trusting it) or 'no precedent' "
    "(the results are then the nearest postmortems, none of them a match: treat the incident as "
    "new rather than forcing one)."
)


def find_similar_incidents(app: Ready, who: Caller, args: FindSimilarIncidents) -> dict[str, Any]:
    who.principal.require("viewer", "reading")
    body = SearchIn(
        query=args.query, k=args.k, services=args.services, since=args.since, until=args.until
    )
    out = search_route.search(body, app, who).model_dump(mode="json")
    out["advisory"] = ADVISORY
    return out


def investigate(app: Ready, who: Caller, args: Investigate) -> dict[str, Any]:
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
    out: dict[str, Any] = draft.model_dump(mode="json")
    return out


def get_postmortem(app: Ready, who: Caller, args: GetPostmortem) -> dict[str, Any]:
    who.principal.require("viewer", "reading")
    return postmortems.get(args.doc_id, app, who).model_dump(mode="json")


def submit_for_review(app: Ready, who: Caller, args: SubmitForReview) -> dict[str, Any]:
    who.principal.require("responder", "starting investigations")
    body = InvestigationIn(text=args.text, services=args.services, severity=args.severity)
    review = investigations.start(body, app, who)
    return {
        "review_id": review.id,
        "status": review.status,
        "draft": review.draft,
        "note": "queued for a person to approve or dismiss; agents cannot approve",
    }


RUN: dict[str, Callable[[Ready, Caller, Any], dict[str, Any]]] = {
    "find_similar_incidents": find_similar_incidents,
    "investigate": investigate,
    "get_postmortem": get_postmortem,
    "submit_for_review": submit_for_review,
}
