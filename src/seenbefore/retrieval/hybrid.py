"""Hybrid search: BM25 and dense rankings (retrieval/ranking.py) fused with weighted RRF, gated
by measured trust, with the calibrated probability of a precedent and the verdict it gives
(retrieval/features.py computes what the model reads). Every stage is timed.

:meth:`HybridRetriever.plan` (retrieval/plan.py) checks the options once and decides the
weights; the knowledge base picks the confidence model for that plan and the embedder, and
hands both to :meth:`HybridRetriever.search`, which returns the finished result."""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import replace

import numpy as np

from seenbefore.core.confidence import NONE, label
from seenbefore.core.fusion import ranked, rrf
from seenbefore.core.trust import GateDecision
from seenbefore.errors import InputError
from seenbefore.retrieval import standing
from seenbefore.retrieval.bm25 import analyse, phrases
from seenbefore.retrieval.corpus import CorpusIndex
from seenbefore.retrieval.embedders import Embedder
from seenbefore.retrieval.features import (
    ModeReader,
    mode_lift,
    mode_signals,
    top_document_signals,
    type_consensus,
)
from seenbefore.retrieval.identity import pair_weights, query_weights
from seenbefore.retrieval.plan import (
    MODES,
    QueryPlan,
    Scoring,
    SearchOptions,
    plan_query,
)
from seenbefore.retrieval.ranking import (
    ParsedQuery,
    Ranked,
    Rankings,
    both,
    rank,
    rank_documents,
)
from seenbefore.retrieval.tokenize import query_terms, tokenize
from seenbefore.storage.supersession import SearchReads
from seenbefore.types import (
    Candidate,
    GateReport,
    MatchedBy,
    ModeFirst,
    RetrieverHit,
    SearchFilters,
    SearchResult,
    StoredDocument,
)

__all__ = ["MODES", "HybridRetriever", "QueryPlan", "Scoring", "SearchOptions"]
# Dense votes on a query only while sparse's top document stands less than this far above its
# second (log1p of standard deviations of the query's BM25 scores over the visible documents).
# How the value was chosen: docs/decisions.md.
DENSE_VOTE_GAP = 1.0
# When the query names a failure mode with the classifier's confidence and sparse is unsure of its
# top document (the dense vote's test), the documents of the query's likely modes among the first
# MODE_POOL gain up to MODE_WEIGHT of a first place in one ranking (RRF units): a precedent is the
# same failure (docs/decisions.md says how both were chosen).
MODE_WEIGHT = 0.25
MODE_POOL = 10
# The confidence signals read the top four candidates (type_consensus, mode_match): every search
# ranks at least this many, whatever k it shows.
SIGNAL_DOCUMENTS = 4


