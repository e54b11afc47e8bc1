"""The statements one PostgreSQL store transaction runs: writing a document's rows (sections,
chunks, vectors), deleting them, keeping supersession in step, the change log, and reading
documents back."""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from psycopg import sql
from psycopg.rows import dict_row

from seenbefore.errors import StoreError
from seenbefore.storage.base import (
    CHANGE_LOG_GENERATIONS,
    CorpusChanges,
    EmbeddedVectors,
    StoreStats,
    changes_from_log,
    stored_document,
)
from seenbefore.storage.postgres.pool import Conn
from seenbefore.storage.postgres.schema import SCHEMA, TYPE_VECTORS_FUNCTION
from seenbefore.types import Chunk, Postmortem, Section, StoredDocument


def bump(
    conn: Conn,
    doc_ids: Collection[str] = (),
    status_ids: Collection[str] = (),
    *,
    everything: bool = False,
) -> None:
    """Move the corpus generation and record what this write changed in the change log
    (migration 7): documents written or deleted (``doc_ids``), documents whose supersession it
    may have moved (``status_ids``), 'none' when neither, 'all' with ``everything``; entries
    older than CHANGE_LOG_GENERATIONS generations are dropped. Runs server-side, one statement
    each, so it pipelines."""
    written = sorted(set(doc_ids))
    moved = sorted(set(status_ids) - set(doc_ids))
    kinds = ["document"] * len(written) + ["status"] * len(moved)
    ids = written + moved
    if everything or not ids:
        kinds, ids = ["all" if everything else "none"], [""]
    conn.execute(
        "WITH g AS (UPDATE meta SET value = (value::bigint + 1)::text WHERE key = 'generation'"
        " RETURNING value::bigint AS generation)"
        " INSERT INTO changes (generation, kind, doc_id)"
        " SELECT g.generation, e.kind, e.doc_id FROM g, unnest(%s::text[], %s::text[])"
        " AS e (kind, doc_id)",
        (kinds, ids),
    )
    conn.execute(
        "DELETE FROM changes WHERE generation <= (SELECT value::bigint FROM meta"
        " WHERE key = 'generation') - %s",
        (CHANGE_LOG_GENERATIONS,),
    )


def changes_since(conn: Conn, since: int) -> CorpusChanges | None:
    """The change log after ``since`` with the generation it reaches (the caller's one
    REPEATABLE READ transaction: a snapshot)."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
    generation = int(row[0]) if row else 0
    if since >= generation:
        return changes_from_log(since, generation, [])
    entries = conn.execute(
        "SELECT generation, kind, doc_id FROM changes WHERE generation > %s AND generation <= %s",
        (since, generation),
    ).fetchall()
    return changes_from_log(since, generation, [(int(r[0]), r[1], r[2]) for r in entries])


def bump_settings(conn: Conn) -> None:
    """A settings write: the settings generation moves, the corpus generation does not."""
    conn.execute(
        "INSERT INTO meta (key, value) VALUES ('settings_generation', '1') ON CONFLICT (key) DO "
        "UPDATE SET value = (meta.value::bigint + 1)::text"
    )


def count_change(conn: Conn, changed: int) -> None:
    """Chunks written or deleted (LSA staleness reads the running count)."""
    conn.execute(
        "UPDATE meta SET value = (value::bigint + %s)::text WHERE key = 'chunks_changed'",
        (changed,),
    )


def type_vectors(conn: Conn, dim: int) -> None:
    """Give the vector column its dimension, so a vector of another one is refused: DDL the
    owner's function (migrations 5 and 8) runs, so a service login's first claim works too. No
    index: searches read the vectors into each replica's memory."""
    conn.execute(
        sql.SQL("SELECT {}.{}(%s)").format(
            sql.Identifier(SCHEMA), sql.Identifier(TYPE_VECTORS_FUNCTION)
        ),
        (dim,),
    )


