"""Durable outbox: notifications that could not be delivered, kept until they are.

One row per channel and notification that failed. The row holds the whole notification (the
anomaly included), so nothing is lost when a receiver is down.

    pending    waiting for ``Router.retry_pending`` to send it again
    delivered  sent on a later try; kept as a record
    dead       failed in a way retrying cannot fix (a 4xx such as ``invalid_payload`` or an
               invalid PagerDuty event); kept for a person, and ``requeue`` puts it back

Where the rows live is the store's business (storage/outbox.py): a SQLite file beside the
embedded store (``Outbox(path)``), or the PostgreSQL database, where replicas share one queue
and claim rows with a lease, so what a replica that died had claimed is sent by another
(storage/factory.py picks). Rows are never deleted here, except by ``purge`` (deleting a
postmortem erases every copy of its text, queued notifications included).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, cast

from seenbefore.errors import ConfigError, NotFoundError
from seenbefore.notify.base import DeliveryResult, Notification
from seenbefore.notify.redact import redact
from seenbefore.storage.factory import outbox_file
from seenbefore.storage.outbox import NewRow, OutboxRow, OutboxRows

log = logging.getLogger(__name__)

OutboxState = Literal["pending", "delivered", "dead"]
# How long a claim keeps other replicas off the rows it took: longer than a retry pass takes
# (a pass that outlives it may see a row sent twice), short enough that a replica that died
# holding rows delays them by no more than this.
DEFAULT_LEASE_S = 300.0


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
    """The outbox over its rows: the SQLite file at ``path`` (created when missing), or
    ``rows`` from storage/factory.py (the database's, on PostgreSQL)."""

    def __init__(
        self,
        path: Path | str | None = None,
        *,
        rows: OutboxRows | None = None,
        clock: Callable[[], dt.datetime] = _utcnow,
        lease_s: float = DEFAULT_LEASE_S,
    ) -> None:
        if (path is None) == (rows is None):
            given = "both a path and rows" if rows is not None else "neither a path nor rows"
            raise ConfigError(
                f"notify outbox: given {given}; give one (a SQLite file, or the rows"
                " storage.factory.open_outbox_rows opens)"
            )
        self.rows: OutboxRows = rows if rows is not None else outbox_file(Path(str(path)))
        self.location = self.rows.location
        self._clock = clock
        self.lease_s = lease_s

    @property
    def local_file(self) -> Path | None:
        return self.rows.local_file

    def _now(self) -> str:
        return self._clock().isoformat(timespec="seconds")

    def add(self, channel: str, message: Notification, result: DeliveryResult) -> int:
        """Keep ``message`` for ``channel`` after ``result`` failed; returns the entry id."""
        state: OutboxState = "pending" if result.retryable else "dead"
        row = NewRow(
            channel=channel,
            anomaly_id=message.anomaly.id,
            fingerprint=message.anomaly.fingerprint,
            action=message.action,
            message=message.to_json(),
            state=state,
            attempts=result.attempts,
            last_status=result.status,
            last_error=redact(result.error),
        )
        return self.rows.add(row, self._now())

    def record(self, entry_id: int, result: DeliveryResult) -> None:
        """Update an entry after another try: delivered, still pending, or dead."""
        state: OutboxState = "delivered" if result.ok else "pending" if result.retryable else "dead"
        updated = self.rows.record(
            entry_id, state, result.attempts, result.status, redact(result.error), self._now()
        )
        if not updated:
            raise NotFoundError(f"outbox entry {entry_id} does not exist in {self.location}")

    def note(self, entry_id: int, error: str) -> None:
        """Replace an entry's last error without counting an attempt (it was not tried)."""
        self.rows.note(entry_id, redact(error), self._now())

    def requeue(self, entry_id: int) -> None:
        """Put a dead entry back to pending (after fixing what made it fail)."""
        if not self.rows.requeue(entry_id, self._now()):
            raise NotFoundError(
                f"outbox entry {entry_id} is not a dead entry in {self.location}; "
                "list dead entries with Outbox.entries('dead')"
            )

    def count_pending(self, channel: str, fingerprint: str) -> int:
        """Pending entries for the same anomaly fingerprint on ``channel``."""
        return self.rows.count_pending(channel, fingerprint)

    def entries(
        self, state: OutboxState | None = None, *, limit: int | None = None
    ) -> list[OutboxEntry]:
        """Entries oldest first, optionally only those in ``state``. Undecodable rows go dead."""
        return self._decoded(self.rows.entries(state, limit))

    def pending(self, *, limit: int | None = None) -> list[OutboxEntry]:
        return self.entries("pending", limit=limit)

    def claim(self, *, limit: int | None = None, exclude: Sequence[int] = ()) -> list[OutboxEntry]:
        """Pending entries for this process to send now, oldest first (leased from other
        replicas where the rows are shared; storage/outbox.py)."""
        return self._decoded(self.rows.claim(limit, self.lease_s, exclude))

    def release(self, entry_ids: Sequence[int]) -> None:
        """Give back claimed entries that were not tried."""
        self.rows.release(entry_ids)

    def purge(self, matches: Callable[[str], bool]) -> int:
        """Delete the entries whose message (its JSON text) ``matches``; how many."""
        return self.rows.purge(matches)

    def close(self) -> None:
        self.rows.close()

    def _decoded(self, rows: Sequence[OutboxRow]) -> list[OutboxEntry]:
        entries = []
        for row in rows:
            try:
                message = Notification.from_json(row.message)
            except (ValueError, KeyError, TypeError) as exc:
                reason = f"stored message could not be decoded ({type(exc).__name__}: {exc})"
                log.error("notify outbox entry %s: %s; marked dead", row.id, redact(reason))
                self.rows.bury(row.id, redact(reason), self._now())
                continue
            entries.append(
                OutboxEntry(
                    id=row.id,
                    channel=row.channel,
                    message=message,
                    state=cast(OutboxState, row.state),
                    attempts=row.attempts,
                    last_status=row.last_status,
                    last_error=row.last_error,
                    created_at=row.created_at,
                    updated_at=row.updated_at,
                )
            )
        return entries


def purge_matching(path: Path, matches: Callable[[str], bool]) -> int:
    """Delete the rows of the outbox file at ``path`` whose message (its JSON text) ``matches``;
    returns how many. A missing file, or a file without the table, holds none."""
    return outbox_file(path, create=False).purge(matches)
