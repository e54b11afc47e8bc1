"""What only the PostgreSQL store does: row-level security (the change log read by maintenance
only), migrations under an advisory lock (the in-database search dropped by migration 8), pooled
connections that survive a dropped connection, clear errors."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import psycopg
import pytest
from psycopg import sql

from seenbefore.calibration.record import keep_gate
from seenbefore.config import Settings
from seenbefore.core.trust import FusionWeights
from seenbefore.errors import ConfigError, SchemaVersionError, StoreError
from seenbefore.kb import KnowledgeBase
from seenbefore.retrieval.embedders import HashingEmbedder
from seenbefore.retrieval.hybrid import SearchOptions
from seenbefore.storage.base import EmbeddedVectors
from seenbefore.storage.factory import open_store
from seenbefore.storage.postgres.pool import PgOptions
from seenbefore.storage.postgres.schema import MIGRATIONS
from seenbefore.storage.postgres.store import PostgresStore
from seenbefore.storage.sqlite.store import SQLiteStore
from seenbefore.types import SearchFilters
from tests.conftest import REPO, postmortem_text
from tests.pg import LOGIN_ROLE, LocalPostgres, database_of, vector_version
from tests.storage.test_contract import doc, put

pytestmark = pytest.mark.integration


@pytest.fixture
def pg(pg_url: str) -> Iterator[PostgresStore]:
    with PostgresStore(pg_url) as store:
        yield store


def raw(url: str) -> psycopg.Connection[tuple[object, ...]]:
    conn = psycopg.connect(url, autocommit=True)
    conn.execute("SET search_path = seenbefore, public")
    return conn


def bind(conn: psycopg.Connection[tuple[object, ...]], *tiers: str) -> None:
    """Bind ``tiers`` to the open transaction, as the store does (this maintenance login needs
    no tier key; tests/storage/test_tier_binding.py covers service logins)."""
    conn.execute(
        "SELECT set_config('seenbefore.binding', bind_tiers(NULL, %s, false), true)", (list(tiers),)
    )


def test_ships_pgvector_and_logs_in_under_row_security(
    pg_server: LocalPostgres, pg: PostgresStore
) -> None:
    assert pg.server.vector_version == vector_version(pg_server)
    assert not pg.server.bypasses_rls
    assert pg.stats(["general"]).schema_version == len(MIGRATIONS)


def test_row_level_security_hides_restricted_rows_from_raw_selects(
    pg: PostgresStore, pg_url: str
) -> None:
    pm, chunks = doc("SECRET", "## Summary\nquasar nebula\n", access_tier="restricted")
    pg.upsert(pm, chunks, EmbeddedVectors("fake-4", np.ones((len(chunks), 4), dtype=np.float32)))
    put(pg, "OPEN", "quasar pulsar")
    tables = ("documents", "sections", "chunks", "vectors")
    count = "SELECT (SELECT count(*) FROM {t} WHERE doc_id = 'SECRET')"
    with raw(pg_url) as conn:  # the app role, as the service logs in
        user = conn.execute("SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = user")
        assert user.fetchone() == (False, False)
        for table in tables:
            column = "id" if table == "documents" else "doc_id"
            query = sql.SQL(count.replace("doc_id", column)).format(t=sql.Identifier(table))
            assert conn.execute(query).fetchone() == (0,)  # no tiers bound: nothing
            with conn.transaction():  # migration 1's settings bind nothing any more
                conn.execute("SELECT set_config('seenbefore.tiers', 'general,restricted', true)")
                conn.execute("SELECT set_config('seenbefore.all_tiers', 'on', true)")
                assert conn.execute(query).fetchone() == (0,)
            with conn.transaction():
                bind(conn, "general")
                assert conn.execute(query).fetchone() == (0,)
                assert conn.execute("SELECT count(*) FROM documents").fetchone() == (1,)
            with conn.transaction():
                bind(conn, "general", "restricted")
                assert conn.execute(query).fetchone() != (0,)
        with pytest.raises(psycopg.errors.InsufficientPrivilege), conn.transaction():
            bind(conn, "general")
            conn.execute("UPDATE documents SET access_tier = 'general'")  # nothing to update...
            conn.execute(
                "INSERT INTO documents (id, title, status, effective_status, access_tier, body,"
                " content_hash, ingested_at, updated_at) VALUES ('X', 't', 'current', 'current',"
                " 'restricted', 'b', 'h', 'now', 'now')"
            )  # ...and no writing rows one cannot see


def test_a_database_from_before_migration_8_keeps_its_rows_and_loses_the_unused_search(
    pg_server: LocalPostgres, pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Migration 8 (one search path) on a database written by migrations 1-7: the tsvector,
    its GIN index, lexemes, keyword_hits, HNSW and the filter columns go; the rows stay, and
    the knowledge base finds them."""
    from seenbefore.storage.postgres import pool

    monkeypatch.setattr(pool, "MIGRATIONS", MIGRATIONS[:7])
    PostgresStore(pg_url).close()
    monkeypatch.undo()
    with raw(pg_server.url(database_of(pg_url))) as conn:  # rows as the old store wrote them
        conn.execute(
            "INSERT INTO documents (id, title, status, effective_status, access_tier, body,"
            " content_hash, ingested_at, updated_at) VALUES ('OLD', 'old', 'current',"
            " 'current', 'general', 'quasar nebula', 'h', 'now', 'now')"
        )
        conn.execute(
            "INSERT INTO chunks (doc_id, section_key, section_heading, section_position,"
            " position, text, access_tier, is_current) VALUES ('OLD', 'summary', 'Summary', 0,"
            " 0, 'quasar nebula', 'general', true)"
        )
        conn.execute("INSERT INTO lexemes (word, ndoc) VALUES ('quasar', 1), ('nebula', 1)")
    with PostgresStore(pg_url) as store:
        assert store.stats(["general"]).schema_version == len(MIGRATIONS)
        kb = KnowledgeBase(Settings(home=tmp_path, embedder="none"), store=store)
        result = kb.search("quasar", SearchFilters(), SearchOptions(mode="sparse"))
        assert [c.doc_id for c in result.candidates] == ["OLD"]
    with raw(pg_server.url(database_of(pg_url))) as conn:
        columns = {
            (r[0], r[1])
            for r in conn.execute(
                "SELECT table_name, column_name FROM information_schema.columns"
                " WHERE table_schema = 'seenbefore' AND table_name IN ('chunks', 'vectors')"
            ).fetchall()
        }
        gone = {"tsv", "is_current", "date", "services"}
        assert not {c for _, c in columns} & gone
        assert {("chunks", "access_tier"), ("vectors", "access_tier")} <= columns
        assert conn.execute("SELECT to_regclass('seenbefore.lexemes')").fetchone() == (None,)
        functions = conn.execute("SELECT count(*) FROM pg_proc WHERE proname = 'keyword_hits'")
        assert functions.fetchone() == (0,)
        indexes = conn.execute(
            "SELECT count(*) FROM pg_indexes WHERE indexname IN ('chunks_tsv', 'vectors_hnsw')"
        )
        assert indexes.fetchone() == (0,)


