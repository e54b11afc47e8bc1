"""`seenbefore serve` with SEENBEFORE_DATABASE_URL: the store is that database; a database that
does not answer at start does not stop the command (the app starts not ready and bootstraps
once the database answers)."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from seenbefore.cli import serve as serve_module
from seenbefore.cli.app import app
from tests.pg import LOGIN_ROLE
from tests.service.live import wait_ready

pytestmark = pytest.mark.integration
ENV_TOKEN = "sb_" + "P" * 43


def _serve(monkeypatch: pytest.MonkeyPatch, home: Path, url: str) -> dict[str, Any]:
    monkeypatch.setenv("SEENBEFORE_HOME", str(home))
    monkeypatch.setenv("SEENBEFORE_EMBEDDER", "none")
    monkeypatch.setenv("SEENBEFORE_DATABASE_URL", url)
    monkeypatch.setenv("SEENBEFORE_ADMIN_TOKEN", ENV_TOKEN)
    monkeypatch.setattr(serve_module, "_terminal", lambda: None)
    servers: list[Any] = []
    monkeypatch.setattr(serve_module, "run_server", servers.append)
    result = CliRunner().invoke(app, ["serve"])
    assert result.exit_code == 0, result.output
    return {"app": servers[0].config.app}


def test_serve_uses_the_database(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, pg_url: str
) -> None:
    call = _serve(monkeypatch, tmp_path / "home", pg_url)
    with TestClient(call["app"]) as client:
        assert wait_ready(client)["status"] == "ready"
        service = client.app.state.service  # type: ignore[attr-defined]
        assert service.kb.store.dialect == "postgres"
        assert service.tokens.authenticate(ENV_TOKEN).role == "admin"
    assert not (tmp_path / "home" / "kb.sqlite").exists()


def test_serve_starts_not_ready_when_the_database_is_down(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    call = _serve(monkeypatch, tmp_path / "home", f"postgresql://{LOGIN_ROLE}@127.0.0.1:{port}/x")
    with TestClient(call["app"]) as client:
        reason = wait_ready(client, until=lambda body: "starting" not in body["reason"])
        assert reason["status"] == "not ready" and "unreachable" in reason["reason"]
        assert client.get("/readyz").status_code == 503
        assert client.get("/healthz").status_code == 200
