"""Calibration labels from review decisions: one label for the top result of the round a reviewer
decided on, with the retrieval signals that round measured, written inside the decision's
transaction (the principal is the decision's event actor):

- approval of a draft that cites the top result: label 1;
- approval of a "no precedent" draft (or of one that cites other results only): label 0;
- dismissal: label 0, with the structured reason and the reviewer's note.

What the labels are used for, and how much any one principal may move the model, is the
calibration subsystem's (calibration/people.py).
"""

from __future__ import annotations

import json
from typing import Any

from seenbefore.review.records import now
from seenbefore.storage.sqlport import SqlConn


def top_label(evidence: dict[str, Any], draft: dict[str, Any], approved: bool) -> int | None:
    """The label of a decision about ``evidence``'s top result; None when there was none."""
    candidates = evidence.get("candidates") or []
    if not candidates:
        return None
    if not approved:
        return 0
    cited = draft.get("cited_incidents") or []
    return int(not draft.get("novel", False) and candidates[0]["doc_id"] in cited)


def record_label(
    conn: SqlConn,
    review_id: str,
    round_: int,
    evidence: dict[str, Any],
    label: int,
    *,
    reason: str,
    note: str = "",
) -> None:
    """Inside the decision's transaction: one label for the round's top result."""
    top = evidence["candidates"][0]
    conn.execute(
        "INSERT INTO calibration_labels (review_id, round, doc_id, model_key, signals, label,"
        " reason, note, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            review_id,
            round_,
            top["doc_id"],
            str(evidence.get("confidence_model_key") or "sparse"),
            json.dumps(evidence.get("signals") or {}),
            label,
            reason,
            note,
            now(),
        ),
    )