def insert_children(
    conn: Conn,
    pm: Postmortem,
    chunks: Sequence[Chunk],
    vectors: EmbeddedVectors | None,
    claim: Callable[[Conn, str, int], None],
) -> None:
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO sections (doc_id, position, key, heading, text, access_tier)"
            " VALUES (%s, %s, %s, %s, %s, %s)",
            [(pm.id, s.position, s.key, s.heading, s.text, pm.access_tier) for s in pm.sections],
        )
        if not chunks:
            return
        ids = [
            int(r[0])
            for r in conn.execute(
                "SELECT nextval(pg_get_serial_sequence('chunks', 'id')) FROM generate_series(1, %s)",
                (len(chunks),),
            ).fetchall()
        ]
        cur.executemany(
            "INSERT INTO chunks (id, doc_id, section_key, section_heading, section_position,"
            " position, text, access_tier) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
            [
                (i, c.doc_id, c.section_key, c.section_heading, c.section_position, c.position,
                 c.text, pm.access_tier)
                for i, c in zip(ids, chunks, strict=True)
            ],
        )  # fmt: skip
        if vectors is not None:
            claim(conn, vectors.name, int(vectors.matrix.shape[1]))
            cur.executemany(
                "INSERT INTO vectors (chunk_id, doc_id, access_tier, embedding)"
                " VALUES (%s, %s, %s, %s)",
                [
                    (i, pm.id, pm.access_tier, np.asarray(v, dtype=np.float32))
                    for i, v in zip(ids, vectors.matrix, strict=True)
                ],
            )


def delete_rows(conn: Conn, doc_id: str) -> int:
    """Delete a document (sections, chunks and vectors cascade); returns how many chunks it
    had."""
    row = conn.execute("SELECT count(*) FROM chunks WHERE doc_id = %s", (doc_id,)).fetchone()
    conn.execute("DELETE FROM documents WHERE id = %s", (doc_id,))
    return int(row[0]) if row else 0


def refresh_supersession(conn: Conn, doc_ids: Sequence[str]) -> None:
    """Recompute who supersedes each of ``doc_ids`` and their effective status."""
    ids = list(doc_ids)
    conn.execute(
        "UPDATE documents d SET superseded_by = (SELECT s.id FROM documents s"
        " WHERE s.supersedes = d.id AND s.status = 'current'"
        ' ORDER BY s.date DESC NULLS LAST, s.id COLLATE "C" LIMIT 1) WHERE d.id = ANY (%s)',
        (ids,),
    )
    conn.execute(
        "UPDATE documents SET effective_status = CASE WHEN status = 'superseded'"
        " OR superseded_by IS NOT NULL THEN 'superseded' ELSE 'current' END WHERE id = ANY (%s)",
        (ids,),
    )


def documents(conn: Conn, doc_ids: list[str]) -> dict[str, StoredDocument]:
    cur = conn.cursor(row_factory=dict_row)
    rows = cur.execute(
        "SELECT d.*, (SELECT count(*) FROM chunks c WHERE c.doc_id = d.id) AS n_chunks"
        " FROM documents d WHERE d.id = ANY (%s)",
        (doc_ids,),
    ).fetchall()
    sections: dict[str, list[Section]] = {}
    for s in cur.execute(
        "SELECT doc_id, position, key, heading, text FROM sections WHERE doc_id = ANY (%s)"
        " ORDER BY doc_id, position",
        (doc_ids,),
    ).fetchall():
        sections.setdefault(s["doc_id"], []).append(
            Section(s["key"], s["heading"], s["text"], s["position"])
        )
    return {r["id"]: _stored(r, tuple(sections.get(r["id"], []))) for r in rows}


def _stored(row: dict[str, Any], sections: tuple[Section, ...]) -> StoredDocument:
    return stored_document(row, sections, date=row["date"], services=row["services"])


def table_rows(conn: Conn, table: str) -> list[dict[str, Any]]:
    cur = conn.cursor(row_factory=dict_row)
    return cur.execute(sql.SQL("SELECT * FROM {}").format(sql.Identifier(table))).fetchall()


