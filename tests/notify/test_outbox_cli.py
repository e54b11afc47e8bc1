"""`seenbefore notify list` and `notify retry` over the embedded outbox file (the PostgreSQL one
is tests/notify/test_outbox_replicas.py): what waits is shown, then sent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from seenbefore.cli.app import app
from seenbefore.notify import DeliveryResult, Notification, Outbox
from tests.notify.conftest import Receiver, make_anomaly

HOOK = "/services/T0000/B0000/outboxclitest03"


def test_list_then_retry_sends_what_waits(
    receiver: Receiver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    config = tmp_path / "config.toml"
    config.write_text(f'[notify.slack]\nwebhook_url = "{receiver.url(HOOK)}"\n')
    monkeypatch.setenv("SEENBEFORE_HOME", str(home))
    monkeypatch.setenv("SEENBEFORE_CONFIG", str(config))
    monkeypatch.delenv("SEENBEFORE_DATABASE_URL", raising=False)
    Outbox(home / "outbox.sqlite").add(
        "slack",
        Notification(make_anomaly(severity="SEV2"), "latency up"),
        DeliveryResult.failure("HTTP 503", retryable=True, status=503),
    )
    runner = CliRunner()

    def run(*args: str) -> dict[str, object]:
        result = runner.invoke(app, ["notify", *args, "--json"])
        assert result.exit_code == 0, result.output
        return dict(json.loads(result.stdout))

    [entry] = run("list", "--state", "pending")["entries"]  # type: ignore[misc]
    assert (entry["channel"], entry["anomaly"], entry["last_status"]) == ("slack", "A-1", 503)
    sent = run("retry")
    assert (sent["delivered"], sent["pending"]) == (1, 0) and len(receiver.requests) == 1
    assert run("list", "--state", "pending")["entries"] == []
    assert run("retry")["delivered"] == 0 and len(receiver.requests) == 1
    refused = runner.invoke(app, ["notify", "retry", "--attempts", "0"])
    assert refused.exit_code == 2 and "--attempts is 0" in refused.output


def test_without_a_notify_table_there_is_nothing_to_send_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEENBEFORE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SEENBEFORE_CONFIG", str(tmp_path / "none.toml"))
    (tmp_path / "none.toml").write_text("")
    result = CliRunner().invoke(app, ["notify", "list"])
    assert result.exit_code == 2 and "no [notify] table" in result.output
