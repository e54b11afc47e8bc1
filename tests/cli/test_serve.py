"""`seenbefore serve`: an empty store stays empty (the sample KB only with --sample), the admin
token shown once on the terminal (never logged), SEENBEFORE_ADMIN_TOKEN registered, uvicorn on
127.0.0.1:8000 by default, /healthz answering while startup work runs behind the socket."""

from __future__ import annotations

import json
import logging
import threading
import time
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
from tests.conftest import EXAMPLES, postmortem_text
from tests.service.live import wait_ready

ENV_TOKEN = "sb_" + "A" * 43


def _settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home", embedder="none")


def test_bootstrap_creates_one_admin_token_who_sees_the_samples_tiers(tmp_path: Path) -> None:
    cfg = _settings(tmp_path)
    with KnowledgeBase(cfg) as kb:
        boot = serve_module.bootstrap(kb, cfg, samples=EXAMPLES, env_token=None, can_show=True)
        assert not kb.store.list_ids()  # the token only; the sample is ingested behind the socket
        assert boot.admin_token is not None
        principal = TokenStore(kb.store).authenticate(boot.admin_token)
        assert principal.role == "admin"
        assert set(principal.tiers) == {"general", "restricted", "security"}  # the samples' tiers
        assert serve_module.ingest_samples(kb, EXAMPLES) == len(list(EXAMPLES.glob("*.md")))
        assert serve_module.ingest_samples(kb, EXAMPLES) == 0  # never beside other documents
        again = serve_module.bootstrap(kb, cfg, samples=EXAMPLES, env_token=None, can_show=True)
        assert again.admin_token is None  # shown once, only once
        assert [r.action for r in AuditLog(kb.store).read()] == ["token.create"]


def test_samples_never_join_a_teams_postmortems(tmp_path: Path, write_doc: Any) -> None:
    cfg = _settings(tmp_path)
    with KnowledgeBase(cfg) as kb:
        kb.ingest([write_doc("ours.md", postmortem_text("OURS-1"))])
        assert serve_module.ingest_samples(kb, EXAMPLES) == 0
        assert kb.store.list_ids() == ["OURS-1"]


def test_bootstrap_registers_the_environment_token(tmp_path: Path) -> None:
    cfg = _settings(tmp_path)
    with KnowledgeBase(cfg) as kb:
        boot = serve_module.bootstrap(kb, cfg, samples=None, env_token=ENV_TOKEN, can_show=True)
        assert boot.admin_token is None
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


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[Any]:
    """`seenbefore serve` with uvicorn's loop replaced: the uvicorn servers it would run."""
    monkeypatch.setenv("SEENBEFORE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SEENBEFORE_EMBEDDER", "none")
    monkeypatch.delenv("SEENBEFORE_ADMIN_TOKEN", raising=False)
    servers: list[Any] = []
    monkeypatch.setattr(serve_module, "run_server", servers.append)
    return servers


def test_serve_command_defaults_and_prints_the_token_once(
    served: list[Any], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    shown: list[str] = []
    monkeypatch.setattr(serve_module, "_terminal", lambda: shown.append)
    caplog.set_level(logging.DEBUG)
    result = CliRunner().invoke(app, ["serve"])
    assert result.exit_code == 0, result.output
    config = served[0].config
    assert config.host == "127.0.0.1" and config.port == 8000
    assert len(shown) == 1 and shown[0].startswith("sb_")
    assert shown[0] not in caplog.text
    output = " ".join(result.output.split())
    assert "the knowledge base is empty" in output and "seenbefore ingest PATH" in output
    assert "sample postmortems" not in output
    with TestClient(config.app) as client:  # an empty store stays empty
        assert wait_ready(client)["status"] == "ready"
        search = client.post(
            "/v1/search",
            json={"query": "pods OOMKilled, heap growing"},
            headers={"Authorization": f"Bearer {shown[0]}"},
        )
        assert search.status_code == 200 and search.json()["results"] == []
        assert search.json()["novel"] is True
    stats = CliRunner().invoke(app, ["stats", "--json"])
    assert json.loads(stats.output)["documents"] == 0
    second = CliRunner().invoke(app, ["serve", "--port", "8123"])
    assert second.exit_code == 0, second.output
    assert served[1].config.port == 8123
    assert len(shown) == 1  # not shown again: an admin token exists
    with TestClient(served[1].config.app):
        pass  # runs the lifespan, which closes the knowledge base


def test_serve_sample_ingests_behind_a_socket_that_answers_at_once(
    served: list[Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    shown: list[str] = []
    monkeypatch.setattr(serve_module, "_terminal", lambda: shown.append)
    release = threading.Event()
    real_ingest = serve_module.ingest_samples

    def slow_ingest(kb: KnowledgeBase, samples: Path) -> int:
        assert release.wait(60), "the test never let the sample ingest run"
        return real_ingest(kb, samples)

    monkeypatch.setattr(serve_module, "ingest_samples", slow_ingest)
    result = CliRunner().invoke(app, ["serve", "--sample"])
    assert result.exit_code == 0, result.output
    with TestClient(served[0].config.app) as client:
        # startup work is still running: alive, not ready, and saying why
        assert client.get("/healthz").status_code == 200
        starting = client.get("/readyz")
        assert starting.status_code == 503 and "starting" in starting.json()["reason"]
        refused = client.post(
            "/v1/search", json={"query": "x"}, headers={"Authorization": f"Bearer {shown[0]}"}
        )
        assert refused.status_code == 503
        release.set()
        assert wait_ready(client)["status"] == "ready"
        search = client.post(
            "/v1/search",
            json={"query": "pods OOMKilled, heap growing"},
            headers={"Authorization": f"Bearer {shown[0]}"},
        )
        assert search.status_code == 200 and search.json()["results"]
    with KnowledgeBase(Settings(home=tmp_path / "home", embedder="none")) as kb:
        assert len(kb.store.list_ids()) == len(list(EXAMPLES.glob("*.md")))


def test_a_startup_that_fails_stops_serve_with_the_reason(
    served: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(kb: KnowledgeBase, samples: Path) -> int:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(serve_module, "ingest_samples", broken)
    monkeypatch.setattr(serve_module, "run_server", lambda server: _serve_until_stopped(server))
    result = CliRunner().invoke(app, ["serve", "--sample"])
    assert result.exit_code == 1
    assert "startup failed: RuntimeError: disk on fire" in " ".join(result.output.split())


def _serve_until_stopped(server: Any) -> None:
    """What uvicorn does with the app, without a socket: run the lifespan until told to exit."""
    with TestClient(server.config.app):
        deadline = time.monotonic() + 60
        while not server.should_exit:
            assert time.monotonic() < deadline, "a failed startup did not stop the server"
            time.sleep(0.02)
