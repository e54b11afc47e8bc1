"""A search's options and its plan: what the caller asked for (:class:`SearchOptions`), checked
once and turned into the weights the hybrid retriever fuses with (:class:`QueryPlan`), and the
confidence model it is scored by (:class:`Scoring`). Pure: no store, no index."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from seenbefore.core.confidence import ConfidenceModel
from seenbefore.core.fusion import RRF_K
from seenbefore.core.trust import GateDecision
from seenbefore.errors import InputError
from seenbefore.retrieval.identity import IDENTITY_WEIGHT
from seenbefore.types import ModelFit

Mode = Literal["sparse", "dense", "hybrid"]
MODES: tuple[str, ...] = ("sparse", "dense", "hybrid")
# how the sparse half ranks documents: by the whole document (BM25F), by its best chunk, or by
# RRF of both. Measured side by side in benchmarks/realtext.py; "document" won on real text.
SPARSE_UNITS: tuple[str, ...] = ("document", "chunk", "both")
PROFILES: tuple[str, ...] = ("text", "anomaly")


@dataclass(frozen=True)
class SearchOptions:
    k: int = 5
    mode: str = "hybrid"  # one of MODES, checked by HybridRetriever.plan
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
    # dense votes only while sparse is unsure of its top document (retrieval/hybrid.py);
    # None: so when the weight is the gate's, not for an explicit ``dense_weight``
    dense_vote: bool | None = None
    # weight of the words that say where an alert fired, not what failed (service names the
    # KB knows, cloud, region, environment: retrieval/identity.py); None: IDENTITY_WEIGHT,
    # 1: every word weighs the same
    identity_weight: float | None = None


@dataclass(frozen=True)
class QueryPlan:
    """What one search runs: the checked options (the profile's weights applied) and the
    weights decided from them and the gate, each computed here and nowhere else."""

    options: SearchOptions
    dense_weight: float
    signal_weight: float

    @property
    def mode(self) -> str:
        return self.options.mode

    @property
    def identity_weight(self) -> float:
        weight = self.options.identity_weight
        return IDENTITY_WEIGHT if weight is None else weight

    @property
    def use_sparse(self) -> bool:
        return self.mode in ("sparse", "hybrid")

    @property
    def use_dense(self) -> bool:
        return self.mode == "dense" or (self.mode == "hybrid" and self.dense_weight > 0)

    @property
    def dense_votes(self) -> bool:
        vote = self.options.dense_vote
        return self.options.dense_weight is None if vote is None else vote

    @property
    def use_signals(self) -> bool:
        return self.mode == "hybrid" and bool(self.options.signals) and self.signal_weight > 0

    def model_keys(self, family: str) -> tuple[str, ...]:
        """Confidence-model keys for this plan, the preferred first: anomaly queries are scored
        by a model fitted on anomalies when one was fitted, else as text."""
        base = {"sparse": "sparse", "dense": f"dense:{family}"}.get(
            self.mode, f"hybrid:{family}" if self.dense_weight > 0 else "sparse"
        )
        if self.options.profile == "anomaly" and self.mode == "hybrid":
            return (f"anomaly:{base}" + ("+signals" if self.use_signals else ""), base)
        return (base,)


@dataclass(frozen=True)
class Scoring:
    """The confidence model a search is scored by, under its key, and how it was fitted."""

    key: str
    model: ConfidenceModel | None
    fit: ModelFit | None = None


def plan_query(
    options: SearchOptions, gate: GateDecision, profiles: Mapping[str, Any] | None = None
) -> QueryPlan:
    """Check ``options`` and decide the weights (the gate's dense weight unless the caller set
    one). ``profiles``: the shipped per-profile weights (``defaults.json``'s ``profiles``)."""
    if options.profile not in PROFILES:
        raise InputError(
            f"query profile is {options.profile!r}, expected one of {', '.join(PROFILES)}"
        )
    if options.profile == "anomaly":
        options = _anomaly_options(options, (profiles or {}).get("anomaly", {}))
    if options.k < 1:
        raise InputError(f"k is {options.k}, expected at least 1")
    if options.mode not in MODES:
        raise InputError(f"mode is {options.mode!r}, expected one of {', '.join(MODES)}")
    if options.sparse_unit not in SPARSE_UNITS:
        raise InputError(
            f"sparse unit is {options.sparse_unit!r}, expected one of {', '.join(SPARSE_UNITS)}"
        )
    if options.dense_weight is not None:
        if not 0.0 <= options.dense_weight <= 1.0:
            raise InputError(f"dense weight is {options.dense_weight}, expected 0..1")
        dense_weight = options.dense_weight
    else:
        dense_weight = gate.weights.dense if gate.dense_trusted else 0.0
    if options.identity_weight is not None and not 0.0 <= options.identity_weight <= 1.0:
        raise InputError(
            f"identity weight is {options.identity_weight}, expected 0..1 (1: service and "
            "region words weigh as much as the rest of the query)"
        )
    signal_weight = float(options.signal_weight or 0.0)
    if not 0.0 <= signal_weight <= 10.0:
        raise InputError(f"signal weight is {signal_weight}, expected 0..10")
    return QueryPlan(options, dense_weight, signal_weight)


def _anomaly_options(options: SearchOptions, profile: Mapping[str, Any]) -> SearchOptions:
    """Weights measured on detector anomalies (``benchmarks/fit_defaults.py``) for what the
    caller left unset: an anomaly is a few metric names, not prose, and the text-fitted dense
    weight does not carry over to it. The anomaly profile's weights and confidence were fitted
    on best-chunk BM25 (benchmarks/anomalies.py): it keeps that ranking."""
    return replace(
        options,
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
