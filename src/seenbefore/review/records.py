"""The ``reviews`` rows in the store (kb.sqlite's migration 4, or PostgreSQL's migration 2): what
the service lists and what decides.

Every change of a review's status is one conditional UPDATE inside one write transaction
(``... WHERE status = 'pending' AND awaiting = 1 AND round = ?``), so two processes racing to
decide the same review cannot both win: the loser changes no row and gets a ConflictError. On
SQLite ``BEGIN IMMEDIATE`` admits one writer at a time; on PostgreSQL (READ COMMITTED) the
second UPDATE waits for the first transaction's row lock, then re-checks its WHERE on the
committed row and matches nothing, so any number of replicas decide a review exactly once. The
LangGraph checkpoint holds the working data; these rows hold what people see.

Tiers are filtered here, by the service (no row-level security on reviews): a review is visible
when its postmortem tier and every tier in its ``tiers`` are among the caller's. ``tiers`` holds
its evidence's tiers and, for an investigation run as another principal (an alert, run with the
service tiers), that principal's tiers too: what such a search found, or did not find, is
knowledge of all of them.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from typing import Any

from seenbefore.errors import ConflictError, NotFoundError
from seenbefore.review.models import Review, ReviewEvent
from seenbefore.security.visibility import review_visible_sql as visible_sql
from seenbefore.storage.sqlport import ServiceStore, SqlConn, SqlRow, marks

__all__ = ["ReviewRecords", "add_event", "conflict", "now", "severity_rank", "visible_sql"]

SEVERITY_RANKS: dict[str, int] = {
    "sev1": 1,
    "critical": 1,
    "page": 1,
    "sev2": 2,
    "high": 2,
    "error": 2,
    "sev3": 3,
    "warning": 3,
    "medium": 3,
    "sev4": 4,
    "low": 4,
    "info": 4,
}
UNKNOWN_SEVERITY_RANK = 9


def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")


def severity_rank(severity: str | None) -> int:
    return SEVERITY_RANKS.get((severity or "").strip().lower(), UNKNOWN_SEVERITY_RANK)


def _not_found(review_id: str) -> NotFoundError:
    return NotFoundError(
        f"no review with id '{review_id}' (or not visible to your tiers); "
        "`seenbefore review list` shows the reviews you can see"
    )


class ReviewRecords:
    """Reads and conditional writes of review rows, events and labels."""

    def __init__(self, store: ServiceStore) -> None:
        self.store = store

    # -- reading -----------------------------------------------------------------------------
    def row(self, review_id: str) -> SqlRow | None:
        rows = self.store.query("SELECT * FROM reviews WHERE id = ?", (review_id,))
        return rows[0] if rows else None

    def by_source(self, source_key: str) -> SqlRow | None:
        rows = self.store.query("SELECT * FROM reviews WHERE source_key = ?", (source_key,))
        return rows[0] if rows else None

    def get(self, review_id: str, tiers: Sequence[str] | None) -> Review:
        """The review; NotFoundError when absent or outside ``tiers`` (None: no tier check)."""
        if tiers is None:
            rows = self.store.query("SELECT * FROM reviews WHERE id = ?", (review_id,))
        else:
            where, params = visible_sql(self.store, tiers)
            rows = self.store.query(
                f"SELECT * FROM reviews r WHERE r.id = ? AND {where}", (review_id, *params)
            )
        if not rows:
            raise _not_found(review_id)
        return self._load(rows)[0]

    def select(self, tiers: Sequence[str], status: str | None, limit: int | None) -> list[Review]:
        where, params = visible_sql(self.store, tiers)
        clauses = [where]
        if status is not None:
            clauses.append("r.status = ?")
            params.append(status)
        sql = (
            f"SELECT * FROM reviews r WHERE {' AND '.join(clauses)}"
            " ORDER BY r.severity_rank, r.created_at, r.id"
        )
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return self._load(self.store.query(sql, params))

    def last_event(self, review_id: str, actions: Sequence[str]) -> ReviewEvent | None:
        rows = self.store.query(
            f"SELECT * FROM review_events WHERE review_id = ? AND action IN ({marks(actions)})"
            " ORDER BY id DESC LIMIT 1",
            (review_id, *actions),
        )
        return _event(rows[0]) if rows else None

    def unfinished(self) -> list[SqlRow]:
        """Rows whose decision (or first draft) was recorded but whose workflow did not finish."""
        return self.store.query(
            "SELECT * FROM reviews WHERE awaiting = 0 AND (status = 'pending'"
            " OR (status = 'approved' AND postmortem_id IS NULL)) ORDER BY created_at"
        )

    def _load(self, rows: Sequence[SqlRow]) -> list[Review]:
        ids = [r["id"] for r in rows]
        events: dict[str, list[ReviewEvent]] = {i: [] for i in ids}
        if ids:
            for e in self.store.query(
                f"SELECT * FROM review_events WHERE review_id IN ({marks(ids)}) ORDER BY id", ids
            ):
                events[e["review_id"]].append(_event(e))
        return [
            Review(
                id=r["id"],
                status=r["status"],
                outcome=r["outcome"],
                round=r["round"],
                severity=r["severity"],
                access_tier=r["access_tier"],
                tiers=json.loads(r["tiers"]),
                source_key=r["source_key"],
                source=json.loads(r["source"]) if r["source"] else None,
                requested_by=r["requested_by"],
                created_at=r["created_at"],
                updated_at=r["updated_at"],
                request=json.loads(r["request"]),
                draft=json.loads(r["draft"]),
                evidence=json.loads(r["evidence"]),
                excluded_doc_ids=json.loads(r["excluded_doc_ids"]),
                postmortem_id=r["postmortem_id"],
                history=events[r["id"]],
                awaiting_decision=bool(r["awaiting"]),
            )
            for r in rows
        ]

    # -- writing -----------------------------------------------------------------------------
    def insert(
        self,
        review_id: str,
        *,
        request: dict[str, Any],
        requested_by: str,
        severity: str | None,
        source_key: str | None,
        source: dict[str, Any] | None,
        access_tier: str,
        detail: dict[str, Any],
        tiers: Sequence[str] = (),
    ) -> bool:
        """A new pending review (no draft yet); False when ``source_key`` already has one.
        ``tiers``: what a reader must hold from the start (the running principal's, when it is
        not the requester)."""
        stamp = now()
        with self.store.transaction() as conn:
            cur = conn.execute(
                "INSERT INTO reviews (id, status, round, severity, severity_rank, access_tier,"
                " tiers, source_key, source, requested_by, request, created_at, updated_at)"
                " VALUES (?, 'pending', 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (source_key) DO NOTHING",
                (
                    review_id,
                    severity,
                    severity_rank(severity),
                    access_tier,
                    json.dumps(sorted(set(tiers))),
                    source_key,
                    json.dumps(source) if source is not None else None,
                    requested_by,
                    json.dumps(request),
                    stamp,
                    stamp,
                ),
            )
            if cur.rowcount != 1:  # this source key has a review (another replica's, maybe)
                return False
            add_event(conn, review_id, requested_by, "started", 1, detail=detail)
        return True

    def publish(
        self,
        review_id: str,
        *,
        round_: int,
        draft: dict[str, Any],
        evidence: dict[str, Any],
        access_tier: str,
        tiers: Sequence[str],
        doc_ids: Sequence[str],
        actor: str,
    ) -> bool:
        """Show a round's draft to reviewers; False when the review was closed meanwhile."""
        with self.store.transaction() as conn:
            row = conn.execute(
                "SELECT tiers, doc_ids FROM reviews WHERE id = ? AND status = 'pending'",
                (review_id,),
            ).fetchone()
            if row is None:
                return False
            all_tiers = sorted(set(json.loads(row["tiers"])) | set(tiers))
            all_docs = sorted(set(json.loads(row["doc_ids"])) | set(doc_ids))
            conn.execute(
                "UPDATE reviews SET awaiting = 1, round = ?, draft = ?, evidence = ?,"
                " access_tier = ?, tiers = ?, doc_ids = ?, updated_at = ?"
                " WHERE id = ? AND status = 'pending'",
                (
                    round_,
                    json.dumps(draft),
                    json.dumps(evidence),
                    access_tier,
                    json.dumps(all_tiers),
                    json.dumps(all_docs),
                    now(),
                    review_id,
                ),
            )
            add_event(
                conn,
                review_id,
                actor,
                "drafted",
                round_,
                detail={
                    "cited": list(draft.get("cited_incidents", [])),
                    "confidence": draft.get("confidence"),
                    "novel": draft.get("novel"),
                },
            )
        return True

    def claim(
        self,
        conn: SqlConn,
        review_id: str,
        round_: int,
        *,
        status: str,
        outcome: str | None,
        excluded: Sequence[str] | None = None,
    ) -> None:
        """Inside a transaction: take the decision on the draft of ``round_``, exactly once."""
        sets = "status = ?, outcome = ?, awaiting = 0, updated_at = ?"
        params: list[Any] = [status, outcome, now()]
        if excluded is not None:
            sets += ", excluded_doc_ids = ?"
            params.append(json.dumps(sorted(set(excluded))))
        cur = conn.execute(
            f"UPDATE reviews SET {sets} WHERE id = ? AND status = 'pending' AND awaiting = 1"
            " AND round = ?",
            (*params, review_id, round_),
        )
        if cur.rowcount != 1:
            raise conflict(conn, review_id, round_)

    def conflict(self, review_id: str, round_: int) -> ConflictError:
        rows = self.store.query(_STATE_SQL, (review_id,))
        return _conflict(rows[0] if rows else None, review_id, round_)

    def set_postmortem(self, review_id: str, postmortem_id: str) -> None:
        with self.store.transaction() as conn:
            row = conn.execute(
                f"SELECT doc_ids FROM reviews WHERE id = ?{self.store.sql.for_update}",
                (review_id,),
            ).fetchone()
            docs = sorted({*json.loads(row["doc_ids"] if row else "[]"), postmortem_id})
            conn.execute(
                "UPDATE reviews SET postmortem_id = ?, doc_ids = ?, updated_at = ? WHERE id = ?",
                (postmortem_id, json.dumps(docs), now(), review_id),
            )
            add_event(
                conn,
                review_id,
                "workflow",
                "postmortem_written",
                _round(conn, review_id),
                detail={"postmortem_id": postmortem_id},
            )

    def delete(self, review_id: str) -> None:
        with self.store.transaction() as conn:
            conn.execute("DELETE FROM reviews WHERE id = ?", (review_id,))

    def quoting(self, doc_id: str) -> list[str]:
        """Reviews that quote, excluded or produced ``doc_id``."""
        holds = self.store.sql.json_holds
        sql = (
            "SELECT id FROM reviews r WHERE r.postmortem_id = ?"
            f" OR {holds('r.doc_ids')} OR {holds('r.excluded_doc_ids')}"
        )
        rows = self.store.query(sql, (doc_id, doc_id, doc_id))
        return [r["id"] for r in rows]

    def purge(self, review_ids: Sequence[str], doc_id: str) -> None:
        with self.store.transaction() as conn:
            conn.execute("DELETE FROM calibration_labels WHERE doc_id = ?", (doc_id,))
            conn.executemany("DELETE FROM reviews WHERE id = ?", [(i,) for i in review_ids])


