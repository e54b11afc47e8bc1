"""The CLI follows SEENBEFORE_DATABASE_URL: ingest, search, tokens and the audit log land in the
PostgreSQL database, and nothing is written to a SQLite file in the data directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from seenbefore.cli.app import app

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


def test_cli_commands_use_the_database(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("SEENBEFORE_HOME", str(home))
    monkeypatch.setenv("SEENBEFORE_EMBEDDER", "none")
    monkeypatch.setenv("SEENBEFORE_DATABASE_URL", pg_url)
    runner = CliRunner()

    def run(*args: str) -> dict[str, object]:
        result = runner.invoke(app, [*args, "--json"])
        assert result.exit_code == 0, result.output
        return dict(json.loads(result.stdout))

    ingested = runner.invoke(app, ["ingest", str(REPO / "examples/postmortems")])
    assert ingested.exit_code == 0, ingested.output
    assert run("stats")["documents"] == 63  # visible to the default tier
    hits = run("search", "database connections at the pool limit", "-k", "1")["results"]
    assert hits and hits[0]["type"] == "connection-pool-exhaustion"
    created = run("token", "create", "--name", "ops", "--role", "viewer", "--tiers", "general")
    assert str(created["token"]).startswith("sb_")
    records = run("audit")["records"]
    assert {"search", "token.create"} <= {r["action"] for r in records}  # type: ignore[index]
    verify = runner.invoke(app, ["audit", "verify"])
    assert verify.exit_code == 0, verify.output
    assert not (home / "kb.sqlite").exists()


def test_database_commands_run_on_the_maintenance_login(
    pg_url: str, pg_service_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With two URLs the CLI takes the maintenance one; `database key` makes a key the service
    login then binds with, `keys` lists it, `revoke-key` ends it, and `setup` says which login
    is no boundary. The service login alone may not run them."""
    monkeypatch.setenv("SEENBEFORE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SEENBEFORE_DATABASE_URL", pg_service_url)
    monkeypatch.setenv("SEENBEFORE_DATABASE_ADMIN_URL", pg_url)
    runner = CliRunner()

    def run(*args: str) -> dict[str, object]:
        result = runner.invoke(app, [*args, "--json"])
        assert result.exit_code == 0, result.output
        return dict(json.loads(result.stdout))

    report = run("database", "setup")
    logins = {x["name"]: x for x in report["logins"]}  # type: ignore[attr-defined]
    assert logins["seenbefore_api"]["boundary"] and not logins["seenbefore_service"]["boundary"]
    assert report["service_login"] == "seenbefore_api" and report["tier_key"] is None
    made = run("database", "key", "--name", "api", "--tiers", "general")
    assert str(made["key"]).startswith("sbk_") and made["tiers"] == ["general"]
    listed = run("database", "keys")["keys"]
    assert [(k["name"], k["tiers"]) for k in listed] == [("api", ["general"])]  # type: ignore[index]
    gone = runner.invoke(app, ["database", "revoke-key", str(made["id"])])
    assert gone.exit_code == 0, gone.output
    assert run("database", "keys")["keys"][0]["revoked_at"]  # type: ignore[index]
    monkeypatch.delenv("SEENBEFORE_DATABASE_ADMIN_URL")
    refused = runner.invoke(app, ["database", "keys"])
    assert refused.exit_code != 0 and "maintenance login" in refused.output
