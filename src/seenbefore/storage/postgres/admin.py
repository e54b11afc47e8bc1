"""The PostgreSQL store's housekeeping statements: claiming the embedder, quarantine rows, the
audit log's append-only guards, and the table list `seenbefore migrate` copies
(storage/postgres/store.py runs them in its transactions)."""

from __future__ import annotations

from typing import Any

from psycopg import sql
from psycopg.rows import dict_row

from seenbefore.errors import EmbedderMismatchError
from seenbefore.storage.postgres.pool import Conn
from seenbefore.storage.postgres.rows import bump, type_vectors
from seenbefore.storage.postgres.schema import APP_ROLE, AUDIT_FORBIDDEN, AUDIT_TRIGGERS
from seenbefore.types import QuarantineEntry


def claim_embedder(conn: Conn, name: str, dim: int, *, where: str) -> None:
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
            type_vectors(conn, dim)
    elif row[0] != name or int(row[1]) != dim:
        raise EmbedderMismatchError(
            f"store {where} holds vectors from {row[0]} (dim {row[1]}), refusing to mix "
            f"in {name} (dim {dim}); run `seenbefore reindex` to re-embed everything"
        )


def upsert_quarantine(
    conn: Conn, source: str, reason: str, doc_id: str | None, digest: str, now: str
) -> int:
    row = conn.execute(
        "INSERT INTO quarantine (source, reason, doc_id, content_hash, first_seen,"
        " last_seen) VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (source) DO UPDATE SET"
        " reason = excluded.reason, doc_id = excluded.doc_id,"
        " content_hash = excluded.content_hash, last_seen = excluded.last_seen,"
        " attempts = quarantine.attempts + 1 RETURNING id",
        (source, reason, doc_id, digest, now, now),
    ).fetchone()
    bump(conn)
    return int(row[0]) if row else 0


def quarantine_entries(conn: Conn, entry_id: int | None = None) -> list[QuarantineEntry]:
    """Every entry in id order, or the one numbered ``entry_id`` (none when there is none)."""
    cur = conn.cursor(row_factory=dict_row)
    if entry_id is None:
        rows = cur.execute("SELECT * FROM quarantine ORDER BY id").fetchall()
    else:
        rows = cur.execute("SELECT * FROM quarantine WHERE id = %s", (entry_id,)).fetchall()
    return [QuarantineEntry(**r) for r in rows]


def delete_quarantine(conn: Conn, column: str, value: object) -> None:
    done = conn.execute(
        sql.SQL("DELETE FROM quarantine WHERE {} = %s").format(sql.Identifier(column)), (value,)
    )
    if done.rowcount:
        bump(conn)


def audit_guards_missing(conn: Conn) -> str:
    """What is missing of the audit log's guards: its enabled triggers (migrations 2 and 3)
    and the app role's lack of UPDATE, DELETE and TRUNCATE; '' when all are in place."""
    enabled = {
        str(r[0])
        for r in conn.execute(
            "SELECT tgname FROM pg_trigger WHERE tgrelid = 'audit_log'::regclass"
            " AND NOT tgisinternal AND tgenabled <> 'D'"
        ).fetchall()
    }
    missing = [t for t in AUDIT_TRIGGERS if t not in enabled]
    if missing:
        return f"the append-only trigger(s) {', '.join(missing)} are missing or disabled"
    held = [
        p
        for p in AUDIT_FORBIDDEN
        if _first(
            conn.execute(
                "SELECT has_table_privilege(%s::name, 'audit_log'::regclass, %s::text)",
                (APP_ROLE, p),
            ).fetchone()
        )
    ]
    if held:
        return f"the app role {APP_ROLE} may {', '.join(held)} audit_log rows"
    return ""


def table_names(conn: Conn) -> list[str]:
    rows = conn.execute(
        "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
    ).fetchall()
    return [r[0] for r in rows]


def _first(row: Any) -> Any:
    return row[0] if row else None
