"""An approved draft as a Markdown postmortem, in the format the ingester reads.

Front matter carries the provenance (``provenance: approved-draft``, the reviewer, the review id,
the source alert and its source key, the precedent the reviewer confirmed); the body has the
sections Summary, Symptoms, Root cause, Resolution and Cited precedents, each only when a person
gave it (review/account.py says when the reviewer must write root cause, resolution and type).
Free text from the reviewer cannot open a section of its own: a line starting with ``#`` is
escaped.
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
        # the query joins the alert's summary, description and label words with ". ": the
        # first of them is what the alert says (the whole repeated the alert and service)
        said = str(request["query"]).split(". ", 1)[0]
        base = f"{labels['alertname']}{' on ' + where if where else ''}: {said}"
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
    """The Markdown text of the postmortem that approving ``review`` writes.

    Only what a person stated goes in: the reviewer's own fields, the alert or query as it came
    in, and (approving a draft that names a precedent) "a recurrence of X" with X's title. The
    draft's summary and hypothesis (verdict prose), its nearest-neighbour lists and the
    precedent's mitigations (what was done in another incident) never do."""
    edits = edits or DraftEdits()
    draft: dict[str, Any] = review.draft
    request = review.request
    candidates = {c["doc_id"]: c for c in review.evidence.get("candidates") or []}
    cited = [d for d in draft.get("cited_incidents") or [] if d in candidates]
    precedent = cited[0] if cited and not draft.get("novel") else None
    top = candidates[precedent] if precedent else {}
    # a title the injection scanner flagged is withheld from the draft: not copied here either
    flagged_titles = {
        w.get("doc_id")
        for w in draft.get("withheld") or []
        if isinstance(w, dict) and w.get("section") == "title"
    }
    top_title = "title withheld" if precedent in flagged_titles else str(top.get("title", ""))
    front: dict[str, Any] = {
        "id": postmortem_id(review.id),
        "title": " ".join((edits.title or _title(review)).split()),
        "date": _incident_date(review),
        "status": "current",
        "access_tier": access_tier,
        "severity": review.severity or "",
        "services": list(request.get("services") or []),
        "signals": list(request.get("signals") or []),
        # the reviewer's, else the precedent's: its author's type or, for an untyped one, the
        # mode confidently inferred for it (approving names this a recurrence of it)
        "type": edits.type or top.get("type") or top.get("inferred_slug", ""),
        "provenance": PROVENANCE,
        "reviewer": reviewer,
        "review_id": review.id,
        "source_alert": request.get("fingerprint") or request.get("source"),
        "source_key": review.source_key,
        "cited": [precedent] if precedent else [],
        "approved_at": approved_at,
    }
    symptoms = [request.get("display") or request["query"]]
    if request.get("signals"):
        symptoms.append("Signals observed: " + ", ".join(request["signals"]) + ".")
    if request.get("services"):
        symptoms.append("Services: " + ", ".join(request["services"]) + ".")
    recurrence = (
        f"A recurrence of {precedent} ({top_title}), as the reviewer judged at approval; "
        "its root cause is recorded there."
        if precedent
        else ""
    )
    sections = [
        ("Summary", edits.summary or ""),
        ("Symptoms", "\n\n".join(symptoms)),
        ("Root cause", edits.root_cause or edits.hypothesis or recurrence),
        ("Resolution", edits.resolution or ""),
        ("Cited precedents", f"- {precedent}: {top_title}" if precedent else ""),
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