def write_table_rows(
    conn: Conn, table: str, key: str, rows: Sequence[dict[str, Any]], skip: str | None
) -> int:
    """Insert ``rows`` (columns both stores have), updating rows with the same ``key``; the
    append-only audit log only gains rows. Identity sequences move past copied ids."""
    if not rows:
        return 0
    have = {
        r[0]
        for r in conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema ="
            " current_schema() AND table_name = %s",
            (table,),
        ).fetchall()
    }
    cols = [c for c in rows[0] if c in have and c != skip]
    update = [c for c in cols if c != key]
    action = (
        sql.SQL("NOTHING")
        if table == "audit_log" or not update
        else sql.SQL("UPDATE SET {}").format(
            sql.SQL(", ").join(
                sql.SQL("{c} = excluded.{c}").format(c=sql.Identifier(c)) for c in update
            )
        )
    )
    statement = sql.SQL("INSERT INTO {t} ({cols}) VALUES ({vals}) ON CONFLICT ({key}) DO {act}")
    with conn.cursor() as cur:
        cur.executemany(
            statement.format(
                t=sql.Identifier(table),
                cols=sql.SQL(", ").join(map(sql.Identifier, cols)),
                vals=sql.SQL(", ").join(sql.Placeholder() * len(cols)),
                key=sql.Identifier(key),
                act=action,
            ),
            [[r[c] for c in cols] for r in rows],
        )
    sequence = (
        conn.execute("SELECT pg_get_serial_sequence(%s, 'id')", (table,)).fetchone()
        if "id" in cols
        else None
    )
    if sequence and sequence[0]:  # text ids (api_tokens, reviews) have no sequence
        conn.execute(
            sql.SQL("SELECT setval(%s, greatest((SELECT max(id) FROM {t}), 1))").format(
                t=sql.Identifier(table)
            ),
            (sequence[0],),
        )
    return len(rows)


def load_vectors(
    conn: Conn, name: str, chunk_ids: Sequence[int], matrix: npt.NDArray[np.float32]
) -> None:
    """Replace every vector (COPY into a temporary table, one INSERT with each chunk's document
    and tier, which row-level security reads) and type the column for this dimension. Runs as
    the owner (DDL); the statement timeout does not apply to this maintenance."""
    dim = int(matrix.shape[1]) if len(matrix) else 0
    conn.execute("SELECT set_config('statement_timeout', '0', true)")
    conn.execute("DELETE FROM vectors")
    conn.execute("DELETE FROM meta WHERE key IN ('embedder_name', 'embedder_dim')")
    conn.execute(
        "INSERT INTO meta (key, value) VALUES ('embedder_name', %s), ('embedder_dim', %s)",
        (name, str(dim)),
    )
    if dim == 0:
        bump(conn, everything=True)
        return
    conn.execute(
        sql.SQL("ALTER TABLE vectors ALTER COLUMN embedding TYPE vector({})").format(
            sql.Literal(dim)
        )
    )
    conn.execute("CREATE TEMP TABLE incoming (chunk_id bigint, embedding vector) ON COMMIT DROP")
    with conn.cursor().copy(
        "COPY incoming (chunk_id, embedding) FROM STDIN WITH (FORMAT BINARY)"
    ) as copy:
        copy.set_types(["bigint", "vector"])
        for chunk_id, vector in zip(chunk_ids, matrix, strict=True):
            copy.write_row((int(chunk_id), np.asarray(vector, dtype=np.float32)))
    done = conn.execute(
        "INSERT INTO vectors (chunk_id, doc_id, access_tier, embedding)"
        " SELECT c.id, c.doc_id, c.access_tier, i.embedding FROM incoming i"
        " JOIN chunks c ON c.id = i.chunk_id"
    )
    if done.rowcount != len(chunk_ids):
        raise StoreError(
            f"{len(chunk_ids) - done.rowcount} of {len(chunk_ids)} chunk ids are not in"
            " the store; embed the chunks `chunk_rows()` returns"
        )
    conn.execute("ANALYZE vectors")
    bump(conn, everything=True)


