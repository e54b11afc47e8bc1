"""The structured retriever over recorded signals, and the anomaly profile that uses it."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from seenbefore.config import Settings
from seenbefore.errors import InputError
from seenbefore.kb import KnowledgeBase
from seenbefore.retrieval.hybrid import SearchOptions
from seenbefore.retrieval.signals import POSITION_DECAY, SignalIndex, normalise_signal
from seenbefore.types import SearchFilters
from tests.conftest import postmortem_text

DOCS = [
    ["cpu_utilization", "p99_latency", "error_rate"],
    ["db_connections_in_use", "p99_latency", "error_rate"],
    ["error_rate"],
    [],
]


def test_idf_and_position_weights_by_hand() -> None:
    index = SignalIndex.build(DOCS)
    n = len(DOCS)
    idf_error = math.log1p(n / 3)  # error_rate: in 3 of 4 documents
    idf_cpu = math.log1p(n / 1)
    assert index.idf[index.vocabulary["error_rate"]] == pytest.approx(idf_error, rel=1e-6)
    assert index.idf[index.vocabulary["cpu_utilization"]] == pytest.approx(idf_cpu, rel=1e-6)
    row = index.matrix[0]
    # first signal at full weight, the third at 1 / (1 + 2 * decay), rows L2-normalised
    ratio = row[index.vocabulary["cpu_utilization"]] / row[index.vocabulary["error_rate"]]
    assert ratio == pytest.approx((idf_cpu / 1.0) / (idf_error / (1 + 2 * POSITION_DECAY)))
    assert float(np.linalg.norm(row)) == pytest.approx(1.0, rel=1e-6)
    assert not index.matrix[3].any()  # a document without signals scores nothing


def test_rare_strong_signal_outranks_common_ones() -> None:
    index = SignalIndex.build(DOCS)
    mask = np.ones(len(DOCS), dtype=bool)
    scores = index.scores({"db_connections_in_use": 9.0, "error_rate": 9.0}, mask)
    assert int(np.argmax(scores)) == 1
    assert scores[3] == 0.0
    # the filter is applied before scoring: a masked document is never scored
    mask[1] = False
    assert index.scores({"db_connections_in_use": 9.0}, mask)[1] == 0.0


def test_names_are_normalised_and_unknown_signals_count_against_coverage() -> None:
    index = SignalIndex.build([["CPU-Utilization"]])
    assert normalise_signal("CPU utilization") == "cpu_utilization"
    assert index.known("cpu utilization")
    assert index.coverage({"cpu_utilization": 1.0}, 0) == pytest.approx(1.0)
    assert index.coverage({"cpu_utilization": 1.0, "gpu_temperature": 1.0}, 0) == pytest.approx(0.5)
    assert index.query_vector({"gpu_temperature": 3.0}) is None
    with pytest.raises(ValueError, match="strength"):
        index.query_vector({"cpu_utilization": -1.0})


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    folder = tmp_path / "docs"
    folder.mkdir()
    bodies = {
        # text favours TEXT (it repeats the query's words); signals favour SIG
        "TEXT": ("error_rate", "latency errors latency errors timeouts timeouts slow requests"),
        "SIG": ("db_connections_in_use, p99_latency", "the connection pool was exhausted"),
        "OTHER": ("queue_depth", "a queue backed up"),
    }
    for doc_id, (signals, text) in bodies.items():
        (folder / f"{doc_id}.md").write_text(
            postmortem_text(
                doc_id,
                body=f"## Summary\n{text}\n\n## Root cause\n{text}.\n",
                signals=f"[{signals}]",
                type=doc_id.lower(),
            )
        )
    with KnowledgeBase(Settings(home=tmp_path / "home", embedder="none")) as base:
        base.ingest([folder])
        yield base


def test_signals_join_the_fusion_only_when_given_and_weighted(kb: KnowledgeBase) -> None:
    filters = SearchFilters(tiers=("general",))
    query = "latency errors timeouts"
    plain = kb.search(query, filters, SearchOptions(k=3))
    assert plain.candidates[0].doc_id == "TEXT"
    assert "signals" not in plain.weights
    observed = {"db_connections_in_use": 20.0, "p99_latency": 5.0}
    fused = kb.search(
        query, filters, SearchOptions(k=3, signals=observed, signal_weight=3.0, profile="anomaly")
    )
    assert fused.weights["signals"] == 3.0
    assert fused.candidates[0].doc_id == "SIG"
    sig = fused.candidates[0]
    assert "signals" in sig.retrievers and sig.retrievers["signals"].rank == 1
    assert fused.signals["signal_overlap"] > 0.5
    assert "signals_ms" in fused.timings
    off = kb.search(query, filters, SearchOptions(k=3, signals=observed, signal_weight=0.0))
    assert off.candidates[0].doc_id == "TEXT"


def test_a_document_found_only_by_its_signals_says_so(kb: KnowledgeBase) -> None:
    result = kb.search(
        "zzzz qqqq",
        SearchFilters(tiers=("general",)),
        SearchOptions(k=3, signals={"queue_depth": 4.0}, signal_weight=1.0),
    )
    assert [c.doc_id for c in result.candidates] == ["OTHER"]
    assert result.candidates[0].matched_by == "signals"
    assert result.candidates[0].snippet  # shows its first chunk


def test_anomaly_profile_takes_the_shipped_weights_and_model(kb: KnowledgeBase) -> None:
    result = kb.search(
        "latency errors",
        SearchFilters(tiers=("general",)),
        SearchOptions(k=3, signals={"p99_latency": 3.0}, profile="anomaly"),
    )
    assert result.weights["signals"] > 0
    assert result.confidence_model_key == "anomaly:sparse+signals"
    with pytest.raises(InputError, match="profile"):
        kb.search("x", SearchFilters(tiers=("general",)), SearchOptions(profile="prose"))
