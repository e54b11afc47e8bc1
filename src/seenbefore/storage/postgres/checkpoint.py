"""LangGraph checkpoints in the PostgreSQL store's database (langgraph-checkpoint-postgres), so
that any replica can resume any review thread when ``SEENBEFORE_DATABASE_URL`` is set.

The checkpoint tables live in the ``seenbefore`` schema, owned by ``seenbefore_owner`` like
everything else: ``setup`` runs on a maintenance login, as the owner, under an advisory lock
(replicas starting together do not race), then grants the app role its data privileges. A
service login cannot create tables: it checks that they are there and current, and otherwise
says to run ``seenbefore database setup`` with the maintenance login. Review state carries no
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
from seenbefore.storage.postgres.schema import GRANTS, MIGRATIONS, OWNER_ROLE, SCHEMA, revokes

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
                for statement in revokes(len(MIGRATIONS)):  # the store migrated first
                    conn.execute(statement.encode())
            conn.execute("RESET ROLE")
            conn.execute("SELECT pg_advisory_unlock(%s)", (CHECKPOINT_LOCK,))
    except psycopg.Error as exc:
        raise StoreError(
            f"database {redact(url)}: cannot set up review checkpoints ({exc}); start the"
            " store once first (it creates the schema and roles)"
        ) from exc


def check_checkpoints(url: str) -> None:
    """StoreError unless LangGraph's checkpoint tables exist at the version this LangGraph
    writes (what a service login, which cannot create them, checks instead of setup)."""
    from langgraph.checkpoint.postgres import PostgresSaver

    wanted = len(PostgresSaver.MIGRATIONS) - 1
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            table = sql.Identifier(SCHEMA, "checkpoint_migrations")
            found = conn.execute(
                "SELECT to_regclass(%s) IS NOT NULL", (f"{SCHEMA}.checkpoint_migrations",)
            ).fetchone()
            row = (
                conn.execute(sql.SQL("SELECT max(v) FROM {}").format(table)).fetchone()
                if found and found[0]
                else None
            )
    except psycopg.Error as exc:
        raise StoreError(f"database {redact(url)}: cannot read review checkpoints ({exc})") from exc
    have = row[0] if row else None
    if have is None or int(have) < wanted:
        raise StoreError(
            f"database {redact(url)}: the review checkpoint tables are"
            f" {'missing' if have is None else f'at version {have}'} and LangGraph needs"
            f" {wanted}; a service login cannot create them: run `seenbefore database setup`"
            " with the maintenance login (SEENBEFORE_DATABASE_ADMIN_URL)"
        )


@contextmanager
def postgres_checkpointer(
    url: str, *, maintenance: bool = True, max_size: int = 4
) -> Iterator[Any]:
    """A ``PostgresSaver`` on its own small pool (it needs autocommit, dict rows and no prepared
    statements, unlike the store's pool). A maintenance login sets the tables up; a service
    login checks them."""
    from langgraph.checkpoint.postgres import PostgresSaver

    if maintenance:
        setup_checkpoints(url)
    else:
        check_checkpoints(url)
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
