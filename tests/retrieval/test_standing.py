"""The style-proof signals: hand-worked values on tiny indexes (retrieval/standing.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from seenbefore.core.confidence import SIGNALS
from seenbefore.retrieval import standing
from seenbefore.retrieval.bm25 import BM25Index

DOCS = ["checkout pool exhausted", "pool timeout on orders", "disk full on ledger"]


def test_every_standing_signal_is_a_confidence_signal() -> None:
    assert set(standing.STANDING_SIGNALS) <= set(SIGNALS)


def test_unknown_words_count_at_the_idf_no_document_would_have() -> None:
    index = BM25Index.build(DOCS)
    assert standing.unseen_idf(3) == pytest.approx(math.log(1 + 3.5 / 0.5))
    # "printer" and "toner" are nowhere in the KB: their mass counts against the query
    inside, coverage = standing.vocabulary_signals(index, ["pool", "printer", "toner"], 0)
    idf_pool = float(index.idf[index.vocabulary["pool"]])
    unseen = standing.unseen_idf(3)
    assert inside == pytest.approx(idf_pool / (idf_pool + 2 * unseen))
    assert coverage == pytest.approx(inside)  # document 0 holds "pool"
    assert standing.vocabulary_signals(index, ["pool", "exhausted"], 2) == (1.0, 0.0)
    assert standing.vocabulary_signals(index, [], 0) == (0.0, 0.0)


def test_score_standing_is_the_top_scores_z_and_gap_squashed() -> None:
    scores = np.array([9.0, 3.0, 0.0, 0.0], dtype=np.float32)
    mask = np.array([True, True, True, True])
    z, gap = standing.score_standing(scores, mask, [0, 1])
    mean, sd = 3.0, float(np.std([9.0, 3.0, 0.0, 0.0]))
    assert z == pytest.approx(math.log1p((9.0 - mean) / sd))
    assert gap == pytest.approx(math.log1p(6.0 / sd))
    # documents outside the mask are not part of the query's distribution
    hidden = np.array([True, False, True, True])
    assert standing.score_standing(scores, hidden, [0])[0] != pytest.approx(z)
    flat = np.ones(4, dtype=np.float32)
    assert standing.score_standing(flat, mask, [0, 1]) == (0.0, 0.0)


def test_overlap_and_dense_excess() -> None:
    assert standing.overlap([1, 2, 3, 4, 5], [5, 4, 9, 8, 7]) == pytest.approx(2 / 5)
    assert standing.overlap([], [1]) == 0.0
    assert standing.dense_excess(0.62, 0.5) == pytest.approx(0.12)
    assert standing.dense_excess(0.1, 0.5) == pytest.approx(-0.4)
    assert standing.dense_excess(0.7, None) == 0.0
