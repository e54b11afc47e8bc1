"""API tokens and the audit log on the PostgreSQL store: the same behaviour as on SQLite, the log
append-only for the app role by privilege and for everyone by trigger, and one hash chain however
many replicas append at once."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from psycopg import errors as pg_errors

from seenbefore.errors import AuthError, StoreError
from seenbefore.security.audit import GENESIS_HASH, AuditLog, chain_hash
from seenbefore.security.tokens import TokenStore
from seenbefore.storage.postgres.checkpoint import setup_checkpoints
from seenbefore.storage.postgres.schema import APP_ROLE
from seenbefore.storage.postgres.store import PostgresStore
from tests.security.conftest import raw

pytestmark = pytest.mark.integration

ENV_TOKEN = "sb_" + "B" * 43


def in_threads(n: int, work: Callable[[int], None]) -> list[BaseException]:
    errors: list[BaseException] = []
    barrier = threading.Barrier(n)

    def run(worker: int) -> None:
        try:
            barrier.wait()
            work(worker)
        except BaseException as exc:  # collected and asserted on by the caller
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(w,)) for w in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def test_tokens_work_as_on_sqlite(pg: PostgresStore) -> None:
    tokens = TokenStore(pg)
    first, alice = tokens.create("alice", "reviewer", ["general"])
    _, bob = tokens.create("bob", "admin", ["general", "restricted"])
    assert tokens.authenticate(first) == alice
    listed = {t.name: t for t in tokens.list()}  # by creation time, then id (no rowid here)
    assert sorted(listed) == ["alice", "bob"]
    assert listed["alice"].last_used_at is not None  # authenticate recorded the use
    assert listed["bob"].last_used_at is None
    assert tokens.has_admin()
    assert alice.token_id is not None and bob.token_id is not None
    tokens.revoke(bob.token_id)
    assert not tokens.has_admin()
    tokens.revoke(alice.token_id)
    with pytest.raises(AuthError, match="revoked"):
        tokens.authenticate(first)


def test_replicas_registering_the_same_admin_token_at_once_agree(pg_url: str) -> None:
    stores = [PostgresStore(pg_url) for _ in range(4)]
    try:
        errors = in_threads(
            4, lambda w: TokenStore(stores[w]).ensure(ENV_TOKEN, "admin", "admin", ["general"])
        )
        assert errors == []
        assert len(TokenStore(stores[0]).list()) == 1
        assert TokenStore(stores[1]).authenticate(ENV_TOKEN).role == "admin"
    finally:
        for store in stores:
            store.close()


def test_the_chain_is_worked_out_as_on_sqlite(pg: PostgresStore) -> None:
    audit = AuditLog(pg)
    first = audit.record(
        "alice", "search", query="zebra cache", doc_ids=["INC-1"], tiers=["general"]
    )
    second = audit.record("bob", "review.approve", draft_id="rev-1", decision="approved")
    assert (first.id, second.id) == (1, 2)
    assert first.prev_hash == GENESIS_HASH and second.prev_hash == first.hash
    body = {k: v for k, v in second.to_json().items() if k != "hash"}
    assert second.hash == chain_hash(first.hash, body)
    assert [r.hash for r in audit.read()] == [first.hash, second.hash]
    assert audit.hash_text("zebra   cache") == first.query_hash  # one salt, normalised text
    result = audit.verify()
    assert result.ok and result.checked == 2 and result.head_hash == second.hash


def test_the_app_role_may_not_change_or_remove_records(pg: PostgresStore, pg_url: str) -> None:
    AuditLog(pg).record("alice", "search", doc_ids=["INC-1"])
    with raw(pg_url) as conn:
        for statement in (
            "UPDATE audit_log SET actor = 'mallory'",
            "DELETE FROM audit_log",
            "TRUNCATE audit_log",
        ):
            with pytest.raises(pg_errors.InsufficientPrivilege):
                conn.execute(statement)
        privileges = conn.execute(
            "SELECT has_table_privilege(%s, 'seenbefore.audit_log', 'INSERT'),"
            " has_table_privilege(%s, 'seenbefore.audit_log', 'UPDATE')",
            (APP_ROLE, APP_ROLE),
        ).fetchone()
    assert privileges == (True, False)
    # the checkpoint setup re-runs the grants on every table: the audit log stays append-only
    setup_checkpoints(pg_url)
    assert AuditLog(pg).verify().ok


def test_the_triggers_stop_even_the_owner_and_verify_sees_them_go(
    pg: PostgresStore, pg_url: str
) -> None:
    audit = AuditLog(pg)
    for i in range(3):
        audit.record("alice", "search", doc_ids=[f"INC-{i}"])
    with raw(pg_url, owner=True) as conn:
        with pytest.raises(pg_errors.RaiseException, match="append-only: UPDATE"):
            conn.execute("UPDATE audit_log SET actor = 'mallory' WHERE id = 2")
        with pytest.raises(pg_errors.RaiseException, match="append-only: DELETE"):
            conn.execute("DELETE FROM audit_log WHERE id = 3")
        with pytest.raises(pg_errors.RaiseException, match="append-only: TRUNCATE"):
            conn.execute("TRUNCATE audit_log")
        conn.execute("ALTER TABLE audit_log DISABLE TRIGGER audit_log_append_only")
        conn.execute("UPDATE audit_log SET actor = 'mallory' WHERE id = 2")
    result = audit.verify()
    assert not result.ok and result.first_bad_id == 2 and "edited" in result.reason
    with raw(pg_url, owner=True) as conn:
        conn.execute("UPDATE audit_log SET actor = 'alice' WHERE id = 2")
    result = audit.verify()
    assert not result.ok and "audit_log_append_only" in result.reason
    with raw(pg_url, owner=True) as conn:
        conn.execute("ALTER TABLE audit_log ENABLE TRIGGER audit_log_append_only")
        conn.execute(f"GRANT UPDATE ON audit_log TO {APP_ROLE}")
    result = audit.verify()
    assert not result.ok and f"{APP_ROLE} may UPDATE" in result.reason


def test_replicas_appending_at_once_extend_one_chain(pg_url: str) -> None:
    """Four stores (own pools, as four replicas have) append 25 records each at once."""
    stores = [PostgresStore(pg_url) for _ in range(4)]
    try:

        def append(worker: int) -> None:
            log = AuditLog(stores[worker])
            for i in range(25):
                log.record(f"replica-{worker}", "search", query=str(i))

        assert in_threads(4, append) == []
        result = AuditLog(stores[0]).verify()
        assert result.ok and result.checked == 100
        records = AuditLog(stores[1]).read(limit=100)
        assert [r.id for r in records] == list(range(1, 101))
        assert {r.actor for r in records} == {f"replica-{w}" for w in range(4)}
    finally:
        for store in stores:
            store.close()


def test_a_database_error_in_a_transaction_is_a_store_error(pg: PostgresStore) -> None:
    with pytest.raises(StoreError, match="UniqueViolation"), pg.transaction() as conn:
        conn.execute(
            "INSERT INTO blobs (key, value, updated_at) VALUES (?, ?, ?), (?, ?, ?)",
            ("k", b"1", "t", "k", b"2", "t"),
        )
    assert pg.get_blob("k") is None  # rolled back
