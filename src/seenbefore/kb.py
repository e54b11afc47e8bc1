"""The knowledge base: one store, one retriever, one place that decides which embedder is active
and whether dense retrieval is trusted. The CLI and the service are thin doors onto this.

A search reads the store's generation and, when it moved, builds a new
:class:`~seenbefore.retrieval.context.SearchContext` (index, supersession, gate, confidence
models); then :meth:`HybridRetriever.plan` checks the options and decides the weights, the
context picks the confidence model for that plan, and the retriever runs with everything it
needs handed in. Self-calibration after ingest and reindex is the calibration subsystem's
(``seenbefore.calibration``), imported when it runs, so a search never loads the fitting code."""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from seenbefore.config import Settings
from seenbefore.core.confidence import ConfidenceModel
from seenbefore.core.trust import FusionWeights, GateDecision
from seenbefore.knowledge.failure_modes import CONFIDENT, failure_mode, ranked
from seenbefore.knowledge.ingest import ChunkingPolicy, Ingestor, IngestReport, Progress
from seenbefore.knowledge.jsonl import FieldMapping
from seenbefore.limits import empty_reason
from seenbefore.plugins import configured_embedder
from seenbefore.retrieval import updates
from seenbefore.retrieval.context import (
    SearchContext,
    dense_family,
    embedder_family,
    shipped_defaults,
    shipped_weights,
)
from seenbefore.retrieval.corpus import SAVED_INDEX_KINDS, CorpusIndex
from seenbefore.retrieval.embedders import (
    LSA_PREFIX,
    MINILM_NAME,
    Embedder,
    LSAEmbedder,
    Matrix,
    load_neural_embedder,
    lsa_unavailable,
    neural_failure,
)
from seenbefore.retrieval.hybrid import HybridRetriever, SearchOptions
from seenbefore.storage.base import EmbeddedVectors
from seenbefore.storage.factory import open_store
from seenbefore.storage.ports import Store
from seenbefore.storage.supersession import Supersession
from seenbefore.types import Chunk, Postmortem, SearchFilters, SearchResult

__all__ = ["KnowledgeBase", "SelfCalibration", "embedder_family", "shipped_defaults"]

log = logging.getLogger(__name__)

EmbedProgress = Callable[[int, int], None]
# rounds a finished compaction may spend applying the writes made while it ran before it gives
# up (the live index compacts again once tombstones pass the share again)
COMPACTION_CATCH_UP = 3


class SelfCalibration(Protocol):
    """Refits gate, confidence and novelty threshold from a knowledge base's own documents
    when it changed materially (or ``force``); returns the record it wrote, or None."""

    def __call__(self, kb: KnowledgeBase, *, force: bool = False) -> dict[str, Any] | None: ...


