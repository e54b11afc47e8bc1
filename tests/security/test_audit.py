"""The audit log: append-only by trigger, hash-chained, no text, safe under concurrent writers."""

from __future__ import annotations

import hashlib
import hmac
import json
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from seenbefore.errors import InputError
from seenbefore.security.audit import GENESIS_HASH, AuditLog, chain_hash
from seenbefore.security.tokens import Principal
from seenbefore.storage.sqlite.store import SQLiteStore

REPO = Path(__file__).resolve().parents[2]
QUERY = "checkout p99 latency up after the zebra-cache deploy"


@pytest.fixture
def audit(store: SQLiteStore) -> AuditLog:
    return AuditLog(store)


def fill(audit: AuditLog, n: int) -> None:
    for i in range(n):
        audit.record("alice", "search", query=f"query {i}", doc_ids=[f"INC-{i}"], tiers=["general"])


def raw(store: SQLiteStore) -> sqlite3.Connection:
    """A second connection that bypasses the store, as a tamperer would."""
    return sqlite3.connect(str(store.path), isolation_level=None)


def test_records_form_a_hash_chain_worked_by_hand(audit: AuditLog) -> None:
    first = audit.record(
        Principal("alice", "reviewer", ("general",), "tok_1"),
        "show",
        session="s1",
        doc_ids=["INC-2", "INC-1"],
        tiers=["restricted", "general", "general"],
        detail={"k": 3},
    )
    second = audit.record("service:alertmanager", "investigate", draft_id="d1", decision="x")
    assert first.id == 1 and first.prev_hash == GENESIS_HASH
    assert second.id == 2 and second.prev_hash == first.hash
    assert first.tiers == ("general", "restricted") and first.doc_ids == ("INC-2", "INC-1")
    assert first.detail["principal"] == {
        "role": "reviewer",
        "tiers": ["general"],
        "token_id": "tok_1",
    }
    body = {k: v for k, v in first.to_json().items() if k != "hash"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    # keyed (issue 33): HMAC-SHA256 under the audit.key beside the store, made by the first
    # append and covering it (from_id 1); the key file is the owner's alone
    key = audit.key()
    assert key is not None and key.from_id == 1 and len(key.secret) == 32
    assert key.path is not None and key.path.name == "audit.key"
    assert key.path.stat().st_mode & 0o777 == 0o600
    expected = hmac.new(key.secret, (GENESIS_HASH + text).encode(), hashlib.sha256).hexdigest()
    assert first.hash == expected
    assert second.hash == chain_hash(
        first.hash, {k: v for k, v in second.to_json().items() if k != "hash"}, key
    )
    assert audit.read() == [first, second]
    result = audit.verify()
    assert result.ok and result.checked == 2 and result.head_hash == second.hash


def test_an_unkeyed_chain_is_sha256_as_before(store: SQLiteStore) -> None:
    """Without a key (PostgreSQL, memory, or explicitly) the chain is plain SHA-256, so a store
    written before keys existed keeps verifying; the key then covers only later records."""
    plain = AuditLog(store, key=None)
    first = plain.record("alice", "show", doc_ids=["INC-1"])
    body = {k: v for k, v in first.to_json().items() if k != "hash"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert first.hash == hashlib.sha256((GENESIS_HASH + text).encode()).hexdigest()
    keyed = AuditLog(store)
    keyed.record("alice", "show", doc_ids=["INC-2"])
    key = keyed.key()
    assert key is not None and key.from_id == 2  # made by the second append, covering it on
    assert keyed.verify().ok and keyed.verify().checked == 2


def test_update_and_delete_are_rejected_by_the_triggers(
    audit: AuditLog, store: SQLiteStore
) -> None:
    fill(audit, 2)
    conn = raw(store)
    with pytest.raises(sqlite3.IntegrityError, match="append-only: UPDATE"):
        conn.execute("UPDATE audit_log SET actor = 'mallory' WHERE id = 1")
    with pytest.raises(sqlite3.IntegrityError, match="append-only: DELETE"):
        conn.execute("DELETE FROM audit_log WHERE id = 2")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        store.query("DELETE FROM audit_log")
    conn.close()
    assert [r.actor for r in audit.read()] == ["alice", "alice"]
    assert audit.verify().ok


def test_verify_catches_an_edit_made_around_the_triggers(
    audit: AuditLog, store: SQLiteStore
) -> None:
    fill(audit, 4)
    conn = raw(store)
    conn.execute("DROP TRIGGER audit_log_no_update")
    conn.execute("UPDATE audit_log SET doc_ids = '[\"INC-999\"]' WHERE id = 2")
    conn.close()
    result = audit.verify()
    assert not result.ok and result.first_bad_id == 2 and result.checked == 1
    assert "does not match its hash" in result.reason


def test_verify_catches_a_deleted_record(audit: AuditLog, store: SQLiteStore) -> None:
    fill(audit, 4)
    conn = raw(store)
    conn.execute("DROP TRIGGER audit_log_no_delete")
    conn.execute("DELETE FROM audit_log WHERE id = 2")
    conn.close()
    result = audit.verify()
    assert not result.ok and result.first_bad_id == 3
    assert "2..2 were deleted" in result.reason


def test_verify_catches_records_cut_off_the_end(audit: AuditLog, store: SQLiteStore) -> None:
    fill(audit, 3)
    conn = raw(store)
    conn.execute("DROP TRIGGER audit_log_no_delete")
    conn.execute("DELETE FROM audit_log WHERE id = 3")
    conn.close()
    result = audit.verify()
    assert not result.ok and result.first_bad_id == 3 and "missing" in result.reason


def test_verify_catches_a_rewritten_hash_and_a_missing_trigger(
    audit: AuditLog, store: SQLiteStore
) -> None:
    fill(audit, 2)
    conn = raw(store)
    conn.execute("DROP TRIGGER audit_log_no_update")
    assert not audit.verify().ok and audit.verify().first_bad_id is None
    assert "audit_log_no_update" in audit.verify().reason
    # recomputing one record's hash breaks the link to the next one
    row = conn.execute("SELECT * FROM audit_log WHERE id = 1").fetchone()
    cols = [d[0] for d in conn.execute("SELECT * FROM audit_log LIMIT 0").description]
    body = dict(zip(cols, row, strict=True))
    body.pop("hash")
    body["actor"] = "mallory"
    for key in ("doc_ids", "tiers", "detail"):
        body[key] = json.loads(body[key])
    # without the key (a copy of the store is all a tamperer holds): the record itself fails
    conn.execute(
        "UPDATE audit_log SET actor = 'mallory', hash = ? WHERE id = 1",
        (chain_hash(GENESIS_HASH, body),),
    )
    result = audit.verify()
    assert not result.ok and result.first_bad_id == 1 and "without the audit key" in result.reason
    # with the key, the re-hashed record still breaks the link to the next one
    conn.execute(
        "UPDATE audit_log SET hash = ? WHERE id = 1", (chain_hash(GENESIS_HASH, body, audit.key()),)
    )
    conn.close()
    result = audit.verify()
    assert not result.ok and result.first_bad_id == 2 and "prev_hash" in result.reason


def test_query_text_is_stored_only_as_a_salted_hash(audit: AuditLog, store: SQLiteStore) -> None:
    record = audit.record("alice", "search", query=QUERY, doc_ids=["INC-1"])
    assert record.query_hash == audit.hash_text(QUERY)
    assert record.query_hash == audit.hash_text(
        "  checkout p99 latency up after the\nzebra-cache deploy"
    )
    assert record.query_hash != hashlib.sha256(QUERY.encode()).hexdigest()  # salted
    other = SQLiteStore(store.path.parent.parent / "other" / "kb.sqlite")
    assert AuditLog(other).hash_text(QUERY) != record.query_hash  # salt is per store
    other.close()
    store.close()
    files = list(store.path.parent.iterdir())
    assert files and all(b"zebra-cache" not in p.read_bytes() for p in files if p.is_file())


@pytest.mark.parametrize(
    ("detail", "message"),
    [
        ({"note": "the pool was exhausted"}, "free text"),
        ({"nested": {"Body": "x"}}, "free text"),
        ({"reason": "x" * 500}, "500 characters"),
        ({"score": float("nan")}, "finite"),
        ({"when": object()}, "not JSON"),
    ],
)
def test_detail_refuses_text(audit: AuditLog, detail: dict[str, object], message: str) -> None:
    with pytest.raises(InputError, match=message):
        audit.record("alice", "dismiss", detail=detail)
    assert audit.read() == []


def test_bad_action_and_actor_are_input_errors(audit: AuditLog) -> None:
    with pytest.raises(InputError, match="audit action"):
        audit.record("alice", "Search everything")
    with pytest.raises(InputError, match="actor"):
        audit.record("", "search")


def test_read_filters_and_pages(audit: AuditLog) -> None:
    fill(audit, 5)
    audit.record("bob", "show", doc_ids=["INC-1"])
    assert [r.id for r in audit.read(limit=2)] == [5, 6]
    assert [r.id for r in audit.read(action="search", limit=2)] == [4, 5]
    assert [r.id for r in audit.read(since_id=2, limit=2)] == [3, 4]
    assert [r.actor for r in audit.read(actor="bob")] == ["bob"]
    with pytest.raises(InputError, match="limit"):
        audit.read(limit=0)


def test_the_chain_never_forks_under_concurrent_writers(store: SQLiteStore) -> None:
    """Four threads, each with its own connection, appending at once."""
    errors: list[BaseException] = []

    def append(worker: int) -> None:
        try:
            with SQLiteStore(store.path) as own:
                log = AuditLog(own)
                for i in range(25):
                    log.record(f"worker-{worker}", "search", query=str(i))
        except BaseException as exc:  # collected and asserted on below
            errors.append(exc)

    threads = [threading.Thread(target=append, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    result = AuditLog(store).verify()
    assert result.ok and result.checked == 100
    assert [r.id for r in AuditLog(store).read(limit=100)] == list(range(1, 101))


def test_two_processes_append_to_one_chain(store: SQLiteStore) -> None:
    script = (
        "import sys\n"
        "from seenbefore.security.audit import AuditLog\n"
        "from seenbefore.storage.sqlite.store import SQLiteStore\n"
        "with SQLiteStore(sys.argv[1]) as s:\n"
        "    log = AuditLog(s)\n"
        "    for i in range(40):\n"
        "        log.record(sys.argv[2], 'search', doc_ids=[str(i)])\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(store.path), f"proc-{n}"], cwd=REPO)
        for n in range(2)
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    result = AuditLog(store).verify()
    assert result.ok and result.checked == 80
    actors = {r.actor for r in AuditLog(store).read(limit=80)}
    assert actors == {"proc-0", "proc-1"}
