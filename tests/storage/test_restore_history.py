"""A restore keeps history (issue 33): `token revoke; restore older-backup` once brought the
revoked token back, erased every audit record written after the backup, recorded nothing, and
`audit verify` still said intact; a backup whose audit log was edited and re-hashed was
accepted, and so was one carrying an extra admin token; CLI ingest, delete and restore left no
audit record. Now the live audit log, revocations and sessions survive, the restore is audited,
the chain is keyed by a key outside the backup and compared with the live one, and tokens the
store never issued are refused."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from seenbefore.errors import StoreError
from seenbefore.security.audit import GENESIS_HASH, AuditLog, chain_hash
from seenbefore.storage.sqlite.store import SQLiteStore
from tests.conftest import postmortem_text
from tests.storage.test_restore_hostile import (
    _env,
    assert_untouched,
    fill,
    invoke,
    refused,
    run,
    snapshot,
    variant,
)


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    _env(monkeypatch, tmp_path / "home")
    return tmp_path / "home"


@pytest.fixture
def backup(tmp_path: Path, home: Path) -> Path:
    fill(tmp_path / "docs")
    path = tmp_path / "b.sqlite"
    assert invoke("backup", str(path)).exit_code == 0
    return path


def records(**filters: str) -> list[dict[str, Any]]:
    args = [f"--{k}={v}" for k, v in filters.items()]
    found: list[dict[str, Any]] = run("audit", "--limit", "10000", *args)["records"]
    return found


def tokens() -> dict[str, dict[str, Any]]:
    return {t["name"]: t for t in run("token", "list")["tokens"]}


def test_revoke_then_restore_keeps_the_token_revoked_and_the_chain_longer(
    backup: Path, home: Path
) -> None:
    ci = tokens()["ci"]
    assert ci["active"]
    assert invoke("token", "revoke", ci["id"]).exit_code == 0
    run("search", "pool exhausted")  # a record newer than the backup
    before = records()
    result = invoke("restore", str(backup), "--yes")
    assert result.exit_code == 0, result.output
    assert "kept the live audit log" in result.output
    after = records()
    assert tokens()["ci"]["active"] is False and tokens()["ci"]["revoked_at"]
    # every record there was before, unchanged, and then the restore itself
    assert after[: len(before)] == before and len(after) == len(before) + 1
    last = after[-1]
    assert last["action"] == "store.restore" and last["actor"].startswith("local:")
    assert (
        last["detail"]["backup_name"] == "b.sqlite" and len(last["detail"]["backup_sha256"]) == 64
    )
    assert last["detail"]["kept_audit_records"] == 2  # the revoke and the search
    assert invoke("audit", "verify").exit_code == 0
    # the revoked token's records are all there: create, revoke
    assert [r["action"] for r in before if r["detail"].get("token_id") == ci["id"]] == [
        "token.create",
        "token.revoke",
    ]


def _rehash(path: Path, key: Any = None) -> None:
    """Edit audit record 2 and re-hash every record after it, as a tamperer holding the file
    (and, with ``key``, the audit key) would: the chain then verifies on its own."""
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    try:
        triggers = conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'audit_log'"
        ).fetchall()
        for trigger in triggers:
            conn.execute(f"DROP TRIGGER {trigger['name']}")
        rows = [dict(r) for r in conn.execute("SELECT * FROM audit_log ORDER BY id")]
        prev = GENESIS_HASH
        for row in rows:
            body = {k: v for k, v in row.items() if k != "hash"}
            for field in ("doc_ids", "tiers", "detail"):
                body[field] = json.loads(body[field])
            if row["id"] == 2:
                body["actor"] = "local:someone-else"
            body["prev_hash"] = prev
            digest = chain_hash(prev, body, key)
            conn.execute(
                "UPDATE audit_log SET actor = ?, prev_hash = ?, hash = ? WHERE id = ?",
                (body["actor"], prev, digest, row["id"]),
            )
            prev = digest
        conn.execute(
            "UPDATE meta SET value = ? WHERE key = 'audit_head'", (f"{rows[-1]['id']}:{prev}",)
        )
        for trigger in triggers:
            conn.execute(trigger["sql"])
        conn.commit()
    finally:
        conn.close()


def test_a_backup_edited_and_rehashed_without_the_key_is_refused(backup: Path, home: Path) -> None:
    bad = variant(backup, "rehashed.sqlite")
    _rehash(bad)  # SHA-256 all along: what an unkeyed chain accepted
    with SQLiteStore(bad) as alone:
        assert AuditLog(alone, key=None).verify().ok  # consistent on its own
    before = snapshot(home)
    refused(invoke("restore", str(bad), "--yes"), "audit chain", "audit key")
    assert_untouched(home, before)


def test_a_backup_rehashed_with_the_key_is_refused_against_the_live_chain(
    backup: Path, home: Path
) -> None:
    """Even a tamperer who holds the key cannot make a backup disagree with the live log."""
    bad = variant(backup, "keyed.sqlite")
    with SQLiteStore(home / "kb.sqlite") as live:
        key = AuditLog(live).key()
    _rehash(bad, key)
    before = snapshot(home)
    refused(invoke("restore", str(bad), "--yes"), "audit record 2 differing", "actor")
    assert_untouched(home, before)


def test_a_token_the_store_never_issued_is_refused(backup: Path, home: Path) -> None:
    bad = variant(backup, "extra-admin.sqlite")
    conn = sqlite3.connect(bad)
    conn.execute(
        "INSERT INTO api_tokens (id, name, role, tiers, token_hash, created_at) VALUES"
        " ('tok_mallory', 'mallory', 'admin', '[\"general\",\"restricted\"]', 'ab12', '2025')"
    )
    conn.commit()
    conn.close()
    before = snapshot(home)
    refused(invoke("restore", str(bad), "--yes"), "tok_mallory", "never issued")
    assert_untouched(home, before)


def test_a_token_whose_hash_was_swapped_is_refused(backup: Path, home: Path) -> None:
    bad = variant(backup, "swapped.sqlite")
    conn = sqlite3.connect(bad)
    conn.execute("UPDATE api_tokens SET token_hash = 'feed' WHERE name = 'ci'")
    conn.commit()
    conn.close()
    refused(invoke("restore", str(bad), "--yes"), "with a hash the live store")


def test_into_an_empty_store_the_backups_chain_and_issued_tokens_come_back(
    backup: Path, home: Path
) -> None:
    """The disaster case: kb.sqlite lost, the home (and its audit.key) kept. The backup's chain
    verifies under the key, its tokens were issued in it, and its revocations hold."""
    for name in ("kb.sqlite", "kb.sqlite-wal", "kb.sqlite-shm"):
        (home / name).unlink(missing_ok=True)
    result = invoke("restore", str(backup), "--yes")
    assert result.exit_code == 0, result.output
    assert tokens()["ci"]["active"]
    assert invoke("audit", "verify").exit_code == 0
    assert records()[-1]["action"] == "store.restore"


def test_without_the_homes_audit_key_a_keyed_backup_is_refused(
    backup: Path, home: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    shutil.copytree(home, other, dirs_exist_ok=True)
    (other / "audit.key").unlink()
    for name in ("kb.sqlite", "kb.sqlite-wal", "kb.sqlite-shm"):
        (other / name).unlink(missing_ok=True)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SEENBEFORE_HOME", str(other))
        line = refused(invoke("restore", str(backup), "--yes"), "audit chain")
    assert "audit key" in line


def test_the_live_log_moving_during_a_restore_refuses_it(backup: Path, home: Path) -> None:
    """Another process appending while the copy is prepared: what was carried would be lost."""
    with SQLiteStore(home / "kb.sqlite") as store:
        other = SQLiteStore(home / "kb.sqlite")

        def meanwhile(copy: Any) -> None:
            AuditLog(other).record("local:someone", "search", doc_ids=["D1"])

        with pytest.raises(StoreError, match="grew while"):
            store.restore(backup, carry=meanwhile)
        other.close()
    assert invoke("audit", "verify").exit_code == 0


def test_cli_ingest_delete_and_restore_each_leave_an_audit_record(
    backup: Path, home: Path, tmp_path: Path
) -> None:
    docs = tmp_path / "more"
    docs.mkdir()
    (docs / "a.md").write_text(postmortem_text("NEW-1", title="new incident"))
    (docs / "b.md").write_text(
        postmortem_text("NEW-2", title="secret one", access_tier="restricted")
    )
    assert invoke("ingest", str(docs)).exit_code == 0
    [ingested] = records(action="ingest")[-1:]
    assert sorted(ingested["doc_ids"]) == ["NEW-1", "NEW-2"]
    assert ingested["detail"]["added"] == 2 and ingested["actor"].startswith("local:")
    assert "restricted" in ingested["tiers"]  # a reader without it never sees the record
    assert invoke("ingest", str(docs)).exit_code == 0  # unchanged: nothing written, no record
    assert len(records(action="ingest")) == 2  # fill's ingest and this one
    assert invoke("delete", "NEW-1").exit_code == 0
    assert records(action="delete")[-1]["doc_ids"] == ["NEW-1"]
    assert invoke("restore", str(backup), "--yes").exit_code == 0
    assert records()[-1]["action"] == "store.restore"
    assert invoke("audit", "verify").exit_code == 0


def test_a_copy_verifies_elsewhere_only_under_the_key_that_chained_it(
    backup: Path, home: Path, tmp_path: Path
) -> None:
    """`audit verify --key` checks a store whose home is not the one that keyed it (a backup
    looked at elsewhere, or records migrated to PostgreSQL, whose chain is unkeyed)."""
    other = tmp_path / "elsewhere"
    other.mkdir()
    shutil.copyfile(backup, other / "kb.sqlite")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SEENBEFORE_HOME", str(other))
        bad = invoke("audit", "verify")
        assert bad.exit_code == 1 and "audit key" in " ".join(bad.output.split())
        good = invoke("audit", "verify", "--key", str(home / "audit.key"))
        assert good.exit_code == 0, good.output
        missing = invoke("audit", "verify", "--key", str(other / "nope.key"))
        assert missing.exit_code == 2 and "no such audit key" in missing.output
