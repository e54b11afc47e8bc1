"""ReviewRecords' SQL on both backends: the tier rule, adding the written postmortem to a
review's documents, and finding the reviews that quote a document (the parts that used to branch
on the backend and now ask ``store.sql``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from seenbefore.review.records import ReviewRecords
from seenbefore.storage.ports import Store
from seenbefore.storage.postgres.store import PostgresStore
from seenbefore.storage.sqlite.store import SQLiteStore


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.integration)])
def records(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ReviewRecords]:
    store: Store
    if request.param == "sqlite":
        store = SQLiteStore(tmp_path / "kb.sqlite")
    else:
        store = PostgresStore(request.getfixturevalue("pg_url"))
    with store:
        yield ReviewRecords(store)


def _review(records: ReviewRecords, review_id: str, tiers: list[str], docs: list[str]) -> None:
    assert records.insert(
        review_id,
        request={"text": "q"},
        requested_by="t",
        severity="sev2",
        source_key=None,
        source=None,
        access_tier="general",
        detail={},
    )
    assert records.publish(
        review_id,
        round_=1,
        draft={},
        evidence={},
        access_tier="general",
        tiers=tiers,
        doc_ids=docs,
        actor="t",
    )


def test_a_review_is_visible_only_with_every_tier_it_names(records: ReviewRecords) -> None:
    _review(records, "R1", ["general"], ["A"])
    _review(records, "R2", ["general", "restricted"], ["B"])
    assert [r.id for r in records.select(["general"], None, None)] == ["R1"]
    assert [r.id for r in records.select(["general", "restricted"], None, None)] == ["R1", "R2"]
    assert records.select(["restricted"], None, None) == []  # postmortem tier general not held
    assert records.select([], None, None) == []


def test_the_written_postmortem_joins_the_documents_once(records: ReviewRecords) -> None:
    _review(records, "R1", ["general"], ["B", "A"])
    records.set_postmortem("R1", "PM-R1")
    records.set_postmortem("R1", "PM-R1")  # a replay adds nothing
    row = records.row("R1")
    assert row is not None
    assert row["postmortem_id"] == "PM-R1"
    assert json.loads(row["doc_ids"]) == ["A", "B", "PM-R1"]
    events = [e.action for e in records.get("R1", None).history]
    assert events == ["started", "drafted", "postmortem_written", "postmortem_written"]


def test_quoting_finds_reviews_by_evidence_and_by_what_they_wrote(records: ReviewRecords) -> None:
    _review(records, "R1", ["general"], ["INC-1", "INC-2"])
    _review(records, "R2", ["general"], ["INC-2"])
    records.set_postmortem("R2", "PM-R2")
    assert records.quoting("INC-1") == ["R1"]
    assert sorted(records.quoting("INC-2")) == ["R1", "R2"]
    assert records.quoting("PM-R2") == ["R2"]
    assert records.quoting("INC") == []  # whole ids, not prefixes
