"""The "current for these tiers" clause must reach superseders through the supersedes index:
with one tier SQLite otherwise picked the access_tier index and scanned the whole tier for every
matched row (one FTS query took 107 s at 100k chunks)."""

from __future__ import annotations

import sqlite3

import pytest

from seenbefore.storage.sqlite.filters import current_sql
from seenbefore.storage.sqlite.schema import MIGRATIONS


def _database() -> sqlite3.Connection:
    db = sqlite3.connect(":memory:")
    for migration in MIGRATIONS:
        db.executescript(migration)
    return db


def _plan(db: sqlite3.Connection, tiers: tuple[str, ...]) -> str:
    where, params = current_sql(tiers)
    rows = db.execute(f"EXPLAIN QUERY PLAN SELECT d.id FROM documents d WHERE {where}", params)
    return "\n".join(str(r[-1]) for r in rows)


@pytest.mark.parametrize("tiers", [("general",), ("general", "restricted")])
def test_superseders_are_found_by_the_supersedes_index(tiers: tuple[str, ...]) -> None:
    db = _database()
    db.execute("ANALYZE")
    plan = _plan(db, tiers)
    assert "documents_supersedes" in plan, plan
    assert "documents_filter" not in plan, plan


def test_a_document_superseded_in_another_tier_stays_current_for_this_one() -> None:
    db = _database()
    where, params = current_sql(("general",))
    # old (general) is superseded by new (security): a general caller still sees old as current
    for doc, tier, supersedes in (("old", "general", None), ("new", "security", "old")):
        db.execute(
            "INSERT INTO documents (id, title, status, effective_status, supersedes, access_tier,"
            " body, content_hash, ingested_at, updated_at)"
            " VALUES (?, ?, 'current', 'current', ?, ?, '', '', '', '')",
            (doc, doc, supersedes, tier),
        )
    found = [r[0] for r in db.execute(f"SELECT d.id FROM documents d WHERE {where}", params)]
    assert sorted(found) == ["new", "old"]
    where, params = current_sql(("general", "security"))
    found = [r[0] for r in db.execute(f"SELECT d.id FROM documents d WHERE {where}", params)]
    assert found == ["new"]
