"""Structured retrieval over the signals postmortems record (``signals: [cpu_utilization, ...]``).

An anomaly from the detector is not prose: it is a set of metrics that moved, each by so many
robust standard deviations. Text retrieval sees that only through the words we render for it;
this retriever compares it directly with the metrics each postmortem says were telling.

Score = cosine between two weighted signal vectors, both IDF-weighted (a signal every incident
shows, like ``error_rate``, says little; ``db_connections_in_use`` says a lot):

* the anomaly: each metric weighted by how far it moved (``|z|``, or any non-negative strength);
* a postmortem: each recorded signal weighted down by its position (``POSITION_DECAY``), because
  postmortems list the most telling signal first.

Measured on detector anomalies from the simulator (``benchmarks/anomalies.py``): this ranking
fused with BM25 cites the right incident type first far more often than BM25 alone; weights and
the confidence model for anomaly queries are fitted there (``benchmarks/fit_defaults.py``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float32]

# A postmortem's n-th recorded signal weighs 1 / (1 + POSITION_DECAY * n) (how the value was
# chosen, and on what: docs/decisions.md).
POSITION_DECAY = 0.5


def normalise_signal(name: str) -> str:
    """``CPU-Utilization`` and ``cpu utilization`` are ``cpu_utilization``."""
    return name.strip().lower().replace("-", "_").replace(" ", "_")


@dataclass(frozen=True)
class SignalIndex:
    """Per-document signal vectors (documents in index order) and the signals' IDF."""

    vocabulary: dict[str, int]
    idf: FloatArray  # per vocabulary entry
    matrix: FloatArray  # documents x vocabulary, rows L2-normalised (zeros when no signals)

    @classmethod
    def build(
        cls, signals: Sequence[Sequence[str]], *, live: npt.NDArray[np.bool_] | None = None
    ) -> SignalIndex:
        """One row per document position; a position outside ``live`` (tombstoned) gets a row
        of zeros and counts in no statistic. Signals are numbered in name order, so nothing
        depends on where a document sits."""
        normalised = [
            list(dict.fromkeys(normalise_signal(s) for s in doc if s.strip()))
            if live is None or live[i]
            else []
            for i, doc in enumerate(signals)
        ]
        names = sorted({name for doc in normalised for name in doc})
        vocabulary = {name: i for i, name in enumerate(names)}
        n_docs = len(normalised) if live is None else int(live.sum())
        df = np.zeros(len(vocabulary), dtype=np.float64)
        for doc in normalised:
            for name in doc:
                df[vocabulary[name]] += 1
        idf = np.log1p(n_docs / np.maximum(df, 1.0)).astype(np.float32)
        matrix = np.zeros((len(normalised), len(vocabulary)), dtype=np.float32)
        for row, doc in enumerate(normalised):
            for position, name in enumerate(doc):
                col = vocabulary[name]
                matrix[row, col] = idf[col] / (1.0 + POSITION_DECAY * position)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        matrix = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
        return cls(vocabulary=vocabulary, idf=idf, matrix=matrix)

    @property
    def empty(self) -> bool:
        return not self.vocabulary

    def known(self, name: str) -> bool:
        return normalise_signal(name) in self.vocabulary

    def query_vector(self, observed: Mapping[str, float]) -> FloatArray | None:
        """The anomaly's vector in this vocabulary; None when no observed signal is known."""
        vector = np.zeros(len(self.vocabulary), dtype=np.float32)
        for name, strength in observed.items():
            if not math.isfinite(strength) or strength < 0:
                raise ValueError(f"signal {name!r} has strength {strength}, expected a number >= 0")
            col = self.vocabulary.get(normalise_signal(name))
            if col is not None:
                vector[col] = max(vector[col], float(strength) * float(self.idf[col]))
        norm = float(np.linalg.norm(vector))
        return vector / norm if norm > 0 else None

    def coverage(self, observed: Mapping[str, float], row: int) -> float:
        """Share of the anomaly's IDF-weighted strength that document ``row`` records. A signal
        no postmortem records counts at the rarest IDF: it is the least explained of all."""
        if not self.vocabulary:
            return 0.0
        rarest = float(self.idf.max())
        total = found = 0.0
        for name, strength in observed.items():
            col = self.vocabulary.get(normalise_signal(name))
            mass = float(strength) * (float(self.idf[col]) if col is not None else rarest)
            total += mass
            if col is not None and self.matrix[row, col] > 0:
                found += mass
        return found / total if total > 0 else 0.0

    def scores(self, observed: Mapping[str, float], doc_mask: npt.NDArray[np.bool_]) -> FloatArray:
        """Cosine per document; 0 for documents outside ``doc_mask`` (never scored)."""
        out = np.zeros(self.matrix.shape[0], dtype=np.float32)
        query = self.query_vector(observed)
        if query is None:
            return out
        rows = np.flatnonzero(doc_mask)
        # row by row (einsum, not a BLAS product), so a score does not depend on the position
        out[rows] = np.einsum("ij,j->i", self.matrix[rows], query)
        return out

    def ranked(
        self,
        observed: Mapping[str, float],
        doc_mask: npt.NDArray[np.bool_],
        doc_ids: Sequence[str],
    ) -> tuple[list[int], FloatArray]:
        """Document positions with any signal in common, best first (ties by id), and the
        scores they were ranked by."""
        scores = self.scores(observed, doc_mask)
        eligible = np.flatnonzero(scores > 0)
        order = sorted(eligible.tolist(), key=lambda d: (-float(scores[d]), doc_ids[d]))
        return order, scores
