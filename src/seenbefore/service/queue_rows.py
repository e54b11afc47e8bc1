"""What a reviewer needs to tell one queued draft from another at a glance: the alert's name (or
the first line of the query typed), the service and where it runs, the verdict with its
p_precedent and the precedent it names, one status word, and how long ago it came in — read from
the review's request and current draft. Similarity on the review page is relative to the top
result (as MCP gives it), never the raw fused score."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from typing import Any

from seenbefore.core.confidence import verdict_of
from seenbefore.review.models import Review

FIRST_LINE_CHARS = 80
WHERE_LABELS = ("cloud", "region", "zone", "cluster", "namespace", "env")
CLOSED_WORDS = {"alert_resolved": "resolved", "approved": "approved"}


def age(created_at: str, now: dt.datetime) -> str:
    """``12 min ago``, ``3 h ago``, ``2 days ago`` (``just now`` under a minute)."""
    try:
        then = dt.datetime.fromisoformat(created_at.replace("Z", "+00:00"))
    except ValueError:
        return created_at
    if then.tzinfo is None:
        then = then.replace(tzinfo=dt.UTC)
    seconds = max(0.0, (now - then).total_seconds())
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86400:
        return f"{int(seconds // 3600)} h ago"
    days = int(seconds // 86400)
    return f"{days} day{'s' if days != 1 else ''} ago"


def first_line(text: str, limit: int = FIRST_LINE_CHARS) -> str:
    """The first non-blank line of ``text``, cut at a word before ``limit`` characters."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    line = " ".join(line.split())
    if len(line) <= limit:
        return line
    cut = line[: limit - 1].rsplit(" ", 1)[0] or line[: limit - 1]
    return cut + "…"


def status_word(review: Review) -> str:
    """One word: drafting, pending, approved, resolved (its alert resolved) or closed."""
    if review.status == "pending":
        return "pending" if review.awaiting_decision else "drafting"
    if review.status == "approved":
        return "approved"
    return CLOSED_WORDS.get(review.outcome or "", "closed")


def similarity(score: float, top: float) -> float:
    """A candidate's fused score over the top one's, 0-1 (a relative closeness, not a
    probability; p_precedent is the probability)."""
    return round(min(1.0, score / top), 2) if top > 0 else 0.0


def precedent(draft: Mapping[str, Any], evidence: Mapping[str, Any]) -> tuple[str, str]:
    """The precedent a draft names and its title ("", "" for a "no precedent" draft: its
    nearest postmortems are not matches)."""
    if not draft or draft.get("novel"):
        return "", ""
    cited = draft.get("cited_incidents") or []
    if not cited:
        return "", ""
    titles = {c.get("doc_id"): c.get("title", "") for c in evidence.get("candidates") or []}
    withheld = any(
        isinstance(w, Mapping) and w.get("doc_id") == cited[0] and w.get("section") == "title"
        for w in draft.get("withheld") or []
    )
    return str(cited[0]), "title withheld" if withheld else str(titles.get(cited[0], ""))


def row(review: Review, now: dt.datetime) -> dict[str, Any]:
    request = review.request or {}
    labels = {str(k): str(v) for k, v in (request.get("labels") or {}).items()}
    services = [str(s) for s in request.get("services") or []]
    signals = [str(s) for s in request.get("signals") or []]
    query = first_line(str(request.get("display") or request.get("query") or ""))
    if labels.get("alertname"):
        alert = labels["alertname"]
    elif request.get("source") == "anomaly":
        alert = "anomaly" + (f": {signals[0]}" if signals else "")
    else:
        alert = query or "(no text)"
    draft = review.draft or {}
    cited, title = precedent(draft, review.evidence or {})
    return {
        "review": review,
        "alert": alert,
        "query": "" if alert == query else query,
        "service": labels.get("service") or labels.get("job") or ", ".join(services),
        "where": "/".join(labels[k] for k in WHERE_LABELS if labels.get(k)),
        "severity": review.severity or labels.get("severity") or "unrated",
        "age": age(review.created_at, now),
        "verdict": verdict_of(draft) if draft else "",
        "p": f"{float(draft.get('confidence') or 0):.2f}" if draft else "",
        "precedent": cited,
        "precedent_title": title,
        "status": status_word(review),
    }


def newest_first(reviews: Iterable[Review], now: dt.datetime) -> list[dict[str, Any]]:
    return [row(r, now) for r in sorted(reviews, key=lambda r: r.created_at, reverse=True)]
