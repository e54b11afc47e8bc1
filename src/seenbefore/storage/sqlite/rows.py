"""The statements the SQLite store runs inside its transactions and reads: a document's rows,
supersession, quarantine rows, counts, decoding rows back into values, and whole tables'
rows for `seenbefore migrate` (storage/sqlite/store.py holds the connection, its lock and the
transactions)."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from seenbefore.storage.base import (
    CHANGE_LOG_GENERATIONS,
    CorpusChanges,
    StoreStats,
    changes_from_log,
    id_case_clash,
    stored_document,
)
from seenbefore.storage.sqlite.filters import current_sql
from seenbefore.types import Chunk, Postmortem, QuarantineEntry, Section, StoredDocument

Read = Callable[[str, Sequence[Any]], list[sqlite3.Row]]


def fts_query(terms: Sequence[str]) -> str:
    """OR-join terms, each quoted, so user text is never FTS5 syntax."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def insert_document(conn: sqlite3.Connection, pm: Postmortem, now: str) -> None:
    """The document's row, its services and its sections."""
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


def insert_chunk(conn: sqlite3.Connection, chunk: Chunk) -> int:
    """The chunk's row and its FTS5 row; returns the chunk id."""
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
    conn.execute("INSERT INTO chunks_fts (rowid, text) VALUES (?, ?)", (cur.lastrowid, chunk.text))
    return int(cur.lastrowid or 0)


def delete_rows(conn: sqlite3.Connection, doc_id: str) -> None:
    conn.execute(
        "DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM chunks WHERE doc_id = ?)",
        (doc_id,),
    )
    conn.execute("DELETE FROM documents WHERE id = ?", (doc_id,))  # cascades


def take_over(
    conn: sqlite3.Connection, doc_id: str, replaces: Sequence[str]
) -> tuple[sqlite3.Row | None, list[tuple[str, str | None]]]:
    """The stored row of ``doc_id`` (content_hash, supersedes, source), after deleting the
    documents whose ids differ from it only in case, each of which ``replaces`` must name
    (ConflictError for one it does not, before anything is deleted); with each deleted one's
    id and what it superseded."""
    variants = conn.execute(
        "SELECT id, supersedes FROM documents WHERE lower(id) = lower(?) AND id <> ?",
        (doc_id, doc_id),
    ).fetchall()
    if any(v["id"] not in replaces for v in variants):
        raise id_case_clash(doc_id)
    for variant in variants:
        n = conn.execute("SELECT count(*) FROM chunks WHERE doc_id = ?", (variant["id"],))
        count_change(conn, int(n.fetchone()[0]))
        delete_rows(conn, variant["id"])
    old = conn.execute(
        "SELECT content_hash, supersedes, source FROM documents WHERE id = ?", (doc_id,)
    ).fetchone()
    return old, [(v["id"], v["supersedes"]) for v in variants]


def stored_id(read: Read, doc_id: str, tiers: Sequence[str]) -> str:
    """The stored spelling of ``doc_id`` among documents in ``tiers`` (ids match regardless of
    case; an exact match first), else ``doc_id`` itself."""
    rows = read(
        f"SELECT id FROM documents WHERE lower(id) = lower(?) AND access_tier IN"
        f" ({','.join('?' * len(tiers))}) ORDER BY id = ? DESC, id LIMIT 1",
        [doc_id, *tiers, doc_id],
    )
    return str(rows[0][0]) if rows else doc_id


def superseder(read: Read, doc_id: str, tiers: Sequence[str]) -> str | None:
    """The newest current document in ``tiers`` that supersedes ``doc_id`` (the order of
    :func:`refresh_supersession`)."""
    rows = read(
        "SELECT s.id FROM documents s WHERE s.supersedes = ? AND s.status = 'current'"
        f" AND s.access_tier IN ({','.join('?' * len(tiers))}) ORDER BY s.date DESC, s.id LIMIT 1",
        [doc_id, *tiers],
    )
    return str(rows[0][0]) if rows else None


def blob(vector: npt.NDArray[np.float32]) -> bytes:
    return np.asarray(vector, dtype="<f4").tobytes()


def bump(
    conn: sqlite3.Connection,
    doc_ids: Collection[str],
    status_ids: Collection[str] = (),
    *,
    everything: bool = False,
) -> None:
    """Move the corpus generation and record what this write changed in the change log
    (migration 6): documents written or deleted (``doc_ids``), documents whose supersession it
    may have moved (``status_ids``), 'none' when neither, 'all' with ``everything``; entries
    older than CHANGE_LOG_GENERATIONS generations are dropped."""
    conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'")
    generation = int(conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()[0])
    entries = [(generation, "document", d) for d in sorted(set(doc_ids))]
    entries += [(generation, "status", d) for d in sorted(set(status_ids) - set(doc_ids))]
    if everything:
        entries = [(generation, "all", "")]
    elif not entries:
        entries = [(generation, "none", "")]
    conn.executemany(
        "INSERT OR IGNORE INTO changes (generation, kind, doc_id) VALUES (?, ?, ?)", entries
    )
    conn.execute(
        "DELETE FROM changes WHERE generation <= ?", (generation - CHANGE_LOG_GENERATIONS,)
    )


