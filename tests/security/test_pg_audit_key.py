"""The audit chain on PostgreSQL can be keyed (issue 33): `seenbefore audit key` marks the chain
keyed in the database and gives the key once; records from then on are HMAC-chained under it,
so the database owner who switches the append-only triggers off, edits a record and re-hashes
the rest with SHA-256 is caught; a replica without the key (or with another) refuses to write."""

from __future__ import annotations

import json
from typing import Any

import pytest

from seenbefore.errors import ConfigError, ConflictError
from seenbefore.security import audit_key
from seenbefore.security.audit import HEAD_KEY, AuditLog, chain_hash
from seenbefore.storage.postgres.store import PostgresStore
from tests.security.conftest import raw

pytestmark = pytest.mark.integration


def test_a_keyed_chain_needs_its_key_and_catches_a_rehash(pg: PostgresStore, pg_url: str) -> None:
    log = AuditLog(pg)
    for i in range(2):
        log.record("alice", "search", doc_ids=[f"INC-{i}"])  # before the key: SHA-256
    key = log.key_server_chain()
    assert key.from_id == 3
    with pytest.raises(ConflictError, match="already keyed"):
        log.key_server_chain()

    # a replica without the key refuses to write (it would break the chain), and says why
    with pytest.raises(ConfigError, match="keyed from record 3"):
        log.record("bob", "search")
    other = audit_key.AuditKey(b"x" * 32, 3)
    pg.audit_key_text = audit_key.to_text(other)
    with pytest.raises(ConfigError, match="another key"):
        log.record("bob", "search")

    pg.audit_key_text = audit_key.to_text(key)
    for i in range(3):
        log.record("carol", "search", doc_ids=[f"INC-{i}"])
    records = log.read(limit=10)
    assert [r.id for r in records] == [1, 2, 3, 4, 5]
    body = {k: v for k, v in records[3].to_json().items() if k != "hash"}
    assert records[3].hash == chain_hash(records[2].hash, body, key)  # HMAC from record 3 on
    assert records[3].hash != chain_hash(records[2].hash, body)
    assert log.verify().ok

    # the owner switches the guard off, edits record 4 and re-hashes the rest without the key
    with raw(pg_url, owner=True) as conn:
        conn.execute("ALTER TABLE audit_log DISABLE TRIGGER audit_log_append_only")
        rows = conn.execute(
            "SELECT id, time, actor, session, action, query_hash, doc_ids, tiers, draft_id,"
            " decision, detail, prev_hash, hash FROM audit_log ORDER BY id"
        ).fetchall()
        prev = rows[2][12]
        for row in rows[3:]:
            fields = {
                "id": row[0],
                "time": row[1],
                "actor": "mallory" if row[0] == 4 else row[2],
                "session": row[3],
                "action": row[4],
                "query_hash": row[5],
                "doc_ids": json.loads(row[6]),
                "tiers": json.loads(row[7]),
                "draft_id": row[8],
                "decision": row[9],
                "detail": json.loads(row[10]),
                "prev_hash": prev,
            }
            digest = chain_hash(prev, fields)  # SHA-256: the attacker has no key
            conn.execute(
                "UPDATE audit_log SET actor = %s, prev_hash = %s, hash = %s WHERE id = %s",
                (fields["actor"], prev, digest, row[0]),
            )
            prev = digest
        conn.execute(
            "UPDATE meta SET value = %s WHERE key = %s", (f"{rows[-1][0]}:{prev}", HEAD_KEY)
        )
        conn.execute("ALTER TABLE audit_log ENABLE TRIGGER audit_log_append_only")
    result = log.verify()
    assert not result.ok and result.first_bad_id == 4 and "edited" in result.reason

    # and removing the mark that the chain is keyed does not make the key go away
    with raw(pg_url, owner=True) as conn:
        conn.execute("DELETE FROM meta WHERE key = %s", (audit_key.META_KEY,))
    with pytest.raises(ConfigError, match="never keyed"):
        log.verify()


def test_an_unkeyed_chain_with_a_key_set_is_refused(pg: PostgresStore) -> None:
    pg.audit_key_text = audit_key.to_text(audit_key.AuditKey(b"k" * 32, 1))
    with pytest.raises(ConfigError, match="never keyed"):
        AuditLog(pg).record("alice", "search")


def test_the_cli_keys_the_chain_and_prints_the_key_once(
    pg_url: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from seenbefore.cli.app import app

    monkeypatch.setenv("SEENBEFORE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SEENBEFORE_DATABASE_URL", pg_url)
    monkeypatch.delenv("SEENBEFORE_AUDIT_KEY", raising=False)
    runner = CliRunner()
    done = runner.invoke(app, ["audit", "key", "--json"])
    assert done.exit_code == 0, done.output
    value = json.loads(done.output)[audit_key.SETTING]
    refused = runner.invoke(app, ["audit", "verify"])  # this shell has no key yet
    assert refused.exit_code != 0 and "SEENBEFORE_AUDIT_KEY" in refused.output
    monkeypatch.setenv("SEENBEFORE_AUDIT_KEY", value)
    verified = runner.invoke(app, ["audit", "verify", "--json"])
    assert verified.exit_code == 0, verified.output
    assert json.loads(verified.output)["ok"] is True
    again = runner.invoke(app, ["audit", "key"])
    assert again.exit_code != 0 and "already keyed" in again.output


def test_a_service_without_the_key_does_not_start(pg_url: str, tmp_path: Any) -> None:
    from seenbefore.config import Settings
    from seenbefore.service.app import new_state, open_state

    with PostgresStore(pg_url) as store:
        AuditLog(store).key_server_chain()
    settings = Settings(home=tmp_path / "home", database_url=pg_url, embedder="none")
    with pytest.raises(ConfigError, match="SEENBEFORE_AUDIT_KEY"):
        open_state(new_state(settings), warm_reviews=False)
