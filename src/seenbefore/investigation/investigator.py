"""The Investigator: runs hybrid retrieval and gathers the evidence for the top candidates, as a
structured record that can be inspected before anything is drafted from it. Deterministic.
The record's types live in :mod:`seenbefore.investigation.evidence` (re-exported here)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from seenbefore.core.confidence import FOUND, NONE, POSSIBLE, label
from seenbefore.core.fusion import ranked, rrf
from seenbefore.investigation.evidence import EVIDENCE_SECTIONS, Evidence, EvidenceItem
from seenbefore.investigation.query import InvestigationRequest, named_in
from seenbefore.investigation.rewriter import QueryRewriter
from seenbefore.investigation.withhold import findings
from seenbefore.kb import KnowledgeBase
from seenbefore.knowledge.failure_modes import failure_mode
from seenbefore.retrieval.hybrid import SearchOptions
from seenbefore.retrieval.signals import normalise_signal
from seenbefore.types import Candidate, ModelFit, SearchFilters, StoredDocument

__all__ = [
    "EVIDENCE_SECTIONS",
    "REWRITE_DEPTH",
    "Evidence",
    "EvidenceItem",
    "Investigator",
    "search_options",
]

REWRITE_DEPTH = 10  # candidates per query fused when the LLM rewrites the query


class Investigator:
    def __init__(
        self,
        kb: KnowledgeBase,
        *,
        tiers: Sequence[str],
        k: int = 3,
        exclude: Sequence[str] = (),
        min_unknown_signals: int = 2,
        rewriter: QueryRewriter | None = None,
    ) -> None:
        """``min_unknown_signals``: an anomaly with at least this many deviating metrics that no
        visible postmortem ever recorded is a new kind of incident (novel), whatever the text
        retrieval found; one unfamiliar metric alone is not enough."""
        self.kb = kb
        self.min_unknown_signals = min_unknown_signals
        self.tiers = tuple(tiers)
        self.k = k
        self.exclude = tuple(exclude)
        self.rewriter = rewriter
        self._known: tuple[tuple[int, tuple[str, ...]], frozenset[str]] | None = None

    def investigate(self, request: InvestigationRequest) -> Evidence:
        clock = time.perf_counter()
        filters = SearchFilters(tiers=self.tiers, exclude_ids=self.exclude)
        options = search_options(request, self.k)
        if self.rewriter is not None:
            options = replace(options, k=max(self.k, REWRITE_DEPTH))
        result = self.kb.search(request.query, filters, options)
        timings = {"query_build_ms": 0.0, **result.timings}
        candidates, rewrite = list(result.candidates), None
        if self.rewriter is not None:
            candidates, rewrite = self._rewritten(request, filters, options, candidates)
            timings["rewrite_ms"] = round(rewrite["elapsed_ms"], 3)
        candidates = candidates[: self.k]
        started = time.perf_counter()
        metas = self.kb.store.documents_meta([c.doc_id for c in candidates])
        observed = {normalise_signal(s) for s in request.signals}
        said = f"{request.query} {request.display}"  # signals named in words count too
        items = []
        for c in candidates:
            pm = metas[c.doc_id].postmortem
            sections = {s.key: s.text for s in pm.sections if s.key in EVIDENCE_SECTIONS}
            theirs = {normalise_signal(s) for s in pm.signals}
            seen = observed | {s for s in theirs if named_in(s, said)}
            found = failure_mode(pm)  # it decides whether the author's type stands
            mode = found if found.inferred else None
            items.append(
                EvidenceItem(
                    doc_id=c.doc_id,
                    title=c.title,
                    date=c.date,
                    type="" if mode else c.type,  # the author's, where it stands
                    status=c.status,
                    superseded_by=c.superseded_by,
                    access_tier=c.access_tier,
                    matched_by=c.matched_by,
                    retrievers={
                        k: {"rank": v.rank, "score": round(v.score, 6)}
                        for k, v in c.retrievers.items()
                    },
                    score=c.score,
                    matched_section=c.section_key,
                    sections=sections,
                    signals_shared=tuple(sorted(seen & theirs)),
                    signals_not_in_precedent=tuple(sorted(observed - theirs)),
                    signals_only_in_precedent=tuple(sorted(theirs - seen)),
                    injection_flags=tuple(
                        sorted({f.kind for t in sections.values() for f in findings(t)})
                    ),
                    inferred_type=mode.label() if mode else "",
                    inferred_slug=mode.slug if mode and mode.known else "",
                )
            )
        unknown = self._unknown_signals(request)
        new_kind = len(unknown) >= self.min_unknown_signals
        novel = result.novel or new_kind
        if new_kind:
            reason = (
                f"the anomaly's {', '.join(unknown)} never appears among the signals of any "
                "postmortem visible to the caller"
            )
        elif novel:
            reason = novel_reason(
                result.confidence, result.confidence_model_fit, result.confidence_model_key
            )
        else:
            reason = ""
        verdict = NONE if novel else (result.verdict or NONE)
        short = uncorroborated(request, items[0], metas) if items and verdict == FOUND else ""
        if short:
            verdict = POSSIBLE
        timings["evidence_ms"] = round((time.perf_counter() - started) * 1000, 3)
        timings["investigate_ms"] = round((time.perf_counter() - clock) * 1000, 3)
        return Evidence(
            request=request,
            items=tuple(items),
            confidence=result.confidence,
            # the search's word, moved into this verdict's range where the investigation moved
            # the verdict (a new kind of signal, a "found" held at "possible")
            confidence_label=(
                result.confidence_label
                if verdict == result.verdict
                else label(result.confidence, *_band(result.confidence_model_fit), verdict)
            ),
            novel=novel,
            novel_reason=reason,
            verdict=verdict,
            signals=dict(result.signals),
            confidence_model_key=result.confidence_model_key or "",
            searched={
                "query": request.query,
                "mode": result.mode,
                "tiers": list(self.tiers),
                "excluded": list(self.exclude),
                "k": self.k,
                "documents_visible": result.documents_visible,
                **({"found_needs": short} if short else {}),
                **({"rewrite": rewrite} if rewrite is not None else {}),
            },
            gate=result.gate.as_dict() if result.gate else {},
            timings=timings,
        )

    def _rewritten(
        self,
        request: InvestigationRequest,
        filters: SearchFilters,
        options: SearchOptions,
        original: list[Candidate],
    ) -> tuple[list[Candidate], dict[str, Any]]:
        """Search the LLM's rewrites too and fuse every ranking with equal-weight RRF; the
        original query's candidates win ties of identity (same document, its best chunk)."""
        assert self.rewriter is not None
        rewrite = self.rewriter.rewrite(request)
        record = rewrite.as_dict()
        if not rewrite.queries:
            return original, record
        rankings = {"original": [c.doc_id for c in original]}
        pool = {c.doc_id: c for c in original}
        text_options = replace(options, profile="text", signals=None, signal_weight=None)
        for n, query in enumerate(rewrite.queries, 1):
            found = self.kb.search(query, filters, text_options).candidates
            rankings[f"rewrite{n}"] = [c.doc_id for c in found]
            for c in found:
                pool.setdefault(c.doc_id, c)
        fused = ranked(rrf(rankings))
        # The confidence model scored the original query's ranking; nothing calibrated it for
        # the fused one. Say so, and whether the fusion changed the precedent on top.
        record["confidence_scored_on"] = (
            "the original query's ranking (uncalibrated for the fused one)"
        )
        record["top_changed"] = bool(fused) and (not original or fused[0] != original[0].doc_id)
        return [pool[d] for d in fused], record

    def _unknown_signals(self, request: InvestigationRequest) -> list[str]:
        """Observed signals (from a structured anomaly) that no visible postmortem ever
        recorded: evidence that this kind of incident has not been seen before."""
        if not request.signals:
            return []
        key = (self.kb.store.generation(), self.tiers)
        if self._known is None or self._known[0] != key:
            metas = self.kb.store.documents_meta(self.kb.store.list_ids(list(self.tiers)))
            recorded = {normalise_signal(s) for m in metas.values() for s in m.postmortem.signals}
            self._known = (key, frozenset(recorded))
        known = self._known[1]
        if not known:
            return []  # a knowledge base without signals says nothing either way
        return [s for s in dict.fromkeys(request.signals) if normalise_signal(s) not in known]


