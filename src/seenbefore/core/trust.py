"""The trust gate: whether the dense half of hybrid retrieval may vote, and with what weight.

Decided by evidence, not by the embedder's pedigree:

1. The origin floor: LSA fitted on fewer than ``MIN_CORPUS_SIZE_FOR_LSA`` documents is noise,
   so queries run sparse-only.
2. A measured gate: the calibration subsystem (calibration/weights.py) sweeps dense weights on
   labelled cases and checks them on held-out ones; where dense does not measurably help, its
   weight is 0 and the gate says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

MIN_CORPUS_SIZE_FOR_LSA = 50


@dataclass(frozen=True)
class FusionWeights:
    """Weights in force: dense weight in [0, 1], sparse weight 1 - dense (both 0..1)."""

    dense: float
    source: str  # where the figure came from: "measured on ...", "shipped default ...", ...
    evidence: Mapping[str, Any] = field(default_factory=dict)

    @property
    def sparse(self) -> float:
        return round(1.0 - self.dense, 6)

    def as_dict(self) -> dict[str, float]:
        return {"sparse": self.sparse, "dense": self.dense}


@dataclass(frozen=True)
class GateDecision:
    dense_trusted: bool
    weights: FusionWeights
    reason: str
    evidence: Mapping[str, Any] = field(default_factory=dict)


def decide(
    *,
    embedder_name: str,
    is_lsa: bool,
    corpus_documents: int,
    measured: FusionWeights | None,
    default: FusionWeights,
) -> GateDecision:
    """The gate's decision for the current knowledge base."""
    if is_lsa and corpus_documents < MIN_CORPUS_SIZE_FOR_LSA:
        return GateDecision(
            False,
            FusionWeights(0.0, "origin floor"),
            f"LSA fitted on {corpus_documents} documents, below MIN_CORPUS_SIZE_FOR_LSA = "
            f"{MIN_CORPUS_SIZE_FOR_LSA}: dense is noise at this size, running sparse-only",
            {"corpus_documents": corpus_documents, "embedder": embedder_name},
        )
    weights = measured if measured is not None else default
    if weights.dense <= 0:
        return GateDecision(
            False,
            weights,
            f"dense ({embedder_name}) weight is 0: {weights.source}",
            dict(weights.evidence),
        )
    return GateDecision(
        True,
        weights,
        f"dense ({embedder_name}) weight {weights.dense}: {weights.source}",
        dict(weights.evidence),
    )
