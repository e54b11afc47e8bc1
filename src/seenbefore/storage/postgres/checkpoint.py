"""LangGraph checkpoints in the PostgreSQL store's database (langgraph-checkpoint-postgres), so
that any replica can resume any review thread when ``SEENBEFORE_DATABASE_URL`` is set.

The checkpoint tables live in the ``seenbefore`` schema, owned by ``seenbefore_owner`` like
everything else: ``setup`` runs once, as the owner, under an advisory lock (replicas starting
together do not race), then grants the app role its data privileges. Review state carries no
access tier of its own, so these tables have no row-level security; the review records that do
are filtered by the service.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from seenbefore.errors import StoreError
from seenbefore.storage.postgres.pool import redact
from seenbefore.storage.postgres.schema import GRANTS, OWNER_ROLE, REVOKE_APPEND_ONLY, SCHEMA

CHECKPOINT_LOCK = 0x5EEB_0003


def setup_checkpoints(url: str) -> None:
    """Create or migrate LangGraph's checkpoint tables (idempotent, safe to race)."""
    from langgraph.checkpoint.postgres import PostgresSaver

    try:
        with psycopg.connect(
            url, autocommit=True, prepare_threshold=0, row_factory=dict_row
        ) as conn:
            conn.execute("SELECT pg_advisory_lock(%s)", (CHECKPOINT_LOCK,))
            conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(OWNER_ROLE)))
            conn.execute(sql.SQL("SET search_path = {}").format(sql.Identifier(SCHEMA)))
            PostgresSaver(conn).setup()
            with conn.transaction():  # no moment where the app role may edit the audit log
                for statement in filter(str.strip, GRANTS.split(";")):
                    conn.execute(statement.encode())
                conn.execute(REVOKE_APPEND_ONLY.encode())  # the store migrated: audit_log exists
            conn.execute("RESET ROLE")
            conn.execute("SELECT pg_advisory_unlock(%s)", (CHECKPOINT_LOCK,))
    except psycopg.Error as exc:
        raise StoreError(
            f"database {redact(url)}: cannot set up review checkpoints ({exc}); start the"
            " store once first (it creates the schema and roles)"
        ) from exc


@contextmanager
def postgres_checkpointer(url: str, *, max_size: int = 4) -> Iterator[Any]:
    """A ``PostgresSaver`` on its own small pool (it needs autocommit, dict rows and no prepared
    statements, unlike the store's pool)."""
    from langgraph.checkpoint.postgres import PostgresSaver

    setup_checkpoints(url)
    pool: ConnectionPool[Any] = ConnectionPool(
        url,
        min_size=1,
        max_size=max_size,
        kwargs={
            "autocommit": True,
            "prepare_threshold": 0,
            "row_factory": dict_row,
            "options": f"-c search_path={SCHEMA}",
            "application_name": "seenbefore-checkpoints",
        },
        name="seenbefore-checkpoints",
        open=False,
    )
    pool.open(wait=True)
    try:
        yield PostgresSaver(pool)
    finally:
        pool.close()
