"""No silent replacement, regardless of case: ``inc-2021-001`` from another file beside a stored
``INC-2021-001`` is quarantined naming both files (as the same id from another source is), and
``--replace`` lets it take over; two spellings in one run are a clash too. ``show`` finds the
stored document whatever the case it is asked in, and shows the stored spelling. Both backends."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from seenbefore.cli.app import app
from seenbefore.knowledge.ingest import Ingestor
from seenbefore.knowledge.jsonl import FieldMapping
from seenbefore.storage.ports import Store
from seenbefore.storage.postgres.store import PostgresStore
from seenbefore.storage.sqlite.store import SQLiteStore
from tests.conftest import WriteDoc, postmortem_text

BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.integration)]
FIRST = "## Summary\nThe original write-up of the pool incident.\n"
OTHER = "## Summary\nAnother file that spells the same id in lower case.\n"


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Store, str | None]]:
    """A fresh store of each backend, and the database URL when it is PostgreSQL."""
    if request.param == "sqlite":
        with SQLiteStore(tmp_path / "home" / "kb.sqlite") as store:
            yield store, None
        return
    url = request.getfixturevalue("pg_url")
    with PostgresStore(url) as pg:
        yield pg, url


def test_a_case_variant_from_another_file_is_quarantined_naming_both(
    backend: tuple[Store, str | None], write_doc: WriteDoc
) -> None:
    store, _ = backend
    ingestor = Ingestor(store)
    first = write_doc("upper.md", postmortem_text("INC-2021-001", body=FIRST))
    assert ingestor.ingest([first]).added == ["INC-2021-001"]
    other = write_doc("lower.md", postmortem_text("inc-2021-001", body=OTHER))
    report = ingestor.ingest([other])
    assert report.added == report.updated == []
    [(source, reason)] = report.quarantined
    assert source == str(other.resolve())
    assert reason == (
        f"id 'inc-2021-001' differs only in case from 'INC-2021-001', which belongs to "
        f"{first.resolve()}; this source ({other.resolve()}) declares it. Ids are unique "
        "regardless of case: give this one a new id, or ingest it with --replace to replace "
        "the stored document"
    )
    assert store.list_ids() == ["INC-2021-001"]
    kept = store.get("INC-2021-001", ["general"]).postmortem
    assert kept.source == str(first.resolve()) and "original write-up" in kept.body
    [entry] = store.list_quarantine()
    assert entry.doc_id == "inc-2021-001"
    # the stored document is the owner: ingesting both again changes nothing, even with --prune
    again = ingestor.ingest([first.parent], prune=True)
    assert again.unchanged == ["INC-2021-001"] and again.pruned == []
    assert [s for s, _ in again.quarantined] == [str(other.resolve())]


def test_replace_lets_the_variant_take_over(
    backend: tuple[Store, str | None], write_doc: WriteDoc
) -> None:
    store, _ = backend
    ingestor = Ingestor(store)
    first = write_doc("upper.md", postmortem_text("INC-2021-001", body=FIRST))
    ingestor.ingest([first])
    other = write_doc("lower.md", postmortem_text("inc-2021-001", body=OTHER))
    ingestor.ingest([other])  # quarantined
    report = ingestor.retry(str(other.resolve()), replace=True)
    assert report.updated == ["inc-2021-001"]
    assert report.replaced == [("inc-2021-001", str(first.resolve()))]
    assert store.list_ids() == ["inc-2021-001"]
    assert store.list_quarantine() == []
    taken = store.get("INC-2021-001", ["general"]).postmortem
    assert taken.id == "inc-2021-001" and "lower case" in taken.body
    # from now on the lower-case file is the owner and the other one the stranger
    assert ingestor.ingest([other]).unchanged == ["inc-2021-001"]
    assert len(ingestor.ingest([first]).quarantined) == 1


def test_a_file_that_respells_its_own_id_updates(
    backend: tuple[Store, str | None], write_doc: WriteDoc
) -> None:
    store, _ = backend
    ingestor = Ingestor(store)
    path = write_doc("one.md", postmortem_text("INC-2021-001", body=FIRST))
    ingestor.ingest([path])
    path.write_text(postmortem_text("inc-2021-001", body=FIRST))
    report = ingestor.ingest([path])
    assert report.updated == ["inc-2021-001"] and report.quarantined == []
    assert store.list_ids() == ["inc-2021-001"]


def test_two_spellings_in_one_run_are_a_clash(
    backend: tuple[Store, str | None], tmp_path: Path
) -> None:
    store, _ = backend
    export = tmp_path / "export.jsonl"
    export.write_text(
        json.dumps({"key": "INC-2021-001", "t": "Pool exhausted", "s": "first record"})
        + "\n"
        + json.dumps({"key": "inc-2021-001", "t": "Pool exhausted", "s": "second record"})
        + "\n"
    )
    mapping = FieldMapping.parse("id=key,title=t,summary=s")
    report = Ingestor(store, mapping=mapping).ingest([export], replace=True)
    assert report.added == ["INC-2021-001"]
    [(source, reason)] = report.quarantined
    assert source == f"{export.resolve()}#L2"
    assert reason == (
        f"id 'inc-2021-001' differs only in case from 'INC-2021-001', which "
        f"{export.resolve()}#L1 defines in this run; ids are unique regardless of case: give "
        "one of them a new id"
    )
    assert store.list_ids() == ["INC-2021-001"]


def test_show_finds_the_stored_spelling(
    backend: tuple[Store, str | None],
    write_doc: WriteDoc,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store, url = backend
    monkeypatch.setenv("SEENBEFORE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SEENBEFORE_EMBEDDER", "none")
    monkeypatch.delenv("SEENBEFORE_TIERS", raising=False)
    if url is not None:
        monkeypatch.setenv("SEENBEFORE_DATABASE_URL", url)
    runner = CliRunner()
    first = write_doc("upper.md", postmortem_text("INC-2021-001", body=FIRST))
    assert runner.invoke(app, ["ingest", str(first)]).exit_code == 0
    other = write_doc("lower.md", postmortem_text("inc-2021-001", body=OTHER))
    clash = runner.invoke(app, ["ingest", str(other)])
    assert clash.exit_code == 1 and "differs only in case" in clash.output
    shown = runner.invoke(app, ["show", "inc-2021-001", "--json"])
    assert shown.exit_code == 0, shown.output
    payload = json.loads(shown.stdout)
    assert payload["id"] == "INC-2021-001" and payload["source"] == str(first.resolve())
    assert store.list_ids() == ["INC-2021-001"]
    # the audit names the stored spelling, and delete finds it in any case
    audit = runner.invoke(app, ["audit", "--json"])
    assert '"INC-2021-001"' in audit.output and '"inc-2021-001"' not in audit.output
    deleted = runner.invoke(app, ["delete", "inc-2021-001"])
    assert deleted.exit_code == 0, deleted.output
    assert store.list_ids() == []