def superseder(conn: Conn, doc_id: str, tiers: Sequence[str]) -> str | None:
    """The newest current document in ``tiers`` that supersedes ``doc_id`` (the order of
    :func:`refresh_supersession`); row-level security limits the read to them as well."""
    row = conn.execute(
        "SELECT s.id FROM documents s WHERE s.supersedes = %s AND s.status = 'current'"
        ' AND s.access_tier = ANY (%s) ORDER BY s.date DESC NULLS LAST, s.id COLLATE "C" LIMIT 1',
        (doc_id, list(tiers)),
    ).fetchone()
    return str(row[0]) if row else None


# current for a caller holding the tiers in the one parameter (storage/supersession.py)
_CURRENT_FOR = (
    "(d.status = 'current' AND NOT EXISTS (SELECT 1 FROM documents s WHERE s.supersedes = d.id"
    " AND s.status = 'current' AND s.access_tier = ANY (%s)))"
)


def superseded_for(conn: Conn, tiers: Sequence[str]) -> list[str]:
    """Ids of documents in ``tiers`` that are superseded for a caller holding them."""
    rows = conn.execute(
        f"SELECT d.id FROM documents d WHERE d.access_tier = ANY (%s) AND NOT {_CURRENT_FOR}",
        (list(tiers), list(tiers)),
    ).fetchall()
    return [str(r[0]) for r in rows]


def read_stats(conn: Conn, visible: list[str], path: str) -> StoreStats:
    docs = conn.execute(
        f"SELECT count(*), count(*) FILTER (WHERE {_CURRENT_FOR}),"
        f" count(*) FILTER (WHERE NOT {_CURRENT_FOR}) FROM documents d"
        " WHERE d.access_tier = ANY (%s)",
        (visible, visible, visible),
    ).fetchone() or (0, 0, 0)
    chunks = conn.execute(
        "SELECT count(*) FROM chunks WHERE access_tier = ANY (%s)", (visible,)
    ).fetchone()
    by_type = conn.execute(
        "SELECT type, count(*) FROM documents WHERE access_tier = ANY (%s)"
        " GROUP BY type ORDER BY 2 DESC, 1",
        (visible,),
    ).fetchall()
    by_tier = conn.execute(
        "SELECT access_tier, count(*) FROM documents WHERE access_tier = ANY (%s)"
        " GROUP BY 1 ORDER BY 1",
        (visible,),
    ).fetchall()
    meta: dict[str, str] = dict(
        conn.execute(
            "SELECT key, value FROM meta WHERE key IN ('schema_version', 'generation')"
        ).fetchall()
    )
    quarantined = conn.execute("SELECT count(*) FROM quarantine").fetchone()
    return StoreStats(
        documents=int(docs[0]),
        current=int(docs[1]),
        superseded=int(docs[2]),
        chunks=int(chunks[0]) if chunks else 0,
        by_type={(r[0] or "(none)"): int(r[1]) for r in by_type},
        by_tier={r[0]: int(r[1]) for r in by_tier},
        quarantined=int(quarantined[0]) if quarantined else 0,
        schema_version=int(meta.get("schema_version", 0)),
        generation=int(meta.get("generation", 0)),
        path=path,
    )


def insert_document(conn: Conn, pm: Postmortem, now: str) -> None:
    conn.execute(
        "INSERT INTO documents (id, title, date, severity, status, effective_status,"
        " supersedes, access_tier, type, services, tags, signals, extra, body, source,"
        " content_hash, ingested_at, updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s,"
        " %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
        (pm.id, pm.title, pm.date, pm.severity, pm.status, pm.status, pm.supersedes,
         pm.access_tier, pm.type, list(pm.services), json.dumps(pm.tags),
         json.dumps(pm.signals), json.dumps(pm.extra, sort_keys=True), pm.body, pm.source,
         pm.content_hash, now, now),
    )  # fmt: skip
