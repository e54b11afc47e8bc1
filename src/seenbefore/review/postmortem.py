"""An approved draft as a Markdown postmortem, in the format the ingester reads.

Front matter carries the provenance (``provenance: approved-draft``, the reviewer, the review id,
the source alert and its source key, the cited precedents); the body has the sections Summary,
Symptoms, Root cause, Resolution and Cited precedents. Free text from the draft or the reviewer
cannot open a section of its own: a line starting with ``#`` is escaped.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import yaml

from seenbefore.errors import InputError, PostmortemInvalid
from seenbefore.knowledge.validate import postmortem_from_markdown
from seenbefore.review.models import DraftEdits, Review
from seenbefore.types import Postmortem

PROVENANCE = "approved-draft"
TITLE_CHARS = 100


def postmortem_id(review_id: str) -> str:
    return f"PM-{review_id}"


def _escape(text: str) -> str:
    return "\n".join(
        ("\\" + line) if line.lstrip().startswith("#") else line
        for line in text.strip().splitlines()
    )


def _title(review: Review) -> str:
    request = review.request
    labels = request.get("labels") or {}
    if labels.get("alertname"):
        where = labels.get("service") or labels.get("job") or ""
        base = f"{labels['alertname']}{' on ' + where if where else ''}: {request['query']}"
    else:
        base = request.get("display") or request["query"]
    base = " ".join(str(base).split())
    if len(base) <= TITLE_CHARS:
        return base
    return base[: TITLE_CHARS - 1].rsplit(" ", 1)[0] + "…"


def _incident_date(review: Review) -> str:
    started = review.request.get("started_at")
    if started:
        return dt.datetime.fromisoformat(started).date().isoformat()
    return review.created_at[:10]


def render(
    review: Review,
    *,
    reviewer: str,
    edits: DraftEdits | None,
    access_tier: str,
    approved_at: str,
) -> str:
    """The Markdown text of the postmortem that approving ``review`` writes."""
    edits = edits or DraftEdits()
    draft: dict[str, Any] = review.draft
    request = review.request
    candidates = {c["doc_id"]: c for c in review.evidence.get("candidates") or []}
    cited = [d for d in draft.get("cited_incidents") or [] if d in candidates]
    top = candidates[cited[0]] if cited else None
    front: dict[str, Any] = {
        "id": postmortem_id(review.id),
        "title": " ".join((edits.title or _title(review)).split()),
        "date": _incident_date(review),
        "status": "current",
        "access_tier": access_tier,
        "severity": review.severity or "",
        "services": list(request.get("services") or []),
        "signals": list(request.get("signals") or []),
        "type": (top or {}).get("type", "") if not draft.get("novel") else "",
        "provenance": PROVENANCE,
        "reviewer": reviewer,
        "review_id": review.id,
        "source_alert": request.get("fingerprint") or request.get("source"),
        "source_key": review.source_key,
        "cited": cited,
        "approved_at": approved_at,
    }
    symptoms = [request.get("display") or request["query"]]
    if request.get("signals"):
        symptoms.append("Signals observed: " + ", ".join(request["signals"]) + ".")
    if request.get("services"):
        symptoms.append("Services: " + ", ".join(request["services"]) + ".")
    mitigations = [f"- {m}" for m in draft.get("mitigations") or []]
    resolution = edits.resolution or "\n".join(mitigations) or "Not recorded at approval."
    # a title the injection scanner flagged is withheld from the draft: not copied here either
    flagged_titles = {
        w.get("doc_id")
        for w in draft.get("withheld") or []
        if isinstance(w, dict) and w.get("section") == "title"
    }
    precedents = [
        f"- {d}: {'(title withheld)' if d in flagged_titles else candidates[d]['title']} "
        f"(matched by {candidates[d]['matched_by']}, tier {candidates[d]['access_tier']})"
        for d in cited
    ]
    sections = [
        ("Summary", edits.summary or draft.get("summary") or ""),
        ("Symptoms", "\n\n".join(symptoms)),
        ("Root cause", edits.root_cause or edits.hypothesis or draft.get("hypothesis") or ""),
        ("Resolution", resolution),
        ("Cited precedents", "\n".join(precedents) or "None: approved as a new kind of incident."),
    ]
    body = "\n\n".join(f"## {heading}\n\n{_escape(text)}" for heading, text in sections if text)
    head = yaml.safe_dump(front, sort_keys=False, allow_unicode=True, width=1000)
    return f"---\n{head}---\n\n{body}\n"


def validate(text: str, source: str) -> Postmortem:
    """The postmortem ``text`` becomes; InputError (what, rule, fix) when it would not ingest."""
    try:
        return postmortem_from_markdown(source, text)
    except PostmortemInvalid as exc:
        raise InputError(
            f"the approved draft would not be a valid postmortem: {exc.reason}; "
            "edit the draft (title, summary, root cause) and approve again"
        ) from exc
