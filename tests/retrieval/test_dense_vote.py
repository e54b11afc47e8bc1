"""Dense votes per query only while sparse is unsure of its top document (issue 23): a query
whose words one document alone carries is sparse's; a query that several documents match as
well as each other gets the KB's dense weight. The explain output says which happened."""

from __future__ import annotations

from pathlib import Path

import pytest

from seenbefore.calibration.record import keep_gate
from seenbefore.config import Settings
from seenbefore.core.trust import FusionWeights
from seenbefore.kb import KnowledgeBase
from seenbefore.retrieval.embedders import HashingEmbedder
from seenbefore.retrieval.hybrid import DENSE_VOTE_GAP, SearchOptions
from seenbefore.retrieval.standing import score_standing
from seenbefore.types import SearchFilters
from tests.conftest import postmortem_text

TEXTS = {
    "POOL": "database connections hit the pool limit during checkout",
    "DNS": "name resolution failed with servfail from the resolvers",
    "LEAK": "resident memory grew until the pods were oomkilled",
    "DISK": "iowait climbed on the volume during compaction",
    "CACHE": "the cache cluster evicted keys during checkout traffic",
    "QUEUE": "the queue backed up during checkout traffic",
}


@pytest.fixture
def kb(tmp_path: Path) -> KnowledgeBase:
    folder = tmp_path / "docs"
    folder.mkdir()
    for doc_id, text in TEXTS.items():
        (folder / f"{doc_id}.md").write_text(
            postmortem_text(doc_id, title=doc_id.lower(), body=f"## Summary\n{text}.\n")
        )
    base = KnowledgeBase(Settings(home=tmp_path / "home"), embedder=HashingEmbedder(64))
    base.ingest([folder])
    keep_gate(base.store, "hashing-64", FusionWeights(0.5, "test"), who="test")
    return base


def _gap(kb: KnowledgeBase, text: str) -> float:
    index = kb.index()
    sparse = kb.search(text, SearchFilters(), SearchOptions(k=6, mode="sparse"))
    assert sparse.candidates
    mask = index.doc_mask(SearchFilters())
    per_doc = index.doc_bm25.scores(list(sparse.terms), mask)  # type: ignore[union-attr]
    order = [index.position[c.doc_id] for c in sparse.candidates]
    return score_standing(per_doc, mask, order)[1]


def test_a_query_one_document_owns_is_sparse_alone(kb: KnowledgeBase) -> None:
    text = "servfail from the resolvers, name resolution failed"
    result = kb.search(text, SearchFilters(), SearchOptions(k=3))
    assert result.candidates[0].doc_id == "DNS"
    assert result.weights == {"sparse": 1.0, "dense": 0.0}
    # the rule, not luck: sparse's top stands more than DENSE_VOTE_GAP above the rest
    assert _gap(kb, text) > DENSE_VOTE_GAP
    # asked not to vote, the same query fuses with the KB's weight
    fixed = kb.search(text, SearchFilters(), SearchOptions(k=3, dense_vote=False))
    assert fixed.weights == {"sparse": 0.5, "dense": 0.5}


def test_a_query_sparse_is_unsure_of_keeps_the_dense_weight(kb: KnowledgeBase) -> None:
    text = "checkout traffic"  # three documents say it, none stands out
    assert _gap(kb, text) <= DENSE_VOTE_GAP
    result = kb.search(text, SearchFilters(), SearchOptions(k=3))
    assert result.weights == {"sparse": 0.5, "dense": 0.5}


def test_an_explicit_weight_applies_as_given(kb: KnowledgeBase) -> None:
    text = "servfail from the resolvers, name resolution failed"
    result = kb.search(text, SearchFilters(), SearchOptions(k=3, dense_weight=0.7))
    assert result.weights == {"sparse": pytest.approx(0.3), "dense": 0.7}
    voted = kb.search(text, SearchFilters(), SearchOptions(k=3, dense_weight=0.7, dense_vote=True))
    assert voted.weights == {"sparse": 1.0, "dense": 0.0}
