"""What the service tables (API tokens, the audit log, reviews) need from a store, on either
backend: one write transaction at a time and read-only queries, in SQL both speak.

Both stores provide ``transaction()`` (a context manager yielding a connection with ``execute``
and ``executemany``) and ``query(sql, params)``; rows answer ``row[0]``, ``row["name"]`` and
``dict(row)`` alike. Statements use ``?`` placeholders on both: the PostgreSQL store turns them
into its own (so portable SQL holds no literal ``?``; a ``%`` is fine). Everything else in
the SQL must mean the same on both (``INSERT ... ON CONFLICT (col) DO NOTHING``, not ``INSERT OR
IGNORE``); where the dialects differ, callers ask ``store.sql`` (storage/dialect.py) for the
fragment and never branch on the backend. SQLite serialises writers with ``BEGIN IMMEDIATE``;
PostgreSQL runs READ COMMITTED, so a conditional ``UPDATE ... WHERE status = 'pending'`` is the
claim on both (a second writer waits for the first to commit, re-reads the row and updates
nothing).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from seenbefore.storage.dialect import SqlDialect


class SqlRow(Protocol):
    def __getitem__(self, key: int | str, /) -> Any: ...

    def keys(self) -> list[str]: ...


class SqlCursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class SqlConn(Protocol):
    """A connection inside a write transaction (``sqlite3.Connection`` or the PostgreSQL one)."""

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> SqlCursor: ...

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> SqlCursor: ...


class ServiceStore(Protocol):
    """The part of a store the service tables use: tokens (security/tokens.py), reviews
    (review/records.py), web sessions (service/sessions.py) and the visibility rule's SQL
    (security/visibility.py); the audit log's port adds to it (storage/ports.py)."""

    @property
    def sql(self) -> SqlDialect:
        """The dialect's fragments for the SQL that differs (storage/dialect.py)."""
        ...

    def transaction(self) -> AbstractContextManager[SqlConn]: ...

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...


def marks(values: Sequence[Any]) -> str:
    """``?, ?, ?`` for an IN list; ``NULL`` for an empty one (matches nothing on both)."""
    return ",".join("?" * len(values)) or "NULL"
