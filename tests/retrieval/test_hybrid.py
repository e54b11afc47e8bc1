from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from seenbefore.calibration.record import keep_gate
from seenbefore.config import Settings
from seenbefore.core.trust import FusionWeights
from seenbefore.errors import EmbedderMismatchError
from seenbefore.kb import KnowledgeBase
from seenbefore.retrieval.embedders import HashingEmbedder
from seenbefore.retrieval.hybrid import SearchOptions
from seenbefore.storage.base import EmbeddedVectors
from seenbefore.types import SearchFilters
from tests.conftest import postmortem_text

DOCS = {
    "POOL": ("connection pool exhausted checkout", "database connections hit the pool limit"),
    "DNS": ("resolver outage", "name resolution failed with servfail"),
    "LEAK": ("heap growth", "resident memory grew until oomkilled"),
    "DISK": ("disk contention", "iowait climbed on the volume during compaction"),
}


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    folder = tmp_path / "docs"
    folder.mkdir()
    for doc_id, (title, text) in DOCS.items():
        (folder / f"{doc_id}.md").write_text(
            postmortem_text(doc_id, title=title, body=f"## Summary\n{text}.\n")
        )
    (folder / "secret.md").write_text(
        postmortem_text(
            "SECRET",
            title="quasar nebula",
            body="## Summary\nquasar nebula pulsar.\n",
            access_tier="restricted",
        )
    )
    with KnowledgeBase(Settings(home=tmp_path / "home"), embedder=HashingEmbedder(64)) as base:
        base.ingest([folder])
        keep_gate(base.store, "hashing-64", FusionWeights(0.5, "test"), who="test")
        yield base


def search(kb: KnowledgeBase, text: str, **options: object) -> list[str]:
    result = kb.search(text, SearchFilters(), SearchOptions(**options))  # type: ignore[arg-type]
    return [c.doc_id for c in result.candidates]


def test_vectors_stored_with_chunks_and_gate_uses_measured_weight(kb: KnowledgeBase) -> None:
    ids, matrix = kb.store.vectors()
    assert len(ids) == len(kb.store.chunk_rows().ids) and matrix.shape[1] == 64
    assert kb.store.embedder_info() == ("hashing-64", 64)
    status = kb.status()
    assert status["dense_trusted"] and status["weights"] == {"sparse": 0.5, "dense": 0.5}


def test_matched_by_reports_each_retriever(kb: KnowledgeBase) -> None:
    result = kb.search("pool limit connections", SearchFilters(), SearchOptions(k=5, mode="hybrid"))
    top = result.candidates[0]
    assert top.doc_id == "POOL" and top.matched_by == "both"
    assert top.retrievers["sparse"].rank == 1 and "dense" in top.retrievers
    for c in result.candidates:
        expected = {"sparse", "dense"} if c.matched_by == "both" else {c.matched_by}
        assert set(c.retrievers) == expected
    sparse_only = kb.search("pool", SearchFilters(), SearchOptions(mode="sparse"))
    assert {c.matched_by for c in sparse_only.candidates} == {"sparse"}
    dense_only = kb.search("pool", SearchFilters(), SearchOptions(mode="dense"))
    assert {c.matched_by for c in dense_only.candidates} == {"dense"}


def test_dense_filters_apply_before_scoring(kb: KnowledgeBase) -> None:
    # the restricted document is the exact nearest neighbour, yet k=1 still returns a visible one
    assert search(kb, "quasar nebula pulsar", mode="dense", k=1) != ["SECRET"]
    assert len(search(kb, "quasar nebula pulsar", mode="dense", k=1)) == 1
    assert "SECRET" not in search(kb, "quasar nebula pulsar", mode="hybrid", k=10)
    visible = kb.search(
        "quasar nebula pulsar",
        SearchFilters(tiers=("general", "restricted")),
        SearchOptions(mode="dense", k=1),
    )
    assert visible.candidates[0].doc_id == "SECRET"
    excluded = kb.search("pool", SearchFilters(exclude_ids=("POOL",)), SearchOptions(mode="dense"))
    assert "POOL" not in [c.doc_id for c in excluded.candidates]


