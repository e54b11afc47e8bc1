"""The server store: PostgreSQL with pgvector, shared by any number of service replicas.

Same :class:`~seenbefore.storage.base.Store` contract as the SQLite store; one transaction per
document keeps chunks, vectors, keyword statistics and metadata in step. What differs:

- **Keyword search is PostgreSQL full text search, not BM25.** A generated ``tsvector`` (the
  ``simple`` configuration over the same letter-and-digit words our tokenizer makes) with a GIN
  index, OR-joined terms, ranked by ``ts_rank_cd`` (cover density, length-normalised). It has no
  corpus-wide IDF and no BM25 saturation: on SciFact it scores 0.448 nDCG@10 where BM25 scores
  0.667 (``benchmarks/beir.py --backend postgres``). The knowledge base's hybrid search does not
  depend on it: it builds its in-memory BM25 and dense index from this store's rows, exactly as
  on SQLite, so fusion, the trust gate and confidence see the same signals on both backends.
- **Dense search** is pgvector: ``vector(d)`` for the claimed embedder's dimension, an HNSW index
  (cosine), and iterative index scans (pgvector >= 0.8) so a filter that drops most neighbours
  does not starve the result list.
- **Access tiers are enforced by the database** with row-level security (see pg_schema.py):
  methods that take tiers run with exactly those tiers; maintenance (ingest, reindex, the
  in-memory index build) runs with every tier, explicitly.
- Nothing is cached in the process: every call reads the database, so several processes can share
  one database; ``generation()`` is the shared counter their caches compare.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from psycopg import sql
from psycopg.rows import dict_row

from seenbefore.errors import EmbedderMismatchError, NotFoundError, StoreError
from seenbefore.storage import pg_rows as pgrows
from seenbefore.storage import pg_search, pg_tx
from seenbefore.storage.base import (
    ChunkHit,
    ChunkRows,
    DocumentRows,
    EmbeddedVectors,
    JsonSettings,
    StoreStats,
    utc_now,
    visible_document,
)
from seenbefore.storage.pg_pool import Conn, Database, PgOptions, ServerInfo
from seenbefore.storage.supersession import SupersedeRow, as_seen
from seenbefore.types import (
    Chunk,
    Postmortem,
    QuarantineEntry,
    SearchFilters,
    StoredDocument,
)


class PostgresStore(JsonSettings):
    """Store backed by a PostgreSQL database (``postgresql://...``). Thread-safe (a pool)."""

    dialect = "postgres"  # storage/sqlport.py: what the service tables' SQL branches on

    def __init__(self, url: str, *, options: PgOptions | None = None) -> None:
        self._db = Database(url, options)
        self._leases = pg_tx.Leases(self._db)  # connects on first use
        self.url = self._db.display  # without the password
        # no local file: the in-memory index keeps no sidecar (KnowledgeBase checks for this)
        self.path = Path(":memory:")

    @property
    def server(self) -> ServerInfo:
        return self._db.info

    # -- lifecycle -------------------------------------------------------------------------
    def close(self) -> None:
        self._leases.close()
        self._db.close()

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the service tables (storage/sqlport.py, storage/pg_tx.py) ----------------------------
    def transaction(self) -> AbstractContextManager[pg_tx.PgConnection]:
        """A READ COMMITTED write transaction for tables outside the search index (tokens,
        audit log, reviews), in portable SQL; it does not bump the generation."""
        return pg_tx.transaction(self._db)

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[pg_tx.PortableRow]:
        """Rows of one read-only statement in portable SQL (``?`` placeholders)."""
        return pg_tx.query(self._db, sql, params)

    def lease(self, name: str) -> AbstractContextManager[bool]:
        """Whether this process may drive ``name`` (a review's workflow thread) now: True
        inside the block unless another replica or thread is driving it (pg_tx.Leases)."""
        return self._leases.hold(name)

    def checkpointer(self) -> AbstractContextManager[Any]:
        """LangGraph's ``PostgresSaver`` in this database (storage/pg_checkpoint.py), so any
        replica can resume any review."""
        from seenbefore.storage.pg_checkpoint import postgres_checkpointer

        return postgres_checkpointer(self._db.url)

    def ping(self) -> None:
        """StoreError unless the database answers (the service's readiness check)."""
        self._db.run(lambda conn: conn.execute("SELECT 1").fetchone(), tiers=())

    def _value(self, query: str, params: Sequence[Any] = ()) -> Any:
        def read(conn: Conn) -> Any:
            row = conn.execute(query.encode(), params).fetchone()
            return row[0] if row else None

        return self._db.run(read, tiers=())

    # -- documents -------------------------------------------------------------------------
    def generation(self) -> int:
        return int(self._value("SELECT value FROM meta WHERE key = 'generation'"))

    def fingerprints(self) -> dict[str, tuple[str, str]]:
        rows = self._db.run(
            lambda c: c.execute("SELECT id, content_hash, source FROM documents").fetchall(),
            tiers=None,
        )
        return {r[0]: (r[1], r[2]) for r in rows}

    def upsert(
        self, pm: Postmortem, chunks: Sequence[Chunk], vectors: EmbeddedVectors | None = None
    ) -> str:
        if vectors is not None and len(vectors.matrix) != len(chunks):
            raise StoreError(
                f"{pm.id}: {len(vectors.matrix)} vectors for {len(chunks)} chunks; embed every chunk"
            )

        def write(conn: Conn) -> str:
            old = conn.execute(
                "SELECT content_hash, supersedes, source FROM documents WHERE id = %s", (pm.id,)
            ).fetchone()
            if old is not None and old[0] == pm.content_hash:
                if old[2] != pm.source:
                    conn.execute(
                        "UPDATE documents SET source = %s WHERE id = %s", (pm.source, pm.id)
                    )
                return "unchanged"
            removed = pgrows.delete_rows(conn, pm.id) if old is not None else 0
            now = utc_now()
            with conn.pipeline():  # a handful of round trips, not one per statement
                pgrows.insert_document(conn, pm, now)
                pgrows.insert_children(conn, pm, chunks, vectors, self._claim_embedder)
                pgrows.count_change(conn, removed + len(chunks), len(chunks) - removed)
                affected = {pm.id, pm.supersedes, old[1] if old else None}
                pgrows.refresh_supersession(conn, [a for a in affected if a])
                pgrows.bump(conn)
            return "updated" if old is not None else "added"

        return self._db.run(write, tiers=None, write=True)

    def _claim_embedder(self, conn: Conn, name: str, dim: int) -> None:
        """Record the embedder on first use (typing the vector column and indexing it); refuse
        vectors from any other."""
        row = conn.execute(
            "SELECT (SELECT value FROM meta WHERE key = 'embedder_name'),"
            " (SELECT value FROM meta WHERE key = 'embedder_dim')"
        ).fetchone()
        if row is None or row[0] is None:
            conn.execute(
                "INSERT INTO meta (key, value) VALUES ('embedder_name', %s), ('embedder_dim', %s)",
                (name, str(dim)),
            )
            if dim > 0:
                pgrows.type_vectors(conn, dim)
        elif row[0] != name or int(row[1]) != dim:
            raise EmbedderMismatchError(
                f"store {self.url} holds vectors from {row[0]} (dim {row[1]}), refusing to mix "
                f"in {name} (dim {dim}); run `seenbefore reindex` to re-embed everything"
            )

    def delete(self, doc_id: str) -> None:
        def write(conn: Conn) -> None:
            row = conn.execute("SELECT supersedes FROM documents WHERE id = %s", (doc_id,))
            found = row.fetchone()
            if found is None:
                raise NotFoundError(f"no postmortem with id '{doc_id}'")
            removed = pgrows.delete_rows(conn, doc_id)
            pgrows.count_change(conn, removed, -removed)
            if found[0]:
                pgrows.refresh_supersession(conn, [found[0]])
            pgrows.bump(conn)

        self._db.run(write, tiers=None, write=True)

    def get(self, doc_id: str, tiers: Sequence[str]) -> StoredDocument:
        """The document as a caller holding ``tiers`` sees it (read under those tiers): its
        supersession counts only superseders in them (storage/supersession.py)."""
        visible = tuple(tiers)

        def read(conn: Conn) -> dict[str, StoredDocument]:
            docs = pgrows.documents(conn, [doc_id])
            doc = docs.get(doc_id)
            if doc is None or not doc.superseded_by:
                return docs
            return {doc_id: as_seen(doc, pgrows.superseder(conn, doc_id, visible))}

        return visible_document(self._db.run(read, tiers=visible), doc_id, tiers)

    def supersede_rows(self) -> list[SupersedeRow]:
        rows = self._db.run(
            lambda c: c.execute(
                "SELECT id, status, access_tier, supersedes, date FROM documents"
            ).fetchall(),
            tiers=None,
        )
        return [
            SupersedeRow(r[0], r[1], r[2], r[3], r[4].isoformat() if r[4] else None) for r in rows
        ]

    def _as_seen(self, filters: SearchFilters) -> SearchFilters:
        """Filters that leave out what is superseded for the caller (chunks' ``is_current``
        counts superseders of every tier, so the caller's superseded ids are excluded)."""
        if filters.include_superseded or not filters.tiers:
            return filters
        hidden = self._db.run(
            lambda c: pgrows.superseded_for(c, filters.tiers), tiers=filters.tiers
        )
        return replace(
            filters,
            include_superseded=True,
            exclude_ids=tuple(sorted({*filters.exclude_ids, *hidden})),
        )

    def documents_meta(self, doc_ids: Sequence[str]) -> dict[str, StoredDocument]:
        if not doc_ids:
            return {}
        return self._db.run(lambda c: pgrows.documents(c, list(doc_ids)), tiers=None)

    def superseded_ids(self) -> list[str]:
        rows = self._db.run(
            lambda c: c.execute(
                "SELECT id FROM documents WHERE effective_status = 'superseded'"
            ).fetchall(),
            tiers=None,
        )
        return [r[0] for r in rows]

    def list_ids(self, tiers: Sequence[str] | None = None) -> list[str]:
        if tiers is None:
            query, params, visible = 'SELECT id FROM documents ORDER BY id COLLATE "C"', [], None
        else:
            visible = tuple(tiers)
            query = 'SELECT id FROM documents WHERE access_tier = ANY (%s) ORDER BY id COLLATE "C"'
            params = [list(visible)]
        rows = self._db.run(lambda c: c.execute(query, params).fetchall(), tiers=visible)
        return [r[0] for r in rows]

    def chunks_by_id(self, chunk_ids: Sequence[int]) -> dict[int, Chunk]:
        if not chunk_ids:
            return {}
        rows = self._db.run(
            lambda c: c.execute(
                "SELECT id, doc_id, section_key, section_heading, section_position, position,"
                " text FROM chunks WHERE id = ANY (%s)",
                ([int(i) for i in chunk_ids],),
            ).fetchall(),
            tiers=None,
        )
        return {r[0]: Chunk(r[1], r[2], r[3], r[4], r[5], r[6]) for r in rows}

    # -- vectors, tables for in-memory indexes, settings ----------------------------------------
    def embedder_info(self) -> tuple[str, int] | None:
        name, dim = self.get_meta("embedder_name"), self.get_meta("embedder_dim")
        return (name, int(dim)) if name is not None and dim is not None else None

    def replace_vectors(
        self, name: str, chunk_ids: Sequence[int], matrix: npt.NDArray[np.float32]
    ) -> None:
        """Re-embed: drop every vector and write these, with the embedder's name, atomically.
        The HNSW index is dropped and built again after the load (faster than growing it)."""
        if len(chunk_ids) != len(matrix):
            raise StoreError(f"{len(matrix)} vectors for {len(chunk_ids)} chunks")

        def write(conn: Conn) -> None:
            pgrows.load_vectors(
                conn, name, chunk_ids, matrix, build_memory=self._db.options.build_memory
            )

        self._db.run(write, tiers=None, write=True, owner=True)

    def vectors(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """(chunk ids, matrix) for every chunk that has a vector, ordered by chunk id."""
        info = self.embedder_info()
        dim = info[1] if info else 0
        rows = self._db.run(
            lambda c: c.execute(
                "SELECT chunk_id, embedding FROM vectors ORDER BY chunk_id"
            ).fetchall(),
            tiers=None,
        )
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        matrix = np.zeros((len(rows), dim), dtype=np.float32)
        for i, row in enumerate(rows):
            matrix[i] = row[1].to_numpy()
        return ids, matrix

    def chunk_rows(self) -> ChunkRows:
        """Every chunk's id, document id and text, grouped by document (for in-memory indexes)."""
        rows = self._db.run(
            lambda c: c.execute(
                'SELECT id, doc_id, text FROM chunks ORDER BY doc_id COLLATE "C", id'
            ).fetchall(),
            tiers=None,
        )
        return ChunkRows(
            ids=np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)),
            doc_ids=[r[1] for r in rows],
            texts=[r[2] for r in rows],
        )

    def document_rows(self) -> DocumentRows:
        rows = self._db.run(
            lambda c: c.execute(
                "SELECT id, access_tier, effective_status, date, services, signals"
                ' FROM documents ORDER BY id COLLATE "C"'
            ).fetchall(),
            tiers=None,
        )
        return DocumentRows(
            ids=[r[0] for r in rows],
            tiers=[r[1] for r in rows],
            current=[r[2] == "current" for r in rows],
            dates=[r[3].isoformat() if r[3] else None for r in rows],
            services=[tuple(r[4]) for r in rows],
            signals=[tuple(json.loads(r[5])) for r in rows],
        )

    def get_meta(self, key: str) -> str | None:
        value = self._value("SELECT value FROM meta WHERE key = %s", (key,))
        return None if value is None else str(value)

    def set_meta(self, key: str, value: str) -> None:
        self._db.run(
            lambda c: c.execute(
                "INSERT INTO meta (key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET"
                " value = excluded.value",
                (key, value),
            ),
            tiers=(),
            write=True,
        )

    def get_blob(self, key: str) -> bytes | None:
        value = self._value("SELECT value FROM blobs WHERE key = %s", (key,))
        return None if value is None else bytes(value)

    def put_blob(self, key: str, value: bytes) -> None:
        self._db.run(
            lambda c: c.execute(
                "INSERT INTO blobs (key, value, updated_at) VALUES (%s, %s, %s) ON CONFLICT (key)"
                " DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                (key, value, utc_now()),
            ),
            tiers=(),
            write=True,
        )

    def chunks_changed(self) -> int:
        """Chunks written or deleted since the store was created (for LSA staleness)."""
        return int(self.get_meta("chunks_changed") or 0)

    # -- search ----------------------------------------------------------------------------
    def sparse_search(
        self, terms: Sequence[str], filters: SearchFilters, limit: int
    ) -> list[ChunkHit]:
        """Full-text search (``ts_rank_cd``, not BM25) over chunks of documents that pass
        ``filters``; best chunk per document, best first. Runs with the filter's tiers only."""
        return pg_search.keyword_hits(self._db, terms, self._as_seen(filters), limit)

    def dense_search(
        self, vector: npt.NDArray[np.float32], filters: SearchFilters, limit: int
    ) -> list[ChunkHit]:
        """Nearest chunks by cosine (HNSW, iterative scan), best chunk per document, at most
        ``limit`` documents; ``score`` is the cosine similarity. Runs with the filter's tiers."""
        if self.embedder_info() is None:
            return []
        return pg_search.nearest(self._db, vector, self._as_seen(filters), limit)

    def term_stats(self, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        """(chunks in the store, chunks containing each term) across every tier, for IDF."""
        return pg_search.term_stats(self._db, terms)

    # -- quarantine ------------------------------------------------------------------------
    def quarantine(self, source: str, reason: str, doc_id: str | None, digest: str) -> int:
        now = utc_now()

        def write(conn: Conn) -> int:
            row = conn.execute(
                "INSERT INTO quarantine (source, reason, doc_id, content_hash, first_seen,"
                " last_seen) VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (source) DO UPDATE SET"
                " reason = excluded.reason, doc_id = excluded.doc_id,"
                " content_hash = excluded.content_hash, last_seen = excluded.last_seen,"
                " attempts = quarantine.attempts + 1 RETURNING id",
                (source, reason, doc_id, digest, now, now),
            ).fetchone()
            pgrows.bump(conn)
            return int(row[0]) if row else 0

        return self._db.run(write, tiers=(), write=True)

    def list_quarantine(self) -> list[QuarantineEntry]:
        rows = self._db.run(
            lambda c: (
                c.cursor(row_factory=dict_row)
                .execute("SELECT * FROM quarantine ORDER BY id")
                .fetchall()
            ),
            tiers=(),
        )
        return [QuarantineEntry(**r) for r in rows]

    def get_quarantine(self, entry_id: int) -> QuarantineEntry:
        rows = self._db.run(
            lambda c: (
                c.cursor(row_factory=dict_row)
                .execute("SELECT * FROM quarantine WHERE id = %s", (entry_id,))
                .fetchall()
            ),
            tiers=(),
        )
        if not rows:
            raise NotFoundError(
                f"no quarantine entry {entry_id}; `seenbefore quarantine` lists the entries"
            )
        return QuarantineEntry(**rows[0])

    def drop_quarantine(self, entry_id: int) -> None:
        self.get_quarantine(entry_id)
        self._delete_quarantine("id", entry_id)

    def clear_quarantine(self, source: str) -> None:
        self._delete_quarantine("source", source)

    def _delete_quarantine(self, column: str, value: object) -> None:
        def write(conn: Conn) -> None:
            done = conn.execute(
                sql.SQL("DELETE FROM quarantine WHERE {} = %s").format(sql.Identifier(column)),
                (value,),
            )
            if done.rowcount:
                pgrows.bump(conn)

        self._db.run(write, tiers=(), write=True)

    # -- stats, backup, restore --------------------------------------------------------------
    def stats(self, tiers: Sequence[str]) -> StoreStats:
        visible = list(tiers)
        return self._db.run(lambda c: pgrows.read_stats(c, visible, self.url), tiers=tuple(tiers))

    # -- rows for `seenbefore migrate` (storage/transfer.py) ----------------------------------
    def table_names(self) -> list[str]:
        rows = self._db.run(
            lambda c: c.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
            ).fetchall(),
            tiers=(),
        )
        return [r[0] for r in rows]

    def table_rows(self, table: str) -> list[dict[str, Any]]:
        return self._db.run(lambda c: pgrows.table_rows(c, table), tiers=None)

    def write_table_rows(
        self, table: str, key: str, rows: Sequence[dict[str, Any]], *, skip: str | None = None
    ) -> int:
        return self._db.run(
            lambda c: pgrows.write_table_rows(c, table, key, rows, skip), tiers=None, write=True
        )

    def set_document_times(self, doc_id: str, ingested_at: str, updated_at: str) -> None:
        self._db.run(
            lambda c: c.execute(
                "UPDATE documents SET ingested_at = %s, updated_at = %s WHERE id = %s",
                (ingested_at, updated_at, doc_id),
            ),
            tiers=None,
            write=True,
        )

    def backup(self, target: str | Path) -> None:
        raise StoreError(
            f"store {self.url} is PostgreSQL: back it up with the server's tools (pg_dump, or the"
            " managed service's snapshots), or copy it into a SQLite file with"
            f" `seenbefore migrate --from {self.url} --sqlite {target}`"
        )

    def restore(self, source: str | Path) -> None:
        raise StoreError(
            f"store {self.url} is PostgreSQL: restore with pg_restore, or copy a SQLite store"
            f" into it with `seenbefore migrate --to {self.url} --sqlite {source}`"
        )