class HybridRetriever:
    """One search over a corpus index: the store answers only for the top candidates'
    metadata and chunks (``store`` may be a caller's supersession view of it)."""

    def __init__(
        self,
        store: SearchReads,
        index: CorpusIndex,
        *,
        gate: GateDecision,
        scoring: Scoring,
        modes: ModeReader | None = None,
    ) -> None:
        """``modes``: failure modes for the confidence signals (none: the author's types)."""
        self.store = store
        self.index = index
        self.gate = gate
        self.scoring = scoring
        self.confidence = scoring.model
        self.modes = modes
        self._metas: dict[str, StoredDocument] = {}  # this search's documents, read once

    plan = staticmethod(plan_query)

    def search(
        self, text: str, filters: SearchFilters, plan: QueryPlan, embedder: Embedder | None = None
    ) -> SearchResult:
        """``embedder`` embeds the query; needed when ``plan.use_dense``."""
        timings: dict[str, float] = {}
        query = self._parse(text, filters, plan.identity_weight, timings)
        rankings = self._retrieve(query, plan, embedder, timings)
        clock = time.perf_counter()
        weights = _fusion_weights(plan, rankings)
        fused = rrf(self._doc_rankings(rankings), k=plan.options.rrf_k, weights=weights)
        fused, mode_first = self._mode_first(text, fused, plan, rankings.sparse)
        boosts = self._recency(fused, plan.options)
        final = {d: s * boosts.get(d, 1.0) for d, s in fused.items()}
        k = plan.options.k
        # at least the documents the signals read (the first four), so that -k 1 and -k 5 give
        # one verdict
        top = ranked(final)[: max(k * 3, k, SIGNAL_DOCUMENTS)]
        timings["fuse_ms"] = _ms(clock)
        clock = time.perf_counter()
        candidates = self._candidates(top, rankings, final)  # by score
        timings["candidates_ms"] = _ms(clock)
        clock = time.perf_counter()
        signals = top_document_signals(self.index, query, rankings, top, plan.options.signals)
        if self.modes is not None:
            shown = [self._metas[c.doc_id].postmortem for c in candidates[:SIGNAL_DOCUMENTS]]
            signals.update(mode_signals(self.modes, text, shown))
        else:
            signals["type_consensus"] = type_consensus(
                [c.type for c in candidates[:SIGNAL_DOCUMENTS]]
            )
            signals["mode_consistency"] = 1.0  # no modes read: nothing contradicts the top
        model = self.confidence
        fit = self.scoring.fit
        if model is not None and query.weights.shape in model.shapes:
            # the verdict, and the thresholds shown with it, are this shape of query's
            model = model.for_shape(query.weights.shape)
            if fit is not None:
                fit = replace(fit, lo=model.lo, hi=model.hi, shape=query.weights.shape)
        confidence = model.predict(signals) if model and top else 0.0
        verdict = model.verdict_for(confidence, signals) if model is not None and top else NONE
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
            confidence_label=(
                label(confidence, model.lo, model.hi, verdict) if model else label(confidence)
            ),
            novel=verdict == NONE,
            verdict=verdict,
            signals={name: round(v, 4) for name, v in signals.items()},
            confidence_model=model.source if model else None,
            recency={d: round(b, 4) for d, b in boosts.items() if d in top[:k]},
            timings={stage: round(v, 3) for stage, v in timings.items()},
            dense_embedder=self.index.dense_name if plan.use_dense else None,
            confidence_model_key=self.scoring.key,
            confidence_model_fit=fit,
            documents_visible=int(query.doc_mask.sum()),
            query_weights=query.weights,
            mode_first=mode_first,
        )

    # -- steps ----------------------------------------------------------------------------
    def _parse(
        self, text: str, filters: SearchFilters, weight: float, timings: dict[str, float]
    ) -> ParsedQuery:
        """The query's terms and word pairs, their weights (identity words -- service, cloud,
        region -- weighed down by ``weight``: retrieval/identity.py), and the documents the
        filters leave."""
        clock = time.perf_counter()
        mask = self.index.doc_mask(filters)
        stem = self.index.bm25.stem
        pairs = phrases(text, stem=stem)
        weights = query_weights(
            text,
            self.index.service_names,
            weight=weight,
            visible=lambda name: self.index.lists_service(name, mask),
        )
        by_pair = pair_weights(pairs, tokenize(text), analyse(text, stem=stem), weights)
        query = ParsedQuery(text, query_terms(text), pairs, filters, mask, weights, by_pair)
        timings["filter_ms"] = _ms(clock)
        return query

    def _retrieve(
        self,
        query: ParsedQuery,
        plan: QueryPlan,
        embedder: Embedder | None,
        timings: dict[str, float],
    ) -> Rankings:
        """Each ranking the plan uses, each timed."""
        sparse = dense = by_signals = None
        if plan.use_sparse:
            clock = time.perf_counter()
            sparse = self._rank_sparse(query, plan.options)
            if sparse.per_doc is not None:  # once per search: the vote and the signals read it
                sparse.gap = standing.score_standing(sparse.per_doc, query.doc_mask, sparse.order)[
                    1
                ]
            timings["sparse_ms"] = _ms(clock)
        if plan.use_dense:
            if embedder is None or self.index.dense is None:
                raise InputError(
                    "dense search is unavailable: no embedder or no vectors; run "
                    "`seenbefore reindex` (see `seenbefore stats`)"
                )
            clock = time.perf_counter()
            query_vector = embedder.embed([query.dense_text])[0]
            timings["embed_ms"] = _ms(clock)
            clock = time.perf_counter()
            scores = self.index.dense_scores(query_vector, query.filters, query.doc_mask)
            dense = rank(self.index, scores, query.doc_mask, plan.options.depth, floor=-np.inf)
            timings["dense_ms"] = _ms(clock)
        if plan.use_signals and self.index.signals is not None and plan.options.signals:
            clock = time.perf_counter()
            order, per_doc = self.index.signals.ranked(
                plan.options.signals, query.doc_mask, self.index.doc_ids
            )
            order = order[: plan.options.depth]
            by_signals = Ranked(
                order, {d: float(per_doc[d]) for d in order}, np.zeros(0, np.float32)
            )
            timings["signals_ms"] = _ms(clock)
        return Rankings(sparse, dense, by_signals)

    def _rank_sparse(self, query: ParsedQuery, options: SearchOptions) -> Ranked:
        """BM25 by best chunk, or by whole document (or both fused), per ``sparse_unit``."""
        scores = self.index.bm25.scores(
            query.terms, self.index.chunk_mask(query.doc_mask), query.weights.ranking
        )
        best = rank(self.index, scores, query.doc_mask, options.depth, floor=0.0)
        if options.sparse_unit == "chunk" or self.index.doc_bm25 is None:
            return best
        whole = rank_documents(self.index, query, scores, options.depth)
        return whole if options.sparse_unit == "document" else both(self.index, whole, best)

    def _mode_first(
        self, text: str, fused: dict[str, float], plan: QueryPlan, sparse: Ranked | None
    ) -> tuple[dict[str, float], ModeFirst | None]:
        """``fused`` with the documents of the query's failure mode moved up among the first
        ``MODE_POOL``, when a hybrid search's query names a mode with at least the reader's
        ``confident`` probability and sparse is unsure of its top document (its gap at most
        ``DENSE_VOTE_GAP``: a query whose words single out one document keeps it). A document
        gains ``MODE_WEIGHT / (rrf_k + 1)`` times :func:`mode_lift` of the query's probability
        of the document's mode (the author's type, or a confident inference); a document of no
        known mode gains nothing. Otherwise ``fused`` as it was and None."""
        if self.modes is None or plan.mode != "hybrid" or not fused:
            return fused, None
        if sparse is not None and sparse.gap is not None and sparse.gap > DENSE_VOTE_GAP:
            return fused, None
        posterior = self.modes.of_query(text)
        if not posterior:
            return fused, None
        named, p = max(posterior.items(), key=lambda kv: (kv[1], kv[0]))
        if p < self.modes.confident:
            return fused, None
        pool = ranked(fused)[:MODE_POOL]
        metas = self._documents_meta(pool)
        unit = MODE_WEIGHT / (plan.options.rrf_k + 1)
        gains: dict[str, float] = {}
        same = 0  # the pool's documents of the named mode itself
        for doc in pool:
            mode = self.modes.of_document(metas[doc].postmortem)[0] if doc in metas else ""
            lift = mode_lift(float(posterior.get(mode, 0.0)), len(posterior)) if mode else 0.0
            if lift > 0:
                gains[doc] = unit * lift
                same += mode == named
        moved = {d: s + gains.get(d, 0.0) for d, s in fused.items()}
        return moved, ModeFirst(named, round(p, 4), MODE_WEIGHT, MODE_POOL, same)

    def _documents_meta(self, ids: list[str]) -> dict[str, StoredDocument]:
        """The store's metadata for ``ids`` (those it holds), each read once per search: the
        failure-mode move and the candidates read overlapping documents."""
        missing = [d for d in ids if d not in self._metas]
        if missing:
            self._metas.update(self.store.documents_meta(missing))
        return {d: self._metas[d] for d in ids if d in self._metas}

    def _doc_rankings(self, rankings: Rankings) -> dict[str, list[str]]:
        ids = self.index.doc_ids
        named = (("sparse", rankings.sparse), ("dense", rankings.dense))
        out = {name: [ids[d] for d in r.order] for name, r in named if r is not None}
        if rankings.signals is not None:
            out["signals"] = [ids[d] for d in rankings.signals.order]
        return out

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

    def _candidates(
        self,
        top: list[str],
        rankings: Rankings,
        final: dict[str, float],
    ) -> list[Candidate]:
        """The top documents as candidates, each with its best chunk as the snippet."""
        sparse, dense, by_signals = _unpack(rankings)
        metas = self._documents_meta(top)
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


def _unpack(r: Rankings) -> tuple[Ranked | None, Ranked | None, Ranked | None]:
    return r.sparse, r.dense, r.signals


def _fusion_weights(plan: QueryPlan, rankings: Rankings) -> dict[str, float]:
    """RRF weight per ranking: the plan's dense weight against sparse (signals beside them when
    they ran); a single-retriever mode fuses its one ranking with weight 1. Dense votes only
    when sparse is unsure of its top document: when the top BM25 score stands more than
    ``DENSE_VOTE_GAP`` (log1p of standard deviations of this query's score distribution) above
    the second, the query is sparse's alone (an explicit per-request weight applies as given,
    unless the options ask for the vote too: ``SearchOptions.dense_vote``)."""
    if plan.mode != "hybrid":
        return {plan.mode: 1.0}
    dense = plan.dense_weight
    sparse = rankings.sparse
    if (
        dense > 0
        and plan.dense_votes
        and sparse is not None
        and sparse.gap is not None
        and sparse.gap > DENSE_VOTE_GAP
    ):
        dense = 0.0
    weights = {"sparse": 1.0 - dense, "dense": dense}
    if rankings.signals is not None:
        weights["signals"] = plan.signal_weight
    return weights


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000.0
