"""The PostgreSQL side of :mod:`seenbefore.storage.sqlport`: write transactions and queries in
the portable SQL the service tables use (``?`` placeholders, rows readable by index and name).

A transaction is READ COMMITTED on one pooled connection, without the store's index-writer lock
(audit records and review decisions never wait for an ingest) and without tier settings (the
service tables have no row-level security; the service filters reviews by tier itself). Its body
is not retried: a dropped connection or a deadlock surfaces as a StoreError (503) and the caller
may send the request again. Queries go through the store's retrying ``Database.run``.

:class:`Leases` says which replica drives a review's workflow thread at a time.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

import psycopg
from psycopg.rows import RowMaker
from psycopg_pool import PoolTimeout

from seenbefore.errors import StoreError
from seenbefore.storage.postgres.pool import Conn, Database


class PortableRow:
    """A row like ``sqlite3.Row``: ``row[0]``, ``row["name"]``, ``row.keys()``, ``dict(row)``."""

    __slots__ = ("_index", "_values")

    def __init__(self, values: tuple[Any, ...], index: dict[str, int]) -> None:
        self._values = values
        self._index = index

    def __getitem__(self, key: int | str, /) -> Any:
        if isinstance(key, str):
            try:
                return self._values[self._index[key]]
            except KeyError:
                raise IndexError(f"no column named {key!r}") from None
        return self._values[key]

    def keys(self) -> list[str]:
        return list(self._index)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PortableRow):
            return self._values == other._values and self._index == other._index
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"PortableRow({dict(zip(self._index, self._values, strict=True))!r})"


def portable_row(cursor: psycopg.Cursor[Any]) -> RowMaker[PortableRow]:
    names = [c.name for c in cursor.description or ()]
    index = {name: i for i, name in enumerate(names)}

    def make(values: Sequence[Any]) -> PortableRow:
        return PortableRow(tuple(values), index)

    return make


@lru_cache(maxsize=512)
def pyformat(statement: str) -> bytes:
    """``?`` placeholders as psycopg's ``%s`` (a literal ``%`` doubled)."""
    return statement.replace("%", "%%").replace("?", "%s").encode()


class PgConnection:
    """The connection a PostgreSQL write transaction yields (see :class:`SqlConn`)."""

    def __init__(self, conn: Conn) -> None:
        self._conn = conn

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> psycopg.Cursor[PortableRow]:
        cursor = self._conn.cursor(row_factory=portable_row)
        return cursor.execute(pyformat(sql), list(parameters))

    def executemany(
        self, sql: str, parameters: Iterable[Sequence[Any]], /
    ) -> psycopg.Cursor[PortableRow]:
        cursor = self._conn.cursor(row_factory=portable_row)
        cursor.executemany(pyformat(sql), [list(p) for p in parameters])
        return cursor


def _failed(db: Database, exc: BaseException) -> StoreError:
    if isinstance(exc, PoolTimeout) or (
        isinstance(exc, psycopg.OperationalError) and not exc.sqlstate
    ):
        return StoreError(
            f"database {db.display} is unreachable ({str(exc).strip() or type(exc).__name__});"
            " check SEENBEFORE_DATABASE_URL and that PostgreSQL is running, then retry"
        )
    return StoreError(f"database {db.display}: {type(exc).__name__}: {str(exc).strip()}")


@contextmanager
def transaction(db: Database) -> Iterator[PgConnection]:
    """One READ COMMITTED write transaction: committed when the block ends, rolled back when it
    raises. Database errors leave as StoreError; the block's own errors pass unchanged."""
    try:
        with db.pool.connection() as conn, conn.transaction():
            yield PgConnection(conn)
    except (psycopg.Error, PoolTimeout) as exc:
        raise _failed(db, exc) from exc


def query(db: Database, sql: str, params: Sequence[Any] = ()) -> list[PortableRow]:
    """Rows of one read-only statement (autocommit; retried on dropped connections)."""
    statement = pyformat(sql)
    values = list(params)

    def read(conn: Conn) -> list[PortableRow]:
        return conn.cursor(row_factory=portable_row).execute(statement, values).fetchall()

    return db.run(read, tiers=())


LEASE_CLASS = 0x5EEB  # first key of the two-key advisory locks that leases take


def lease_key(name: str) -> int:
    """A signed 32-bit key for ``name`` (the second key of the lease's advisory lock)."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:4], "big", signed=True)


class Leases:
    """Which process drives a piece of work right now, across replicas: a session-level
    advisory lock per name on one dedicated connection, taken with ``pg_try_advisory_lock``
    (never waits) and released when the work ends, or by the server when this process dies.
    Within the process a set keeps two threads from both holding one name (a session's
    advisory locks stack)."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._conn: Conn | None = None
        self._lock = threading.Lock()
        self._held: set[int] = set()

    def _connection(self) -> Conn:
        if self._conn is None or self._conn.closed or self._conn.broken:
            self._held.clear()  # a new session holds nothing
            self._conn = psycopg.connect(
                self._db.url,
                autocommit=True,
                connect_timeout=int(self._db.options.connect_timeout_s),
                application_name="seenbefore-leases",
            )
        return self._conn

    @contextmanager
    def hold(self, name: str) -> Iterator[bool]:
        """True inside the block when this process now holds ``name``; False when another
        process (or thread) does."""
        key = lease_key(name)
        try:
            with self._lock:
                row = (
                    None
                    if key in self._held
                    else self._connection()
                    .execute("SELECT pg_try_advisory_lock(%s, %s)", (LEASE_CLASS, key))
                    .fetchone()
                )
                got = bool(row and row[0])
                if got:
                    self._held.add(key)
        except psycopg.Error as exc:
            raise _failed(self._db, exc) from exc
        try:
            yield got
        finally:
            if got:
                with self._lock, contextlib.suppress(psycopg.Error):
                    self._held.discard(key)
                    if self._conn is not None and not self._conn.closed:
                        self._conn.execute("SELECT pg_advisory_unlock(%s, %s)", (LEASE_CLASS, key))

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
            self._conn = None
            self._held.clear()
