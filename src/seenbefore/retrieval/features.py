"""What the confidence model reads about a search: the retrieval signals for its top document
(how much of the query it covers, how far it stands above the rest, whether the retrievers
agree, whether the query is in the KB's domain at all). Names and order: core/confidence.SIGNALS."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Protocol

from seenbefore.core.confidence import SIGNALS
from seenbefore.retrieval import standing
from seenbefore.retrieval.corpus import CorpusIndex
from seenbefore.retrieval.ranking import ParsedQuery, Ranked, Rankings
from seenbefore.types import Postmortem


def top_document_signals(
    index: CorpusIndex,
    query: ParsedQuery,
    rankings: Rankings,
    top: list[str],
    observed: Mapping[str, float] | None = None,
) -> dict[str, float]:
    """The retrieval signals the confidence model reads, for the top document (all 0 when the
    search found nothing)."""
    terms, weights, sparse, dense, by_signals = (
        query.terms,
        query.weights.weights,
        rankings.sparse,
        rankings.dense,
        rankings.signals,
    )
    signals = dict.fromkeys(SIGNALS, 0.0)
    if not top:
        return signals
    doc = index.position[top[0]]
    if index.doc_bm25 is not None:
        held = set(index.doc_bm25.terms_of(doc).tolist())
        signals["shared_words"] = float(sum(c in held for c in index.doc_bm25.term_ids(terms)))
    if sparse is not None and sparse.order:
        if doc in sparse.scores or sparse.unit != "chunk":
            row = index.best_chunk(doc, sparse.chunk_scores)
            signals["passage_coverage"] = index.bm25.coverage(terms, row, weights)
            whole = index.doc_bm25
            signals["sparse_coverage"] = (
                whole.coverage(terms, doc, weights)
                if whole is not None and sparse.unit != "chunk"
                else signals["passage_coverage"]
            )
        s = [sparse.scores[d] for d in sparse.order[:2]]
        signals["sparse_margin"] = (s[0] - s[1]) / s[0] if len(s) > 1 and s[0] > 0 else 1.0
    if dense is not None and dense.order:
        c = [dense.scores[d] for d in dense.order[:2]]
        signals["dense_cosine"] = max(0.0, dense.scores.get(doc, 0.0))
        signals["dense_margin"] = max(0.0, c[0] - c[1]) if len(c) > 1 else 0.0
    if sparse is not None and dense is not None and sparse.order and dense.order:
        signals["agreement"] = float(sparse.order[0] == dense.order[0])
    if by_signals is not None and by_signals.order:
        signals["signal_overlap"] = by_signals.scores.get(doc, 0.0)
        if index.signals is not None and observed:
            signals["signal_coverage"] = index.signals.coverage(observed, doc)
        if sparse is not None and sparse.order:
            signals["signal_agreement"] = float(sparse.order[0] == by_signals.order[0])
    if index.doc_phrases is not None and query.pairs:
        signals["phrase_coverage"] = index.doc_phrases.coverage(
            query.pairs, doc, query.pair_weights
        )
    signals.update(_standing(index, query, sparse, dense, doc))
    # a top document alone in matching one word of the query "stands out" by any measure:
    # the standings count only as far as the document covers the query (unknown words too)
    covered = signals.get("query_coverage", 0.0)
    signals["covered_gap"] = signals.get("sparse_gap", 0.0) * covered
    signals["covered_margin"] = signals.get("sparse_margin", 0.0) * covered
    return signals


class ModeReader(Protocol):
    """Failure modes for the confidence signals (the knowledge base passes the taxonomy's
    classifier, knowledge/failure_modes.py): a document's mode when known (author's type, or a
    confident inference) with its probability, and a query's distribution over modes;
    ``confident`` is the probability at which an inferred mode counts as known."""

    confident: float

    def of_document(self, pm: Postmortem) -> tuple[str, float]: ...

    def of_query(self, text: str) -> Mapping[str, float]: ...


def mode_signals(
    reader: ModeReader, text: str, documents: Sequence[Postmortem]
) -> dict[str, float]:
    """``type_consensus`` over the top documents' failure modes, and ``mode_match``: how much
    more likely the query's failure mode is the top document's than a guess (:func:`mode_lift`
    of the query's probability of that mode) times the document's own probability of it; 0 when
    the top document's mode is unknown.

    ``mode_consistency``: 1 less the evidence of absence the modes give, the lift of the
    query's likeliest *other* mode times the document's probability of its own, discounted by
    how far the query also names the document's mode. A query that names no mode (a vague
    pager line) contradicts nothing and keeps 1; one that plainly names connection-pool
    exhaustion against a top document confidently about a certificate expiry falls toward 0.
    1 when the top document's mode is unknown or there is none: nothing known contradicts it
    (were it 0 there, a KB whose modes are all unknown would learn it as "some result at all")."""
    modes = [reader.of_document(pm) for pm in documents[:4]]
    out = {"type_consensus": type_consensus([slug for slug, _ in modes])}
    if modes and modes[0][0]:
        slug, p = modes[0]
        posterior = reader.of_query(text)
        n = len(posterior)
        match = mode_lift(float(posterior.get(slug, 0.0)), n)
        other = max((float(q) for m, q in posterior.items() if m != slug), default=0.0)
        out["mode_match"] = match * p
        out["mode_consistency"] = 1.0 - mode_lift(other, n) * p * (1.0 - match)
    else:
        out["mode_match"] = 0.0
        out["mode_consistency"] = 1.0
    return out


def mode_lift(q: float, modes: int) -> float:
    """``log(modes * q) / log(modes)`` clipped to [0, 1]: 0 when the query gives the mode no
    more than an even share, 1 when it is certain. The raw probability has no fixed scale: a
    pager line spreads it over every mode (0.03-0.14 for the right one on the sample KB's
    self-made alert lines) where a paragraph names one (0.2-0.94), so a linear fit gave it
    little weight; the lift keeps one meaning across query lengths (docs/decisions.md)."""
    if q <= 0.0 or modes < 2:
        return 0.0
    return max(0.0, min(1.0, math.log(modes * q) / math.log(modes)))


def type_consensus(types: list[str]) -> float:
    """Share of the hits after the first that are the same incident type as the first (0 when
    the first has no type): precedents of one kind agreeing is evidence the kind is right."""
    if len(types) < 2 or not types[0]:
        return 0.0
    return sum(t == types[0] for t in types[1:]) / 3.0


def _standing(
    index: CorpusIndex,
    query: ParsedQuery,
    sparse: Ranked | None,
    dense: Ranked | None,
    doc: int,
) -> dict[str, float]:
    """The style-proof signals (retrieval/standing.py) for top document ``doc``."""
    out: dict[str, float] = {}
    whole = index.doc_bm25
    if whole is not None:
        out["in_domain"], out["query_coverage"] = standing.vocabulary_signals(
            whole, query.terms, doc, query.doc_mask, query.weights.weights
        )
    if sparse is not None and sparse.gap is not None:
        out["sparse_gap"] = sparse.gap
    if dense is not None and dense.per_doc is not None and dense.order:
        top = float(dense.per_doc[dense.order[0]])
        out["dense_excess"] = standing.dense_excess(top, index.neighbour_cosine())
        if sparse is not None:
            out["overlap"] = standing.overlap(sparse.order, dense.order)
    return out
