"""Deletion everywhere: after deleting a postmortem, no file under the data directory holds its
text (bytes, -wal and -shm files and the BM25 .npz included), whether the API or the CLI
deleted it."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from typer.testing import CliRunner

from seenbefore.cli.app import app as cli
from seenbefore.notify.base import DeliveryResult, Notification
from seenbefore.notify.outbox import Outbox
from seenbefore.security.audit import AuditLog
from seenbefore.types import Anomaly
from tests.conftest import postmortem_text
from tests.service.conftest import Service

MARKER = "quokka lighthouse marmalade protocol"
TOKEN = "xylqvorbzent"  # one made-up word: its FTS5 and BM25 index terms must go too
BODY = f"""## Summary
The ledger writer stalled for an hour.

## Detection
Ledger write latency climbed and the {TOKEN} queue grew without bound.

## Root cause
The {MARKER} held a table lock while compacting the ledger. Writers queued behind it.

## Resolution
Disabled the {MARKER} during business hours.
"""


def _files_holding(home: Path, needle: bytes) -> list[str]:
    return sorted(
        str(p.relative_to(home))
        for p in home.rglob("*")
        if p.is_file() and needle in p.read_bytes()
    )


def _leave_traces(service: Service) -> tuple[str, str]:
    """Ingest, search, investigate, approve, queue a notification: the marker everywhere."""
    doc = postmortem_text("LEDGER-9", title="Ledger writer stalled by compaction", body=BODY)
    assert (
        service.as_("admin", "post", "/v1/postmortems", json={"markdown": doc}).status_code == 201
    )
    found = service.as_("viewer", "post", "/v1/search", json={"query": MARKER}).json()
    assert found["results"][0]["id"] == "LEDGER-9"
    text = {"text": f"ledger writes stalled, {TOKEN} queue growing, {MARKER} running"}
    review = service.as_("responder", "post", "/v1/investigations", json=text).json()
    assert review["draft"]["cited_incidents"][0] == "LEDGER-9"
    approved = service.as_("reviewer", "post", f"/v1/reviews/{review['id']}/approve").json()
    derived = approved["postmortem_id"]
    assert MARKER in service.as_("viewer", "get", f"/v1/postmortems/{derived}").json()["body"]
    unrelated = service.as_(
        "responder", "post", "/v1/investigations", json={"text": "SERVFAIL from resolvers"}
    ).json()
    assert "LEDGER-9" not in unrelated["draft"]["cited_incidents"]
    anomaly = Anomaly(
        id="A-1",
        service="ledger",
        cloud="aws",
        region="eu-west-1",
        start=dt.datetime(2025, 1, 1, tzinfo=dt.UTC),
        end=dt.datetime(2025, 1, 1, 0, 20, tzinfo=dt.UTC),
        score=0.9,
    )
    Outbox(service.settings.home / "outbox.sqlite").add(
        "slack",
        Notification(anomaly, "ledger stalled", draft=review["draft"]),
        DeliveryResult.failure("HTTP 503", retryable=True, status=503),
    )
    home = service.settings.home
    holding = _files_holding(home, MARKER.encode())
    assert {"kb.sqlite", "outbox.sqlite", "logs/investigations.jsonl"} <= {
        h.removesuffix("-wal") for h in holding
    }
    assert any(h.startswith("approved/") for h in holding)
    assert _files_holding(home, TOKEN.encode())
    return derived, unrelated["id"]


def _check_gone(service: Service, derived: str, unrelated: str) -> None:
    home = service.settings.home
    assert _files_holding(home, MARKER.encode()) == []
    assert _files_holding(home, TOKEN.encode()) == []
    assert _files_holding(home, b"LEDGER-9 ") == []
    for doc in ("LEDGER-9", derived):
        assert service.as_("admin", "get", f"/v1/postmortems/{doc}").status_code == 404
    assert service.as_("admin", "get", "/v1/postmortems/POOL-1").status_code == 200
    assert service.as_("viewer", "get", f"/v1/investigations/{unrelated}").status_code == 200
    assert Outbox(home / "outbox.sqlite").entries() == []
    search = service.as_("viewer", "post", "/v1/search", json={"query": MARKER}).json()
    assert [r["id"] for r in search["results"]] == []
    audit = AuditLog(service.app.state.service.kb.store)
    deletions = audit.read(action="delete")
    assert {r.doc_ids[0] for r in deletions} == {"LEDGER-9", derived}
    assert all(len(r.detail["content_hash"]) == 64 for r in deletions)
    assert audit.verify().ok


def test_delete_through_the_api_leaves_no_trace(service: Service) -> None:
    derived, unrelated = _leave_traces(service)
    response = service.as_("admin", "delete", "/v1/postmortems/LEDGER-9")
    assert response.status_code == 200
    report = response.json()
    assert report["derived_deleted"] == [derived]
    assert report["reviews_purged"] >= 1
    assert report["notifications_purged"] == 1
    assert report["log_lines_purged"] >= 1
    assert {"kb.sqlite", "reviews.sqlite", "outbox.sqlite"} <= set(report["files_compacted"])
    _check_gone(service, derived, unrelated)


def test_delete_through_the_cli_leaves_no_trace(
    service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    derived, unrelated = _leave_traces(service)
    monkeypatch.setenv("SEENBEFORE_HOME", str(service.settings.home))
    monkeypatch.setenv("SEENBEFORE_EMBEDDER", "none")
    result = CliRunner().invoke(cli, ["delete", "LEDGER-9"])  # while the service runs
    assert result.exit_code == 0, result.output
    assert "deleted LEDGER-9" in result.output
    assert derived in result.output
    _check_gone(service, derived, unrelated)
