"""What every search on one store generation shares, read from the store once: the corpus
index, the supersession view, the recorded embedder and its family, the trust gate's decision,
and the confidence models per key (fitted by ``seenbefore calibrate``, self-calibrated, or
shipped). The knowledge base caches one :class:`SearchContext` and builds a new one when the
store's generation moves (every write moves it, settings included), so a search on an
unchanged store reads one value from the store's metadata: the generation."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from seenbefore.core.calibration import RECORD, CalibrationRecord
from seenbefore.core.confidence import ConfidenceModel
from seenbefore.core.trust import FusionWeights, GateDecision, decide
from seenbefore.retrieval.corpus import CorpusIndex
from seenbefore.retrieval.embedders import LSA_PREFIX
from seenbefore.retrieval.plan import QueryPlan, Scoring
from seenbefore.storage.ports import ContextReads
from seenbefore.storage.supersession import Supersession
from seenbefore.types import ModelFit


@cache
def shipped_defaults() -> dict[str, Any]:
    """Fusion weights and confidence models fitted by benchmarks/fit_defaults.py on named data."""
    text = resources.files("seenbefore.retrieval").joinpath("defaults.json").read_text()
    data: dict[str, Any] = json.loads(text)
    return data


def embedder_family(name: str | None) -> str:
    """``lsa`` for any fitted LSA model, else the embedder's name (``none`` without one)."""
    return "lsa" if name and name.startswith(LSA_PREFIX) else (name or "none")


def dense_family(recorded: tuple[str, int] | None, explicit: str | None) -> str:
    """The store's recorded embedder's family; for a store with no vectors yet, the family of
    the embedder the caller passed (``explicit``), else ``none``."""
    if recorded:
        return embedder_family(recorded[0])
    return embedder_family(explicit) if explicit is not None else "none"


def fusion_weights(data: Mapping[str, Any]) -> FusionWeights:
    """Stored or shipped weights (``{"dense": w, "source": ..., "evidence": {...}}``)."""
    return FusionWeights(
        float(data["dense"]), str(data.get("source", "")), dict(data.get("evidence", {}))
    )


def shipped_weights(family: str) -> FusionWeights:
    """The shipped fusion weights for ``family`` (weight 0 when none were shipped)."""
    default = shipped_defaults()["fusion"].get(family)
    return fusion_weights(default) if default else FusionWeights(0.0, "no shipped weights")


@dataclass(frozen=True)
class SearchContext:
    """One store generation as searches see it (see the module doc)."""

    generation: int
    index: CorpusIndex
    supersession: Supersession
    recorded: tuple[str, int] | None  # the store's embedder (name, dim), None without vectors
    family: str
    gate: GateDecision
    record: CalibrationRecord  # the calibration subsystem's one record (core/calibration.py)
    profiles: Mapping[str, Any]  # shipped per-profile weights (anomaly)
    _models: dict[str, ConfidenceModel | None] = field(default_factory=dict, repr=False)

    @classmethod
    def build(
        cls,
        store: ContextReads,
        *,
        generation: int,
        index: CorpusIndex,
        supersession: Supersession,
        explicit: str | None = None,
    ) -> SearchContext:
        """Read what searches need from ``store``; ``generation`` is read by the caller before
        anything else, so a write in between only makes the next search rebuild."""
        recorded = store.embedder_info()
        family = dense_family(recorded, explicit)
        record = CalibrationRecord.from_dict(store.get_json(RECORD))
        gate_weight = record.gates.get(family)
        measured = gate_weight.as_dict() if gate_weight is not None else None
        gate = _gate(
            family,
            recorded,
            measured,
            documents=lambda: int(
                (store.get_json("lsa_fit") or {}).get("documents", len(index.doc_ids))
            ),
        )
        return cls(
            generation=generation,
            index=index,
            supersession=supersession,
            recorded=recorded,
            family=family,
            gate=gate,
            record=record,
            profiles=shipped_defaults().get("profiles", {}),
        )

    @property
    def embedder_name(self) -> str | None:
        return self.recorded[0] if self.recorded else None

    def confidence_model(self, key: str) -> ConfidenceModel | None:
        """The live model for ``key``: the one the calibration record holds (each entry was
        kept only by beating the model live at its time on held-out cases), else shipped;
        None when there is none."""
        if key not in self._models:
            live = self.record.models.get(key)
            data = dict(live.model) if live else shipped_defaults()["confidence"].get(key)
            self._models[key] = ConfidenceModel.from_dict(data) if data else None
        return self._models[key]

    def live_model_line(self, key: str | None = None) -> str:
        """How the live confidence model was fitted, with its held-out figures (one line)."""
        return self.record.line(key)

    def scoring(self, plan: QueryPlan) -> Scoring:
        """The model ``plan`` is scored by: the first of its keys with a model (the last key
        when none has one)."""
        keys = plan.model_keys(self.family)
        key = next((k for k in keys if self.confidence_model(k) is not None), keys[-1])
        model = self.confidence_model(key)
        if model is None:
            return Scoring(key, None)
        fit = ModelFit(
            model.lo, model.hi, dict(model.metrics).get("held_out"), self.live_model_line(key)
        )
        return Scoring(key, model, fit)


def _gate(
    family: str,
    recorded: tuple[str, int] | None,
    measured: Mapping[str, Any] | None,
    *,
    documents: Callable[[], int],
) -> GateDecision:
    """The trust gate for ``family``: measured weights when the store has them, else the
    shipped ones; ``documents`` (called only when there are vectors) counts the corpus."""
    if family == "none":
        return GateDecision(
            False,
            FusionWeights(0.0, "no dense vectors in the store"),
            "no dense vectors: run `seenbefore reindex`",
        )
    default = shipped_defaults()["fusion"].get(family)
    fallback = (
        fusion_weights(default)
        if default
        else FusionWeights(
            0.0, f"no measured weights for {family}; run `seenbefore calibrate CASES`"
        )
    )
    return decide(
        embedder_name=recorded[0] if recorded else family,
        is_lsa=family == "lsa",
        corpus_documents=documents(),
        measured=fusion_weights(measured) if measured else None,
        default=fallback,
    )
