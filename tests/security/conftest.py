"""What the PostgreSQL security tests share: a store on the test server, and a raw connection as
the login role (or, with ``owner``, as the schema's owner), as someone bypassing the application
would."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from seenbefore.storage.postgres.schema import OWNER_ROLE
from seenbefore.storage.postgres.store import PostgresStore


@pytest.fixture
def pg(pg_url: str) -> Iterator[PostgresStore]:
    with PostgresStore(pg_url) as store:
        yield store


def raw(url: str, *, owner: bool = False) -> psycopg.Connection[tuple[object, ...]]:
    """The login role on its own connection, as someone bypassing the application would."""
    conn = psycopg.connect(url, autocommit=True)
    conn.execute("SET search_path = seenbefore")
    if owner:
        conn.execute(f"SET ROLE {OWNER_ROLE}")
    return conn
