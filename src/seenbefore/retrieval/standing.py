"""How far the top result stands out, measured against the query's own scores over the knowledge
base, and how much of the query the knowledge base knows at all: signals that keep their meaning
when the style of the query changes (a five-word alert, a long status update, a postmortem's
own summary), so a verdict fitted on one style holds on another.

Raw retrieval scores do not: a long first report matches every document a little and its top
score is large whether or not it is right; a short alert's top score is small even when it is.
Query-performance prediction normalises them within the query (NQC, Shtok et al. 2012; WIG,
Zhou & Croft 2007): here as the top score's standing in the distribution of every visible
document's score for this query. Off-topic text ("the printer on floor 3 is out of toner") is
recognised by its vocabulary: most of its IDF mass lies in words no postmortem uses, so
coverage measured over the words the index knows (the other signals) flatters it.

Every signal points one way (more means more likely a precedent) and is bounded, as the
confidence model's non-negative weights require.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from seenbefore.retrieval.bm25 import BM25Index

FloatArray = npt.NDArray[np.float32]
BoolArray = npt.NDArray[np.bool_]

STANDING_SIGNALS: tuple[str, ...] = (
    "in_domain",  # share of the query's IDF mass in words the knowledge base uses at all
    "query_coverage",  # share of the query's IDF mass (unknown words included) in the top doc
    "sparse_gap",  # log1p of (s1 - s2) in standard deviations of the query's BM25 scores
    "covered_gap",  # sparse_gap times query_coverage: standing out while covering the query
    "covered_margin",  # sparse_margin times query_coverage
    "dense_excess",  # top cosine minus the KB's typical nearest-neighbour cosine, clipped
    "overlap",  # share of the sparse top 5 that the dense top 5 holds too
)
TOP = 5


def unseen_idf(n_docs: int) -> float:
    """The IDF a word no document holds would have (Lucene's formula at df = 0)."""
    return math.log(1.0 + (n_docs + 0.5) / 0.5)


def vocabulary_signals(
    index: BM25Index,
    terms: Sequence[str],
    doc: int,
    visible: BoolArray | None = None,
    weights: Mapping[str, float] | None = None,
) -> tuple[float, float]:
    """(in_domain, query_coverage) of ``terms`` for row ``doc`` of a document-level index. A
    word counts as known when a ``visible`` document (every one by default) holds it: words
    only hidden or left-out documents use are as unknown to this search as any other.
    ``weights``: each word's IDF mass counts times its weight (absent: 1; the weights the
    search ranked by, retrieval/identity.py)."""
    shown = index.alive if visible is None else visible & index.alive
    if weights:
        return _weighted_vocabulary(index, terms, doc, shown, weights)
    known = [col for col in index.term_ids(terms) if shown[index.postings(col)[0]].any()]
    unknown = len(set(terms)) - len(known)
    if not terms:
        return 0.0, 0.0
    total = float(sum(index.idf_of(c) for c in known)) + unknown * unseen_idf(index.n_live)
    if total <= 0:
        return 0.0, 0.0
    inside = float(sum(index.idf_of(c) for c in known))
    held = set(index.terms_of(doc).tolist())
    found = float(sum(index.idf_of(col) for col in known if col in held))
    return inside / total, found / total


def score_standing(
    per_doc: FloatArray, mask: BoolArray, order: Sequence[int]
) -> tuple[float, float]:
    """(z, gap) of the top document's score among the visible documents' scores, log1p-squashed."""
    # sorted, so the sums below add the same numbers in the same order wherever the documents
    # sit in the index (an updated index and a fresh build give the same bits)
    visible = np.sort(per_doc[mask].astype(np.float64))
    visible = visible[np.isfinite(visible)]
    if len(visible) < 2 or not order:
        return 0.0, 0.0
    sd = float(visible.std())
    if sd <= 1e-12:
        return 0.0, 0.0
    top = float(per_doc[order[0]])
    second = float(per_doc[order[1]]) if len(order) > 1 else float(visible.mean())
    z = (top - float(visible.mean())) / sd
    return math.log1p(max(0.0, z)), math.log1p(max(0.0, (top - second) / sd))


def overlap(sparse_order: Sequence[int], dense_order: Sequence[int]) -> float:
    a, b = set(sparse_order[:TOP]), set(dense_order[:TOP])
    return len(a & b) / TOP if a and b else 0.0


def dense_excess(top_cosine: float, neighbour: float | None) -> float:
    """The top cosine above the cosine a document's nearest other document typically has:
    a query no closer to the KB than its documents are to each other is not about them."""
    if neighbour is None:
        return 0.0
    return max(-1.0, min(1.0, top_cosine - neighbour))


def _weighted_vocabulary(
    index: BM25Index,
    terms: Sequence[str],
    doc: int,
    shown: BoolArray,
    weights: Mapping[str, float],
) -> tuple[float, float]:
    """(in_domain, query_coverage) with each word's IDF mass times its weight."""
    unseen = unseen_idf(index.n_live)
    held = set(index.terms_of(doc).tolist())
    total = inside = found = 0.0
    for col, w in index.weighted_terms(terms, weights).values():
        known = col is not None and bool(shown[index.postings(col)[0]].any())
        mass = w * (index.idf_of(col) if known and col is not None else unseen)
        total += mass
        if known:
            inside += mass
            if col in held:
                found += mass
    return (inside / total, found / total) if total > 0 else (0.0, 0.0)
