"""No silent replacement: a different file that declares an existing id is quarantined, naming
both paths, unless the caller says --replace. The same file (or a JSONL record that moved to
another line of its file) updates as before."""

from __future__ import annotations

from pathlib import Path

from seenbefore.knowledge.ingest import Ingestor, same_source
from seenbefore.storage.sqlite.store import SQLiteStore
from tests.conftest import WriteDoc, postmortem_text

GOOD_BODY = "## Summary\nThe original write-up of the pool incident.\n"
CLASH_BODY = "## Summary\nA different file that reuses the id.\n"


def test_a_different_file_claiming_an_id_is_quarantined_with_both_paths(
    ingestor: Ingestor, store: SQLiteStore, write_doc: WriteDoc, kb_dir: Path
) -> None:
    good = write_doc("good.md", postmortem_text("INC-GOOD-001", body=GOOD_BODY))
    assert ingestor.ingest([good]).added == ["INC-GOOD-001"]
    before = store.get("INC-GOOD-001", ["general"])
    clash = write_doc("goodclash.md", postmortem_text("INC-GOOD-001", body=CLASH_BODY))
    report = ingestor.ingest([clash])
    assert report.updated == [] and report.added == []
    [(source, reason)] = report.quarantined
    assert source == str(clash.resolve())
    assert reason == (
        f"id 'INC-GOOD-001' already belongs to {good.resolve()}; this source "
        f"({clash.resolve()}) declares it too. Give this one a new id, or ingest it with "
        "--replace to replace the stored document (a moved file needs --replace once)"
    )
    after = store.get("INC-GOOD-001", ["general"])
    assert after.postmortem.body == before.postmortem.body
    assert after.postmortem.source == str(good.resolve())
    assert after.postmortem.content_hash == before.postmortem.content_hash


def test_replace_lets_the_other_file_take_over(
    ingestor: Ingestor, store: SQLiteStore, write_doc: WriteDoc
) -> None:
    good = write_doc("good.md", postmortem_text("INC-GOOD-001", body=GOOD_BODY))
    ingestor.ingest([good])
    clash = write_doc("goodclash.md", postmortem_text("INC-GOOD-001", body=CLASH_BODY))
    report = ingestor.ingest([clash], replace=True)
    assert report.updated == ["INC-GOOD-001"]
    assert report.replaced == [("INC-GOOD-001", str(good.resolve()))]
    doc = store.get("INC-GOOD-001", ["general"])
    assert doc.postmortem.source == str(clash.resolve())
    assert "reuses the id" in doc.postmortem.body
    # from now on the new file is the owner: the old one is the stranger
    assert ingestor.ingest([clash]).unchanged == ["INC-GOOD-001"]
    assert len(ingestor.ingest([good]).quarantined) == 1


def test_the_same_file_still_updates(
    ingestor: Ingestor, store: SQLiteStore, write_doc: WriteDoc
) -> None:
    good = write_doc("good.md", postmortem_text("INC-GOOD-001", body=GOOD_BODY))
    ingestor.ingest([good])
    good.write_text(postmortem_text("INC-GOOD-001", body=CLASH_BODY))
    report = ingestor.ingest([good])
    assert report.updated == ["INC-GOOD-001"] and report.quarantined == []


def test_owner_wins_even_when_the_claimant_sorts_first(
    ingestor: Ingestor, store: SQLiteStore, write_doc: WriteDoc, kb_dir: Path
) -> None:
    good = write_doc("b-good.md", postmortem_text("INC-GOOD-001", body=GOOD_BODY))
    ingestor.ingest([good])
    clash = write_doc("a-clash.md", postmortem_text("INC-GOOD-001", body=CLASH_BODY))
    report = ingestor.ingest([kb_dir], prune=True)
    assert report.unchanged == ["INC-GOOD-001"]
    assert [s for s, _ in report.quarantined] == [str(clash.resolve())]
    assert store.get("INC-GOOD-001", ["general"]).postmortem.source == str(good.resolve())


def test_a_moved_file_is_held_not_pruned(
    ingestor: Ingestor, store: SQLiteStore, write_doc: WriteDoc, kb_dir: Path
) -> None:
    old = write_doc("old.md", postmortem_text("INC-GOOD-001", body=GOOD_BODY))
    ingestor.ingest([kb_dir])
    moved = kb_dir / "new.md"
    old.rename(moved)
    report = ingestor.ingest([kb_dir], prune=True)
    assert report.pruned == [] and len(report.quarantined) == 1  # kept, and the clash named
    assert store.get("INC-GOOD-001", ["general"]).postmortem.body.startswith("## Summary\nThe")
    report = ingestor.ingest([kb_dir], prune=True, replace=True)
    assert report.replaced == [("INC-GOOD-001", str(old.resolve()))]
    assert store.get("INC-GOOD-001", ["general"]).postmortem.source == str(moved.resolve())


def test_retry_honours_replace(ingestor: Ingestor, store: SQLiteStore, write_doc: WriteDoc) -> None:
    good = write_doc("good.md", postmortem_text("INC-GOOD-001", body=GOOD_BODY))
    ingestor.ingest([good])
    clash = write_doc("goodclash.md", postmortem_text("INC-GOOD-001", body=CLASH_BODY))
    ingestor.ingest([clash])
    assert len(ingestor.retry(str(clash.resolve())).quarantined) == 1
    assert ingestor.retry(str(clash.resolve()), replace=True).updated == ["INC-GOOD-001"]


def test_same_source_compares_files_not_jsonl_lines() -> None:
    assert same_source("/k/a.jsonl#L3", "/k/a.jsonl#L4")
    assert same_source("/k/a.md", "/k/a.md")
    assert not same_source("/k/a.md", "/k/b.md")
    assert not same_source("api:admin", "/k/a.md")
