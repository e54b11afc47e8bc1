"""Keyword search through the store's own full-text index (SQLite FTS5, PostgreSQL full
text): best chunk per document, filtered before ranking, unscored (no gate, no confidence).
This is the store's path, timed beside the in-memory index in benchmarks/ingest.py and
benchmarks/latency.py; ``search --mode sparse`` ranks with the in-memory BM25 (bm25.py)."""

from __future__ import annotations

from seenbefore.errors import InputError
from seenbefore.retrieval.tokenize import query_terms
from seenbefore.storage.base import Store
from seenbefore.types import Candidate, RetrieverHit, SearchFilters, SearchResult


def rank_superseded_last(candidates: list[Candidate]) -> list[Candidate]:
    """Superseded documents never outrank current ones: stable partition, current first."""
    current = [c for c in candidates if c.status == "current"]
    return current + [c for c in candidates if c.status != "current"]


def sparse_search(store: Store, text: str, filters: SearchFilters, *, k: int = 5) -> SearchResult:
    """Top-``k`` documents for ``text`` by their best chunk's BM25 score."""
    if k < 1:
        raise InputError(f"k is {k}, expected at least 1")
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
