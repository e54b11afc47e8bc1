"""The outbox rows in a SQLite file (``<home>/outbox.sqlite``): each call opens and closes its
own connection, so one file can be shared by the detector and a separate retry job. No leases:
``claim`` is the pending rows (storage/outbox.py)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path

from seenbefore.errors import ConfigError
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


class SqliteOutboxRows:
    """The ``notify_outbox`` table in the SQLite file at ``path``; created when missing unless
    ``create`` is False (a purge does not make a file that was not there)."""

    local_file: Path | None

    def __init__(self, path: Path | str, *, create: bool = True) -> None:
        self.path = Path(path)
        self.local_file = self.path
        self.location = str(self.path)
        if not create:
            return
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
    def _connect(self, timeout: float = 10.0) -> Iterator[sqlite3.Connection]:
        with closing(sqlite3.connect(self.path, timeout=timeout)) as conn, conn:
            yield conn

    def add(self, row: NewRow, now: str) -> int:
        with self._connect() as conn:
            cursor = conn.execute(
                INSERT_ROW,
                copy_values(CopiedRow(row, now, now)),
            )
            return int(cursor.lastrowid or 0)

    def record(
        self, entry_id: int, state: str, attempts: int, status: int | None, error: str, now: str
    ) -> bool:
        with self._connect() as conn:
            return bool(
                conn.execute(
                    "UPDATE notify_outbox SET state = ?, attempts = attempts + ?,"
                    " last_status = ?, last_error = ?, updated_at = ? WHERE id = ?",
                    (state, attempts, status, error, now, entry_id),
                ).rowcount
            )

    def note(self, entry_id: int, error: str, now: str) -> None:
        with self._connect() as conn:
            conn.execute(
                "UPDATE notify_outbox SET last_error = ?, updated_at = ? WHERE id = ?",
                (error, now, entry_id),
            )

    def requeue(self, entry_id: int, now: str) -> bool:
        with self._connect() as conn:
            return bool(
                conn.execute(
                    "UPDATE notify_outbox SET state = 'pending', updated_at = ?"
                    " WHERE id = ? AND state = 'dead'",
                    (now, entry_id),
                ).rowcount
            )

    def bury(self, entry_id: int, reason: str, now: str) -> None:
        with self._connect() as conn:
            conn.execute(
                "UPDATE notify_outbox SET state = 'dead', last_error = ?, updated_at = ?"
                " WHERE id = ?",
                (reason, now, entry_id),
            )

    def count_pending(self, channel: str, fingerprint: str) -> int:
        with self._connect() as conn:
            row = conn.execute(
                "SELECT COUNT(*) FROM notify_outbox"
                " WHERE state = 'pending' AND channel = ? AND fingerprint = ?",
                (channel, fingerprint),
            ).fetchone()
        return int(row[0])

    def entries(self, state: str | None, limit: int | None) -> list[OutboxRow]:
        where, params = ("WHERE state = ?", [state]) if state else ("", [])
        sql = f"SELECT {COLUMNS} FROM notify_outbox {where} ORDER BY id"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        with self._connect() as conn:
            rows = conn.execute(sql, params).fetchall()
        return [outbox_row(r) for r in rows]

    def claim(
        self, limit: int | None, lease_s: float, exclude: Sequence[int] = ()
    ) -> list[OutboxRow]:
        skip = set(exclude)
        found = [r for r in self.entries("pending", None) if r.id not in skip]
        return found if limit is None else found[:limit]

    def release(self, entry_ids: Sequence[int]) -> None:
        return None  # nothing is leased in the file

    def purge(self, matches: Callable[[str], bool]) -> int:
        """A missing file, or a file without the table, holds none."""
        if not self.path.is_file():
            return 0
        with self._connect(timeout=30.0) as conn:
            try:
                rows = conn.execute("SELECT id, message FROM notify_outbox").fetchall()
            except sqlite3.OperationalError:  # not an outbox (no such table)
                return 0
            doomed = [int(r[0]) for r in rows if matches(r[1])]
            conn.executemany("DELETE FROM notify_outbox WHERE id = ?", [(i,) for i in doomed])
        return len(doomed)

    def export_rows(self) -> list[CopiedRow]:
        """A missing file, or a file without the table, holds none."""
        if not self.path.is_file():
            return []
        with self._connect() as conn:
            try:
                rows = conn.execute(f"SELECT {COPY_COLUMNS} FROM notify_outbox ORDER BY id")
                return [copied_row(r) for r in rows.fetchall()]
            except sqlite3.OperationalError:  # not an outbox (no such table)
                return []

    def import_rows(self, rows: Sequence[CopiedRow]) -> int:
        with self._connect(timeout=30.0) as conn:  # one transaction: the read and the inserts
            conn.execute("BEGIN IMMEDIATE")
            held = conn.execute(f"SELECT {COPY_COLUMNS} FROM notify_outbox").fetchall()
            fresh = new_rows([copied_row(r) for r in held], rows)
            conn.executemany(
                INSERT_ROW,
                [copy_values(c) for c in fresh],
            )
        return len(fresh)

    def close(self) -> None:
        return None  # every call closed its own connection