def uncorroborated(
    request: InvestigationRequest, top: EvidenceItem, metas: Mapping[str, StoredDocument]
) -> str:
    """Why an anomaly's "precedent found" is only "possible" (empty when it stands): one metric
    moving alone is weak evidence of a failure mode, so an anomaly of a single metric is "found"
    only in a postmortem of its own service (a recurrence). A lone CPU series (``detect --csv``)
    otherwise matched any CPU postmortem of another service at p 1.00."""
    if request.source != "anomaly" or len(set(request.signals)) != 1:
        return ""
    meta = metas.get(top.doc_id)
    theirs = {s.lower() for s in (meta.postmortem.services if meta else ())}
    if any(s.lower() in theirs for s in request.services):
        return ""
    return (
        f"the anomaly is one metric ({request.signals[0]}) and {top.doc_id} is not of "
        f"{', '.join(request.services) or 'its service'}: one metric is 'found' only in its own "
        "service's postmortem"
    )


def search_options(request: InvestigationRequest, k: int) -> SearchOptions:
    """An anomaly with measured deviations is searched with the anomaly profile (its signals
    ranked against the postmortems' recorded signals, weights fitted on anomalies); text and
    alerts with the text profile."""
    if request.source == "anomaly" and request.signal_strengths:
        return SearchOptions(k=k, profile="anomaly", signals=dict(request.signal_strengths))
    return SearchOptions(k=k)


def novel_reason(p: float, fit: ModelFit | None, key: str | None) -> str:
    """Why a search reads "no precedent", with the threshold of the model that scored it (an
    anomaly's query is scored by the anomaly model, whose threshold is not the text one)."""
    if fit is None:
        return f"p_precedent {p:.2f} is at or below the calibrated 'no precedent' threshold"
    model = f"the {key} confidence model" if key else "the confidence model"
    return (
        f"p_precedent {p:.2f} is at or below {fit.lo:.2f}, the 'no precedent' threshold of "
        f"{model} that scored this query"
    )


def _band(fit: ModelFit | None) -> tuple[float | None, float | None]:
    """The verdict's thresholds a search was scored with, (None, None) when it says none."""
    return (fit.lo, fit.hi) if fit is not None else (None, None)
