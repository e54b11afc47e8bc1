"""The knowledge base: one store, one retriever, one place that decides which embedder is active
and whether dense retrieval is trusted. The CLI and the service are thin doors onto this."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from seenbefore.config import Settings
from seenbefore.core.confidence import ConfidenceModel
from seenbefore.core.trust import FusionWeights, GateDecision, decide
from seenbefore.errors import InputError
from seenbefore.knowledge.ingest import ChunkingPolicy, Ingestor, IngestReport, Progress
from seenbefore.knowledge.jsonl import FieldMapping
from seenbefore.plugins import configured_embedder
from seenbefore.retrieval.corpus import CorpusIndex
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
from seenbefore.retrieval.hybrid import PROFILES, HybridRetriever, SearchOptions
from seenbefore.storage.base import EmbeddedVectors, Store
from seenbefore.storage.factory import open_store
from seenbefore.storage.supersession import Supersession
from seenbefore.types import Chunk, Postmortem, SearchFilters, SearchResult

log = logging.getLogger(__name__)

EmbedProgress = Callable[[int, int], None]


@cache
def shipped_defaults() -> dict[str, Any]:
    """Fusion weights and confidence models fitted by benchmarks/fit_defaults.py on named data."""
    text = resources.files("seenbefore.retrieval").joinpath("defaults.json").read_text()
    data: dict[str, Any] = json.loads(text)
    return data


def embedder_family(name: str | None) -> str:
    return "lsa" if name and name.startswith(LSA_PREFIX) else (name or "none")


class KnowledgeBase:
    def __init__(
        self,
        settings: Settings,
        *,
        store: Store | None = None,
        embedder: Embedder | None = None,
    ) -> None:
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
        self.fallback_reason: str | None = None
        # embeds queries when set (e.g. the uncached model behind a document-embedding cache)
        self.query_embedder: Embedder | None = None

    def close(self) -> None:
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
        recorded = self.store.embedder_info()
        if recorded:
            return embedder_family(recorded[0])
        if self._explicit is not None:
            return embedder_family(self._explicit.name)
        return "none"

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
    ) -> IngestReport:
        ingestor = self.ingestor(mapping=mapping, progress=progress)
        report = ingestor.ingest(paths, prune=prune, replace=replace)
        self.maybe_refit_lsa(embed_progress)
        self.maybe_self_calibrate()
        return report

    def maybe_self_calibrate(self, *, force: bool = False) -> dict[str, Any] | None:
        """Refit gate, confidence and novelty threshold from the KB's own documents when it
        changed materially (or ``force``); see evaluation/selfcal.py."""
        from seenbefore.evaluation.selfcal import maybe_self_calibrate

        return maybe_self_calibrate(self, force=force)

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

    def reindex(self, progress: EmbedProgress | None = None) -> dict[str, Any]:
        """Re-embed every chunk with the active embedder (refitting LSA when LSA is active)."""
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
        self._embedder, self._embedder_loaded, self._index = embedder, True, None
        self.maybe_self_calibrate(force=True)
        return {"embedder": embedder.name, "chunks": len(rows.texts)}

    # -- reading --------------------------------------------------------------------------
    def index(self) -> CorpusIndex:
        generation = self.store.generation()
        if self._index is None or self._index.generation != generation:
            local = self.store.local_file  # the BM25 sidecar lives beside a local store file
            bm25_path = None if local is None else local.with_name(local.name + ".bm25.npz")
            self._index = CorpusIndex.build(
                self.store, stem=self.settings.stem, bm25_path=bm25_path
            )
        return self._index

    def supersession(self) -> Supersession:
        """Every supersede link, answering per caller's tiers; rebuilt when the store moves."""
        generation = self.store.generation()
        if self._supersession is None or self._supersession.generation != generation:
            self._supersession = Supersession.build(self.store.supersede_rows(), generation)
        return self._supersession

    def gate(self) -> GateDecision:
        family = self.dense_family()
        from seenbefore.retrieval.calibration_record import self_gate

        measured = (self.store.get_json("fusion_weights") or {}).get(family) or self_gate(
            self.store.get_json("self_calibration"), family
        )
        default = shipped_defaults()["fusion"].get(family)
        recorded = self.store.embedder_info()
        if family == "none":
            return GateDecision(
                False,
                FusionWeights(0.0, "no dense vectors in the store"),
                "no dense vectors: run `seenbefore reindex`",
            )
        fallback = (
            _weights(default)
            if default
            else FusionWeights(
                0.0, f"no measured weights for {family}; run `seenbefore calibrate CASES`"
            )
        )
        fit = self.store.get_json("lsa_fit") or {}
        documents = int(fit.get("documents", len(self.index().doc_ids)))
        return decide(
            embedder_name=recorded[0] if recorded else family,
            is_lsa=family == "lsa",
            corpus_documents=documents,
            measured=_weights(measured) if measured else None,
            default=fallback,
        )

    def gate_default(self) -> FusionWeights:
        """The shipped fusion weights for the active dense family (weight 0 when none)."""
        default = shipped_defaults()["fusion"].get(self.dense_family())
        return _weights(default) if default else FusionWeights(0.0, "no shipped weights")

    def confidence_model(self, key: str) -> ConfidenceModel | None:
        fitted = (self.store.get_json("confidence_models") or {}).get(key)
        own = ((self.store.get_json("self_calibration") or {}).get("modes") or {}).get(key) or {}
        data = (
            fitted
            or (own.get("model") if own.get("kept") else None)
            or shipped_defaults()["confidence"].get(key)
        )
        return ConfidenceModel.from_dict(data) if data else None

    def search(
        self, text: str, filters: SearchFilters, options: SearchOptions | None = None
    ) -> SearchResult:
        options = options or SearchOptions()
        gate = self.gate()
        index = self.index()
        if options.profile not in PROFILES:
            raise InputError(
                f"query profile is {options.profile!r}, expected one of {', '.join(PROFILES)}"
            )
        if options.profile == "anomaly":
            options = self._anomaly_options(options)
        weight = (
            options.dense_weight
            if options.dense_weight is not None
            else (gate.weights.dense if gate.dense_trusted else 0.0)
        )
        family = self.dense_family()
        key = {"sparse": "sparse", "dense": f"dense:{family}"}.get(
            options.mode, f"hybrid:{family}" if weight > 0 else "sparse"
        )
        confidence = None
        if options.profile == "anomaly" and options.mode == "hybrid":
            # anomaly queries are scored by a model fitted on anomalies, when one was fitted
            signals_on = bool(options.signals) and (options.signal_weight or 0) > 0
            anomaly_key = f"anomaly:{key}" + ("+signals" if signals_on else "")
            if (confidence := self.confidence_model(anomaly_key)) is not None:
                key = anomaly_key
        if confidence is None:
            confidence = self.confidence_model(key)
        view = self.supersession()  # what the caller's tiers see of supersede links
        retriever = HybridRetriever(
            view.reads(self.store, filters.tiers),
            index,
            gate=gate,
            confidence=confidence,
            embedder=(lambda: self.query_embedder) if self.query_embedder else self.embedder,
        )
        result = retriever.search(text, view.search_filters(filters), options)
        result.details["confidence_model_key"] = key
        if confidence is not None:
            result.details["confidence_model_fit"] = {
                "threshold": confidence.threshold,
                "held_out": dict(confidence.metrics).get("held_out"),
                "live": self.live_model_line(key),
            }
        return result

    def _anomaly_options(self, options: SearchOptions) -> SearchOptions:
        """Weights measured on detector anomalies (``benchmarks/fit_defaults.py``) for what the
        caller left unset: an anomaly is a few metric names, not prose, and the text-fitted
        dense weight does not carry over to it."""
        profile = shipped_defaults().get("profiles", {}).get("anomaly", {})
        return replace(
            options,
            # the anomaly profile's weights and confidence were fitted on best-chunk BM25
            # (benchmarks/fit_defaults.py, benchmarks/anomalies.py): it keeps that ranking
            sparse_unit="chunk",
            dense_weight=(
                options.dense_weight
                if options.dense_weight is not None
                else profile.get("dense")  # None: the gate decides, as for text
            ),
            signal_weight=(
                options.signal_weight
                if options.signal_weight is not None
                else float(profile.get("signals", 0.0))
            ),
        )

    def status(self, tiers: Sequence[str] = ("general",)) -> dict[str, Any]:
        """The dense side's state; chunk counts cover only documents visible to ``tiers``."""
        gate = self.gate()
        recorded = self.store.embedder_info()
        index = self.index()
        visible = index.chunk_mask(
            index.doc_mask(SearchFilters(tiers=tuple(tiers), include_superseded=True))
        )
        has = index.has_vector if index.has_vector is not None else np.zeros_like(visible)
        with_vectors = int((has & visible).sum())
        return {
            "active_dense_embedder_name": recorded[0] if recorded else None,
            "dense_trusted": gate.dense_trusted,
            "weights": gate.weights.as_dict(),
            "weights_source": gate.weights.source,
            "gate_reason": gate.reason,
            "fallback_reason": self.fallback_reason,
            "chunks_with_vectors": with_vectors,
            "chunks_without_vectors": int(visible.sum()) - with_vectors,
            "lsa_staleness": self.lsa_staleness(),
            "lsa_refit_fraction": self.settings.lsa_refit_fraction,
            "confidence_model": self.live_model_line(),
        }

    def live_model_line(self, key: str | None = None) -> str:
        """How the live confidence model was fitted, with its held-out figures (one line)."""
        from seenbefore.retrieval.calibration_record import describe

        if key is not None and (self.store.get_json("confidence_models") or {}).get(key):
            return f"{key}: fitted by `seenbefore calibrate` on labelled cases"
        return describe(self.store.get_json("self_calibration"), key)


def _weights(data: dict[str, Any]) -> FusionWeights:
    return FusionWeights(
        float(data["dense"]), str(data.get("source", "")), dict(data.get("evidence", {}))
    )


def _embed_all(
    embedder: Embedder, texts: list[str], progress: EmbedProgress | None, batch: int = 256
) -> Matrix:
    parts = []
    for start in range(0, len(texts), batch):
        parts.append(embedder.embed(texts[start : start + batch]))
        if progress:
            progress(min(start + batch, len(texts)), len(texts))
    return np.vstack(parts) if parts else np.zeros((0, embedder.dim), dtype=np.float32)
