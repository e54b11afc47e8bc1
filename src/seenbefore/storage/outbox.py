"""The notification outbox's rows (notify/outbox.py keeps notifications in them): the port, and
what a row holds. Two adapters: a SQLite file beside the embedded store
(storage/sqlite/outbox.py, each call its own connection, as before) and a table in the
PostgreSQL database (storage/postgres/outbox.py), where replicas share the queue.

Claiming is what differs. On PostgreSQL :meth:`OutboxRows.claim` takes the oldest pending rows
with ``FOR UPDATE SKIP LOCKED`` and a lease: a replica that dies mid-send leaves them leased,
and another takes them once the lease has run out (at-least-once: a notification whose send
outlived the lease, or whose sender died after the receiver took it, can go out twice, with the
same dedup key). It takes whole (channel, fingerprint) groups, oldest first, so a resolve is
never sent by one replica while another still holds its trigger. The SQLite file has no
leases: ``claim`` is the pending rows, as the embedded outbox always was.

``seenbefore migrate`` moves the rows with the store (:meth:`OutboxRows.export_rows`, then
:meth:`OutboxRows.import_rows` on the other side): queued and dead notifications are not left
behind in a file the new store never reads.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

OUTBOX_STATES = ("pending", "delivered", "dead")


@dataclass(frozen=True)
class OutboxRow:
    """One notification for one channel, as stored (the message is its JSON text)."""

    id: int
    channel: str
    message: str
    state: str  # one of OUTBOX_STATES
    attempts: int
    last_status: int | None
    last_error: str
    created_at: str
    updated_at: str


@dataclass(frozen=True)
class NewRow:
    """What :meth:`OutboxRows.add` stores."""

    channel: str
    anomaly_id: str
    fingerprint: str
    action: str
    message: str
    state: str
    attempts: int
    last_status: int | None
    last_error: str


@dataclass(frozen=True)
class CopiedRow:
    """A row as ``seenbefore migrate`` moves it: what :meth:`OutboxRows.add` stores, with the
    row's own times."""

    row: NewRow
    created_at: str
    updated_at: str

    @property
    def key(self) -> tuple[str, ...]:
        """What makes two stores' rows the same notification (ids are each store's own)."""
        r = self.row
        return (r.channel, r.anomaly_id, r.fingerprint, r.action, r.message, self.created_at)


# the columns a copy reads and writes, in CopiedRow's order (``id`` is each store's own)
COPY_COLUMNS = (
    "channel, anomaly_id, fingerprint, action, message, state, attempts, last_status,"
    " last_error, created_at, updated_at"
)


class _Columns(Protocol):
    def __getitem__(self, i: int, /) -> Any: ...


INSERT_ROW = f"INSERT INTO notify_outbox ({COPY_COLUMNS}) VALUES ({', '.join('?' * 11)})"
"""One row's insert, values as :func:`copy_values` gives them (``add`` and ``import_rows``)."""


# the columns :class:`OutboxRow` is read from, in its order
COLUMNS = "id, channel, message, state, attempts, last_status, last_error, created_at, updated_at"


def outbox_row(r: _Columns) -> OutboxRow:
    """A row read as :data:`COLUMNS`."""
    return OutboxRow(
        id=int(r[0]),
        channel=str(r[1]),
        message=str(r[2]),
        state=str(r[3]),
        attempts=int(r[4]),
        last_status=None if r[5] is None else int(r[5]),
        last_error=str(r[6]),
        created_at=str(r[7]),
        updated_at=str(r[8]),
    )


def copied_row(r: _Columns) -> CopiedRow:
    """A row read as :data:`COPY_COLUMNS`."""
    return CopiedRow(
        row=NewRow(
            channel=str(r[0]),
            anomaly_id=str(r[1]),
            fingerprint=str(r[2]),
            action=str(r[3]),
            message=str(r[4]),
            state=str(r[5]),
            attempts=int(r[6]),
            last_status=None if r[7] is None else int(r[7]),
            last_error=str(r[8]),
        ),
        created_at=str(r[9]),
        updated_at=str(r[10]),
    )


def copy_values(c: CopiedRow) -> tuple[Any, ...]:
    """``c`` as the values of :data:`COPY_COLUMNS`."""
    r = c.row
    return (
        r.channel,
        r.anomaly_id,
        r.fingerprint,
        r.action,
        r.message,
        r.state,
        r.attempts,
        r.last_status,
        r.last_error,
        c.created_at,
        c.updated_at,
    )


def new_rows(held: Sequence[CopiedRow], rows: Sequence[CopiedRow]) -> list[CopiedRow]:
    """``rows`` less those ``held`` already has (and less repeats among ``rows``), in order."""
    seen = {c.key for c in held}
    out = []
    for c in rows:
        if c.key not in seen:
            seen.add(c.key)
            out.append(c)
    return out


class OutboxRows(Protocol):
    """Where the outbox keeps its rows. Times are ISO 8601 text the caller gives; the lease
    runs on the store's own clock. Database errors leave as StoreError (or sqlite3.Error from
    the file)."""

    @property
    def location(self) -> str:
        """For messages: the file, or the database without its password."""
        ...

    @property
    def local_file(self) -> Path | None:
        """The SQLite file (compacted after a delete), or None in a server database."""
        ...

    def add(self, row: NewRow, now: str) -> int: ...

    def record(
        self, entry_id: int, state: str, attempts: int, status: int | None, error: str, now: str
    ) -> bool:
        """After another try: the state, ``attempts`` more attempts, the last status and
        error; the lease is released. False when there is no such row."""
        ...

    def note(self, entry_id: int, error: str, now: str) -> None:
        """Replace the last error (no attempt counted); the lease is released."""
        ...

    def requeue(self, entry_id: int, now: str) -> bool:
        """A dead row back to pending; False when it is not a dead row."""
        ...

    def bury(self, entry_id: int, reason: str, now: str) -> None: ...

    def count_pending(self, channel: str, fingerprint: str) -> int: ...

    def entries(self, state: str | None, limit: int | None) -> list[OutboxRow]: ...

    def claim(
        self, limit: int | None, lease_s: float, exclude: Sequence[int] = ()
    ) -> list[OutboxRow]:
        """Pending rows for this caller to send, oldest first, leaving out ``exclude`` (rows a
        pass already tried), leased for ``lease_s`` where the store shares them between
        processes; ``limit`` counts rows in a file, whole (channel, fingerprint) groups in a
        database."""
        ...

    def release(self, entry_ids: Sequence[int]) -> None:
        """Give back claimed rows that were not tried."""
        ...

    def purge(self, matches: Callable[[str], bool]) -> int:
        """Delete the rows whose message ``matches``; how many."""
        ...

    def export_rows(self) -> list[CopiedRow]:
        """Every row, oldest first, with its times (``seenbefore migrate``); none from a file
        that does not exist."""
        ...

    def import_rows(self, rows: Sequence[CopiedRow]) -> int:
        """Add ``rows`` in order with their own times and states, in one transaction, leaving
        out those already held (the same :attr:`CopiedRow.key`: running migrate again adds
        nothing, and a row already copied keeps the state it has here); how many were added."""
        ...

    def close(self) -> None: ...
