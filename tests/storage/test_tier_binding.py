"""Tiers bound by PostgreSQL itself (issue 26, part 3): a session of the service login (a member
of the app role only) reads restricted rows only through a tier key that grants them, whatever
else it tries: writing settings, SET ROLE to the owner, calling the binder without a key or with
a forged one, replaying another session's binding, writing the key table, or changing policies.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import psycopg
import pytest
from psycopg import errors as pg_errors

from seenbefore.errors import NotFoundError, SchemaVersionError, StoreError
from seenbefore.storage.base import EmbeddedVectors
from seenbefore.storage.postgres.maintenance import Maintenance
from seenbefore.storage.postgres.store import PostgresStore
from tests.storage.test_contract import doc, put

pytestmark = pytest.mark.integration

Conn = psycopg.Connection[tuple[object, ...]]
BIND = "SELECT set_config('seenbefore.binding', seenbefore.bind_tiers(%s, %s, %s), true)"
TABLES = {"documents": "id", "sections": "doc_id", "chunks": "doc_id", "vectors": "doc_id"}
CHANGES = "SELECT doc_id FROM seenbefore.changes WHERE doc_id = 'SECRET'"


@pytest.fixture
def seeded(pg_url: str) -> Iterator[tuple[str, str]]:
    """A database holding OPEN (general) and SECRET (restricted), with vectors; the keys of
    a general-only tier key and of an every-tier key."""
    with PostgresStore(pg_url) as store:
        pm, chunks = doc("SECRET", "## Summary\nquasar nebula\n", access_tier="restricted")
        store.upsert(pm, chunks, EmbeddedVectors("fake-4", np.ones((len(chunks), 4), "float32")))
        put(store, "OPEN", "quasar pulsar")
    with Maintenance(pg_url) as admin:
        narrow, _, _ = admin.make_key("narrow", ["general"])
        wide, _, _ = admin.make_key("wide", None)
    yield narrow, wide


def secret_rows(conn: Conn) -> int:
    """Rows of SECRET visible in the four tables with row-level security."""
    total = 0
    for table, column in TABLES.items():
        row = conn.execute(
            f"SELECT count(*) FROM seenbefore.{table} WHERE {column} = 'SECRET'"
        ).fetchone()
        total += int(row[0]) if row else 0
    return total


def refused(conn: Conn, attempt: Callable[[Conn], object]) -> str:
    """Run ``attempt`` in a transaction that must fail for lack of privilege; its message."""
    with pytest.raises(pg_errors.InsufficientPrivilege) as caught, conn.transaction():
        attempt(conn)
    return str(caught.value)


def test_the_service_login_cannot_widen_its_tiers(
    seeded: tuple[str, str], pg_url: str, pg_service_url: str
) -> None:
    narrow, _ = seeded
    # a maintenance session binds every tier (and the value it gets is replayed below)
    with psycopg.connect(pg_url, autocommit=True) as admin, admin.transaction():
        issued = admin.execute(BIND, (None, None, True)).fetchone()
        assert issued is not None and "|*|" in str(issued[0])
        assert secret_rows(admin) >= 4  # the document, and its sections, chunks, vectors
    with psycopg.connect(pg_service_url, autocommit=True) as conn:
        who = conn.execute(
            "SELECT rolsuper, rolbypassrls, pg_has_role(session_user, 'seenbefore_owner', 'SET')"
            " FROM pg_roles WHERE rolname = session_user"
        ).fetchone()
        assert who == (False, False, False)
        assert secret_rows(conn) == 0  # nothing bound: nothing visible

        # settings it may write: migration 1's, and a binding of its own making
        with conn.transaction():
            conn.execute("SELECT set_config('seenbefore.tiers', 'restricted,general', true)")
            conn.execute("SELECT set_config('seenbefore.all_tiers', 'on', true)")
            assert secret_rows(conn) == 0
        forged = f"{conn.info.backend_pid}|0|*|{'0' * 64}"
        for value in (forged, "*", "restricted", str(issued[0])):  # the last: another session's
            message = refused(
                conn,
                lambda c, v=value: (
                    c.execute("SELECT set_config('seenbefore.binding', %s, true)", (v,)),
                    secret_rows(c),
                ),
            )
            assert "seenbefore.binding" in message
        # the binder without a key, with a forged key, with its key asking for more
        assert "gave no tier key" in refused(
            conn, lambda c: c.execute(BIND, (None, ["restricted"], False))
        )
        assert "unknown or revoked" in refused(
            conn, lambda c: c.execute(BIND, ("sbk_" + "A" * 43, ["restricted"], False))
        )
        assert "grants only the tiers" in refused(
            conn, lambda c: c.execute(BIND, (narrow, None, True))
        )
        with conn.transaction():
            conn.execute(BIND, (narrow, ["restricted", "general", "*"], False))
            assert secret_rows(conn) == 0
            # the change log names restricted ids: only a binding of every tier reads it
            assert conn.execute(CHANGES).fetchall() == []
            updated = conn.execute(
                "UPDATE seenbefore.documents SET access_tier = 'general' WHERE id = 'SECRET'"
            )
            assert updated.rowcount == 0  # a row it cannot see, it cannot change
        # a binding replayed in a later transaction of the same session
        with conn.transaction():
            mine = conn.execute(BIND, (narrow, ["general"], False)).fetchone()
        assert "seenbefore.binding" in refused(
            conn,
            lambda c: (
                c.execute("SELECT set_config('seenbefore.binding', %s, true)", (mine[0],)),
                secret_rows(c),
            ),
        )
        # roles, the key table, the secret, the policies, the functions
        attempts = {
            "SET ROLE seenbefore_owner": "permission denied to set role",
            "SET SESSION AUTHORIZATION seenbefore_owner": "permission denied",
            "INSERT INTO seenbefore.tier_keys (id, name, key_hash, created_at)"
            " VALUES ('k', 'mine', encode(sha256('sbk_x'), 'hex'), 'now')": "permission denied",
            "SELECT * FROM seenbefore.tier_keys": "permission denied",
            "SELECT * FROM seenbefore.binding_secret": "permission denied",
            "ALTER TABLE seenbefore.documents DISABLE ROW LEVEL SECURITY": "must be owner",
            "DROP POLICY documents_tiers ON seenbefore.documents": "must be owner",
            "CREATE OR REPLACE FUNCTION seenbefore.bound_tiers() RETURNS text[] LANGUAGE sql"
            " AS $$ SELECT ARRAY['*'] $$": "permission denied for schema",
            "CREATE FUNCTION seenbefore.mine() RETURNS int LANGUAGE sql"
            " AS $$ SELECT 1 $$": "permission denied",
        }
        for statement, expected in attempts.items():
            assert expected in refused(conn, lambda c, s=statement: c.execute(s.encode()))
        # after all that: the widest binding it can make still hides the restricted rows
        with conn.transaction():
            conn.execute(BIND, (narrow, ["restricted", "general"], False))
            assert secret_rows(conn) == 0
            assert conn.execute("SELECT count(*) FROM seenbefore.documents").fetchone() == (1,)


def test_a_service_store_binds_with_its_key_and_no_more(
    seeded: tuple[str, str], pg_service_url: str
) -> None:
    narrow, wide = seeded
    with PostgresStore(pg_service_url, tier_key=wide) as store:
        assert not store.server.maintenance
        assert store.get("SECRET", ["restricted"]).postmortem.id == "SECRET"
        with pytest.raises(NotFoundError):
            store.get("SECRET", ["general"])  # the caller's tiers, not the key's
        assert set(store.list_ids()) == {"OPEN", "SECRET"}  # maintenance reads: every tier
        put(store, "LATER", "quasar quark", access_tier="restricted")  # ingest: every tier
        with pytest.raises(StoreError, match="maintenance login"):  # DDL needs the owner
            store.replace_vectors("fake-4", [], np.zeros((0, 4), "float32"))
    with PostgresStore(pg_service_url, tier_key=narrow) as store:
        with pytest.raises(NotFoundError):
            store.get("SECRET", ["restricted"])  # the key caps what a caller's tiers reach
        assert store.stats(["general", "restricted"]).documents == 1
        with pytest.raises(StoreError, match="grants only the tiers"):
            store.list_ids()
    with PostgresStore(pg_service_url) as store:  # no key at all: no binding of any tiers
        for read in (store.list_ids, lambda: store.stats(["general"])):
            with pytest.raises(StoreError, match="SEENBEFORE_DATABASE_TIER_KEY"):
                read()


def test_a_revoked_key_binds_nothing(
    seeded: tuple[str, str], pg_url: str, pg_service_url: str
) -> None:
    _, wide = seeded
    with PostgresStore(pg_service_url, tier_key=wide) as store:
        assert "SECRET" in store.list_ids()
        with Maintenance(pg_url) as admin:
            [key] = [k for k in admin.tier_keys() if k.name == "wide"]
            admin.revoke_key(key.id)
            assert [k.revoked_at is not None for k in admin.tier_keys() if k.name == "wide"] == [
                True
            ]
        with pytest.raises(StoreError, match="unknown or revoked"):
            store.list_ids()


def test_a_service_login_never_migrates(pg_service_url: str) -> None:
    with pytest.raises(SchemaVersionError, match="seenbefore database setup"):
        PostgresStore(pg_service_url)  # a fresh database: schema version 0
    with pytest.raises(StoreError, match="maintenance login"):
        Maintenance(pg_service_url)


def test_a_service_login_claims_the_first_embedder(pg_url: str, pg_service_url: str) -> None:
    """Typing the vector column is DDL; the owner's function does it for a service login's
    first ingest (serve --sample, an approval on an empty knowledge base)."""
    PostgresStore(pg_url).close()  # migrated, nothing ingested
    with Maintenance(pg_url) as admin:
        wide, _, _ = admin.make_key("wide", None)
    with PostgresStore(pg_service_url, tier_key=wide) as store:
        pm, chunks = doc("FIRST", "## Summary\nquasar\n")
        store.upsert(pm, chunks, EmbeddedVectors("fake-4", np.ones((len(chunks), 4), "float32")))
        assert store.embedder_info() == ("fake-4", 4)
        ids, matrix = store.vectors()
        assert len(ids) == len(chunks) and matrix.shape == (len(chunks), 4)