_STATE_SQL = "SELECT status, outcome, round FROM reviews WHERE id = ?"


def conflict(conn: SqlConn, review_id: str, round_: int) -> ConflictError:
    """Why a decision on round ``round_`` of ``review_id`` cannot be taken now."""
    return _conflict(conn.execute(_STATE_SQL, (review_id,)).fetchone(), review_id, round_)


def _conflict(row: SqlRow | None, review_id: str, round_: int) -> ConflictError:
    if row is None:
        return ConflictError(f"review {review_id} no longer exists; reload the queue")
    if row["status"] != "pending":
        state = f"already {row['status']} ({row['outcome']})"
    elif row["round"] != round_:
        state = f"now in round {row['round']}, not the round {round_} you reviewed"
    else:
        state = "being re-investigated"
    return ConflictError(
        f"review {review_id} is {state}; a review is decided once per draft: reload it"
    )


def add_event(
    conn: SqlConn,
    review_id: str,
    actor: str,
    action: str,
    round_: int,
    *,
    reason: str | None = None,
    note: str | None = None,
    detail: dict[str, Any] | None = None,
) -> None:
    conn.execute(
        "INSERT INTO review_events (review_id, at, actor, action, round, reason, note, detail)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (review_id, now(), actor, action, round_, reason, note, json.dumps(detail or {})),
    )


def _round(conn: SqlConn, review_id: str) -> int:
    row = conn.execute("SELECT round FROM reviews WHERE id = ?", (review_id,)).fetchone()
    return int(row[0]) if row else 0


def _event(row: SqlRow) -> ReviewEvent:
    return ReviewEvent(
        id=row["id"],
        at=row["at"],
        actor=row["actor"],
        action=row["action"],
        round=row["round"],
        reason=row["reason"],
        note=row["note"],
        detail=json.loads(row["detail"]),
    )
