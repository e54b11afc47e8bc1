"""Property (issue 12): what a caller sees equals what a store holding only the documents the
caller may see would show them. Random documents (tiers, declared status, supersede links to
each other, to absent ids, chains and cycles, dates) in one store; for each random caller (a
set of tiers) a second store holds just the visible documents; then ``Store.get`` for every id,
``Store.stats``, ``Store.sparse_search`` and ``KnowledgeBase.search`` (with and without
superseded) must agree between the two. SQLite in memory, in process: thousands of cheap
operations in a few seconds."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seenbefore.config import Settings
from seenbefore.errors import NotFoundError
from seenbefore.kb import KnowledgeBase
from seenbefore.knowledge.chunking import chunk_postmortem
from seenbefore.knowledge.validate import postmortem_from_markdown
from seenbefore.retrieval.hybrid import SearchOptions
from seenbefore.storage.sqlite.store import SQLiteStore
from seenbefore.types import Chunk, Postmortem, SearchFilters
from tests.depth import examples

TIERS = ("general", "restricted", "security")
WORDS = ("pool", "latency", "dns", "vault", "disk", "queue", "cert", "leak")
DATES = (None, "2023-01-05", "2024-06-01", "2024-06-01", "2025-02-11")
MIN_OPERATIONS = examples(10_000)


@st.composite
def documents(draw: st.DrawFn) -> list[dict[str, Any]]:
    n = draw(st.integers(min_value=2, max_value=8))
    ids = [f"D-{i}" for i in range(n)]
    out = []
    for doc_id in ids:
        out.append(
            {
                "id": doc_id,
                "tier": draw(st.sampled_from(TIERS)),
                "status": draw(st.sampled_from(("current",) * 4 + ("superseded",))),
                "supersedes": draw(st.none() | st.sampled_from([*ids, "D-ABSENT"])),
                "date": draw(st.sampled_from(DATES)),
                "words": draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4)),
            }
        )
    return out


def _markdown(doc: dict[str, Any]) -> str:
    front = [
        f"id: {doc['id']}",
        f"title: Incident {doc['id']} {' '.join(doc['words'])}",
        f"status: {doc['status']}",
        f"access_tier: {doc['tier']}",
    ]
    if doc["date"]:
        front.append(f"date: {doc['date']}")
    if doc["supersedes"] and doc["supersedes"] != doc["id"]:
        front.append(f"supersedes: {doc['supersedes']}")
    body = f"## Summary\nThe {' and '.join(doc['words'])} failed.\n"
    return "---\n" + "\n".join(front) + "\n---\n" + body


@functools.cache
def _parsed(doc_id: str, markdown: str) -> tuple[Postmortem, tuple[Chunk, ...]]:
    pm = postmortem_from_markdown(f"{doc_id}.md", markdown)
    return pm, tuple(chunk_postmortem(pm))


def _kb(home: Path, docs: list[dict[str, Any]]) -> KnowledgeBase:
    kb = KnowledgeBase(
        Settings(home=home, embedder="none", tiers=TIERS), store=SQLiteStore(":memory:")
    )
    for doc in docs:
        kb.store.upsert(*_parsed(doc["id"], _markdown(doc)))
    return kb


def _seen(kb: KnowledgeBase, doc_id: str, tiers: tuple[str, ...]) -> tuple[str, str | None] | str:
    try:
        doc = kb.store.get(doc_id, tiers)
    except NotFoundError as exc:
        return str(exc)
    return doc.effective_status, doc.superseded_by


def test_a_callers_view_equals_the_view_of_the_visible_documents(tmp_path: Path) -> None:
    operations = [0]

    @settings(
        max_examples=examples(240),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(
        docs=documents(),
        callers=st.lists(
            st.sets(st.sampled_from(TIERS), min_size=1).map(lambda s: tuple(sorted(s))),
            min_size=1,
            max_size=4,
        ),
        queries=st.lists(
            st.lists(st.sampled_from(WORDS), min_size=1, max_size=3), min_size=2, max_size=5
        ),
    )
    def check(
        docs: list[dict[str, Any]], callers: list[tuple[str, ...]], queries: list[list[str]]
    ) -> None:
        everything = _kb(tmp_path, docs)
        operations[0] += len(docs)
        try:
            for tiers in callers:
                visible = _kb(tmp_path, [d for d in docs if d["tier"] in tiers])
                try:
                    for doc in [*docs, {"id": "D-ABSENT"}]:
                        assert _seen(everything, doc["id"], tiers) == _seen(
                            visible, doc["id"], tiers
                        ), (doc["id"], tiers)
                    mine, theirs = everything.store.stats(tiers), visible.store.stats(tiers)
                    assert (mine.documents, mine.current, mine.superseded) == (
                        theirs.documents,
                        theirs.current,
                        theirs.superseded,
                    )
                    for query in queries:
                        for include in (False, True):
                            filters = SearchFilters(tiers=tiers, include_superseded=include)
                            text = " ".join(query)
                            options = SearchOptions(k=50, mode="sparse")
                            a = everything.search(text, filters, options).candidates
                            b = visible.search(text, filters, options).candidates
                            assert {(c.doc_id, c.status, c.superseded_by) for c in a} == {
                                (c.doc_id, c.status, c.superseded_by) for c in b
                            }, (tiers, include)
                            hits_a = everything.store.sparse_search(query, filters, 50)
                            hits_b = visible.store.sparse_search(query, filters, 50)
                            assert {h.doc_id for h in hits_a} == {h.doc_id for h in hits_b}
                    # a tier set, a get per id (and an absent one), stats, two searches per query
                    operations[0] += 1 + len(docs) + 1 + 1 + 4 * len(queries)
                finally:
                    visible.close()
        finally:
            everything.close()

    check()
    assert operations[0] >= MIN_OPERATIONS, operations[0]


@pytest.mark.parametrize(
    ("dates", "expected"),
    [
        (("2024-01-01", "2025-01-01"), "S-1"),  # the newest wins
        ((None, "2020-01-01"), "S-1"),  # undated comes last
        (("2024-01-01", "2024-01-01"), "S-0"),  # same date: the smaller id
    ],
)
def test_the_newest_visible_superseder_is_named(
    tmp_path: Path, dates: tuple[str | None, str | None], expected: str
) -> None:
    docs = [
        {
            "id": "OLD",
            "tier": "general",
            "status": "current",
            "supersedes": None,
            "date": "2020-01-01",
            "words": ["pool"],
        }
    ]
    for i, date in enumerate(dates):
        docs.append(
            {
                "id": f"S-{i}",
                "tier": "restricted",
                "status": "current",
                "supersedes": "OLD",
                "date": date,
                "words": ["pool"],
            }
        )
    with _kb(tmp_path, docs) as kb:
        assert kb.store.get("OLD", TIERS).superseded_by == expected
        assert kb.store.documents_meta(["OLD"])["OLD"].superseded_by == expected  # the column
        assert kb.supersession().superseded_by("OLD", TIERS) == expected
        assert kb.store.get("OLD", ("general",)).superseded_by is None
