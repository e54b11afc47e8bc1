"""`seenbefore migrate`: a knowledge base moves SQLite -> PostgreSQL -> SQLite intact, verified,
and a second run changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from seenbefore.cli.app import app
from seenbefore.config import Settings
from seenbefore.kb import KnowledgeBase
from seenbefore.retrieval.embedders import HashingEmbedder
from seenbefore.security.audit import AuditLog
from seenbefore.storage.outbox import NewRow
from seenbefore.storage.postgres.store import PostgresStore
from seenbefore.storage.sqlite.outbox import SqliteOutboxRows
from seenbefore.storage.sqlite.store import SQLiteStore
from seenbefore.storage.transfer import inventory
from tests.conftest import EXAMPLES, postmortem_text
from tests.storage.test_contract import hits

pytestmark = pytest.mark.integration
runner = CliRunner()
NOW = "2024-03-14T10:00:00+00:00"


@pytest.fixture
def local_kb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A SQLite store with every kind of content: documents of two tiers (one superseded),
    vectors, a quarantined file, fitted settings, a blob and a chained audit log."""
    monkeypatch.setenv("SEENBEFORE_HOME", str(tmp_path / "home"))
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "old.md").write_text(postmortem_text("OLD", title="disk full on logs"))
    (folder / "new.md").write_text(
        postmortem_text("NEW", title="disk full again", supersedes="OLD", date="2024-05-01")
    )
    (folder / "secret.md").write_text(
        postmortem_text("SECRET", title="quasar nebula incident", access_tier="restricted")
    )
    (folder / "broken.md").write_text("---\nid: [unclosed\n---\nbody\n")
    settings = Settings(home=tmp_path / "home")
    with KnowledgeBase(settings, embedder=HashingEmbedder(32)) as kb:
        kb.ingest([folder, EXAMPLES])
        kb.store.set_json("fusion_weights", {"hashing-32": {"dense": 0.3, "source": "test"}})
        kb.store.put_blob("lsa_model", b"\x00\x01binary\xff")
        audit = AuditLog(kb.store)
        audit.record("local:tester", "search", query="disk full", doc_ids=["NEW"])
        audit.record("local:tester", "show", doc_ids=["SECRET"], tiers=["restricted"])
        assert len(kb.store.list_quarantine()) == 1
    return settings.db_path


def migrate(*args: str, code: int = 0) -> dict[str, object]:
    result = runner.invoke(app, ["migrate", *args, "--json"])
    assert result.exit_code == code, result.output
    return json.loads(result.stdout) if code == 0 else {"output": result.output}


def test_round_trip_is_verified_and_rerunning_is_safe(
    local_kb: Path, pg_url: str, tmp_path: Path
) -> None:
    outbox = SqliteOutboxRows(local_kb.parent / "outbox.sqlite")  # a queued and a dead one
    outbox.add(NewRow("slack", "A-1", "f1", "trigger", '{"m": 1}', "pending", 2, 503, "busy"), NOW)
    dead = outbox.add(NewRow("teams", "A-1", "f1", "trigger", "{}", "pending", 0, None, ""), NOW)
    outbox.bury(dead, "410 gone", NOW)
    first = migrate("--to", pg_url)
    assert first["verified"] is True
    assert first["outbox"] == {"from": str(outbox.path), "source": 2, "copied": 2}
    documents = first["documents"]
    assert isinstance(documents, dict) and documents["added"] >= 60
    counts = first["counts"]
    assert isinstance(counts, dict)
    assert counts["quarantine"] == {"source": 1, "target": 1}
    assert counts["audit_log"] == {"source": 2, "target": 2}
    assert counts["vectors"]["source"] == counts["chunks"]["source"] > 0

    again = migrate("--to", pg_url)
    assert again["verified"] is True
    assert again["documents"] == {"pruned": 0, "unchanged": documents["added"]}
    assert again["vectors_written"] == 0
    assert again["outbox"] == {"from": str(outbox.path), "source": 2, "copied": 0}

    with PostgresStore(pg_url) as pg:
        assert pg.get("OLD", ["general"]).superseded_by == "NEW"
        assert pg.embedder_info() == ("hashing-32", 32)
        assert hits(pg, "quasar nebula", tiers=("general",)) == []
        assert hits(pg, "quasar nebula", tiers=("restricted",)) == ["SECRET"]

    back = tmp_path / "back" / "kb.sqlite"
    returned = migrate("--from", pg_url, "--sqlite", str(back))
    assert returned["verified"] is True
    assert returned["outbox"]["copied"] == 2  # type: ignore[index]
    assert SqliteOutboxRows(back.parent / "outbox.sqlite").export_rows() == outbox.export_rows()
    assert migrate("--from", pg_url, "--sqlite", str(back))["documents"] == {
        "pruned": 0,
        "unchanged": documents["added"],
    }
    with SQLiteStore(local_kb) as original, SQLiteStore(back) as copy:
        assert inventory(copy) == inventory(original)
        # the hash chain survived both moves; its keyed records verify under the key of the
        # home that wrote them (the key never travels with the store)
        assert AuditLog(copy, key=AuditLog(original).key()).verify().ok
        assert (
            copy.get("SECRET", ["restricted"]).ingested_at
            == original.get("SECRET", ["restricted"]).ingested_at
        )


def test_target_documents_missing_from_the_source_need_prune(local_kb: Path, pg_url: str) -> None:
    migrate("--to", pg_url)
    with SQLiteStore(local_kb) as store:
        store.delete("SECRET")
    refused = migrate("--to", pg_url, code=5)
    assert "--prune" in str(refused["output"])
    pruned = migrate("--to", pg_url, "--prune")
    assert pruned["verified"] is True and pruned["documents"]["pruned"] == 1  # type: ignore[index]
    with PostgresStore(pg_url) as pg:
        assert "SECRET" not in pg.list_ids()


def test_needs_exactly_one_direction(local_kb: Path, pg_url: str) -> None:
    assert "exactly one" in str(migrate(code=2)["output"])
    assert "exactly one" in str(migrate("--to", pg_url, "--from", pg_url, code=2)["output"])
    assert "scheme" in str(migrate("--to", "mysql://x@y/z", code=2)["output"])
