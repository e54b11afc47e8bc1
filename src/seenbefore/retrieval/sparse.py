"""Keyword search through a store's own full-text index (SQLite's FTS5; PostgreSQL keeps none):
best chunk per document, filtered before ranking, unscored (no gate, no confidence). This is
the store's path, timed beside the in-memory index in benchmarks/ingest.py and
benchmarks/latency.py; ``search --mode sparse`` ranks with the in-memory BM25 (bm25.py) on
every backend."""

from __future__ import annotations

from seenbefore.errors import InputError
from seenbefore.retrieval.tokenize import query_terms
from seenbefore.storage.ports import KeywordIndex, Store
from seenbefore.types import Candidate, RetrieverHit, SearchFilters, SearchResult


def rank_superseded_last(candidates: list[Candidate]) -> list[Candidate]:
    """Superseded documents never outrank current ones: stable partition, current first."""
    current = [c for c in candidates if c.status == "current"]
    return current + [c for c in candidates if c.status != "current"]


def sparse_search(
    store: KeywordIndex | Store, text: str, filters: SearchFilters, *, k: int = 5
) -> SearchResult:
    """Top-``k`` documents for ``text`` by their best chunk's BM25 score (FTS5's)."""
    if k < 1:
        raise InputError(f"k is {k}, expected at least 1")
    if not isinstance(store, KeywordIndex):
        raise InputError(
            f"store {getattr(store, 'location', store)} keeps no keyword index of its own (only"
            " the SQLite store does); search through the knowledge base instead:"
            " KnowledgeBase.search(text, filters, SearchOptions(mode='sparse'))"
        )
    terms = query_terms(text)
    hits = store.sparse_search(terms, filters, k)
    metas = store.documents_meta([h.doc_id for h in hits])
    chunks = store.chunks_by_id([h.chunk_id for h in hits])
    candidates = []
    for rank, hit in enumerate(hits, start=1):
        doc = metas[hit.doc_id]
        pm = doc.postmortem
        chunk = chunks[hit.chunk_id]
        candidates.append(
            Candidate(
                doc_id=pm.id,
                title=pm.title,
                date=pm.date,
                type=pm.type,
                status=doc.effective_status,
                access_tier=pm.access_tier,
                services=pm.services,
                score=hit.score,
                snippet=chunk.text,
                section_key=chunk.section_key,
                chunk_id=hit.chunk_id,
                matched_by="sparse",
                retrievers={"sparse": RetrieverHit(rank, hit.score)},
                superseded_by=doc.superseded_by,
            )
        )
    return SearchResult(
        query=text,
        mode="sparse",
        candidates=tuple(rank_superseded_last(candidates)),
        terms=tuple(terms),
    )
