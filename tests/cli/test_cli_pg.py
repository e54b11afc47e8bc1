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
