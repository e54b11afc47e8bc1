"""Durable outbox: notifications that could not be delivered, kept in SQLite until they are.

One row per channel and notification that failed. The row holds the whole notification (the
anomaly included), so nothing is lost when a receiver is down.

    pending    waiting for ``Router.retry_pending`` to send it again
    delivered  sent on a later try; kept as a record
    dead       failed in a way retrying cannot fix (a 4xx such as ``invalid_payload`` or an
               invalid PagerDuty event); kept for a person, and ``requeue`` puts it back

Rows are never deleted here, except by :func:`purge_matching` (deleting a postmortem erases every
copy of its text, queued notifications included). Each call opens and closes its own connection,
so one file can be shared by the detector and a separate retry job.
"""

from __future__ import annotations

import datetime as dt
import logging
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, cast

from seenbefore.errors import ConfigError, NotFoundError
from seenbefore.notify.base import DeliveryResult, Notification
from seenbefore.notify.redact import redact

log = logging.getLogger(__name__)

OutboxState = Literal["pending", "delivered", "dead"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS notify_outbox (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    channel     TEXT NOT NULL,
    anomaly_id  TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    action      TEXT NOT NULL,
    message     TEXT NOT NULL,
    state       TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'dead')),
    attempts    INTEGER NOT NULL DEFAULT 0,
    last_status INTEGER,
    last_error  TEXT NOT NULL DEFAULT '',
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS notify_outbox_open ON notify_outbox (state, channel, fingerprint);
"""
_COLUMNS = "id, channel, message, state, attempts, last_status, last_error, created_at, updated_at"


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


@dataclass(frozen=True)
class OutboxEntry:
    """One undelivered (or since delivered) notification for one channel."""

    id: int
    channel: str
    message: Notification
    state: OutboxState
    attempts: int  # delivery attempts so far, over every try
    last_status: int | None
    last_error: str
    created_at: str
    updated_at: str


class Outbox:
    """The ``notify_outbox`` table in the SQLite file at ``path`` (created when missing)."""

    def __init__(self, path: Path | str, *, clock: Callable[[], dt.datetime] = _utcnow) -> None:
        self.path = Path(path)
        self._clock = clock
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._connect() as conn:
                conn.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise ConfigError(
                f"notify outbox {self.path}: cannot open it as SQLite ({exc}); "
                "point the outbox at a writable file, e.g. <home>/outbox.sqlite"
            ) from exc

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        with closing(sqlite3.connect(self.path, timeout=10.0)) as conn, conn:
            yield conn

    def _now(self) -> str:
        return self._clock().isoformat(timespec="seconds")

    def add(self, channel: str, message: Notification, result: DeliveryResult) -> int:
        """Keep ``message`` for ``channel`` after ``result`` failed; returns the entry id."""
        state: OutboxState = "pending" if result.retryable else "dead"
        now = self._now()
        with self._connect() as conn:
            cursor = conn.execute(
                "INSERT INTO notify_outbox (channel, anomaly_id, fingerprint, action, message,"
                " state, attempts, last_status, last_error, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    channel,
                    message.anomaly.id,
                    message.anomaly.fingerprint,
                    message.action,
                    message.to_json(),
                    state,
                    result.attempts,
                    result.status,
                    redact(result.error),
                    now,
                    now,
                ),
            )
            return int(cursor.lastrowid or 0)

    def record(self, entry_id: int, result: DeliveryResult) -> None:
        """Update an entry after another try: delivered, still pending, or dead."""
        state: OutboxState = "delivered" if result.ok else "pending" if result.retryable else "dead"
        with self._connect() as conn:
            updated = conn.execute(
                "UPDATE notify_outbox SET state = ?, attempts = attempts + ?, last_status = ?,"
                " last_error = ?, updated_at = ? WHERE id = ?",
                (
                    state,
                    result.attempts,
                    result.status,
                    redact(result.error),
                    self._now(),
                    entry_id,
                ),
            ).rowcount
        if not updated:
            raise NotFoundError(f"outbox entry {entry_id} does not exist in {self.path}")

    def note(self, entry_id: int, error: str) -> None:
        """Replace an entry's last error without counting an attempt (it was not tried)."""
        with self._connect() as conn:
            conn.execute(
                "UPDATE notify_outbox SET last_error = ?, updated_at = ? WHERE id = ?",
                (redact(error), self._now(), entry_id),
            )

    def requeue(self, entry_id: int) -> None:
        """Put a dead entry back to pending (after fixing what made it fail)."""
        with self._connect() as conn:
            updated = conn.execute(
                "UPDATE notify_outbox SET state = 'pending', updated_at = ?"
                " WHERE id = ? AND state = 'dead'",
                (self._now(), entry_id),
            ).rowcount
        if not updated:
            raise NotFoundError(
                f"outbox entry {entry_id} is not a dead entry in {self.path}; "
                "list dead entries with Outbox.entries('dead')"
            )

    def count_pending(self, channel: str, fingerprint: str) -> int:
        """Pending entries for the same anomaly fingerprint on ``channel``."""
        with self._connect() as conn:
            row = conn.execute(
                "SELECT COUNT(*) FROM notify_outbox"
                " WHERE state = 'pending' AND channel = ? AND fingerprint = ?",
                (channel, fingerprint),
            ).fetchone()
        return int(row[0])

    def entries(
        self, state: OutboxState | None = None, *, limit: int | None = None
    ) -> list[OutboxEntry]:
        """Entries oldest first, optionally only those in ``state``. Undecodable rows go dead."""
        where, params = ("WHERE state = ?", [state]) if state else ("", [])
        sql = f"SELECT {_COLUMNS} FROM notify_outbox {where} ORDER BY id"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        with self._connect() as conn:
            rows = conn.execute(sql, params).fetchall()
        entries = []
        for row in rows:
            try:
                message = Notification.from_json(row[2])
            except (ValueError, KeyError, TypeError) as exc:
                reason = f"stored message could not be decoded ({type(exc).__name__}: {exc})"
                log.error("notify outbox entry %s: %s; marked dead", row[0], redact(reason))
                self._bury(int(row[0]), reason)
                continue
            entries.append(
                OutboxEntry(
                    id=int(row[0]),
                    channel=str(row[1]),
                    message=message,
                    state=cast(OutboxState, row[3]),
                    attempts=int(row[4]),
                    last_status=row[5],
                    last_error=str(row[6]),
                    created_at=str(row[7]),
                    updated_at=str(row[8]),
                )
            )
        return entries

    def pending(self, *, limit: int | None = None) -> list[OutboxEntry]:
        return self.entries("pending", limit=limit)

    def _bury(self, entry_id: int, reason: str) -> None:
        with self._connect() as conn:
            conn.execute(
                "UPDATE notify_outbox SET state = 'dead', last_error = ?, updated_at = ?"
                " WHERE id = ?",
                (redact(reason), self._now(), entry_id),
            )


def purge_matching(path: Path, matches: Callable[[str], bool]) -> int:
    """Delete the rows of the outbox at ``path`` whose message (its JSON text) ``matches``;
    returns how many. A missing file, or a file without the table, holds none."""
    if not path.is_file():
        return 0
    with closing(sqlite3.connect(path, timeout=30.0)) as conn, conn:
        try:
            rows = conn.execute("SELECT id, message FROM notify_outbox").fetchall()
        except sqlite3.OperationalError:  # not an outbox (no such table)
            return 0
        doomed = [int(r[0]) for r in rows if matches(r[1])]
        conn.executemany("DELETE FROM notify_outbox WHERE id = ?", [(i,) for i in doomed])
    return len(doomed)
