"""The outbox rows in the PostgreSQL database (migration 6), shared by every replica: claims
with ``FOR UPDATE SKIP LOCKED`` and a lease on the database's clock (storage/outbox.py says
what that promises). The table has no tiers: no binding is needed to read it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from seenbefore.errors import StoreError
from seenbefore.storage.outbox import (
    COLUMNS,
    COPY_COLUMNS,
    INSERT_ROW,
    CopiedRow,
    NewRow,
    OutboxRow,
    copied_row,
    copy_values,
    new_rows,
    outbox_row,
)
from seenbefore.storage.postgres import tx as pg_tx
from seenbefore.storage.postgres.pool import Conn, Database

# The heads of (channel, fingerprint) groups not leased to anyone, oldest first, locked (others
# skip them), then every pending row of those groups leased to the caller, in one statement.
_CLAIM = f"""
WITH heads AS (
    SELECT o.channel, o.fingerprint FROM notify_outbox o
    WHERE o.state = 'pending'
      AND (o.claimed_until IS NULL OR o.claimed_until < clock_timestamp())
      AND o.id <> ALL (%(exclude)s::bigint[])
      AND NOT EXISTS (
          SELECT 1 FROM notify_outbox p
          WHERE p.state = 'pending' AND p.channel = o.channel
            AND p.fingerprint = o.fingerprint AND p.id < o.id)
    ORDER BY o.id
    LIMIT %(groups)s
    FOR UPDATE OF o SKIP LOCKED
), claimed AS (
    UPDATE notify_outbox t
       SET claimed_until = clock_timestamp() + make_interval(secs => %(lease)s)
      FROM heads h
     WHERE t.state = 'pending' AND t.channel = h.channel AND t.fingerprint = h.fingerprint
    RETURNING t.{COLUMNS.replace(", ", ", t.")}
)
SELECT {COLUMNS} FROM claimed ORDER BY id
"""


class PgOutboxRows:
    """The ``notify_outbox`` table through ``db``'s pool; closes ``db`` on close when it owns
    it (an outbox opened on its own, not the store's)."""

    local_file: Path | None = None

    def __init__(self, db: Database, *, owned: bool = False) -> None:
        self._db = db
        self._owned = owned
        self.location = f"the database {db.display}"

    def _one(self, query: str, params: Sequence[Any] | dict[str, Any] = ()) -> Any:
        def run(conn: Conn) -> Any:
            return conn.execute(query.encode(), params)

        return self._db.run(lambda c: _fetch(run(c)), tiers=())

    def add(self, row: NewRow, now: str) -> int:
        # not retried (a dropped connection after the commit would queue it twice): a failure
        # leaves as StoreError and the router logs the whole notification
        with pg_tx.transaction(self._db) as conn:
            found = conn.execute(
                INSERT_ROW + " RETURNING id",
                copy_values(CopiedRow(row, now, now)),
            ).fetchone()
        if found is None:  # INSERT ... RETURNING returns its row
            raise StoreError(f"notify outbox in {self.location}: the insert returned no id")
        return int(found[0])

    def record(
        self, entry_id: int, state: str, attempts: int, status: int | None, error: str, now: str
    ) -> bool:
        done = self._one(
            "UPDATE notify_outbox SET state = %s, attempts = attempts + %s, last_status = %s,"
            " last_error = %s, updated_at = %s, claimed_until = NULL WHERE id = %s RETURNING id",
            (state, attempts, status, error, now, entry_id),
        )
        return bool(done)

    def note(self, entry_id: int, error: str, now: str) -> None:
        self._one(
            "UPDATE notify_outbox SET last_error = %s, updated_at = %s, claimed_until = NULL"
            " WHERE id = %s",
            (error, now, entry_id),
        )

    def requeue(self, entry_id: int, now: str) -> bool:
        done = self._one(
            "UPDATE notify_outbox SET state = 'pending', updated_at = %s, claimed_until = NULL"
            " WHERE id = %s AND state = 'dead' RETURNING id",
            (now, entry_id),
        )
        return bool(done)

    def bury(self, entry_id: int, reason: str, now: str) -> None:
        self._one(
            "UPDATE notify_outbox SET state = 'dead', last_error = %s, updated_at = %s,"
            " claimed_until = NULL WHERE id = %s",
            (reason, now, entry_id),
        )

    def count_pending(self, channel: str, fingerprint: str) -> int:
        rows = self._one(
            "SELECT count(*) FROM notify_outbox"
            " WHERE state = 'pending' AND channel = %s AND fingerprint = %s",
            (channel, fingerprint),
        )
        return int(rows[0][0])

    def entries(self, state: str | None, limit: int | None) -> list[OutboxRow]:
        where, params = ("WHERE state = %s", [state]) if state else ("", [])
        query = f"SELECT {COLUMNS} FROM notify_outbox {where} ORDER BY id"
        if limit is not None:
            query += f" LIMIT {int(limit)}"
        return [outbox_row(r) for r in self._one(query, params)]

    def claim(
        self, limit: int | None, lease_s: float, exclude: Sequence[int] = ()
    ) -> list[OutboxRow]:
        """Whole groups, at most ``limit`` of them (None: every group not leased)."""
        params = {
            "exclude": [int(i) for i in exclude],
            "groups": limit,  # LIMIT NULL: no limit
            "lease": float(lease_s),
        }
        return [outbox_row(r) for r in self._one(_CLAIM, params)]

    def release(self, entry_ids: Sequence[int]) -> None:
        if entry_ids:
            self._one(
                "UPDATE notify_outbox SET claimed_until = NULL WHERE id = ANY (%s::bigint[])",
                ([int(i) for i in entry_ids],),
            )

    def purge(self, matches: Callable[[str], bool]) -> int:
        rows = self._one("SELECT id, message FROM notify_outbox")
        doomed = [int(r[0]) for r in rows if matches(str(r[1]))]
        if doomed:
            self._one("DELETE FROM notify_outbox WHERE id = ANY (%s::bigint[])", (doomed,))
        return len(doomed)

    def export_rows(self) -> list[CopiedRow]:
        rows = self._one(f"SELECT {COPY_COLUMNS} FROM notify_outbox ORDER BY id")
        return [copied_row(r) for r in rows]

    def import_rows(self, rows: Sequence[CopiedRow]) -> int:
        with pg_tx.transaction(self._db) as conn:  # the lock keeps a second copy from racing
            conn.execute("LOCK TABLE notify_outbox IN SHARE ROW EXCLUSIVE MODE")
            held = conn.execute(f"SELECT {COPY_COLUMNS} FROM notify_outbox").fetchall()
            fresh = new_rows([copied_row(r) for r in held], rows)
            if fresh:
                conn.executemany(
                    INSERT_ROW,
                    [copy_values(c) for c in fresh],
                )
        return len(fresh)

    def close(self) -> None:
        if self._owned:
            self._db.close()


def _fetch(cursor: Any) -> list[Any]:
    return list(cursor.fetchall()) if cursor.description is not None else []
