"""One fixture, two backends: the store contract runs against SQLite and against PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from seenbefore.storage.postgres.store import PostgresStore
from seenbefore.storage.sqlite.store import SQLiteStore

BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.integration)]


@pytest.fixture(params=BACKENDS)
def any_store(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[SQLiteStore | PostgresStore]:
    """A fresh, empty store of each backend."""
    if request.param == "sqlite":
        with SQLiteStore(tmp_path / "home" / "kb.sqlite") as store:
            yield store
        return
    url = request.getfixturevalue("pg_url")
    with PostgresStore(url) as pg:
        yield pg
