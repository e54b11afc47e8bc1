"""What a reviewer needs to tell one queued draft from another: which alert, which service, where
(cloud/region), how severe, and how long ago it came in — read from the review's request."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import Any

from seenbefore.review.models import Review


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


def row(review: Review, now: dt.datetime) -> dict[str, Any]:
    request = review.request or {}
    labels = {str(k): str(v) for k, v in (request.get("labels") or {}).items()}
    services = [str(s) for s in request.get("services") or []]
    signals = [str(s) for s in request.get("signals") or []]
    if labels.get("alertname"):
        alert = labels["alertname"]
    elif request.get("source") == "anomaly":
        alert = "anomaly" + (f": {signals[0]}" if signals else "")
    else:
        alert = str(request.get("source") or "text")
    service = labels.get("service") or labels.get("job") or ", ".join(services) or "-"
    where = "/".join(v for v in (labels.get("cloud"), labels.get("region")) if v) or "-"
    return {
        "review": review,
        "alert": alert,
        "service": service,
        "where": where,
        "severity": review.severity or labels.get("severity") or "unrated",
        "age": age(review.created_at, now),
    }


def newest_first(reviews: Iterable[Review], now: dt.datetime) -> list[dict[str, Any]]:
    return [row(r, now) for r in sorted(reviews, key=lambda r: r.created_at, reverse=True)]