class KnowledgeBase:
    def __init__(
        self,
        settings: Settings,
        *,
        store: Store | None = None,
        embedder: Embedder | None = None,
        self_calibration: SelfCalibration | None = None,
    ) -> None:
        """``self_calibration``: run after ingest and reindex; default: the calibration
        subsystem's (calibration/selfcal.py)."""
        self.settings = settings
        # SQLite at <home>/kb.sqlite unless SEENBEFORE_DATABASE_URL selects PostgreSQL
        self.store: Store = store or open_store(settings)
        if embedder is None:  # a plugin embedder the `embedder` setting names, if it names one
            embedder = configured_embedder(settings)
        self._explicit = embedder
        self._embedder: Embedder | None = embedder
        self._embedder_loaded = embedder is not None
        self._index: CorpusIndex | None = None
        self._supersession: Supersession | None = None
        self._context: SearchContext | None = None
        # the index follows the corpus generation: rebuilt from every row when it must be,
        # else updated with the documents the writes since changed (counted, for tests and
        # benchmarks); compaction runs in a thread of its own
        self._corpus_lock = threading.Lock()
        self.index_rebuilds = 0
        self.index_updates = 0
        self._compaction: threading.Thread | None = None
        self._closed = False
        self._settings_seen = -1  # the settings generation the context was built at
        self._self_calibration = self_calibration
        self.fallback_reason: str | None = None
        # embeds queries when set (e.g. the uncached model behind a document-embedding cache)
        self.query_embedder: Embedder | None = None

    def close(self) -> None:
        self._closed = True
        self.wait_for_compaction()
        self.store.close()

    def __enter__(self) -> KnowledgeBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- embedders ------------------------------------------------------------------------
    def embedder(self) -> Embedder | None:
        """The embedder matching the store's vectors (or the configured one for a new store)."""
        if self._embedder_loaded:
            return self._embedder
        self._embedder_loaded = True
        recorded = self.store.embedder_info()
        name = recorded[0] if recorded else None
        if name and name.startswith(LSA_PREFIX):
            self._embedder = self._lsa()
        elif name == MINILM_NAME or (name is None and self.settings.embedder in ("auto", "minilm")):
            self._embedder = load_neural_embedder()
            if self._embedder is None:
                self.fallback_reason = f"neural embedder unavailable ({neural_failure()})"
                if name is None and self.settings.embedder == "auto":
                    self._embedder = self._lsa()
        elif name is None and self.settings.embedder == "lsa":
            self._embedder = self._lsa()
        return self._embedder

    def _lsa(self) -> LSAEmbedder | None:
        blob = self.store.get_blob("lsa_model")
        return LSAEmbedder.from_bytes(blob) if blob else None

    def _vectorize(self, pm: Postmortem, chunks: list[Chunk]) -> EmbeddedVectors | None:
        embedder = self.embedder()
        if embedder is None:
            return None
        return EmbeddedVectors(embedder.name, embedder.embed([c.text for c in chunks]))

    def dense_family(self) -> str:
        """The family of the store's vectors, read now (write paths; searches use the
        context's)."""
        return dense_family(self.store.embedder_info(), self._explicit_name)

    @property
    def _explicit_name(self) -> str | None:
        return self._explicit.name if self._explicit is not None else None

    # -- writing --------------------------------------------------------------------------
    def ingestor(
        self, *, mapping: FieldMapping | None = None, progress: Progress | None = None
    ) -> Ingestor:
        return Ingestor(
            self.store,
            policy=ChunkingPolicy(self.settings.chunk_words, self.settings.chunk_overlap_words),
            max_file_bytes=self.settings.max_file_bytes,
            mapping=mapping,
            progress=progress,
            vectorize=self._vectorize if self.settings.embedder != "none" else None,
        )

    def ingest(
        self,
        paths: Sequence[Path],
        *,
        prune: bool = False,
        mapping: FieldMapping | None = None,
        progress: Progress | None = None,
        embed_progress: EmbedProgress | None = None,
        replace: bool = False,
        calibrate_progress: EmbedProgress | None = None,
    ) -> IngestReport:
        """``calibrate_progress(done, total)``: the searches of a self-calibration, when the
        ingest changed the KB enough to run one."""
        ingestor = self.ingestor(mapping=mapping, progress=progress)
        report = ingestor.ingest(paths, prune=prune, replace=replace)
        self.maybe_refit_lsa(embed_progress)
        self.maybe_self_calibrate(progress=calibrate_progress)
        return report

    def maybe_self_calibrate(
        self, *, force: bool = False, progress: EmbedProgress | None = None
    ) -> dict[str, Any] | None:
        """Refit gate, confidence and novelty threshold from the KB's own documents when it
        changed materially (or ``force``): the hook passed in, else the calibration
        subsystem's (calibration/selfcal.py), which reports its searches to ``progress``."""
        if self._self_calibration is not None:
            return self._self_calibration(self, force=force)
        from seenbefore.calibration.selfcal import maybe_self_calibrate

        return maybe_self_calibrate(self, force=force, progress=progress)

    def lsa_staleness(self) -> float | None:
        """Chunks changed since the LSA fit, as a fraction of the chunks it was fitted on."""
        fit = self.store.get_json("lsa_fit")
        if not fit:
            return None
        changed = self.store.chunks_changed() - int(fit["chunks_changed"])
        return changed / max(1, int(fit["chunks"]))

    def maybe_refit_lsa(self, progress: EmbedProgress | None = None) -> bool:
        """Fit LSA when it is the active family and missing or staler than the set fraction."""
        wants_lsa = (
            self.settings.embedder == "lsa"
            or (
                self.settings.embedder == "auto"
                and self._explicit is None
                and self.store.embedder_info() is None
                and self.embedder() is None
            )
            or self.dense_family() == "lsa"
        )
        if not wants_lsa or self.settings.embedder == "none" or self._explicit is not None:
            return False
        missing = lsa_unavailable() if self.settings.embedder == "auto" else None
        if missing:  # auto never fails for a missing extra: it stays sparse-only and says why
            self.fallback_reason = "; ".join(filter(None, (self.fallback_reason, missing)))
            log.warning("%s", missing)
            return False
        staleness = self.lsa_staleness()
        if staleness is not None and staleness <= self.settings.lsa_refit_fraction:
            return False
        self.reindex(progress)
        return True

    def reindex(
        self,
        progress: EmbedProgress | None = None,
        calibrate_progress: EmbedProgress | None = None,
    ) -> dict[str, Any]:
        """Re-embed every chunk with the active embedder (refitting LSA when LSA is active),
        then self-calibrate (its searches reported to ``calibrate_progress``)."""
        rows = self.store.chunk_rows()
        family = self.dense_family()
        use_lsa = self.settings.embedder == "lsa" or family == "lsa"
        embedder: Embedder | None
        if use_lsa and self._explicit is None:
            if len(rows.texts) < 2:
                return {"embedder": None, "chunks": len(rows.texts)}
            embedder = LSAEmbedder.fit(rows.texts, dim=self.settings.lsa_dim)
        else:
            self._embedder_loaded = False
            embedder = self._explicit or load_neural_embedder()
            if embedder is None:
                self.fallback_reason = f"neural embedder unavailable ({neural_failure()})"
                embedder = LSAEmbedder.fit(rows.texts, dim=self.settings.lsa_dim)
        matrix = _embed_all(embedder, rows.texts, progress)
        if isinstance(embedder, LSAEmbedder):
            self.store.put_blob("lsa_model", embedder.to_bytes())
            self.store.set_json(
                "lsa_fit",
                {
                    "chunks": len(rows.texts),
                    "chunks_changed": self.store.chunks_changed(),
                    "documents": len(set(rows.doc_ids)),
                },
            )
        self.store.replace_vectors(embedder.name, rows.ids.tolist(), matrix)
        self._embedder, self._embedder_loaded = embedder, True
        self._forget_index()
        self.maybe_self_calibrate(force=True, progress=calibrate_progress)
        return {"embedder": embedder.name, "chunks": len(rows.texts)}

    # -- reading --------------------------------------------------------------------------
    def context(self) -> SearchContext:
        """What searches on the store's current generations share; one metadata read (both
        counters) when neither moved. A settings write (weights, fitted models) rebuilds only the
        context's reads of them; the index and supersession are rebuilt only when the corpus
        generation moves."""
        generation, settings = self.store.generations()
        context = self._context
        if context is None or (context.generation, self._settings_seen) != (generation, settings):
            index, supersession = self._corpus_at(generation)
            context = self._context = SearchContext.build(
                self.store,
                generation=index.generation,
                index=index,
                supersession=supersession,
                explicit=self._explicit_name,
            )
            self._settings_seen = settings
        return context

    def index_generation(self) -> int | None:
        """The store generation the in-memory search context was built for (None before the first
        search): a cheap read for readiness probes, which must not build anything."""
        return self._context.generation if self._context is not None else None

    def _corpus_at(self, generation: int) -> tuple[CorpusIndex, Supersession]:
        """The index and supersession view at ``generation`` (or later): kept when current,
        else updated with the documents written since (``ChangeLog.changes_since``), else rebuilt
        from every row (a first search, or a change log that does not reach back)."""
        with self._corpus_lock:
            index, view = self._index, self._supersession
            if index is not None and view is not None and index.generation == generation:
                return index, view
            changes = None if index is None else self.store.changes_since(index.generation)
            updated = None
            if index is not None and view is not None and changes is not None:
                updated = updates.apply(index, self.store, changes)
            if index is not None and view is not None and changes is not None and updated:
                rows = self.store.supersede_rows(list(changes.every_id))
                view = view.updated(rows, changes.every_id, updated.generation)
                index = updated
                self.index_updates += 1
                for path in self._saved_index_files():  # stale now: no trace of older text
                    path.unlink(missing_ok=True)
                self._maybe_compact(index)
            else:
                if index is not None:
                    log.info(
                        "rebuilding the search index from every row: %s",
                        "the change log does not reach back to generation "
                        f"{index.generation} (pruned, restored or re-embedded)"
                        if changes is None
                        else "the changes since are too many or changed the embedder",
                    )
                index = self._build_index()
                view = Supersession.build(self.store.supersede_rows(), index.generation)
            self._index, self._supersession = index, view
            return index, view

    def _build_index(self) -> CorpusIndex:
        self.index_rebuilds += 1
        local = self.store.local_file  # the BM25 sidecar lives beside a local store file
        bm25_path = None if local is None else local.with_name(local.name + ".bm25.npz")
        return CorpusIndex.build(self.store, stem=self.settings.stem, bm25_path=bm25_path)

    def _saved_index_files(self) -> list[Path]:
        local = self.store.local_file
        if local is None:
            return []
        return [local.with_name(local.name + f".{kind}.npz") for kind in SAVED_INDEX_KINDS]

    def _forget_index(self) -> None:
        """The next search rebuilds the index from every row."""
        with self._corpus_lock:
            self._index = self._supersession = self._context = None

    def rebuild_index(self) -> CorpusIndex:
        """Build the index from every row now (and save it beside a local store, replacing the
        files an older generation left): what deleting a postmortem everywhere needs."""
        self._forget_index()
        for path in self._saved_index_files():
            path.unlink(missing_ok=True)
        return self.index()

    # -- compaction -----------------------------------------------------------------------
    def _maybe_compact(self, index: CorpusIndex) -> None:
        """Start compacting in the background once tombstones pass updates.COMPACT_SHARE of
        the chunk rows (one compaction at a time; searches never wait for it)."""
        running = self._compaction is not None and self._compaction.is_alive()
        if running or self._closed or index.tombstoned_share <= updates.COMPACT_SHARE:
            return
        self._compaction = threading.Thread(
            target=self._compact, args=(index,), name="seenbefore-compaction", daemon=True
        )
        self._compaction.start()

    def _compact(self, index: CorpusIndex) -> None:
        """Compact ``index`` off the search path, bring the copy up to the live index's
        generation (the writes applied meanwhile) and swap it in; searches keep using the
        index they hold, whose answers are the same."""
        try:
            compact = updates.compacted(index)
            for _ in range(COMPACTION_CATCH_UP):
                with self._corpus_lock:
                    live = self._index
                    if self._closed or live is None or live.generation < compact.generation:
                        return  # closed, forgotten, or rebuilt from older rows: drop the copy
                    if live.generation == compact.generation:
                        self._index = compact
                        context = self._context
                        if context is not None and context.index is live:
                            self._context = dataclasses.replace(context, index=compact)
                        log.info("compacted the search index at generation %d", live.generation)
                        return
                changes = self.store.changes_since(compact.generation)
                caught_up = updates.apply(compact, self.store, changes) if changes else None
                if caught_up is None:
                    return  # the live index rebuilds or compacts again later
                compact = caught_up
        except Exception:
            log.exception("compacting the search index failed; the index is kept uncompacted")

    def wait_for_compaction(self, timeout: float | None = None) -> None:
        """Block until a running compaction has finished (tests, benchmarks, closing)."""
        thread = self._compaction
        if thread is not None:
            thread.join(timeout)

    def index(self) -> CorpusIndex:
        return self.context().index

    def supersession(self) -> Supersession:
        """Every supersede link, answering per caller's tiers; rebuilt when the store moves."""
        return self.context().supersession

    def gate(self) -> GateDecision:
        return self.context().gate

    def gate_default(self) -> FusionWeights:
        """The shipped fusion weights for the active dense family (weight 0 when none)."""
        return shipped_weights(self.dense_family())

    def confidence_model(self, key: str) -> ConfidenceModel | None:
        return self.context().confidence_model(key)

    def search(
        self, text: str, filters: SearchFilters, options: SearchOptions | None = None
    ) -> SearchResult:
        context = self.context()
        plan = HybridRetriever.plan(options or SearchOptions(), context.gate, context.profiles)
        embedder = (self.query_embedder or self.embedder()) if plan.use_dense else None
        view = context.supersession  # what the caller's tiers see of supersede links
        retriever = HybridRetriever(
            view.reads(self.store, filters.tiers),
            context.index,
            gate=context.gate,
            scoring=context.scoring(plan),
            modes=_MODES,
        )
        result = retriever.search(text, view.search_filters(filters), plan, embedder)
        if result.candidates:
            return result
        # which filter left nothing to search, supersession as the caller's tiers see it
        return dataclasses.replace(
            result, empty_because=empty_reason(view.masks(context.index), filters)
        )

    def status(self, tiers: Sequence[str] = ("general",)) -> dict[str, Any]:
        """The dense side's state; chunk counts cover only documents visible to ``tiers``."""
        context = self.context()
        gate, index = context.gate, context.index
        visible = index.chunk_mask(
            index.doc_mask(SearchFilters(tiers=tuple(tiers), include_superseded=True))
        )
        has = index.has_vector if index.has_vector is not None else np.zeros_like(visible)
        with_vectors = int((has & visible).sum())
        return {
            "active_dense_embedder_name": context.embedder_name,
            "dense_trusted": gate.dense_trusted,
            "weights": gate.weights.as_dict(),
            "weights_source": gate.weights.source,
            "gate_reason": gate.reason,
            "fallback_reason": self.fallback_reason,
            "chunks_with_vectors": with_vectors,
            "chunks_without_vectors": int(visible.sum()) - with_vectors,
            "lsa_staleness": self.lsa_staleness(),
            "lsa_refit_fraction": self.settings.lsa_refit_fraction,
            "confidence_model": context.live_model_line(),
            # who moved the shared model, newest last (the calibration record's history)
            "calibration_changes": [
                f"{h.get('at')}: {h.get('changed')} by {h.get('who')}"
                for h in context.record.history[-5:]
            ],
        }

    def live_model_line(self, key: str | None = None) -> str:
        """How the live confidence model was fitted, with its held-out figures (one line)."""
        return self.context().live_model_line(key)


class _Modes:
    """The taxonomy's classifier (knowledge/failure_modes.py) as retrieval's ModeReader."""

    confident = CONFIDENT

    def of_document(self, pm: Postmortem) -> tuple[str, float]:
        found = failure_mode(pm)
        return (found.slug, found.p) if found.known else ("", 0.0)

    def of_query(self, text: str) -> dict[str, float]:
        return dict(ranked("", text))


_MODES = _Modes()


def _embed_all(
    embedder: Embedder, texts: list[str], progress: EmbedProgress | None, batch: int = 256
) -> Matrix:
    parts = []
    for start in range(0, len(texts), batch):
        parts.append(embedder.embed(texts[start : start + batch]))
        if progress:
            progress(min(start + batch, len(texts)), len(texts))
    return np.vstack(parts) if parts else np.zeros((0, embedder.dim), dtype=np.float32)
