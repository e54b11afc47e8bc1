"""Where the two SQL dialects differ, for the service tables' portable SQL (storage/sqlport.py).

Every store answers ``store.sql`` with one of these, so callers outside storage/ write one
statement and ask the dialect for the parts that differ; no caller branches on the backend:

- JSON arrays are text columns on both; SQLite reads them with ``json_each``, PostgreSQL with
  ``::jsonb`` (:meth:`SqlDialect.json_within`, :meth:`SqlDialect.json_holds`).
- SQLite's ``BEGIN IMMEDIATE`` admits one writer at a time, so a read inside a transaction is
  already locked; PostgreSQL runs READ COMMITTED, so a read that the transaction then writes
  back takes ``FOR UPDATE`` (:attr:`SqlDialect.for_update`), and appends that must be strictly
  ordered across replicas (the audit chain) first take a transaction-level advisory lock
  (:meth:`SqlDialect.serialize`).
- SQLite tables keep insertion order in ``rowid``; PostgreSQL has none
  (:meth:`SqlDialect.insertion_order`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Protocol

from seenbefore.errors import StoreError
from seenbefore.storage.sqlport import SqlConn, marks

AUDIT_LOCK = 0x5EEB_0004  # pg_advisory_xact_lock key: one audit record appended at a time
# tables whose appends the dialect orders across writers (PostgreSQL advisory lock keys)
SERIAL_TABLES = {"audit_log": AUDIT_LOCK}


class SqlDialect(Protocol):
    """The dialect-specific fragments of the portable SQL (``?`` placeholders on both)."""

    @property
    def name(self) -> str: ...

    @property
    def for_update(self) -> str:
        """Appended to a SELECT whose rows the transaction writes back: locks them until
        commit where the isolation level does not already ('' on SQLite)."""
        ...

    def json_within(self, column: str, values: Sequence[str]) -> tuple[str, list[Any]]:
        """A condition true when every string in the JSON array ``column`` is among
        ``values`` (an empty array passes), and its parameters."""
        ...

    def json_holds(self, column: str) -> str:
        """A condition true when the JSON array ``column`` holds the string bound to its one
        ``?``."""
        ...

    def insertion_order(self, columns: str) -> str:
        """An ORDER BY list for rows in the order they were inserted: SQLite's ``rowid``;
        ``columns`` (a creation time, then a key) where the table keeps no such order."""
        ...

    def serialize(self, conn: SqlConn, table: str) -> None:
        """Inside a write transaction: let one writer at a time append to ``table`` until
        commit, across processes and replicas."""
        ...


class SQLiteSql:
    name = "sqlite"
    for_update = ""  # BEGIN IMMEDIATE: the writer holds the database

    def json_within(self, column: str, values: Sequence[str]) -> tuple[str, list[Any]]:
        if not values:  # ``NOT IN (NULL)`` is never true, so say "empty" directly
            return f"NOT EXISTS (SELECT 1 FROM json_each({column}))", []
        held = marks(values)
        sql = f"NOT EXISTS (SELECT 1 FROM json_each({column}) j WHERE j.value NOT IN ({held}))"
        return sql, list(values)

    def json_holds(self, column: str) -> str:
        return f"EXISTS (SELECT 1 FROM json_each({column}) WHERE value = ?)"

    def insertion_order(self, columns: str) -> str:
        return "rowid"

    def serialize(self, conn: SqlConn, table: str) -> None:
        _lock_key(table)  # BEGIN IMMEDIATE already admits one writer; the name is still checked


class PostgresSql:
    name = "postgres"
    for_update = " FOR UPDATE"  # READ COMMITTED: lock what is read to be written back

    def json_within(self, column: str, values: Sequence[str]) -> tuple[str, list[Any]]:
        return f"{column}::jsonb <@ ?::jsonb", [json.dumps(list(values))]

    def json_holds(self, column: str) -> str:
        return f"{column}::jsonb @> jsonb_build_array(?::text)"

    def insertion_order(self, columns: str) -> str:
        return columns

    def serialize(self, conn: SqlConn, table: str) -> None:
        conn.execute("SELECT pg_advisory_xact_lock(?)", (_lock_key(table),))


def _lock_key(table: str) -> int:
    key = SERIAL_TABLES.get(table)
    if key is None:
        raise StoreError(
            f"appends to {table!r} cannot be serialised: only {', '.join(sorted(SERIAL_TABLES))}"
            " have a lock; add the table to storage/dialect.py SERIAL_TABLES"
        )
    return key


SQLITE_SQL = SQLiteSql()
POSTGRES_SQL = PostgresSql()
