"""`seenbefore serve`: sample KB when empty, the admin token shown once on the terminal (never
logged), SEENBEFORE_ADMIN_TOKEN registered, uvicorn on 127.0.0.1:8000 by default."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from seenbefore.cli import serve as serve_module
from seenbefore.cli.app import app
from seenbefore.config import Settings
from seenbefore.kb import KnowledgeBase
from seenbefore.security.audit import AuditLog
from seenbefore.security.tokens import TokenStore
from tests.conftest import EXAMPLES

ENV_TOKEN = "sb_" + "A" * 43


def _settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home", embedder="none")


def test_bootstrap_ingests_the_sample_and_creates_one_admin_token(tmp_path: Path) -> None:
    cfg = _settings(tmp_path)
    with KnowledgeBase(cfg) as kb:
        boot = serve_module.bootstrap(kb, cfg, samples=EXAMPLES, env_token=None, can_show=True)
        assert boot.ingested == len(list(EXAMPLES.glob("*.md")))
        assert boot.admin_token is not None
        principal = TokenStore(kb.store).authenticate(boot.admin_token)
        assert principal.role == "admin" and "general" in principal.tiers
        again = serve_module.bootstrap(kb, cfg, samples=EXAMPLES, env_token=None, can_show=True)
        assert again.ingested == 0 and again.admin_token is None  # shown once, only once
        assert [r.action for r in AuditLog(kb.store).read()] == ["token.create"]


def test_bootstrap_registers_the_environment_token(tmp_path: Path) -> None:
    cfg = _settings(tmp_path)
    with KnowledgeBase(cfg) as kb:
        boot = serve_module.bootstrap(kb, cfg, samples=None, env_token=ENV_TOKEN, can_show=True)
        assert boot.admin_token is None and boot.ingested == 0
        assert TokenStore(kb.store).authenticate(ENV_TOKEN).role == "admin"
        serve_module.bootstrap(kb, cfg, samples=None, env_token=ENV_TOKEN, can_show=True)
        assert len(TokenStore(kb.store).list()) == 1


def test_without_a_terminal_no_token_is_created(tmp_path: Path) -> None:
    cfg = _settings(tmp_path)
    with KnowledgeBase(cfg) as kb:
        boot = serve_module.bootstrap(kb, cfg, samples=None, env_token=None, can_show=False)
        assert boot.admin_token is None
        assert "SEENBEFORE_ADMIN_TOKEN" in boot.note
        assert not TokenStore(kb.store).has_admin()


def test_serve_command_defaults_and_prints_the_token_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("SEENBEFORE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SEENBEFORE_EMBEDDER", "none")
    monkeypatch.delenv("SEENBEFORE_ADMIN_TOKEN", raising=False)
    shown: list[str] = []
    monkeypatch.setattr(serve_module, "_terminal", lambda: shown.append)
    calls: list[dict[str, Any]] = []

    def fake_run(application: Any, **kwargs: Any) -> None:
        calls.append({"app": application, **kwargs})

    import uvicorn

    monkeypatch.setattr(uvicorn, "run", fake_run)
    caplog.set_level(logging.DEBUG)
    result = CliRunner().invoke(app, ["serve"])
    assert result.exit_code == 0, result.output
    assert calls[0]["host"] == "127.0.0.1" and calls[0]["port"] == 8000
    assert len(shown) == 1 and shown[0].startswith("sb_")
    assert shown[0] not in caplog.text
    samples = len(list(EXAMPLES.glob("*.md")))
    assert f"ingested {samples} sample postmortems" in result.output.replace("\n", " ")
    with TestClient(calls[0]["app"]) as client:  # the app serves the bootstrapped KB
        assert client.get("/readyz").json()["status"] == "ready"
        search = client.post(
            "/v1/search",
            json={"query": "pods OOMKilled, heap growing"},
            headers={"Authorization": f"Bearer {shown[0]}"},
        )
        assert search.status_code == 200 and search.json()["results"]
    second = CliRunner().invoke(app, ["serve", "--port", "8123"])
    assert second.exit_code == 0, second.output
    assert calls[1]["port"] == 8123
    assert len(shown) == 1  # not shown again: an admin token exists
    with TestClient(calls[1]["app"]):
        pass  # runs the lifespan, which closes the knowledge base
