"""`seenbefore token ...`, `seenbefore audit [verify]`, and the audit records CLI commands leave."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from seenbefore.cli.app import app
from seenbefore.security.audit import AuditLog
from seenbefore.security.tokens import TokenStore
from seenbefore.storage.sqlite.store import SQLiteStore
from tests.conftest import cli_home, postmortem_text

runner = CliRunner()
QUERY = "checkout errors, database connections at the pool limit, quokka"


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return cli_home(tmp_path, monkeypatch)


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    folder = tmp_path / "kb"
    folder.mkdir()
    (folder / "a.md").write_text(postmortem_text("INC-1"), encoding="utf-8")
    (folder / "b.md").write_text(
        postmortem_text("INC-2", title="DNS resolution failures after resolver change"),
        encoding="utf-8",
    )
    assert runner.invoke(app, ["ingest", str(folder), "--json"]).exit_code == 0
    return folder


def invoke_json(*args: str) -> dict:  # type: ignore[type-arg]
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def records(home: Path, action: str) -> list[dict]:  # type: ignore[type-arg]
    with SQLiteStore(home / "kb.sqlite") as store:
        return [r.to_json() for r in AuditLog(store).read(action=action)]


def test_search_leaves_a_record_with_the_hashed_query_and_the_doc_ids(kb: Path, home: Path) -> None:
    found = invoke_json("search", QUERY, "-k", "2")
    ids = [r["id"] for r in found["results"]]
    assert ids and ids[0] == "INC-1"
    (record,) = records(home, "search")
    assert record["doc_ids"] == ids and record["tiers"] == ["general"]
    assert record["actor"].startswith("local:") and record["detail"]["principal"]["role"] == "admin"
    with SQLiteStore(home / "kb.sqlite") as store:
        assert record["query_hash"] == AuditLog(store).hash_text(QUERY)
    everything = b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file())
    assert b"quokka" not in everything  # the query text is nowhere in the data directory


def test_show_investigate_and_delete_are_audited(kb: Path, home: Path) -> None:
    invoke_json("show", "INC-2")
    invoke_json("investigate", QUERY)
    assert runner.invoke(app, ["delete", "INC-1"]).exit_code == 0
    assert records(home, "show")[0]["doc_ids"] == ["INC-2"]
    (inv,) = records(home, "investigate")
    assert "INC-1" in inv["doc_ids"] and inv["query_hash"] and "novel" in inv["detail"]
    (deleted,) = records(home, "delete")
    assert deleted["doc_ids"] == ["INC-1"] and len(deleted["detail"]["content_hash"]) >= 32
    listing = invoke_json("audit", "--limit", "10")
    # the fixture's ingest is audited too (issue 33: every CLI write leaves a record)
    assert [r["action"] for r in listing["records"]] == ["ingest", "show", "investigate", "delete"]
    assert invoke_json("audit", "--action", "delete")["records"][0]["id"] == deleted["id"]


def test_token_create_list_revoke(home: Path) -> None:
    created = invoke_json(
        "token", "create", "--name", "alice", "--role", "reviewer", "--tiers", "general,restricted"
    )
    assert created["token"].startswith("sb_") and created["tiers"] == ["general", "restricted"]
    listed = invoke_json("token", "list")
    assert [t["id"] for t in listed["tokens"]] == [created["id"]]
    assert created["token"] not in json.dumps(listed)
    with SQLiteStore(home / "kb.sqlite") as store:
        assert TokenStore(store).authenticate(created["token"]).role == "reviewer"
    plain = runner.invoke(
        app, ["token", "create", "--name", "b", "--role", "viewer", "--tiers", "general"]
    )
    assert plain.exit_code == 0 and plain.stdout.strip().startswith("sb_")
    assert runner.invoke(app, ["token", "revoke", created["id"]]).exit_code == 0
    after = invoke_json("token", "list")["tokens"]  # in creation order
    assert [(t["name"], t["active"]) for t in after] == [("alice", False), ("b", True)]
    assert records(home, "token.create")[0]["detail"]["token_id"] == created["id"]
    assert created["token"] not in json.dumps(invoke_json("audit"))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--role", "root", "--tiers", "general"], "viewer, responder, reviewer, admin"),
        (["--role", "viewer", "--tiers", ","], "tiers are empty"),
    ],
)
def test_token_create_rejects_unknown_role_and_empty_tiers(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["token", "create", "--name", "x", *args])
    assert result.exit_code == 2 and message in " ".join(result.output.split())


def test_token_revoke_unknown_is_not_found() -> None:
    result = runner.invoke(app, ["token", "revoke", "tok_missing"])
    assert result.exit_code == 3 and "tok_missing" in result.output


def test_audit_verify_exits_non_zero_naming_the_first_bad_record(kb: Path, home: Path) -> None:
    for _ in range(3):
        invoke_json("search", QUERY)
    ok = runner.invoke(app, ["audit", "verify"])
    assert ok.exit_code == 0 and "intact: 4 records" in ok.output  # the ingest and 3 searches
    conn = sqlite3.connect(str(home / "kb.sqlite"), isolation_level=None)
    conn.execute("DROP TRIGGER audit_log_no_update")
    conn.execute("UPDATE audit_log SET actor = 'mallory' WHERE id = 2")
    conn.close()
    bad = runner.invoke(app, ["audit", "verify"])
    assert bad.exit_code == 1 and "record 2" in bad.output
    assert invoke_json_fail("audit", "verify")["first_bad_id"] == 2


def invoke_json_fail(*args: str) -> dict:  # type: ignore[type-arg]
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 1, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]
