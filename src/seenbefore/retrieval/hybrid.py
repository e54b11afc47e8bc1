"""Hybrid search: BM25 and dense rankings fused with weighted RRF, gated by measured trust, with
calibrated confidence and novelty. Every stage is timed.

:meth:`HybridRetriever.plan` (retrieval/plan.py) checks the options once and decides the
weights; the knowledge base picks the confidence model for that plan and the embedder, and
hands both to :meth:`HybridRetriever.search`, which returns the finished result."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from seenbefore.core.confidence import SIGNALS, label
from seenbefore.core.fusion import ranked, rrf
from seenbefore.core.trust import GateDecision
from seenbefore.errors import InputError
from seenbefore.retrieval import standing
from seenbefore.retrieval.bm25 import phrases
from seenbefore.retrieval.corpus import (
    PASSAGE_WEIGHT,
    PHRASE_WEIGHT,
    BoolArray,
    CorpusIndex,
    FloatArray,
)
from seenbefore.retrieval.embedders import Embedder
from seenbefore.retrieval.plan import (
    MODES,
    QueryPlan,
    Scoring,
    SearchOptions,
    plan_query,
)
from seenbefore.retrieval.tokenize import query_terms
from seenbefore.storage.base import Store
from seenbefore.types import (
    Candidate,
    GateReport,
    MatchedBy,
    RetrieverHit,
    SearchFilters,
    SearchResult,
)

__all__ = ["MODES", "HybridRetriever", "QueryPlan", "Scoring", "SearchOptions"]


@dataclass
class _Ranked:
    order: list[int]  # document positions, best first
    scores: dict[int, float]
    chunk_scores: FloatArray
    unit: str = "chunk"  # what the scores rank: "chunk" (best passage), "document", "both"
    per_doc: FloatArray | None = None  # every document's score (the query's own distribution)


@dataclass(frozen=True)
class _Query:
    text: str
    terms: list[str]
    pairs: list[str]  # word pairs, for the phrase index
    filters: SearchFilters
    doc_mask: BoolArray


@dataclass(frozen=True)
class _Rankings:
    sparse: _Ranked | None = None
    dense: _Ranked | None = None
    signals: _Ranked | None = None


class HybridRetriever:
    """One search over a corpus index: the store answers only for the top candidates'
    metadata and chunks (``store`` may be a caller's supersession view of it)."""

    def __init__(
        self, store: Store, index: CorpusIndex, *, gate: GateDecision, scoring: Scoring
    ) -> None:
        self.store = store
        self.index = index
        self.gate = gate
        self.scoring = scoring
        self.confidence = scoring.model

    plan = staticmethod(plan_query)

    def search(
        self, text: str, filters: SearchFilters, plan: QueryPlan, embedder: Embedder | None = None
    ) -> SearchResult:
        """``embedder`` embeds the query; needed when ``plan.use_dense``."""
        timings: dict[str, float] = {}
        query = self._parse(text, filters, timings)
        rankings = self._retrieve(query, plan, embedder, timings)
        clock = time.perf_counter()
        weights = _fusion_weights(plan, rankings)
        fused = rrf(self._doc_rankings(rankings), k=plan.options.rrf_k, weights=weights)
        boosts = self._recency(fused, plan.options)
        final = {d: s * boosts.get(d, 1.0) for d, s in fused.items()}
        k = plan.options.k
        top = ranked(final)[: max(k * 3, k)]
        timings["fuse_ms"] = _ms(clock)
        clock = time.perf_counter()
        candidates = self._candidates(top, rankings, final)  # by score
        timings["candidates_ms"] = _ms(clock)
        clock = time.perf_counter()
        signals = self._signals(query, rankings, top, plan.options.signals)
        signals["type_consensus"] = _type_consensus([c.type for c in candidates[:4]])
        model = self.confidence
        confidence = model.predict(signals) if model and top else 0.0
        novel = (not top) or (model is not None and model.is_novel(confidence, signals))
        timings["confidence_ms"] = _ms(clock)
        return SearchResult(
            query=text,
            mode=plan.mode,
            candidates=tuple(candidates[:k]),
            terms=tuple(query.terms),
            weights=weights,
            rrf_k=plan.options.rrf_k,
            sparse_unit=plan.options.sparse_unit if plan.use_sparse else None,
            gate=GateReport(
                self.gate.dense_trusted,
                self.gate.reason,
                self.gate.weights.source,
                dict(self.gate.evidence),
            ),
            confidence=round(confidence, 4),
            confidence_label=label(confidence),
            novel=novel,
            signals={name: round(v, 4) for name, v in signals.items()},
            confidence_model=model.source if model else None,
            recency={d: round(b, 4) for d, b in boosts.items() if d in top[:k]},
            timings={stage: round(v, 3) for stage, v in timings.items()},
            dense_embedder=self.index.dense_name if plan.use_dense else None,
            confidence_model_key=self.scoring.key,
            confidence_model_fit=self.scoring.fit,
        )

    # -- steps ----------------------------------------------------------------------------
    def _parse(self, text: str, filters: SearchFilters, timings: dict[str, float]) -> _Query:
        """The query's terms and word pairs, and the documents the filters leave."""
        clock = time.perf_counter()
        query = _Query(
            text,
            query_terms(text),
            phrases(text, stem=self.index.bm25.stem),
            filters,
            self.index.doc_mask(filters),
        )
        timings["filter_ms"] = _ms(clock)
        return query

    def _retrieve(
        self,
        query: _Query,
        plan: QueryPlan,
        embedder: Embedder | None,
        timings: dict[str, float],
    ) -> _Rankings:
        """Each ranking the plan uses, each timed."""
        sparse = dense = by_signals = None
        if plan.use_sparse:
            clock = time.perf_counter()
            sparse = self._rank_sparse(query, plan.options)
            timings["sparse_ms"] = _ms(clock)
        if plan.use_dense:
            if embedder is None or self.index.dense is None:
                raise InputError(
                    "dense search is unavailable: no embedder or no vectors; run "
                    "`seenbefore reindex` (see `seenbefore stats`)"
                )
            clock = time.perf_counter()
            query_vector = embedder.embed([query.text])[0]
            timings["embed_ms"] = _ms(clock)
            clock = time.perf_counter()
            scores = self.index.dense_scores(query_vector, query.filters, query.doc_mask)
            dense = self._rank(scores, query.doc_mask, plan.options.depth, floor=-np.inf)
            timings["dense_ms"] = _ms(clock)
        if plan.use_signals and self.index.signals is not None and plan.options.signals:
            clock = time.perf_counter()
            order, per_doc = self.index.signals.ranked(
                plan.options.signals, query.doc_mask, self.index.doc_ids
            )
            order = order[: plan.options.depth]
            by_signals = _Ranked(
                order, {d: float(per_doc[d]) for d in order}, np.zeros(0, np.float32)
            )
            timings["signals_ms"] = _ms(clock)
        return _Rankings(sparse, dense, by_signals)

    def _rank_sparse(self, query: _Query, options: SearchOptions) -> _Ranked:
        """BM25 by best chunk, or by whole document (or both fused), per ``sparse_unit``."""
        scores = self.index.bm25.scores(query.terms, self.index.chunk_mask(query.doc_mask))
        best = self._rank(scores, query.doc_mask, options.depth, floor=0.0)
        if options.sparse_unit == "chunk" or self.index.doc_bm25 is None:
            return best
        whole = self._rank_documents(
            query.terms, query.pairs, scores, query.doc_mask, options.depth
        )
        return whole if options.sparse_unit == "document" else _both(whole, best)

    def _doc_rankings(self, rankings: _Rankings) -> dict[str, list[str]]:
        ids = self.index.doc_ids
        named = (("sparse", rankings.sparse), ("dense", rankings.dense))
        out = {name: [ids[d] for d in r.order] for name, r in named if r is not None}
        if rankings.signals is not None:
            out["signals"] = [ids[d] for d in rankings.signals.order]
        return out

    def _rank(
        self,
        chunk_scores: FloatArray,
        doc_mask: BoolArray,
        depth: int,
        floor: float,
    ) -> _Ranked:
        per_doc = self.index.best_per_doc(chunk_scores, floor)
        eligible = np.flatnonzero(doc_mask & (per_doc > floor))
        if len(eligible) > depth:
            part = np.argpartition(-per_doc[eligible], depth - 1)[:depth]
            eligible = eligible[part]
        order = sorted(eligible.tolist(), key=lambda d: (-float(per_doc[d]), self.index.doc_ids[d]))
        return _Ranked(order, {d: float(per_doc[d]) for d in order}, chunk_scores, per_doc=per_doc)

    def _rank_documents(
        self,
        terms: list[str],
        pairs: list[str],
        chunk_scores: FloatArray,
        doc_mask: BoolArray,
        depth: int,
    ) -> _Ranked:
        """Documents ranked by BM25F over their whole text, words plus word pairs (phrases);
        chunk scores kept for the passage."""
        assert self.index.doc_bm25 is not None
        per_doc = self.index.doc_bm25.scores(terms, doc_mask)
        if self.index.doc_phrases is not None and pairs and PHRASE_WEIGHT:
            per_doc += PHRASE_WEIGHT * self.index.doc_phrases.scores(pairs, doc_mask)
        if PASSAGE_WEIGHT:  # passage-level evidence beside the document's (Callan 1994)
            per_doc += PASSAGE_WEIGHT * self.index.best_per_doc(chunk_scores, 0.0)
        eligible = np.flatnonzero(doc_mask & (per_doc > 0))
        if len(eligible) > depth:
            eligible = eligible[np.argpartition(-per_doc[eligible], depth - 1)[:depth]]
        order = sorted(eligible.tolist(), key=lambda d: (-float(per_doc[d]), self.index.doc_ids[d]))
        return _Ranked(
            order, {d: float(per_doc[d]) for d in order}, chunk_scores, "document", per_doc
        )

    def _recency(self, fused: dict[str, float], options: SearchOptions) -> dict[str, float]:
        half_life = options.recency_half_life_days
        if not half_life:
            return {}
        if half_life <= 0:
            raise InputError(f"recency half-life is {half_life} days, expected > 0")
        today = (options.today or dt.date.today()).toordinal()
        position = self.index.position
        boosts = {}
        for doc in fused:
            date = int(self.index.dates[position[doc]])
            age = max(0, today - date) if date >= 0 else None
            boosts[doc] = 1.0 + (0.5 ** (age / half_life) if age is not None else 0.0)
        return boosts

    def _signals(
        self,
        query: _Query,
        rankings: _Rankings,
        top: list[str],
        observed: Mapping[str, float] | None = None,
    ) -> dict[str, float]:
        """The retrieval signals the confidence model reads, for the top document."""
        terms, sparse, dense, by_signals = query.terms, *_unpack(rankings)
        signals = dict.fromkeys(SIGNALS, 0.0)
        if not top:
            return signals
        doc = self.index.position[top[0]]
        if sparse is not None and sparse.order:
            if doc in sparse.scores or sparse.unit != "chunk":
                row = self.index.best_chunk(doc, sparse.chunk_scores)
                signals["passage_coverage"] = self.index.bm25.coverage(terms, row)
                whole = self.index.doc_bm25
                signals["sparse_coverage"] = (
                    whole.coverage(terms, doc)
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
            if self.index.signals is not None and observed:
                signals["signal_coverage"] = self.index.signals.coverage(observed, doc)
            if sparse is not None and sparse.order:
                signals["signal_agreement"] = float(sparse.order[0] == by_signals.order[0])
        if self.index.doc_phrases is not None and query.pairs:
            signals["phrase_coverage"] = self.index.doc_phrases.coverage(query.pairs, doc)
        signals.update(self._standing(query, sparse, dense, doc))
        return signals

    def _standing(
        self, query: _Query, sparse: _Ranked | None, dense: _Ranked | None, doc: int
    ) -> dict[str, float]:
        """The style-proof signals (retrieval/standing.py) for top document ``doc``."""
        out: dict[str, float] = {}
        whole = self.index.doc_bm25
        if whole is not None:
            out["in_domain"], out["query_coverage"] = standing.vocabulary_signals(
                whole, query.terms, doc
            )
        if sparse is not None and sparse.per_doc is not None:
            out["sparse_z"], out["sparse_gap"] = standing.score_standing(
                sparse.per_doc, query.doc_mask, sparse.order
            )
        if dense is not None and dense.per_doc is not None and dense.order:
            z, _ = standing.score_standing(dense.per_doc, query.doc_mask, dense.order)
            out["dense_z"] = z
            top = float(dense.per_doc[dense.order[0]])
            out["dense_excess"] = standing.dense_excess(top, self.index.neighbour_cosine())
            if sparse is not None:
                out["overlap"] = standing.overlap(sparse.order, dense.order)
        return out

    def _candidates(
        self,
        top: list[str],
        rankings: _Rankings,
        final: dict[str, float],
    ) -> list[Candidate]:
        """The top documents as candidates, each with its best chunk as the snippet."""
        sparse, dense, by_signals = _unpack(rankings)
        metas = self.store.documents_meta(top)
        position = self.index.position
        chosen: dict[str, int] = {}
        hits: dict[str, dict[str, RetrieverHit]] = {}
        for doc in top:
            pos = position[doc]
            hits[doc] = {}
            for name, ranking in (("sparse", sparse), ("dense", dense), ("signals", by_signals)):
                if ranking is not None and pos in ranking.scores:
                    rank = ranking.order.index(pos) + 1
                    hits[doc][name] = RetrieverHit(rank, ranking.scores[pos])
            source = sparse if "sparse" in hits[doc] else (dense if "dense" in hits[doc] else None)
            if source is not None:
                chosen[doc] = int(
                    self.index.chunk_ids[self.index.best_chunk(pos, source.chunk_scores)]
                )
            elif hits[doc]:  # found by its recorded signals alone: show its first chunk
                chosen[doc] = int(self.index.chunk_ids[self.index.doc_starts[pos]])
        chunks = self.store.chunks_by_id(list(chosen.values()))
        out = []
        for doc in top:
            if doc not in metas or doc not in chosen:
                continue
            stored = metas[doc]
            pm = stored.postmortem
            chunk = chunks[chosen[doc]]
            found = set(hits[doc]) - {"signals"}
            matched: MatchedBy = (
                "both"
                if found == {"sparse", "dense"}
                else ("dense" if found == {"dense"} else ("sparse" if found else "signals"))
            )
            out.append(
                Candidate(
                    doc_id=doc,
                    title=pm.title,
                    date=pm.date,
                    type=pm.type,
                    status=stored.effective_status,
                    access_tier=pm.access_tier,
                    services=pm.services,
                    score=final[doc],
                    snippet=chunk.text,
                    section_key=chunk.section_key,
                    chunk_id=chosen[doc],
                    matched_by=matched,
                    retrievers=hits[doc],
                    superseded_by=stored.superseded_by,
                )
            )
        return out


def _unpack(r: _Rankings) -> tuple[_Ranked | None, _Ranked | None, _Ranked | None]:
    return r.sparse, r.dense, r.signals


def _fusion_weights(plan: QueryPlan, rankings: _Rankings) -> dict[str, float]:
    """RRF weight per ranking: the plan's dense weight against sparse (signals beside them when
    they ran); a single-retriever mode fuses its one ranking with weight 1."""
    if plan.mode != "hybrid":
        return {plan.mode: 1.0}
    weights = {"sparse": 1.0 - plan.dense_weight, "dense": plan.dense_weight}
    if rankings.signals is not None:
        weights["signals"] = plan.signal_weight
    return weights


def _both(whole: _Ranked, best: _Ranked) -> _Ranked:
    """Whole-document and best-chunk rankings fused with equal-weight RRF."""
    fused = rrf({"document": [str(d) for d in whole.order], "chunk": [str(d) for d in best.order]})
    order = [int(d) for d in ranked(fused)][: max(len(whole.order), len(best.order))]
    return _Ranked(
        order, {d: fused[str(d)] for d in order}, best.chunk_scores, "both", whole.per_doc
    )


def _type_consensus(types: list[str]) -> float:
    """Share of the hits after the first that are the same incident type as the first (0 when
    the first has no type): precedents of one kind agreeing is evidence the kind is right."""
    if len(types) < 2 or not types[0]:
        return 0.0
    return sum(t == types[0] for t in types[1:]) / 3.0


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000.0
