"""The embedded store: one SQLite file (WAL mode) is the source of truth.

Documents, sections, chunks, the FTS5 index and quarantine live in one file; each document is
written in one transaction, so the keyword index and the metadata never disagree.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from seenbefore.errors import EmbedderMismatchError, NotFoundError, SchemaVersionError, StoreError
from seenbefore.storage.base import (
    ChunkHit,
    ChunkRows,
    DocumentRows,
    EmbeddedVectors,
    JsonSettings,
    StoreStats,
    stored_document,
    utc_now,
    visible_document,
)
from seenbefore.storage.schema import APPLICATION_ID, MIGRATIONS
from seenbefore.storage.sqlfilters import current_sql, filter_sql
from seenbefore.storage.supersession import SupersedeRow, as_seen
from seenbefore.types import (
    Chunk,
    Postmortem,
    QuarantineEntry,
    SearchFilters,
    Section,
    StoredDocument,
)


def fts_query(terms: Sequence[str]) -> str:
    """OR-join terms, each quoted, so user text is never FTS5 syntax."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


class SQLiteStore(JsonSettings):
    """Store backed by one SQLite file. Safe to share between threads (one lock)."""

    dialect = "sqlite"  # storage/sqlport.py: what the service tables' SQL branches on

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if str(path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._conn = sqlite3.connect(
                str(path), isolation_level=None, check_same_thread=False, timeout=30.0
            )
            self._conn.row_factory = sqlite3.Row
            self._conn.execute("PRAGMA foreign_keys = ON")
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA synchronous = NORMAL")
        except sqlite3.DatabaseError as exc:
            raise StoreError(
                f"store {path}: cannot open as SQLite ({exc}); point SEENBEFORE_HOME at a "
                "seenbefore data directory or move the file away"
            ) from exc
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

    def _migrate(self) -> None:
        with self._lock:
            version = self._conn.execute("PRAGMA user_version").fetchone()[0]
            app_id = self._conn.execute("PRAGMA application_id").fetchone()[0]
            has_tables = self._conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
            if has_tables and app_id != APPLICATION_ID:
                raise SchemaVersionError(
                    f"store {self.path}: this SQLite file is not a seenbefore store "
                    "(application_id differs); use another SEENBEFORE_HOME"
                )
            if version > len(MIGRATIONS):
                raise SchemaVersionError(
                    f"store {self.path}: schema version {version} is newer than this seenbefore "
                    f"understands ({len(MIGRATIONS)}); upgrade seenbefore"
                )
            for number in range(version + 1, len(MIGRATIONS) + 1):
                with self._write(bump=False) as conn:
                    for statement in _statements(MIGRATIONS[number - 1]):
                        conn.execute(statement)
                    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                    conn.execute(f"PRAGMA user_version = {number}")

    @contextmanager
    def _write(self, *, bump: bool = True) -> Iterator[sqlite3.Connection]:
        """One write transaction; bumps the generation so caches know they are stale."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
                if bump:
                    self._conn.execute(
                        "UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'"
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

    def fingerprints(self) -> dict[str, tuple[str, str]]:
        rows = self._read("SELECT id, content_hash, source FROM documents")
        return {r["id"]: (r["content_hash"], r["source"]) for r in rows}

    def upsert(
        self, pm: Postmortem, chunks: Sequence[Chunk], vectors: EmbeddedVectors | None = None
    ) -> str:
        if vectors is not None and len(vectors.matrix) != len(chunks):
            raise StoreError(
                f"{pm.id}: {len(vectors.matrix)} vectors for {len(chunks)} chunks; embed every chunk"
            )
        with self._write() as conn:
            old = conn.execute(
                "SELECT content_hash, supersedes, source FROM documents WHERE id = ?", (pm.id,)
            ).fetchone()
            if old is not None and old["content_hash"] == pm.content_hash:
                if old["source"] != pm.source:
                    conn.execute("UPDATE documents SET source = ? WHERE id = ?", (pm.source, pm.id))
                return "unchanged"
            now = utc_now()
            if old is not None:
                self._delete_rows(conn, pm.id)
            conn.execute(
                "INSERT INTO documents (id, title, date, severity, status, effective_status,"
                " supersedes, access_tier, type, services, tags, signals, extra, body, source,"
                " content_hash, ingested_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    pm.id,
                    pm.title,
                    pm.date.isoformat() if pm.date else None,
                    pm.severity,
                    pm.status,
                    pm.status,
                    pm.supersedes,
                    pm.access_tier,
                    pm.type,
                    json.dumps(pm.services),
                    json.dumps(pm.tags),
                    json.dumps(pm.signals),
                    json.dumps(pm.extra, sort_keys=True),
                    pm.body,
                    pm.source,
                    pm.content_hash,
                    now,
                    now,
                ),
            )
            conn.executemany(
                "INSERT INTO document_services (doc_id, service) VALUES (?, ?)",
                [(pm.id, s) for s in pm.services],
            )
            conn.executemany(
                "INSERT INTO sections (doc_id, position, key, heading, text) VALUES (?, ?, ?, ?, ?)",
                [(pm.id, s.position, s.key, s.heading, s.text) for s in pm.sections],
            )
            if vectors is not None:
                self._claim_embedder(conn, vectors.name, vectors.matrix.shape[1])
            for index, chunk in enumerate(chunks):
                chunk_id = self._insert_chunk(conn, chunk)
                if vectors is not None:
                    conn.execute(
                        "INSERT INTO vectors (chunk_id, vector) VALUES (?, ?)",
                        (chunk_id, _blob(vectors.matrix[index])),
                    )
            _count_change(conn, len(chunks))
            affected = {pm.id, pm.supersedes, old["supersedes"] if old else None}
            _refresh_supersession(conn, [a for a in affected if a])
            return "updated" if old is not None else "added"

    def _insert_chunk(self, conn: sqlite3.Connection, chunk: Chunk) -> int:
        cur = conn.execute(
            "INSERT INTO chunks (doc_id, section_key, section_heading, section_position,"
            " position, text) VALUES (?, ?, ?, ?, ?, ?)",
            (
                chunk.doc_id,
                chunk.section_key,
                chunk.section_heading,
                chunk.section_position,
                chunk.position,
                chunk.text,
            ),
        )
        conn.execute(
            "INSERT INTO chunks_fts (rowid, text) VALUES (?, ?)", (cur.lastrowid, chunk.text)
        )
        return int(cur.lastrowid or 0)

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

    @staticmethod
    def _delete_rows(conn: sqlite3.Connection, doc_id: str) -> None:
        conn.execute(
            "DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM chunks WHERE doc_id = ?)",
            (doc_id,),
        )
        conn.execute("DELETE FROM documents WHERE id = ?", (doc_id,))  # cascades

    def delete(self, doc_id: str) -> None:
        with self._write() as conn:
            row = conn.execute(
                "SELECT supersedes FROM documents WHERE id = ?", (doc_id,)
            ).fetchone()
            if row is None:
                raise NotFoundError(f"no postmortem with id '{doc_id}'")
            n = conn.execute("SELECT count(*) FROM chunks WHERE doc_id = ?", (doc_id,)).fetchone()
            self._delete_rows(conn, doc_id)
            _count_change(conn, int(n[0]))
            if row["supersedes"]:
                _refresh_supersession(conn, [row["supersedes"]])

    def get(self, doc_id: str, tiers: Sequence[str]) -> StoredDocument:
        """The document as a caller holding ``tiers`` sees it: its supersession counts only
        superseders in those tiers (storage/supersession.py)."""
        doc = visible_document(self.documents_meta([doc_id]), doc_id, tiers)
        if not doc.superseded_by:
            return doc  # no link at all, from any tier
        marks = ",".join("?" * len(tiers))
        rows = self._read(
            "SELECT s.id FROM documents s WHERE s.supersedes = ? AND s.status = 'current'"
            f" AND s.access_tier IN ({marks}) ORDER BY s.date DESC, s.id LIMIT 1",
            [doc_id, *tiers],
        )
        return as_seen(doc, rows[0][0] if rows else None)

    def supersede_rows(self) -> list[SupersedeRow]:
        """Every document's declared status, tier, ``supersedes`` and date (every tier)."""
        return [
            SupersedeRow(r[0], r[1], r[2], r[3], r[4])
            for r in self._read("SELECT id, status, access_tier, supersedes, date FROM documents")
        ]

    def documents_meta(self, doc_ids: Sequence[str]) -> dict[str, StoredDocument]:
        if not doc_ids:
            return {}
        marks = ",".join("?" * len(doc_ids))
        rows = self._read(
            f"SELECT d.*, (SELECT count(*) FROM chunks c WHERE c.doc_id = d.id) AS n_chunks"
            f" FROM documents d WHERE d.id IN ({marks})",
            list(doc_ids),
        )
        sections: dict[str, list[Section]] = {}
        for s in self._read(
            f"SELECT * FROM sections WHERE doc_id IN ({marks}) ORDER BY doc_id, position",
            list(doc_ids),
        ):
            sections.setdefault(s["doc_id"], []).append(
                Section(s["key"], s["heading"], s["text"], s["position"])
            )
        return {r["id"]: _stored(r, tuple(sections.get(r["id"], []))) for r in rows}

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
        return {
            r["id"]: Chunk(
                r["doc_id"],
                r["section_key"],
                r["section_heading"],
                r["section_position"],
                r["position"],
                r["text"],
            )
            for r in rows
        }

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
        with self._write() as conn:
            conn.execute("DELETE FROM vectors")
            conn.execute("DELETE FROM meta WHERE key IN ('embedder_name', 'embedder_dim')")
            self._claim_embedder(conn, name, int(matrix.shape[1]) if len(matrix) else 0)
            conn.executemany(
                "INSERT INTO vectors (chunk_id, vector) VALUES (?, ?)",
                ((int(c), _blob(v)) for c, v in zip(chunk_ids, matrix, strict=True)),
            )

    def vectors(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """(chunk ids, matrix) for every chunk that has a vector, ordered by chunk id."""
        info = self.embedder_info()
        rows = self._read("SELECT chunk_id, vector FROM vectors ORDER BY chunk_id")
        dim = info[1] if info else 0
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype="<f4").reshape(len(rows), dim)
        return ids, matrix.astype(np.float32, copy=False)

    def chunk_rows(self) -> ChunkRows:
        """Every chunk's id, document id and text, grouped by document (for in-memory indexes)."""
        rows = self._read("SELECT id, doc_id, text FROM chunks ORDER BY doc_id, id")
        return ChunkRows(
            ids=np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)),
            doc_ids=[r[1] for r in rows],
            texts=[r[2] for r in rows],
        )

    def document_rows(self) -> DocumentRows:
        rows = self._read(
            "SELECT id, access_tier, effective_status, date, services, signals "
            "FROM documents ORDER BY id"
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
        with self._write(bump=False) as conn:
            conn.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET"
                " value = excluded.value",
                (key, value),
            )

    def get_blob(self, key: str) -> bytes | None:
        rows = self._read("SELECT value FROM blobs WHERE key = ?", (key,))
        return bytes(rows[0][0]) if rows else None

    def put_blob(self, key: str, value: bytes) -> None:
        with self._write(bump=False) as conn:
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
        rows = self._read(sql, [fts_query(terms), *params, limit])
        return [ChunkHit(r["chunk_id"], r["doc_id"], -float(r["score"])) for r in rows]

    # -- quarantine ------------------------------------------------------------------------
    def quarantine(self, source: str, reason: str, doc_id: str | None, digest: str) -> int:
        now = utc_now()
        with self._write() as conn:
            conn.execute(
                "INSERT INTO quarantine (source, reason, doc_id, content_hash, first_seen,"
                " last_seen) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (source) DO UPDATE SET"
                " reason = excluded.reason, doc_id = excluded.doc_id,"
                " content_hash = excluded.content_hash, last_seen = excluded.last_seen,"
                " attempts = attempts + 1",
                (source, reason, doc_id, digest, now, now),
            )
            row = conn.execute("SELECT id FROM quarantine WHERE source = ?", (source,)).fetchone()
            return int(row[0])

    def list_quarantine(self) -> list[QuarantineEntry]:
        return [_entry(r) for r in self._read("SELECT * FROM quarantine ORDER BY id")]

    def get_quarantine(self, entry_id: int) -> QuarantineEntry:
        rows = self._read("SELECT * FROM quarantine WHERE id = ?", (entry_id,))
        if not rows:
            raise NotFoundError(
                f"no quarantine entry {entry_id}; `seenbefore quarantine` lists the entries"
            )
        return _entry(rows[0])

    def drop_quarantine(self, entry_id: int) -> None:
        self.get_quarantine(entry_id)
        with self._write() as conn:
            conn.execute("DELETE FROM quarantine WHERE id = ?", (entry_id,))

    def clear_quarantine(self, source: str) -> None:
        if not self._read("SELECT 1 FROM quarantine WHERE source = ?", (source,)):
            return
        with self._write() as conn:
            conn.execute("DELETE FROM quarantine WHERE source = ?", (source,))

    # -- stats, backup, restore --------------------------------------------------------------
    def stats(self, tiers: Sequence[str]) -> StoreStats:
        marks = ",".join("?" * len(tiers)) or "NULL"
        visible = f"access_tier IN ({marks})"
        t = list(tiers)
        current, current_params = current_sql(tuple(tiers))
        row = self._read(
            f"SELECT count(*), sum(c), count(*) - sum(c) FROM (SELECT {current} AS c"
            f" FROM documents d WHERE d.{visible})",
            [*current_params, *t],
        )[0]
        chunks = self._read(
            f"SELECT count(*) FROM chunks c JOIN documents d ON d.id = c.doc_id WHERE d.{visible}",
            t,
        )[0][0]
        by_type = {
            r[0] or "(none)": r[1]
            for r in self._read(
                f"SELECT type, count(*) FROM documents WHERE {visible} GROUP BY type ORDER BY 2 DESC",
                t,
            )
        }
        by_tier = {
            r[0]: r[1]
            for r in self._read(
                f"SELECT access_tier, count(*) FROM documents WHERE {visible} GROUP BY 1", t
            )
        }
        return StoreStats(
            documents=row[0],
            current=row[1] or 0,
            superseded=row[2] or 0,
            chunks=chunks,
            by_type=by_type,
            by_tier=by_tier,
            quarantined=self._read("SELECT count(*) FROM quarantine")[0][0],
            schema_version=self._read("PRAGMA user_version")[0][0],
            generation=self.generation(),
            path=str(self.path),
        )

    def backup(self, target: str | Path) -> None:
        """A consistent copy via SQLite's online backup API, safe while the store is in use."""
        target_path = Path(target)
        if target_path.exists():
            raise StoreError(f"backup target {target_path} exists; choose a new path")
        target_path.parent.mkdir(parents=True, exist_ok=True)
        dest = sqlite3.connect(str(target_path))
        try:
            with self._lock:
                self._conn.backup(dest)
        finally:
            dest.close()

    def restore(self, source: str | Path) -> None:
        """Replace this store's content with a backup taken by :meth:`backup`."""
        source_path = Path(source)
        if not source_path.is_file():
            raise NotFoundError(f"backup {source_path} does not exist")
        src = sqlite3.connect(f"file:{source_path}?mode=ro", uri=True)
        try:
            app_id = src.execute("PRAGMA application_id").fetchone()[0]
            version = src.execute("PRAGMA user_version").fetchone()[0]
            if app_id != APPLICATION_ID or not 1 <= version <= len(MIGRATIONS):
                raise SchemaVersionError(
                    f"backup {source_path} is not a seenbefore store this version can read "
                    f"(application_id {app_id:#x}, schema {version})"
                )
            with self._lock:
                src.backup(self._conn)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"backup {source_path}: not a readable SQLite file ({exc})") from exc
        finally:
            src.close()
        self._migrate()
        with self._write():
            pass  # bump the generation: every cache is now stale