def test_concurrent_first_starts_migrate_once(pg_url: str) -> None:
    errors: list[BaseException] = []
    stores: list[PostgresStore] = []

    def start() -> None:
        try:
            stores.append(PostgresStore(pg_url))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(stores) == 4
    assert {s.stats([]).schema_version for s in stores} == {len(MIGRATIONS)}
    for s in stores:
        s.close()


def test_refuses_a_newer_schema(pg_server: LocalPostgres, pg_url: str) -> None:
    PostgresStore(pg_url).close()
    with raw(pg_server.url(database_of(pg_url))) as conn:
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(SchemaVersionError, match="newer than this seenbefore"):
        PostgresStore(pg_url)


def test_unreachable_database_is_a_clear_store_error() -> None:
    url = "postgresql://someone:s3cret@127.0.0.1:1/nowhere"
    with pytest.raises(StoreError, match="unreachable") as caught:
        PostgresStore(url, options=PgOptions(connect_timeout_s=2))
    assert "s3cret" not in str(caught.value) and "127.0.0.1:1/nowhere" in str(caught.value)


def test_login_without_setup_gets_the_bootstrap_sql(pg_server: LocalPostgres, pg_url: str) -> None:
    with pg_server.admin() as conn:
        conn.execute("DROP ROLE IF EXISTS stranger")
        conn.execute("CREATE ROLE stranger LOGIN")
    try:
        url = pg_server.url(database_of(pg_url), "stranger")
        with pytest.raises(StoreError, match="GRANT seenbefore_owner TO stranger"):
            PostgresStore(url)
    finally:
        with pg_server.admin() as conn:
            conn.execute("DROP ROLE stranger")


def test_statement_timeout_and_dropped_connections(pg_server: LocalPostgres, pg_url: str) -> None:
    with PostgresStore(pg_url, options=PgOptions(statement_timeout_s=0.2)) as store:
        with pytest.raises(StoreError, match="statement timeout"):
            store._db.run(lambda c: c.execute("SELECT pg_sleep(2)"), tiers=())
        put(store, "A", "survives")
        with pg_server.admin() as admin:  # a failover: every connection of the app role dies
            killed = admin.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                " WHERE usename = 'seenbefore_service'"
            ).fetchone()
        assert killed is not None and int(str(killed[0])) >= 1
        assert store.list_ids() == ["A"]  # a fresh connection, transparently