def test_embedder_mismatch_is_refused(kb: KnowledgeBase, tmp_path: Path) -> None:
    pm_chunks = kb.store.chunks_by_id(kb.store.chunk_rows().ids[:1].tolist())
    chunk = next(iter(pm_chunks.values()))
    doc = kb.store.get(chunk.doc_id, ["general"]).postmortem
    from dataclasses import replace

    changed = replace(doc, content_hash="different")
    with pytest.raises(EmbedderMismatchError, match="reindex"):
        kb.store.upsert(
            changed, [chunk], EmbeddedVectors("other-model", np.ones((1, 8), np.float32))
        )
    assert kb.store.get(chunk.doc_id, ["general"]).postmortem.content_hash == doc.content_hash


def test_index_follows_the_store_and_never_serves_deleted_documents(kb: KnowledgeBase) -> None:
    assert search(kb, "servfail resolution", mode="sparse")[0] == "DNS"
    bm25_file = kb.store.path.with_name(kb.store.path.name + ".bm25.npz")
    assert bm25_file.exists()
    kb.store.delete("DNS")
    assert "DNS" not in search(kb, "servfail resolution", mode="hybrid", k=10)
    # a fresh process loads the saved index only if its generation matches
    with KnowledgeBase(kb.settings, embedder=HashingEmbedder(64)) as other:
        assert "DNS" not in search(other, "servfail resolution", mode="sparse", k=10)


def test_novel_when_nothing_matches(kb: KnowledgeBase) -> None:
    result = kb.search("zzzz qqqq xxxx", SearchFilters(), SearchOptions(mode="sparse"))
    assert result.novel is True and result.candidates == ()


def test_recency_boost_is_explained(kb: KnowledgeBase) -> None:
    import datetime as dt

    result = kb.search(
        "pool",
        SearchFilters(),
        SearchOptions(mode="sparse", recency_half_life_days=365, today=dt.date(2025, 3, 14)),
    )
    boost = result.recency["POOL"]
    assert boost == pytest.approx(1 + 0.5 ** (365 / 365))  # dated 2024-03-14


def test_lsa_floor_below_fifty_documents(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(6):
        (folder / f"{i}.md").write_text(postmortem_text(f"D{i}", title=f"incident {i} pool"))
    with KnowledgeBase(Settings(home=tmp_path / "home", embedder="lsa")) as base:
        base.ingest([folder])
        status = base.status()
        assert status["active_dense_embedder_name"].startswith("lsa")
        assert (
            not status["dense_trusted"] and "below MIN_CORPUS_SIZE_FOR_LSA" in status["gate_reason"]
        )
        result = base.search("pool", SearchFilters(), SearchOptions(mode="hybrid"))
        assert {c.matched_by for c in result.candidates} == {"sparse"}


def test_the_verdict_does_not_depend_on_how_many_results_are_shown(tmp_path: Path) -> None:
    # the signals read the top four candidates; -k 1 ranked only three, so a fourth of the
    # same failure mode was missed and `search -k 1` and `search -k 5` gave different p
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(4):
        (folder / f"P{i}.md").write_text(
            postmortem_text(
                f"P{i}",
                title=f"checkout pool exhausted {i}",
                body=f"## Summary\ndatabase connection pool exhausted on shard {i}.\n",
                type="connection-pool-exhaustion",
            )
        )
    (folder / "D.md").write_text(
        postmortem_text("D", title="resolver outage", body="## Summary\nservfail.\n", type="dns")
    )
    with KnowledgeBase(Settings(home=tmp_path / "home"), embedder=HashingEmbedder(64)) as base:
        base.ingest([folder])
        results = [
            base.search("connection pool exhausted", SearchFilters(), SearchOptions(k=k))
            for k in (1, 2, 5)
        ]
    assert [len(r.candidates) for r in results[:2]] == [1, 2] and len(results[2].candidates) >= 4
    assert results[0].signals["type_consensus"] == 1.0  # the three after the first agree
    assert {(r.confidence, r.verdict) for r in results} == {
        (results[0].confidence, results[0].verdict)
    }
    assert all(r.signals == results[0].signals for r in results)
