"""Feedback on a search's top result (the MCP tool ``record_feedback``), kept as a review label.

A calibration label says whether the TOP result of a search was a true precedent, with the
retrieval signals that search measured (review/labels.py). A reviewer's decision records one; so
does an agent's or a responder's feedback, through this module: one closed review (outcome
``feedback``, no draft) holds the query and the top result, one ``feedback`` event says who gave
it, and one ``calibration_labels`` row carries the label, all in one transaction. So feedback is
visible where review decisions are (``GET /v1/reviews?status=closed``, readable exactly by
callers who hold the tiers of the postmortems it names), is refitted by calibration/people.py
like any label, and is purged with a postmortem it names (``ReviewRecords.quoting``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from seenbefore.review.labels import record_label
from seenbefore.review.records import ReviewRecords, add_event, now, severity_rank
from seenbefore.review.workflow import new_review_id

FEEDBACK_OUTCOME = "feedback"


def record_feedback(
    records: ReviewRecords,
    *,
    requested_by: str,
    query: str,
    evidence: dict[str, Any],
    label: int,
    reason: str,
    access_tier: str,
    tiers: Sequence[str],
    doc_ids: Sequence[str],
    detail: dict[str, Any],
) -> str:
    """Record ``label`` for ``evidence``'s top result; returns the feedback's review id.
    ``evidence`` is a review's evidence record (``candidates`` first to last, ``signals``,
    ``confidence_model_key``); ``tiers`` those of every postmortem it names."""
    review_id = new_review_id()
    stamp = now()
    request: dict[str, Any] = {
        "query": query,
        "source": "feedback",
        "services": [],
        "signals": [],
        "started_at": None,
        "fingerprint": None,
        "labels": {},
        "display": "",
    }
    with records.store.transaction() as conn:
        conn.execute(
            "INSERT INTO reviews (id, status, outcome, awaiting, round, severity, severity_rank,"
            " access_tier, tiers, requested_by, request, draft, evidence, excluded_doc_ids,"
            " doc_ids, created_at, updated_at)"
            " VALUES (?, 'closed', ?, 0, 1, NULL, ?, ?, ?, ?, ?, '{}', ?, '[]', ?, ?, ?)",
            (
                review_id,
                FEEDBACK_OUTCOME,
                severity_rank(None),
                access_tier,
                json.dumps(sorted(set(tiers))),
                requested_by,
                json.dumps(request),
                json.dumps(evidence),
                json.dumps(sorted(set(doc_ids))),
                stamp,
                stamp,
            ),
        )
        add_event(conn, review_id, requested_by, "feedback", 1, reason=reason, detail=detail)
        record_label(conn, review_id, 1, evidence, label, reason=reason)
    return review_id
