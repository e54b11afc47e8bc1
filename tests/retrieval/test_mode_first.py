"""A precedent is the same failure: when the query names a failure mode with the classifier's
confidence and sparse is unsure of its top document, postmortems of that mode among the first
``MODE_POOL`` move up (retrieval/hybrid.py ``HybridRetriever._mode_first``); a query whose words
single out one document, a query that names no mode, or a single-retriever search keeps its
order."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pytest

from seenbefore.config import Settings
from seenbefore.core.fusion import ranked, rrf
from seenbefore.kb import KnowledgeBase
from seenbefore.knowledge.validate import postmortem_from_markdown
from seenbefore.retrieval.hybrid import DENSE_VOTE_GAP, MODE_POOL, HybridRetriever
from seenbefore.retrieval.plan import QueryPlan, Scoring, SearchOptions
from seenbefore.retrieval.ranking import Ranked
from seenbefore.types import Postmortem, SearchFilters, StoredDocument
from tests.conftest import EXAMPLES, untyped_examples

MODES = ("dns-failure", "memory-leak", *(f"m{i}" for i in range(26)))


class Reader:
    confident = 0.5

    def __init__(self, query: Mapping[str, float], docs: Mapping[str, str]):
        self.query, self.docs = query, docs

    def of_document(self, pm: Postmortem) -> tuple[str, float]:
        mode = self.docs.get(pm.id, "")
        return (mode, 1.0) if mode else ("", 0.0)

    def of_query(self, text: str) -> Mapping[str, float]:
        return self.query


class Store:
    def documents_meta(self, doc_ids: Sequence[str]) -> dict[str, StoredDocument]:
        return {
            d: StoredDocument(
                Postmortem(id=d, title=d, date=None, body="", sections=()),
                "active",
                None,
                1,
                "",
                "",
            )
            for d in doc_ids
        }


def posterior(mode: str, p: float) -> dict[str, float]:
    rest = (1.0 - p) / (len(MODES) - 1)
    return {m: (p if m == mode else rest) for m in MODES}


def retriever(query: Mapping[str, float], docs: Mapping[str, str]) -> HybridRetriever:
    return HybridRetriever(
        Store(), None, gate=None, scoring=Scoring("none", None), modes=Reader(query, docs)
    )  # type: ignore[arg-type]


def sparse(gap: float | None) -> Ranked:
    return Ranked([], {}, np.zeros(0, np.float32), gap=gap)


PLAN = QueryPlan(SearchOptions(), dense_weight=0.3, signal_weight=0.0)
# the fused order: a leak write-up first, the DNS postmortem third
FUSED = rrf({"sparse": ["leak-a", "other", "dns-b", "leak-c"], "dense": ["leak-a", "dns-b"]})
DOCS = {"leak-a": "memory-leak", "dns-b": "dns-failure", "leak-c": "memory-leak"}


def test_a_confident_query_moves_its_modes_postmortems_up_when_sparse_is_unsure() -> None:
    moved, first = retriever(posterior("dns-failure", 0.8), DOCS)._mode_first(
        "q", dict(FUSED), PLAN, sparse(DENSE_VOTE_GAP / 2)
    )
    assert ranked(FUSED)[0] == "leak-a"
    assert ranked(moved)[0] == "dns-b"
    assert first is not None and (first.mode, first.documents) == ("dns-failure", 1)
    # documents of another mode (given less than an even share) and of no mode gain nothing
    assert moved["leak-a"] == FUSED["leak-a"] and moved["other"] == FUSED["other"]


def test_a_document_the_words_single_out_keeps_its_place() -> None:
    moved, first = retriever(posterior("dns-failure", 0.8), DOCS)._mode_first(
        "q", dict(FUSED), PLAN, sparse(DENSE_VOTE_GAP + 0.5)
    )
    assert moved == FUSED and first is None


def test_a_query_that_names_no_mode_with_confidence_keeps_the_order() -> None:
    moved, first = retriever(posterior("dns-failure", 0.4), DOCS)._mode_first(
        "q", dict(FUSED), PLAN, sparse(0.1)
    )
    assert moved == FUSED and first is None


def test_only_the_first_documents_can_move() -> None:
    order = [f"d{i}" for i in range(MODE_POOL + 5)]
    fused = rrf({"sparse": order})
    docs = {order[-1]: "dns-failure", order[MODE_POOL - 1]: "dns-failure"}
    moved, first = retriever(posterior("dns-failure", 0.9), docs)._mode_first(
        "q", dict(fused), PLAN, sparse(0.1)
    )
    assert ranked(moved)[0] == order[MODE_POOL - 1]  # the last of the pool, now first
    assert moved[order[-1]] == fused[order[-1]]  # beyond the pool: untouched
    assert first is not None and first.documents == 1


def test_a_single_retriever_search_keeps_its_order() -> None:
    plan = QueryPlan(SearchOptions(mode="sparse"), dense_weight=0.0, signal_weight=0.0)
    moved, first = retriever(posterior("dns-failure", 0.9), DOCS)._mode_first(
        "q", dict(FUSED), plan, sparse(0.1)
    )
    assert moved == FUSED and first is None


LEAK_QUERY = (
    "Worker memory grew steadily over days until pods were OOM-killed; heap dumps showed an "
    "unbounded cache of parsed messages"
)


def test_on_the_untyped_sample_kb_the_inferred_mode_puts_the_leaks_first(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """End to end, nothing typed: the sample KB without its ``type:`` lines (the types kept
    aside as the labels), so the modes moved on are the classifier's inferences."""
    root = tmp_path_factory.mktemp("untyped-modes")
    labels = {
        pm.id: pm.type
        for pm in (
            postmortem_from_markdown(str(path), path.read_text(encoding="utf-8"))
            for path in EXAMPLES.glob("*.md")
        )
    }
    folder = untyped_examples(root / "docs")
    with KnowledgeBase(Settings(home=root / "home", embedder="none")) as kb:
        kb.ingest([folder])
        filters = SearchFilters(tiers=("general",))
        plain = kb.search(LEAK_QUERY, filters, SearchOptions(k=4, mode="sparse"))
        default = kb.search(LEAK_QUERY, filters, SearchOptions(k=4))
    by_id = {c.doc_id: labels[c.doc_id] for c in (*plain.candidates, *default.candidates)}
    assert "memory-leak" in [by_id[c.doc_id] for c in plain.candidates]
    assert [by_id[c.doc_id] for c in plain.candidates] != ["memory-leak"] * 4  # before
    assert [by_id[c.doc_id] for c in default.candidates] == ["memory-leak"] * 4
    assert default.mode_first is not None and default.mode_first.mode == "memory-leak"
    assert default.explain()["mode_first"]["documents"] >= 4
