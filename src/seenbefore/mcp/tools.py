"""What an AI agent may ask the incident memory, as plain functions over the service's state and a
caller: the same code paths, tokens, roles, tiers and audit entries as the HTTP API.

- ``find_similar_incidents``: ranked postmortems with how each matched, a calibrated confidence and
  an explicit ``novel`` verdict ("no precedent") — search, role viewer.
- ``investigate``: the cited, advisory draft, returned and not queued — role viewer.
- ``get_postmortem``: one postmortem the caller may see (a hidden id reads as absent) — viewer.
- ``submit_for_review``: start an investigation whose draft waits in the review queue for a
  person; it never approves — role responder.

Tools run the HTTP routers' own functions (``service.routers``), so a rule added there holds here.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

from seenbefore.errors import InputError
from seenbefore.investigation.investigator import Investigator
from seenbefore.investigation.query import from_text
from seenbefore.service.deps import Caller, Ready
from seenbefore.service.models import InvestigationIn, SearchIn
from seenbefore.service.routers import investigations, postmortems
from seenbefore.service.routers import search as search_route

ADVISORY = (
    "Advisory only: a person decides. 'novel' true means no good precedent was found; "
    "treat the incident as new rather than forcing a match."
)


def _date(value: str | None, name: str) -> dt.date | None:
    if not value:
        return None
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise InputError(f"{name} is {value!r}, expected a date YYYY-MM-DD") from None


def find_similar_incidents(
    app: Ready,
    who: Caller,
    query: str,
    *,
    k: int = 5,
    services: list[str] | None = None,
    since: str | None = None,
    until: str | None = None,
) -> dict[str, Any]:
    who.principal.require("viewer", "reading")
    body = SearchIn(
        query=query,
        k=k,
        services=services or [],
        since=_date(since, "since"),
        until=_date(until, "until"),
    )
    out = search_route.search(body, app, who).model_dump(mode="json")
    out["verdict"] = "no precedent" if out.get("novel") else "precedent found"
    out["advisory"] = ADVISORY
    return out


def investigate(
    app: Ready, who: Caller, text: str, *, services: list[str] | None = None, k: int = 3
) -> dict[str, Any]:
    who.principal.require("viewer", "reading")
    body = InvestigationIn(text=text, services=services or [])  # the API's length rules
    request = from_text(body.text)
    if body.services:
        request = dataclasses.replace(request, services=tuple(body.services))
    investigator = Investigator(app.kb, tiers=who.principal.tiers, k=k)
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


def get_postmortem(app: Ready, who: Caller, doc_id: str) -> dict[str, Any]:
    who.principal.require("viewer", "reading")
    return postmortems.get(doc_id, app, who).model_dump(mode="json")


def submit_for_review(
    app: Ready,
    who: Caller,
    text: str,
    *,
    services: list[str] | None = None,
    severity: str | None = None,
) -> dict[str, Any]:
    who.principal.require("responder", "starting investigations")
    body = InvestigationIn.model_validate(
        {"text": text, "services": services or [], "severity": severity}
    )
    review = investigations.start(body, app, who)
    return {
        "review_id": review.id,
        "status": review.status,
        "draft": review.draft,
        "note": "queued for a person to approve or dismiss; agents cannot approve",
    }
