"""One retriever's ranking over a corpus index: what each ranking keeps (the order, the scores of
the documents it returned, every chunk's score for the snippet, every document's score for the
query's own score distribution) and how BM25 ranks by best chunk or by whole document."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from seenbefore.core.fusion import ranked, rrf
from seenbefore.retrieval.corpus import (
    PASSAGE_WEIGHT,
    PHRASE_WEIGHT,
    BoolArray,
    CorpusIndex,
    FloatArray,
)
from seenbefore.types import QueryWeights, SearchFilters

IntArray = npt.NDArray[np.int64]


@dataclass
class Ranked:
    order: list[int]  # document positions, best first
    scores: dict[int, float]
    chunk_scores: FloatArray
    unit: str = "chunk"  # what the scores rank: "chunk" (best passage), "document", "both"
    per_doc: FloatArray | None = None  # every document's score (the query's own distribution)
    # sparse only: how far its top stands above the second in that distribution
    # (retrieval/standing.py sparse_gap), read by the dense vote and the confidence signals
    gap: float | None = None


@dataclass(frozen=True)
class ParsedQuery:
    text: str
    terms: list[str]
    pairs: list[str]  # word pairs, for the phrase index
    filters: SearchFilters
    doc_mask: BoolArray
    # each term's weight, the words weighed down and the dense text (retrieval/identity.py)
    weights: QueryWeights = field(default_factory=QueryWeights)
    pair_weights: Mapping[str, float] = field(default_factory=dict)  # word pairs under 1

    @property
    def dense_text(self) -> str:
        return self.weights.dense_text or self.text

    @property
    def rank_pair_weights(self) -> Mapping[str, float]:
        """The word pairs' weights the ranking reads (the coverage signals read pair_weights)."""
        return self.pair_weights if self.weights.ranked else {}


@dataclass(frozen=True)
class Rankings:
    sparse: Ranked | None = None
    dense: Ranked | None = None
    signals: Ranked | None = None


def rank(
    index: CorpusIndex, chunk_scores: FloatArray, doc_mask: BoolArray, depth: int, floor: float
) -> Ranked:
    """Documents ranked by their best chunk's score (those above ``floor``), ``depth`` kept."""
    per_doc = index.best_per_doc(chunk_scores, floor)
    order = _top(index, per_doc, np.flatnonzero(doc_mask & (per_doc > floor)), depth)
    return Ranked(order, {d: float(per_doc[d]) for d in order}, chunk_scores, per_doc=per_doc)


def _top(index: CorpusIndex, per_doc: FloatArray, eligible: IntArray, depth: int) -> list[int]:
    """The ``depth`` best of ``eligible`` by score, ties by document id: the same documents
    wherever they sit in the index (a partition alone would cut a tie by position)."""
    if len(eligible) > depth:
        cut = np.partition(per_doc[eligible], len(eligible) - depth)[len(eligible) - depth]
        eligible = eligible[per_doc[eligible] >= cut]
    order = sorted(eligible.tolist(), key=lambda d: (-float(per_doc[d]), index.doc_ids[d]))
    return order[:depth]


def rank_documents(
    index: CorpusIndex,
    query: ParsedQuery,
    chunk_scores: FloatArray,
    depth: int,
) -> Ranked:
    """Documents ranked by BM25F over their whole text, words plus word pairs (phrases);
    chunk scores kept for the passage."""
    assert index.doc_bm25 is not None
    mask = query.doc_mask
    per_doc = index.doc_bm25.scores(query.terms, mask, query.weights.ranking)
    if index.doc_phrases is not None and query.pairs and PHRASE_WEIGHT:
        per_doc += PHRASE_WEIGHT * index.doc_phrases.scores(
            query.pairs, mask, query.rank_pair_weights
        )
    if PASSAGE_WEIGHT:  # passage-level evidence beside the document's (Callan 1994)
        per_doc += PASSAGE_WEIGHT * index.best_per_doc(chunk_scores, 0.0)
    order = _top(index, per_doc, np.flatnonzero(mask & (per_doc > 0)), depth)
    return Ranked(order, {d: float(per_doc[d]) for d in order}, chunk_scores, "document", per_doc)


def both(index: CorpusIndex, whole: Ranked, best: Ranked) -> Ranked:
    """Whole-document and best-chunk rankings fused with equal-weight RRF (ties by id)."""
    ids = index.doc_ids
    fused = rrf({"document": [ids[d] for d in whole.order], "chunk": [ids[d] for d in best.order]})
    position = {ids[d]: d for d in (*whole.order, *best.order)}
    order = [position[d] for d in ranked(fused)][: max(len(whole.order), len(best.order))]
    return Ranked(
        order, {d: fused[ids[d]] for d in order}, best.chunk_scores, "both", whole.per_doc
    )
