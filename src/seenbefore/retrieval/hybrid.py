"""Hybrid search: BM25 and dense rankings fused with weighted RRF, gated by measured trust, with
calibrated confidence and novelty. Every stage is timed."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from seenbefore.core.confidence import SIGNALS, ConfidenceModel, label
from seenbefore.core.fusion import RRF_K, ranked, rrf
from seenbefore.core.trust import GateDecision
from seenbefore.errors import InputError
from seenbefore.retrieval.bm25 import phrases
from seenbefore.retrieval.corpus import (
    PASSAGE_WEIGHT,
    PHRASE_WEIGHT,
    BoolArray,
    CorpusIndex,
    FloatArray,
)
from seenbefore.retrieval.embedders import Embedder
from seenbefore.retrieval.tokenize import query_terms
from seenbefore.storage.base import Store
from seenbefore.types import Candidate, MatchedBy, RetrieverHit, SearchFilters, SearchResult

Mode = Literal["sparse", "dense", "hybrid"]
MODES: tuple[str, ...] = ("sparse", "dense", "hybrid")
# how the sparse half ranks documents: by the whole document (BM25F), by its best chunk, or by
# RRF of both. Measured side by side in benchmarks/realtext.py; "document" won on real text.
SPARSE_UNITS: tuple[str, ...] = ("document", "chunk", "both")
PROFILES: tuple[str, ...] = ("text", "anomaly")


@dataclass(frozen=True)
class SearchOptions:
    k: int = 5
    mode: str = "hybrid"  # one of MODES, checked by search()
    dense_weight: float | None = None  # per-request override of the gate's weight
    rrf_k: int = RRF_K
    depth: int = 100  # how many documents each retriever contributes to fusion
    recency_half_life_days: float | None = None
    today: dt.date | None = None
    # a structured query (an anomaly): observed metric -> strength (|z|); ranked against the
    # signals postmortems record and fused with weight ``signal_weight`` (0 or None: off)
    signals: Mapping[str, float] | None = None
    signal_weight: float | None = None
    profile: str = "text"  # "anomaly": weights and confidence fitted on anomalies (PROFILES)
    sparse_unit: str = "document"  # one of SPARSE_UNITS


@dataclass
class _Ranked:
    order: list[int]  # document positions, best first
    scores: dict[int, float]
    chunk_scores: FloatArray
    unit: str = "chunk"  # what the scores rank: "chunk" (best passage), "document", "both"


class HybridRetriever:
    def __init__(
        self,
        store: Store,
        index: CorpusIndex,
        *,
        gate: GateDecision,
        confidence: ConfidenceModel | None,
        embedder: Callable[[], Embedder | None],
    ) -> None:
        self.store = store
        self.index = index
        self.gate = gate
        self.confidence = confidence
        self._embedder = embedder

    def search(self, text: str, filters: SearchFilters, options: SearchOptions) -> SearchResult:
        if options.k < 1:
            raise InputError(f"k is {options.k}, expected at least 1")
        if options.mode not in MODES:
            raise InputError(f"mode is {options.mode!r}, expected one of {', '.join(MODES)}")
        if options.sparse_unit not in SPARSE_UNITS:
            raise InputError(
                f"sparse unit is {options.sparse_unit!r}, expected one of {', '.join(SPARSE_UNITS)}"
            )
        timings: dict[str, float] = {}
        clock = time.perf_counter()
        terms = query_terms(text)
        pairs = phrases(text, stem=self.index.bm25.stem)
        doc_mask = self.index.doc_mask(filters)
        timings["filter_ms"] = _ms(clock)

        dense_weight = self._dense_weight(options)
        signal_weight = float(options.signal_weight or 0.0)
        if not 0.0 <= signal_weight <= 10.0:
            raise InputError(f"signal weight is {signal_weight}, expected 0..10")
        use_sparse = options.mode in ("sparse", "hybrid")
        use_dense = options.mode == "dense" or (options.mode == "hybrid" and dense_weight > 0)
        sparse = dense = None
        if use_sparse:
            clock = time.perf_counter()
            chunk_mask = self.index.chunk_mask(doc_mask)
            scores = self.index.bm25.scores(terms, chunk_mask)
            sparse = self._rank(scores, doc_mask, options.depth, floor=0.0)
            if options.sparse_unit != "chunk" and self.index.doc_bm25 is not None:
                whole = self._rank_documents(terms, pairs, scores, doc_mask, options.depth)
                sparse = whole if options.sparse_unit == "document" else _both(whole, sparse)
            timings["sparse_ms"] = _ms(clock)
        if use_dense:
            embedder = self._embedder()
            if embedder is None or self.index.dense is None:
                raise InputError(
                    "dense search is unavailable: no embedder or no vectors; run "
                    "`seenbefore reindex` (see `seenbefore stats`)"
                )
            clock = time.perf_counter()
            query_vector = embedder.embed([text])[0]
            timings["embed_ms"] = _ms(clock)
            clock = time.perf_counter()
            scores = self.index.dense_scores(query_vector, filters, doc_mask)
            dense = self._rank(scores, doc_mask, options.depth, floor=-np.inf)
            timings["dense_ms"] = _ms(clock)

        by_signals = None
        if (
            options.mode == "hybrid"
            and options.signals
            and signal_weight > 0
            and self.index.signals is not None
        ):
            clock = time.perf_counter()
            order, per_doc = self.index.signals.ranked(
                options.signals, doc_mask, self.index.doc_ids
            )
            order = order[: options.depth]
            by_signals = _Ranked(
                order, {d: float(per_doc[d]) for d in order}, np.zeros(0, np.float32)
            )
            timings["signals_ms"] = _ms(clock)

        clock = time.perf_counter()
        rankings: dict[str, list[str]] = {}
        if sparse is not None:
            rankings["sparse"] = [self.index.doc_ids[d] for d in sparse.order]
        if dense is not None:
            rankings["dense"] = [self.index.doc_ids[d] for d in dense.order]
        weights = {"sparse": 1.0 - dense_weight, "dense": dense_weight}
        if by_signals is not None:
            rankings["signals"] = [self.index.doc_ids[d] for d in by_signals.order]
            weights["signals"] = signal_weight
        if options.mode != "hybrid":
            weights = {options.mode: 1.0}
        fused = rrf(rankings, k=options.rrf_k, weights=weights)
        boosts = self._recency(fused, options)
        final = {d: s * boosts.get(d, 1.0) for d, s in fused.items()}
        top = ranked(final)[: max(options.k * 3, options.k)]
        timings["fuse_ms"] = _ms(clock)

        clock = time.perf_counter()
        candidates = self._candidates(top, sparse, dense, by_signals, final)  # by score
        timings["candidates_ms"] = _ms(clock)

        clock = time.perf_counter()
        signals = self._signals(terms, sparse, dense, by_signals, top, options.signals)
        if self.index.doc_phrases is not None and pairs and top:
            signals["phrase_coverage"] = self.index.doc_phrases.coverage(
                pairs, self.index.position[top[0]]
            )
        signals["type_consensus"] = _type_consensus([c.type for c in candidates[:4]])
        confidence = self.confidence.predict(signals) if self.confidence and top else 0.0
        novel = (not top) or (
            self.confidence is not None and self.confidence.is_novel(confidence, signals)
        )
        timings["confidence_ms"] = _ms(clock)
        candidates = candidates[: options.k]
        details: dict[str, Any] = {
            "terms": terms,
            "weights": weights,
            "rrf_k": options.rrf_k,
            "sparse_unit": options.sparse_unit if use_sparse else None,
            "gate": {
                "dense_trusted": self.gate.dense_trusted,
                "reason": self.gate.reason,
                "weights_source": self.gate.weights.source,
                "evidence": dict(self.gate.evidence),
            },
            "confidence": round(confidence, 4),
            "confidence_label": label(confidence),
            "novel": novel,
            "signals": {k: round(v, 4) for k, v in signals.items()},
            "confidence_model": self.confidence.source if self.confidence else None,
            "recency": {d: round(b, 4) for d, b in boosts.items() if d in top[: options.k]},
            "timings": {k: round(v, 3) for k, v in timings.items()},
            "dense_embedder": self.index.dense_name if use_dense else None,
        }
        return SearchResult(
            query=text, mode=options.mode, candidates=tuple(candidates), details=details
        )

    # -- pieces ---------------------------------------------------------------------------
    def _dense_weight(self, options: SearchOptions) -> float:
        if options.dense_weight is not None:
            if not 0.0 <= options.dense_weight <= 1.0:
                raise InputError(f"dense weight is {options.dense_weight}, expected 0..1")
            return options.dense_weight
        return self.gate.weights.dense if self.gate.dense_trusted else 0.0

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
        return _Ranked(order, {d: float(per_doc[d]) for d in order}, chunk_scores)

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
        return _Ranked(order, {d: float(per_doc[d]) for d in order}, chunk_scores, "document")

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
        terms: list[str],
        sparse: _Ranked | None,
        dense: _Ranked | None,
        by_signals: _Ranked | None,
        top: list[str],
        observed: Mapping[str, float] | None = None,
    ) -> dict[str, float]:
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
        return signals

    def _candidates(
        self,
        top: list[str],
        sparse: _Ranked | None,
        dense: _Ranked | None,
        by_signals: _Ranked | None,
        final: dict[str, float],
    ) -> list[Candidate]:
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


def _both(whole: _Ranked, best: _Ranked) -> _Ranked:
    """Whole-document and best-chunk rankings fused with equal-weight RRF."""
    fused = rrf({"document": [str(d) for d in whole.order], "chunk": [str(d) for d in best.order]})
    order = [int(d) for d in ranked(fused)][: max(len(whole.order), len(best.order))]
    return _Ranked(order, {d: fused[str(d)] for d in order}, best.chunk_scores, "both")


def _type_consensus(types: list[str]) -> float:
    """Share of the hits after the first that are the same incident type as the first (0 when
    the first has no type): precedents of one kind agreeing is evidence the kind is right."""
    if len(types) < 2 or not types[0]:
        return 0.0
    return sum(t == types[0] for t in types[1:]) / 3.0


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000.0
