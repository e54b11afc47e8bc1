"""The embedded store: one SQLite file (WAL mode) is the source of truth.

Documents, sections, chunks, the FTS5 index and quarantine live in one file; each document is
written in one transaction, so the keyword index and the metadata never disagree.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from seenbefore.errors import EmbedderMismatchError, NotFoundError, StoreError
from seenbefore.storage.base import (
    Checkpoints,
    ChunkHit,
    ChunkRows,
    CorpusChanges,
    DocumentRows,
    EmbeddedVectors,
    JsonSettings,
    StoreStats,
    utc_now,
    visible_document,
)
from seenbefore.storage.dialect import SQLITE_SQL, SQLiteSql
from seenbefore.storage.outbox import OutboxRows
from seenbefore.storage.ports import RestoreCheck
from seenbefore.storage.sqlite import files as sqlite_files
from seenbefore.storage.sqlite import restore as sqlite_restore
from seenbefore.storage.sqlite import rows as sqrows
from seenbefore.storage.sqlite.filters import filter_sql
from seenbefore.storage.sqlite.outbox import SqliteOutboxRows
from seenbefore.storage.sqlite.schema import AUDIT_TRIGGERS
from seenbefore.storage.supersession import SupersedeRow, as_seen
from seenbefore.types import Chunk, Postmortem, QuarantineEntry, SearchFilters, StoredDocument


class SQLiteStore(JsonSettings):
    """Store backed by one SQLite file. Safe to share between threads (one lock)."""

    dialect = "sqlite"
    sql: SQLiteSql = SQLITE_SQL  # storage/dialect.py: the fragments its SQL differs in

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.local_file: Path | None = None if str(path) == ":memory:" else self.path
        self.location = str(self.path)
        self._conn = sqlite_files.connect(path)
        self._lock = threading.RLock()
        self._migrate()

    # -- lifecycle -------------------------------------------------------------------------
    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def lease(self, name: str) -> AbstractContextManager[bool]:
        """Always True: one file, processes take turns on its lock; nothing to lease."""
        return contextlib.nullcontext(True)

    def checkpointer(self, local: Path) -> AbstractContextManager[Checkpoints]:
        """LangGraph's ``SqliteSaver`` in the file ``local`` (storage/sqlite/checkpoint.py)."""
        from seenbefore.storage.sqlite.checkpoint import sqlite_checkpointer

        return sqlite_checkpointer(local)

    @contextmanager
    def erasing(self) -> Iterator[None]:
        """``secure_delete`` on, so deleted rows are overwritten; then the WAL truncated, so
        no copy of them stays in it."""
        self.query("PRAGMA secure_delete = ON")
        yield
        self.query("PRAGMA wal_checkpoint(TRUNCATE)")

    def audit_guards_missing(self) -> str:
        present = {r[0] for r in self._read("SELECT name FROM sqlite_master")}
        missing = [t for t in AUDIT_TRIGGERS if t not in present]
        return f"the append-only trigger(s) {', '.join(missing)} are missing" if missing else ""

    def _migrate(self) -> None:
        sqlite_files.migrate(self._conn, self._lock, self.path)

    @contextmanager
    def _write(
        self,
        *,
        bump: bool = True,
        settings: bool = False,
        touched: set[str] | None = None,
        moved: set[str] | None = None,
        everything: bool = False,
    ) -> Iterator[sqlite3.Connection]:
        """One write transaction; ``bump``: a corpus write, the generation moves (the search
        index is stale) and the change log records the documents the block put in ``touched``
        (written or deleted) and in ``moved`` (supersession refreshed); ``everything``: every
        document (re-embedding, restore); ``settings``: a settings write, only the settings
        generation moves (the models and weights a search reads are re-read, the index is
        kept)."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
                if bump:
                    sqrows.bump(self._conn, touched or (), moved or (), everything=everything)
                if settings:
                    self._conn.execute(
                        "INSERT INTO meta (key, value) VALUES ('settings_generation', '1') ON "
                        "CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
                    )
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A BEGIN IMMEDIATE write transaction for tables outside the search index (tokens,
        audit log, reviews): it does not bump the generation, so search caches stay warm."""
        with self._write(bump=False) as conn:
            yield conn

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        """Rows of one read-only statement (under the store's lock)."""
        return self._read(sql, params)

    # -- documents -------------------------------------------------------------------------
    def generation(self) -> int:
        return int(self._read("SELECT value FROM meta WHERE key = 'generation'")[0][0])

    def settings_generation(self) -> int:
        return self.generations()[1]

    def generations(self) -> tuple[int, int]:
        found = self._read(
            "SELECT key, value FROM meta WHERE key IN ('generation', 'settings_generation')"
        )
        rows = {str(r[0]): str(r[1]) for r in found}
        return int(rows["generation"]), int(rows.get("settings_generation", 0))

    def fingerprints(self) -> dict[str, tuple[str, str]]:
        rows = self._read("SELECT id, content_hash, source FROM documents")
        return {r["id"]: (r["content_hash"], r["source"]) for r in rows}

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
        touched: set[str] = set()  # the change log's entries for this write
        moved: set[str] = set()
        with self._write(touched=touched, moved=moved) as conn:
            old, removed = sqrows.take_over(conn, pm.id, replaces)  # and its case variants
            if old is not None and old["content_hash"] == pm.content_hash and not removed:
                if old["source"] != pm.source:
                    conn.execute("UPDATE documents SET source = ? WHERE id = ?", (pm.source, pm.id))
                return "unchanged"
            now = utc_now()
            if old is not None:
                sqrows.delete_rows(conn, pm.id)
            sqrows.insert_document(conn, pm, now)
            if vectors is not None:
                self._claim_embedder(conn, vectors.name, vectors.matrix.shape[1])
            for index, chunk in enumerate(chunks):
                chunk_id = self._insert_chunk(conn, chunk)
                if vectors is not None:
                    conn.execute(
                        "INSERT INTO vectors (chunk_id, vector) VALUES (?, ?)",
                        (chunk_id, sqrows.blob(vectors.matrix[index])),
                    )
            sqrows.count_change(conn, len(chunks))
            affected = {
                pm.id,
                pm.supersedes,
                old["supersedes"] if old else None,
                *(superseded for _, superseded in removed),
            }
            sqrows.refresh_supersession(conn, [a for a in affected if a])
            # the written document and the variants gone; the ones whose supersession it moves
            touched.update([pm.id, *(variant for variant, _ in removed)])
            moved.update(a for a in affected if a)
            return "updated" if old is not None or removed else "added"

    def _insert_chunk(self, conn: sqlite3.Connection, chunk: Chunk) -> int:
        return sqrows.insert_chunk(conn, chunk)  # a method: tests fail it mid-document

    def _claim_embedder(self, conn: sqlite3.Connection, name: str, dim: int) -> None:
        """Record the embedder on first use; refuse vectors from any other."""
        row = conn.execute(
            "SELECT (SELECT value FROM meta WHERE key = 'embedder_name'),"
            " (SELECT value FROM meta WHERE key = 'embedder_dim')"
        ).fetchone()
        if row[0] is None:
            conn.execute("INSERT INTO meta (key, value) VALUES ('embedder_name', ?)", (name,))
            conn.execute("INSERT INTO meta (key, value) VALUES ('embedder_dim', ?)", (str(dim),))
        elif row[0] != name or int(row[1]) != dim:
            raise EmbedderMismatchError(
                f"store {self.path} holds vectors from {row[0]} (dim {row[1]}), refusing to mix "
                f"in {name} (dim {dim}); run `seenbefore reindex` to re-embed everything"
            )

    def delete(self, doc_id: str) -> None:
        moved: set[str] = set()
        with self._write(touched={doc_id}, moved=moved) as conn:
            row = conn.execute(
                "SELECT supersedes FROM documents WHERE id = ?", (doc_id,)
            ).fetchone()
            if row is None:
                raise NotFoundError(f"no postmortem with id '{doc_id}'")
            n = conn.execute("SELECT count(*) FROM chunks WHERE doc_id = ?", (doc_id,)).fetchone()
            sqrows.delete_rows(conn, doc_id)
            sqrows.count_change(conn, int(n[0]))
            if row["supersedes"]:
                sqrows.refresh_supersession(conn, [row["supersedes"]])
                moved.add(row["supersedes"])

    def get(self, doc_id: str, tiers: Sequence[str]) -> StoredDocument:
        """The document as a caller holding ``tiers`` sees it, its id matched regardless of case:
        its supersession counts only superseders in those tiers (storage/supersession.py)."""
        stored = sqrows.stored_id(self._read, doc_id, tiers)
        doc = visible_document(self.documents_meta([stored]), stored, tiers)
        if not doc.superseded_by:
            return doc  # no link at all, from any tier
        return as_seen(doc, sqrows.superseder(self._read, stored, tiers))

    def supersede_rows(self, doc_ids: Sequence[str] | None = None) -> list[SupersedeRow]:
        """Every document's declared status, tier, ``supersedes`` and date (every tier), or
        those of ``doc_ids``."""
        query = "SELECT id, status, access_tier, supersedes, date FROM documents"
        return [SupersedeRow(r[0], r[1], r[2], r[3], r[4]) for r in self._rows(query, doc_ids)]

    def _rows(
        self, query: str, ids: Sequence[Any] | None, column: str = "id", order: str = ""
    ) -> list[sqlite3.Row]:
        """``query``'s rows, all of them or those whose ``column`` is among ``ids`` (read in
        batches; ``order`` is applied within each batch, whose ids are sorted)."""
        if ids is None:
            return self._read(query + order)
        rows: list[sqlite3.Row] = []
        for batch in sqrows.in_batches(sorted(set(ids))):
            where = f" WHERE {column} IN ({','.join('?' * len(batch))})"
            rows += self._read(query + where + order, batch)
        return rows

    def erase_from_change_log(self, doc_id: str) -> None:
        with self._write(bump=False) as conn:
            conn.execute(
                "INSERT OR IGNORE INTO changes (generation, kind, doc_id)"
                " SELECT generation, 'all', '' FROM changes WHERE doc_id = ?",
                (doc_id,),
            )
            conn.execute("DELETE FROM changes WHERE doc_id = ?", (doc_id,))

    def changes_since(self, generation: int) -> CorpusChanges | None:
        with self._lock:
            self._conn.execute("BEGIN")  # one snapshot: the generation and the log up to it
            try:
                return sqrows.changes_since(
                    lambda sql, params: self._conn.execute(sql, params).fetchall(), generation
                )
            finally:
                self._conn.execute("COMMIT")

    def documents_meta(self, doc_ids: Sequence[str]) -> dict[str, StoredDocument]:
        return sqrows.documents(self._read, doc_ids)

    def superseded_ids(self) -> list[str]:
        return [
            r[0]
            for r in self._read("SELECT id FROM documents WHERE effective_status = 'superseded'")
        ]

    def list_ids(self, tiers: Sequence[str] | None = None) -> list[str]:
        if tiers is None:
            return [r[0] for r in self._read("SELECT id FROM documents ORDER BY id")]
        marks = ",".join("?" * len(tiers))
        return [
            r[0]
            for r in self._read(
                f"SELECT id FROM documents WHERE access_tier IN ({marks}) ORDER BY id", list(tiers)
            )
        ]

    def chunks_by_id(self, chunk_ids: Sequence[int]) -> dict[int, Chunk]:
        if not chunk_ids:
            return {}
        marks = ",".join("?" * len(chunk_ids))
        rows = self._read(f"SELECT * FROM chunks WHERE id IN ({marks})", list(chunk_ids))
        return {r["id"]: sqrows.chunk(r) for r in rows}

    # -- vectors, tables for in-memory indexes, settings ----------------------------------------
    def embedder_info(self) -> tuple[str, int] | None:
        name = self.get_meta("embedder_name")
        dim = self.get_meta("embedder_dim")
        return (name, int(dim)) if name is not None and dim is not None else None

    def replace_vectors(
        self, name: str, chunk_ids: Sequence[int], matrix: npt.NDArray[np.float32]
    ) -> None:
        """Re-embed: drop every vector and write these, with the embedder's name, atomically."""
        if len(chunk_ids) != len(matrix):
            raise StoreError(f"{len(matrix)} vectors for {len(chunk_ids)} chunks")
        with self._write(everything=True) as conn:
            conn.execute("DELETE FROM vectors")
            conn.execute("DELETE FROM meta WHERE key IN ('embedder_name', 'embedder_dim')")
            self._claim_embedder(conn, name, int(matrix.shape[1]) if len(matrix) else 0)
            conn.executemany(
                "INSERT INTO vectors (chunk_id, vector) VALUES (?, ?)",
                ((int(c), sqrows.blob(v)) for c, v in zip(chunk_ids, matrix, strict=True)),
            )

    def vectors(
        self, chunk_ids: Sequence[int] | None = None
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """(chunk ids, matrix) for every chunk that has a vector (or those of ``chunk_ids``),
        ordered by chunk id."""
        info = self.embedder_info()
        wanted = None if chunk_ids is None else [int(c) for c in chunk_ids]
        rows = self._rows(
            "SELECT chunk_id, vector FROM vectors", wanted, "chunk_id", " ORDER BY chunk_id"
        )
        dim = info[1] if info else 0
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype="<f4").reshape(len(rows), dim)
        return ids, matrix.astype(np.float32, copy=False)

    def chunk_rows(self, doc_ids: Sequence[str] | None = None) -> ChunkRows:
        """Every chunk's id, document id and text (or those of ``doc_ids``), grouped by
        document (for in-memory indexes)."""
        rows = self._rows(
            "SELECT id, doc_id, text FROM chunks", doc_ids, "doc_id", " ORDER BY doc_id, id"
        )
        return ChunkRows(
            ids=np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)),
            doc_ids=[r[1] for r in rows],
            texts=[r[2] for r in rows],
        )

    def document_rows(self, doc_ids: Sequence[str] | None = None) -> DocumentRows:
        rows = self._rows(
            "SELECT id, access_tier, effective_status, date, services, signals FROM documents",
            doc_ids,
            order=" ORDER BY id",
        )
        return DocumentRows(
            ids=[r[0] for r in rows],
            tiers=[r[1] for r in rows],
            current=[r[2] == "current" for r in rows],
            dates=[r[3] for r in rows],
            services=[tuple(json.loads(r[4])) for r in rows],
            signals=[tuple(json.loads(r[5])) for r in rows],
        )

    def get_meta(self, key: str) -> str | None:
        rows = self._read("SELECT value FROM meta WHERE key = ?", (key,))
        return str(rows[0][0]) if rows else None

    def set_meta(self, key: str, value: str) -> None:
        # settings a search reads: cached contexts re-read them; the index stays
        with self._write(bump=False, settings=True) as conn:
            conn.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET"
                " value = excluded.value",
                (key, value),
            )

    def get_blob(self, key: str) -> bytes | None:
        rows = self._read("SELECT value FROM blobs WHERE key = ?", (key,))
        return bytes(rows[0][0]) if rows else None

    def put_blob(self, key: str, value: bytes) -> None:
        with self._write(bump=False, settings=True) as conn:
            conn.execute(
                "INSERT INTO blobs (key, value, updated_at) VALUES (?, ?, ?) ON CONFLICT (key)"
                " DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                (key, value, utc_now()),
            )

    def chunks_changed(self) -> int:
        """Chunks written or deleted since the store was created (for LSA staleness)."""
        return int(self.get_meta("chunks_changed") or 0)

    # -- search ----------------------------------------------------------------------------
    def sparse_search(
        self, terms: Sequence[str], filters: SearchFilters, limit: int
    ) -> list[ChunkHit]:
        """FTS5 BM25 over chunks of documents that pass ``filters``; best chunk per document.

        The filter is applied in the join, before ranking and the limit, so a restricted row
        never takes a place in the result list. (Constraining the MATCH itself with
        ``rowid IN (...)`` makes FTS5 test the query row by row: 100x slower, measured.) The
        in-memory index that hybrid search uses skips filtered rows before scoring them."""
        if not terms or limit <= 0:
            return []
        where, params = filter_sql(filters, alias="d")
        sql = (
            "WITH m AS MATERIALIZED ("
            " SELECT rowid AS rid, bm25(chunks_fts) AS s FROM chunks_fts"
            " WHERE chunks_fts MATCH ?)"
            " SELECT c.id AS chunk_id, c.doc_id AS doc_id, MIN(m.s) AS score"
            " FROM m JOIN chunks c ON c.id = m.rid JOIN documents d ON d.id = c.doc_id"
            f" WHERE {where} GROUP BY c.doc_id ORDER BY score, c.doc_id LIMIT ?"
        )
        rows = self._read(sql, [sqrows.fts_query(terms), *params, limit])
        return [ChunkHit(r["chunk_id"], r["doc_id"], -float(r["score"])) for r in rows]

    # -- quarantine ------------------------------------------------------------------------
    def quarantine(self, source: str, reason: str, doc_id: str | None, digest: str) -> int:
        with self._write() as conn:
            return sqrows.upsert_quarantine(conn, source, reason, doc_id, digest, utc_now())

    def list_quarantine(self) -> list[QuarantineEntry]:
        return [sqrows.entry(r) for r in self._read("SELECT * FROM quarantine ORDER BY id")]

    def get_quarantine(self, entry_id: int) -> QuarantineEntry:
        rows = self._read("SELECT * FROM quarantine WHERE id = ?", (entry_id,))
        if not rows:
            raise NotFoundError(
                f"no quarantine entry {entry_id}; `seenbefore quarantine` lists the entries"
            )
        return sqrows.entry(rows[0])

    def drop_quarantine(self, entry_id: int) -> None:
        self.get_quarantine(entry_id)
        with self._write() as conn:
            conn.execute("DELETE FROM quarantine WHERE id = ?", (entry_id,))

    def clear_quarantine(self, source: str) -> None:
        if not self._read("SELECT 1 FROM quarantine WHERE source = ?", (source,)):
            return
        with self._write() as conn:
            conn.execute("DELETE FROM quarantine WHERE source = ?", (source,))

    # -- stats, the stores beside it, rows for `seenbefore migrate`, backup, restore ----------
    def stats(self, tiers: Sequence[str]) -> StoreStats:
        return sqrows.read_stats(
            self._read, tiers, generation=self.generation(), path=self.location
        )

    def backup(self, target: str | Path) -> None:
        """A consistent copy via SQLite's online backup API, safe while the store is in use."""
        sqlite_files.backup(self._conn, self._lock, target)

    def outbox_rows(self, path: Path) -> OutboxRows:
        """The outbox file at ``path`` (not created when missing)."""
        return SqliteOutboxRows(path, create=False)

    def shared_buckets(self) -> None:
        """None: one process serves the file, and its rate-limit buckets stay in its memory."""
        return None

    def table_names(self) -> list[str]:
        return [
            str(r[0]) for r in self._read("SELECT name FROM sqlite_master WHERE type = 'table'")
        ]

    def table_rows(self, table: str) -> list[dict[str, Any]]:
        return [dict(r) for r in self._read(f'SELECT * FROM "{table}"')]

    def write_table_rows(
        self, table: str, key: str, rows: Sequence[dict[str, Any]], *, skip: str | None = None
    ) -> int:
        if not rows:
            return 0
        with self.transaction() as conn:
            return sqrows.write_table_rows(conn, table, key, rows, skip)

    def set_document_times(self, doc_id: str, ingested_at: str, updated_at: str) -> None:
        with self.transaction() as conn:
            conn.execute(
                "UPDATE documents SET ingested_at = ?, updated_at = ? WHERE id = ?",
                (ingested_at, updated_at, doc_id),
            )

    def restore(
        self,
        source: str | Path,
        verify: RestoreCheck | None = None,
        carry: RestoreCheck | None = None,
    ) -> None:
        """Replace this store's content with a backup taken by :meth:`backup`, once a copy of
        it passed every check (storage/sqlite/restore.py) and ``verify`` (the caller's own, on
        the copy opened as a store: the CLI checks the audit chain there), with what ``carry``
        wrote into the copy (the CLI: the live audit log, tokens and sessions)."""
        sqlite_restore.restore(
            self._conn,
            self._lock,
            self.local_file,
            source,
            open_copy=SQLiteStore,
            verify=verify,
            carry=carry,
        )
        self._migrate()
        with self._write(everything=True):
            pass  # bump the generation: every cache is now stale, every index rebuilds