def _blob(vector: npt.NDArray[np.float32]) -> bytes:
    return np.asarray(vector, dtype="<f4").tobytes()


def _count_change(conn: sqlite3.Connection, n: int) -> None:
    conn.execute(
        "UPDATE meta SET value = CAST(value AS INTEGER) + ? WHERE key = 'chunks_changed'", (n,)
    )


def _statements(script: str) -> list[str]:
    """Split a migration script into statements; a trigger body (BEGIN ...; END) stays whole."""
    out: list[str] = []
    pending = ""
    for piece in script.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n\t;"):
                out.append(pending.strip())
            pending = ""
    if pending.strip(" \n\t;"):
        out.append(pending.strip())
    return out


def _refresh_supersession(conn: sqlite3.Connection, doc_ids: Sequence[str]) -> None:
    """Recompute who supersedes each of ``doc_ids`` and their effective status."""
    for doc_id in doc_ids:
        conn.execute(
            "UPDATE documents SET superseded_by = (SELECT s.id FROM documents s"
            " WHERE s.supersedes = documents.id AND s.status = 'current'"
            " ORDER BY s.date DESC, s.id LIMIT 1) WHERE id = ?",
            (doc_id,),
        )
        conn.execute(
            "UPDATE documents SET effective_status = CASE WHEN status = 'superseded'"
            " OR superseded_by IS NOT NULL THEN 'superseded' ELSE 'current' END WHERE id = ?",
            (doc_id,),
        )


def _stored(row: sqlite3.Row, sections: tuple[Section, ...]) -> StoredDocument:
    date = dt.date.fromisoformat(row["date"]) if row["date"] else None
    return stored_document(row, sections, date=date, services=json.loads(row["services"]))


def _entry(row: sqlite3.Row) -> QuarantineEntry:
    return QuarantineEntry(
        id=row["id"],
        source=row["source"],
        reason=row["reason"],
        doc_id=row["doc_id"],
        content_hash=row["content_hash"],
        first_seen=row["first_seen"],
        last_seen=row["last_seen"],
        attempts=row["attempts"],
    )
