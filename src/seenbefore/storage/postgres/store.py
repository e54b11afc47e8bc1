"""The server store: PostgreSQL with pgvector, shared by any number of service replicas.

Same :class:`~seenbefore.storage.ports.Store` contract as the SQLite store; one transaction per
document keeps chunks, vectors, the change log and metadata in step. What differs:

- **The database does not search.** Every replica builds the knowledge base's in-memory BM25
  and dense index from this store's rows, exactly as on SQLite, and keeps it in step through
  the change log (``changes_since``), so fusion, the trust gate and confidence see the same
  signals on both backends. An in-database search (full text, which is not BM25: SciFact
  nDCG@10 0.448 against 0.667; pgvector HNSW) was kept beside it until migration 8 dropped it:
  nothing read it and every write paid for it (docs/decisions.md has the figures).
- **Vectors** are pgvector ``vector(d)`` for the claimed embedder's dimension, read into memory.
- **Access tiers are enforced by the database** with row-level security (see postgres/schema.py):
  methods that take tiers bind exactly those tiers; maintenance (ingest, reindex, the in-memory
  index build) binds every tier, explicitly. A service login binds only with its tier key
  (``tier_key``), and never more than the key grants; a maintenance login binds without one.
- Nothing is cached in the process: every call reads the database, so several processes can share
  one database; ``generation()`` is the shared counter their caches compare.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from seenbefore.errors import NotFoundError, StoreError
from seenbefore.storage.base import (
    Checkpoints,
    ChunkRows,
    CorpusChanges,
    DocumentRows,
    EmbeddedVectors,
    JsonSettings,
    StoreStats,
    utc_now,
    visible_document,
)
from seenbefore.storage.buckets import TokenBuckets
from seenbefore.storage.dialect import POSTGRES_SQL, PostgresSql
from seenbefore.storage.outbox import OutboxRows
from seenbefore.storage.ports import RestoreCheck
from seenbefore.storage.postgres import admin as pg_admin
from seenbefore.storage.postgres import ids as pg_ids
from seenbefore.storage.postgres import reads as pg_reads
from seenbefore.storage.postgres import rows as pgrows
from seenbefore.storage.postgres import tx as pg_tx
from seenbefore.storage.postgres.buckets import PgTokenBuckets
from seenbefore.storage.postgres.outbox import PgOutboxRows
from seenbefore.storage.postgres.pool import Conn, Database, PgOptions, ServerInfo
from seenbefore.storage.supersession import SupersedeRow, as_seen
from seenbefore.types import Chunk, Postmortem, QuarantineEntry, StoredDocument


class PostgresStore(JsonSettings):
    """Store backed by a PostgreSQL database (``postgresql://...``). Thread-safe (a pool)."""

    dialect = "postgres"
    sql: PostgresSql = POSTGRES_SQL  # storage/dialect.py: the fragments its SQL differs in
    local_file: Path | None = None  # the data lives on the server
    # the audit chain's key (SEENBEFORE_AUDIT_KEY), set by storage/factory.py; none: unkeyed
    audit_key_text: str | None = None

    def __init__(
        self, url: str, *, options: PgOptions | None = None, tier_key: str | None = None
    ) -> None:
        self._db = Database(url, options, tier_key=tier_key)
        self._leases = pg_tx.Leases(self._db)  # connects on first use
        self.url = self._db.display  # without the password
        self.location = self.url

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

    # -- the service tables (storage/sqlport.py, storage/postgres/tx.py) ----------------------------
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

    @contextmanager
    def checkpointer(self, local: Path) -> Iterator[Checkpoints]:
        """LangGraph's ``PostgresSaver`` in this database (storage/postgres/checkpoint.py), so any
        replica can resume any review; ``local`` is unused."""
        from seenbefore.storage.postgres.checkpoint import postgres_checkpointer

        with postgres_checkpointer(self._db.url, maintenance=self._db.info.maintenance) as saver:
            yield Checkpoints(
                saver,
                f"the database {self.url}",
                "restore the checkpoint tables from the same database backup as the reviews",
            )

    def erasing(self) -> AbstractContextManager[None]:
        """Nothing to do here: deleted rows are the server's to reclaim (autovacuum)."""
        return contextlib.nullcontext()

    def audit_guards_missing(self) -> str:
        return self._db.run(pg_admin.audit_guards_missing, tiers=())

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

    def settings_generation(self) -> int:
        return self.generations()[1]

    def generations(self) -> tuple[int, int]:
        def read(conn: Conn) -> dict[str, str]:
            rows = conn.execute(
                "SELECT key, value FROM meta WHERE key IN ('generation', 'settings_generation')"
            ).fetchall()
            return {str(r[0]): str(r[1]) for r in rows}

        found = self._db.run(read, tiers=())
        return int(found["generation"]), int(found.get("settings_generation", 0))

    def fingerprints(self) -> dict[str, tuple[str, str]]:
        return self._db.run(pg_reads.fingerprints, tiers=None)

    def upsert(
        self,
        pm: Postmortem,
        chunks: Sequence[Chunk],
        vectors: EmbeddedVectors | None = None,
        *,
        replaces: Sequence[str] = (),
    ) -> str:
        if vectors is not None and len(vectors.matrix) != len(chunks):
            raise StoreError(
                f"{pm.id}: {len(vectors.matrix)} vectors for {len(chunks)} chunks; embed every chunk"
            )

        def write(conn: Conn) -> str:
            old, gone = pg_ids.take_over(conn, pm.id, replaces)  # and its case variants
            if old is not None and old[0] == pm.content_hash and not gone:
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
                pgrows.count_change(conn, removed + len(chunks))
                affected = {
                    pm.id,
                    pm.supersedes,
                    old[1] if old else None,
                    *(superseded for _, superseded in gone),
                }
                pgrows.refresh_supersession(conn, [a for a in affected if a])
                # the change log: this document and the case variants it took over; those
                # whose supersession it may move
                pgrows.bump(conn, [pm.id, *(v for v, _ in gone)], [a for a in affected if a])
            return "updated" if old is not None or gone else "added"

        return self._db.run(write, tiers=None, write=True)

    def _claim_embedder(self, conn: Conn, name: str, dim: int) -> None:
        pg_admin.claim_embedder(conn, name, dim, where=self.url)

    def delete(self, doc_id: str) -> None:
        def write(conn: Conn) -> None:
            row = conn.execute("SELECT supersedes FROM documents WHERE id = %s", (doc_id,))
            found = row.fetchone()
            if found is None:
                raise NotFoundError(f"no postmortem with id '{doc_id}'")
            pgrows.count_change(conn, pgrows.delete_rows(conn, doc_id))
            if found[0]:
                pgrows.refresh_supersession(conn, [found[0]])
            pgrows.bump(conn, [doc_id], [found[0]] if found[0] else [])

        self._db.run(write, tiers=None, write=True)

    def get(self, doc_id: str, tiers: Sequence[str]) -> StoredDocument:
        """The document as a caller holding ``tiers`` sees it (read under those tiers), its id
        matched regardless of case: its supersession counts only superseders in them."""
        visible = tuple(tiers)

        def read(conn: Conn) -> tuple[str, dict[str, StoredDocument]]:
            stored = pg_ids.stored_id(conn, doc_id)  # among the caller's tiers: row security
            docs = pgrows.documents(conn, [stored])
            doc = docs.get(stored)
            if doc is None or not doc.superseded_by:
                return stored, docs
            return stored, {stored: as_seen(doc, pgrows.superseder(conn, stored, visible))}

        stored, docs = self._db.run(read, tiers=visible)
        return visible_document(docs, stored, tiers)

    def supersede_rows(self, doc_ids: Sequence[str] | None = None) -> list[SupersedeRow]:
        wanted = None if doc_ids is None else list(doc_ids)
        return self._db.run(lambda c: pg_reads.supersede_rows(c, wanted), tiers=None)

    def erase_from_change_log(self, doc_id: str) -> None:
        def write(conn: Conn) -> None:
            conn.execute(
                "INSERT INTO changes (generation, kind, doc_id) SELECT DISTINCT generation,"
                " 'all', '' FROM changes WHERE doc_id = %s ON CONFLICT DO NOTHING",
                (doc_id,),
            )
            conn.execute("DELETE FROM changes WHERE doc_id = %s", (doc_id,))

        self._db.run(write, tiers=None, write=True)

    def changes_since(self, generation: int) -> CorpusChanges | None:
        return self._db.run(lambda c: pgrows.changes_since(c, generation), tiers=None)

    def documents_meta(self, doc_ids: Sequence[str]) -> dict[str, StoredDocument]:
        if not doc_ids:
            return {}
        return self._db.run(lambda c: pgrows.documents(c, list(doc_ids)), tiers=None)

    def superseded_ids(self) -> list[str]:
        return self._db.run(pg_reads.superseded_ids, tiers=None)

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
        wanted = [int(i) for i in chunk_ids]
        return self._db.run(lambda c: pg_reads.chunks_by_id(c, wanted), tiers=None)

    # -- vectors, tables for in-memory indexes, settings ----------------------------------------
    def embedder_info(self) -> tuple[str, int] | None:
        name, dim = self.get_meta("embedder_name"), self.get_meta("embedder_dim")
        return (name, int(dim)) if name is not None and dim is not None else None

    def replace_vectors(
        self, name: str, chunk_ids: Sequence[int], matrix: npt.NDArray[np.float32]
    ) -> None:
        """Re-embed: drop every vector and write these, with the embedder's name, atomically."""
        if len(chunk_ids) != len(matrix):
            raise StoreError(f"{len(matrix)} vectors for {len(chunk_ids)} chunks")

        def write(conn: Conn) -> None:
            pgrows.load_vectors(conn, name, chunk_ids, matrix)

        self._db.run(write, tiers=None, write=True, owner=True)

    def vectors(
        self, chunk_ids: Sequence[int] | None = None
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """(chunk ids, matrix) for every chunk that has a vector (or those of ``chunk_ids``),
        ordered by chunk id."""
        info = self.embedder_info()
        dim = info[1] if info else 0
        wanted = None if chunk_ids is None else [int(c) for c in chunk_ids]
        return self._db.run(lambda c: pg_reads.vectors(c, dim, wanted), tiers=None)

    def chunk_rows(self, doc_ids: Sequence[str] | None = None) -> ChunkRows:
        """Every chunk's id, document id and text (or those of ``doc_ids``), grouped by
        document (for in-memory indexes)."""
        wanted = None if doc_ids is None else list(doc_ids)
        return self._db.run(lambda c: pg_reads.chunk_rows(c, wanted), tiers=None)

    def document_rows(self, doc_ids: Sequence[str] | None = None) -> DocumentRows:
        wanted = None if doc_ids is None else list(doc_ids)
        return self._db.run(lambda c: pg_reads.document_rows(c, wanted), tiers=None)

    def get_meta(self, key: str) -> str | None:
        value = self._value("SELECT value FROM meta WHERE key = %s", (key,))
        return None if value is None else str(value)

    def set_meta(self, key: str, value: str) -> None:
        def write(conn: Conn) -> None:
            conn.execute(
                "INSERT INTO meta (key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET"
                " value = excluded.value",
                (key, value),
            )
            pgrows.bump_settings(conn)  # settings a search reads: contexts re-read them

        self._db.run(write, tiers=(), write=True)

    def get_blob(self, key: str) -> bytes | None:
        value = self._value("SELECT value FROM blobs WHERE key = %s", (key,))
        return None if value is None else bytes(value)

    def put_blob(self, key: str, value: bytes) -> None:
        def write(conn: Conn) -> None:
            conn.execute(
                "INSERT INTO blobs (key, value, updated_at) VALUES (%s, %s, %s) ON CONFLICT (key)"
                " DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                (key, value, utc_now()),
            )
            pgrows.bump_settings(conn)

        self._db.run(write, tiers=(), write=True)

    def chunks_changed(self) -> int:
        """Chunks written or deleted since the store was created (for LSA staleness)."""
        return int(self.get_meta("chunks_changed") or 0)

    # -- quarantine ------------------------------------------------------------------------
    def quarantine(self, source: str, reason: str, doc_id: str | None, digest: str) -> int:
        now = utc_now()
        return self._db.run(
            lambda c: pg_admin.upsert_quarantine(c, source, reason, doc_id, digest, now),
            tiers=(),
            write=True,
        )

    def list_quarantine(self) -> list[QuarantineEntry]:
        return self._db.run(pg_admin.quarantine_entries, tiers=())

    def get_quarantine(self, entry_id: int) -> QuarantineEntry:
        rows = self._db.run(lambda c: pg_admin.quarantine_entries(c, entry_id), tiers=())
        if not rows:
            raise NotFoundError(
                f"no quarantine entry {entry_id}; `seenbefore quarantine` lists the entries"
            )
        return rows[0]

    def drop_quarantine(self, entry_id: int) -> None:
        self.get_quarantine(entry_id)
        self._delete_quarantine("id", entry_id)

    def clear_quarantine(self, source: str) -> None:
        self._delete_quarantine("source", source)

    def _delete_quarantine(self, column: str, value: object) -> None:
        self._db.run(lambda c: pg_admin.delete_quarantine(c, column, value), tiers=(), write=True)

    # -- stats, backup, restore --------------------------------------------------------------
    def stats(self, tiers: Sequence[str]) -> StoreStats:
        visible = list(tiers)
        return self._db.run(lambda c: pgrows.read_stats(c, visible, self.url), tiers=tuple(tiers))

    # -- the stores that share its database --------------------------------------------------
    def outbox_rows(self, path: Path) -> OutboxRows:
        """The database's outbox table, on this store's pool (``path`` is unused)."""
        return PgOutboxRows(self._db)

    def shared_buckets(self) -> TokenBuckets:
        """Rate-limit buckets in the database, on this store's pool: one limit across
        replicas."""
        return PgTokenBuckets(self._db)

    # -- rows for `seenbefore migrate` (storage/transfer.py) ----------------------------------
    def table_names(self) -> list[str]:
        return self._db.run(pg_admin.table_names, tiers=())

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

    def restore(
        self,
        source: str | Path,
        verify: RestoreCheck | None = None,
        carry: RestoreCheck | None = None,
    ) -> None:
        raise StoreError(
            f"store {self.url} is PostgreSQL: restore with pg_restore, or copy a SQLite store"
            f" into it with `seenbefore migrate --to {self.url} --sqlite {source}`"
        )
