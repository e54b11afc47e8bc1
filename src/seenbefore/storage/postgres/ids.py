"""Ids regardless of case on the PostgreSQL store (as storage/sqlite/rows.py does for SQLite): the
case variants a write takes over, and the stored spelling a lookup finds. Both read through the
``lower(id)`` index of migration 4; a write runs under WRITE_LOCK, so the check and the write
cannot interleave with another writer's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from seenbefore.storage.base import id_case_clash
from seenbefore.storage.postgres import rows as pgrows
from seenbefore.storage.postgres.pool import Conn


def take_over(
    conn: Conn, doc_id: str, replaces: Sequence[str]
) -> tuple[Any, list[tuple[str, str | None]]]:
    """The stored row of ``doc_id`` (content_hash, supersedes, source), after deleting the
    documents whose ids differ from it only in case, each of which ``replaces`` must name
    (ConflictError for one it does not, before anything is deleted); with each deleted one's
    id and what it superseded."""
    variants = conn.execute(
        "SELECT id, supersedes FROM documents WHERE lower(id) = lower(%s) AND id <> %s",
        (doc_id, doc_id),
    ).fetchall()
    if any(v[0] not in replaces for v in variants):
        raise id_case_clash(doc_id)
    for variant, _ in variants:
        pgrows.count_change(conn, pgrows.delete_rows(conn, variant))
    old = conn.execute(
        "SELECT content_hash, supersedes, source FROM documents WHERE id = %s", (doc_id,)
    ).fetchone()
    return old, [(str(v[0]), v[1]) for v in variants]


def stored_id(conn: Conn, doc_id: str) -> str:
    """The stored spelling of ``doc_id`` among the rows the transaction may see (row-level
    security limits them to the caller's tiers); an exact match first; else ``doc_id``."""
    row = conn.execute(
        "SELECT id FROM documents WHERE lower(id) = lower(%s)"
        ' ORDER BY id = %s DESC, id COLLATE "C" LIMIT 1',
        (doc_id, doc_id),
    ).fetchone()
    return str(row[0]) if row else doc_id