def changes_since(read: Read, since: int) -> CorpusChanges | None:
    """The change log after ``since`` with the generation it reaches (one read, under the
    store's lock: a snapshot)."""
    generation = int(read("SELECT value FROM meta WHERE key = 'generation'", ())[0][0])
    if since >= generation:
        return changes_from_log(since, generation, [])
    entries = read(
        "SELECT generation, kind, doc_id FROM changes WHERE generation > ? AND generation <= ?",
        (since, generation),
    )
    return changes_from_log(since, generation, [(int(r[0]), r[1], r[2]) for r in entries])


def in_batches(ids: Sequence[Any], size: int = 500) -> Iterator[list[Any]]:
    """``ids`` in lists of at most ``size`` (bound parameters per statement stay few)."""
    for start in range(0, len(ids), size):
        yield list(ids[start : start + size])


def count_change(conn: sqlite3.Connection, n: int) -> None:
    conn.execute(
        "UPDATE meta SET value = CAST(value AS INTEGER) + ? WHERE key = 'chunks_changed'", (n,)
    )


def statements(script: str) -> list[str]:
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


def refresh_supersession(conn: sqlite3.Connection, doc_ids: Sequence[str]) -> None:
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


def documents(read: Read, doc_ids: Sequence[str]) -> dict[str, StoredDocument]:
    """Stored documents (with their sections and chunk counts) for ``doc_ids``."""
    if not doc_ids:
        return {}
    marks = ",".join("?" * len(doc_ids))
    rows = read(
        f"SELECT d.*, (SELECT count(*) FROM chunks c WHERE c.doc_id = d.id) AS n_chunks"
        f" FROM documents d WHERE d.id IN ({marks})",
        list(doc_ids),
    )
    sections: dict[str, list[Section]] = {}
    for s in read(
        f"SELECT * FROM sections WHERE doc_id IN ({marks}) ORDER BY doc_id, position",
        list(doc_ids),
    ):
        sections.setdefault(s["doc_id"], []).append(
            Section(s["key"], s["heading"], s["text"], s["position"])
        )
    return {r["id"]: _stored(r, tuple(sections.get(r["id"], []))) for r in rows}


def chunk(row: sqlite3.Row) -> Chunk:
    return Chunk(
        row["doc_id"],
        row["section_key"],
        row["section_heading"],
        row["section_position"],
        row["position"],
        row["text"],
    )


def read_stats(read: Read, tiers: Sequence[str], *, generation: int, path: str) -> StoreStats:
    marks = ",".join("?" * len(tiers)) or "NULL"
    visible = f"access_tier IN ({marks})"
    t = list(tiers)
    current, current_params = current_sql(tuple(tiers))
    row = read(
        f"SELECT count(*), sum(c), count(*) - sum(c) FROM (SELECT {current} AS c"
        f" FROM documents d WHERE d.{visible})",
        [*current_params, *t],
    )[0]
    chunks = read(
        f"SELECT count(*) FROM chunks c JOIN documents d ON d.id = c.doc_id WHERE d.{visible}",
        t,
    )[0][0]
    by_type = {
        r[0] or "(none)": r[1]
        for r in read(
            f"SELECT type, count(*) FROM documents WHERE {visible} GROUP BY type ORDER BY 2 DESC",
            t,
        )
    }
    by_tier = {
        r[0]: r[1]
        for r in read(f"SELECT access_tier, count(*) FROM documents WHERE {visible} GROUP BY 1", t)
    }
    return StoreStats(
        documents=row[0],
        current=row[1] or 0,
        superseded=row[2] or 0,
        chunks=chunks,
        by_type=by_type,
        by_tier=by_tier,
        quarantined=read("SELECT count(*) FROM quarantine", ())[0][0],
        schema_version=read("PRAGMA user_version", ())[0][0],
        generation=generation,
        path=path,
    )


def upsert_quarantine(
    conn: sqlite3.Connection, source: str, reason: str, doc_id: str | None, digest: str, now: str
) -> int:
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


def _stored(row: sqlite3.Row, sections: tuple[Section, ...]) -> StoredDocument:
    date = dt.date.fromisoformat(row["date"]) if row["date"] else None
    return stored_document(row, sections, date=date, services=json.loads(row["services"]))


def entry(row: sqlite3.Row) -> QuarantineEntry:
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


# -- whole tables, for `seenbefore migrate` (storage/transfer.py) -----------------------------
def write_table_rows(
    conn: sqlite3.Connection,
    table: str,
    key: str,
    rows: Sequence[dict[str, Any]],
    skip: str | None,
) -> int:
    """Insert ``rows`` (the table's columns they carry, less ``skip``), updating rows with the
    same ``key``; the append-only audit log only gains rows."""
    have = [str(r[1]) for r in conn.execute(f'PRAGMA table_info("{table}")')]
    cols = [c for c in have if c in rows[0] and c != skip]
    quoted = ", ".join(f'"{c}"' for c in cols)
    update = ", ".join(f'"{c}" = excluded."{c}"' for c in cols if c != key)
    action = "NOTHING" if table == "audit_log" or not update else f"UPDATE SET {update}"
    conn.executemany(
        f'INSERT INTO "{table}" ({quoted}) VALUES ({", ".join("?" * len(cols))})'
        f' ON CONFLICT ("{key}") DO {action}',
        [
            [bytes(v) if isinstance(v, memoryview) else v for v in (r[c] for c in cols)]
            for r in rows
        ],
    )
    return len(rows)