def test_factory_selects_the_backend(pg_url: str, tmp_path: Path) -> None:
    sqlite = open_store(Settings(home=tmp_path))
    assert isinstance(sqlite, SQLiteStore)
    sqlite.close()
    with open_store(Settings(home=tmp_path, database_url=pg_url)) as pg:  # type: ignore[arg-type]
        assert isinstance(pg, PostgresStore)
        assert pg.stats([]).path.startswith("postgresql://seenbefore_service@")
    with pytest.raises(ConfigError, match="mysql"):
        open_store(Settings(home=tmp_path, database_url="mysql://x@y/z"))  # type: ignore[arg-type]


def test_sqlite_and_postgres_give_identical_hybrid_results(pg_url: str, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    for i, text in enumerate(
        [
            "database connections hit the pool limit during checkout",
            "name resolution failed with servfail from the resolvers",
            "resident memory grew until the pods were oomkilled",
            "iowait climbed on the volume during compaction of the pool",
            "connection resets from the load balancer after an idle timeout",
        ]
    ):
        (folder / f"{i}.md").write_text(
            postmortem_text(f"D{i}", title=f"incident {i}", body=f"## Summary\n{text}.\n")
        )
    results = []
    for store in (SQLiteStore(tmp_path / "kb.sqlite"), PostgresStore(pg_url)):
        with KnowledgeBase(
            Settings(home=tmp_path),
            store=store,  # type: ignore[arg-type]
            embedder=HashingEmbedder(32),
        ) as kb:
            kb.ingest([folder])
            keep_gate(kb.store, "hashing-32", FusionWeights(0.4, "test"), who="test")
            result = kb.search("pool connections limit", SearchFilters(), SearchOptions(k=5))
            results.append(
                (
                    [(c.doc_id, round(c.score, 9), c.matched_by) for c in result.candidates],
                    result.confidence,
                    result.signals,
                )
            )
    assert results[0] == results[1]
    assert results[0][0][0][0] == "D0"


def test_two_processes_share_one_database(pg_url: str, tmp_path: Path) -> None:
    """A write in another process moves the shared generation; this process's cached index
    notices and rebuilds (no process-local state goes stale)."""
    store = PostgresStore(pg_url)
    with KnowledgeBase(Settings(home=tmp_path, embedder="none"), store=store) as kb:  # type: ignore[arg-type]
        put(kb.store, "LOCAL", "nothing about that yet")
        assert kb.search("zeppelin", SearchFilters(), SearchOptions(mode="sparse")).candidates == ()
        script = (
            "import sys; sys.path.insert(0, sys.argv[2])\n"
            "from seenbefore.storage.postgres.store import PostgresStore\n"
            "from tests.storage.test_contract import put\n"
            "with PostgresStore(sys.argv[1]) as s: print(put(s, 'REMOTE', 'zeppelin hangar'))\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", script, pg_url, str(REPO)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "added"
        found = kb.search("zeppelin", SearchFilters(), SearchOptions(mode="sparse"))
        assert [c.doc_id for c in found.candidates] == ["REMOTE"]


def test_a_server_that_goes_away_is_a_store_error_not_a_crash() -> None:
    """The service's readiness check: once the database is gone, calls fail fast and clearly;
    nothing hangs and the process keeps running."""
    server = LocalPostgres.start()
    try:
        name = server.create_database()
        store = PostgresStore(
            server.url(name, LOGIN_ROLE), options=PgOptions(connect_timeout_s=2, retries=1)
        )
        put(store, "A", "still here")
    finally:
        server.stop()
    clock = time.perf_counter()
    with pytest.raises(StoreError, match=r"unreachable|OperationalError"):
        store.ping()
    with pytest.raises(StoreError):
        store.list_ids()
    assert time.perf_counter() - clock < 30
    store.close()


def test_the_change_log_is_read_only_by_maintenance(pg: PostgresStore, pg_url: str) -> None:
    """A restricted document's id is in the change log: only a transaction holding every tier
    (the index's maintenance reads) sees it; a caller's tiers see no entry at all."""
    put(pg, "SECRET", "quasar nebula", access_tier="restricted")
    with raw(pg_url) as conn:
        assert conn.execute("SELECT count(*) FROM changes").fetchone() == (0,)
        with conn.transaction():
            bind(conn, "general", "restricted")
            assert conn.execute("SELECT count(*) FROM changes").fetchone() == (0,)
        with conn.transaction():  # a setting the caller writes binds nothing
            conn.execute("SELECT set_config('seenbefore.all_tiers', 'on', true)")
            assert conn.execute("SELECT count(*) FROM changes").fetchone() == (0,)
        with conn.transaction():
            conn.execute(
                "SELECT set_config('seenbefore.binding', bind_tiers(NULL, NULL, true), true)"
            )
            found = conn.execute("SELECT doc_id FROM changes WHERE kind = 'document'")
            assert found.fetchall() == [("SECRET",)]
    assert pg.changes_since(0) is not None
