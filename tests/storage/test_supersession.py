"""Supersession seen per caller (issue 12), on both backends: a link from a document outside the
caller's tiers is invisible in ``get``, ``stats`` and search (keyword, dense and hybrid,
through the knowledge base's index over the store's rows); a caller holding that tier sees
it."""

from __future__ import annotations

from pathlib import Path

from seenbefore.config import Settings
from seenbefore.kb import KnowledgeBase
from seenbefore.retrieval.embedders import HashingEmbedder
from seenbefore.retrieval.hybrid import SearchOptions
from seenbefore.storage.base import EmbeddedVectors
from seenbefore.storage.ports import Store
from seenbefore.storage.supersession import SupersedeRow, Supersession, newest_first
from seenbefore.types import SearchFilters
from tests.storage.test_contract import doc

GENERAL, BOTH = ("general",), ("general", "restricted")


def _world(store: Store) -> None:
    embedder = HashingEmbedder(dim=64)
    for doc_id, text, front in (
        ("OLD", "the quasar cache froze", {"date": "2021-01-01"}),
        (
            "NEW",
            "the quasar cache froze again",
            {"date": "2099-01-02", "supersedes": "OLD", "access_tier": "restricted"},
        ),
        ("GONE", "the quasar pool drained", {"status": "superseded"}),
    ):
        pm, chunks = doc(doc_id, f"## Summary\n{text}\n", **front)
        vectors = EmbeddedVectors(embedder.name, embedder.embed([c.text for c in chunks]))
        store.upsert(pm, chunks, vectors)


def test_get_and_stats_see_only_the_callers_superseders(any_store: Store) -> None:
    _world(any_store)
    old = any_store.get("OLD", GENERAL)
    assert (old.effective_status, old.superseded_by) == ("current", None)
    both = any_store.get("OLD", BOTH)
    assert (both.effective_status, both.superseded_by) == ("superseded", "NEW")
    gone = any_store.get("GONE", GENERAL)  # declared superseded: for everyone
    assert (gone.effective_status, gone.superseded_by) == ("superseded", None)
    general, everything = any_store.stats(GENERAL), any_store.stats(BOTH)
    assert (general.documents, general.current, general.superseded) == (2, 1, 1)
    assert (everything.documents, everything.current, everything.superseded) == (3, 1, 2)


def test_search_keeps_a_document_current_for_callers_without_the_tier(
    any_store: Store, tmp_path: Path
) -> None:
    _world(any_store)
    settings = Settings(home=tmp_path / "home", embedder="none")
    kb = KnowledgeBase(settings, store=any_store, embedder=HashingEmbedder(dim=64))
    for tiers, include, expected in (
        (GENERAL, False, {"OLD"}),
        (GENERAL, True, {"OLD", "GONE"}),
        (BOTH, False, {"NEW"}),
        (BOTH, True, {"OLD", "NEW", "GONE"}),
    ):
        filters = SearchFilters(tiers=tiers, include_superseded=include)
        for mode in ("sparse", "dense", "hybrid"):
            result = kb.search("quasar cache", filters, SearchOptions(k=10, mode=mode))
            assert {c.doc_id for c in result.candidates} == expected, (tiers, include, mode)


def test_supersession_answers_per_caller_from_the_rows(any_store: Store) -> None:
    _world(any_store)
    view = Supersession.build(any_store.supersede_rows(), any_store.generation())
    assert view.superseded_by("OLD", GENERAL) is None
    assert view.superseded_by("OLD", BOTH) == "NEW"
    assert view.superseded_for(GENERAL) == {"GONE"}
    assert view.superseded_for(BOTH) == {"OLD", "GONE"}
    filters = view.search_filters(SearchFilters(tiers=GENERAL, exclude_ids=("X",)))
    assert (filters.include_superseded, filters.exclude_ids) == (True, ("GONE", "X"))


def test_newest_first_orders_as_both_backends_do() -> None:
    rows = [
        SupersedeRow("b", "current", "general", "o", "2024-01-01"),
        SupersedeRow("a", "current", "general", "o", "2024-01-01"),
        SupersedeRow("c", "current", "general", "o", None),
        SupersedeRow("d", "current", "general", "o", "2025-01-01"),
    ]
    assert [r.id for r in newest_first(rows)] == ["d", "a", "b", "c"]
