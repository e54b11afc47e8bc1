from __future__ import annotations

from typing import Any

import pytest

from seenbefore.service.metrics import Observation, ServiceMetrics
from tests.service.conftest import Service, metric


def _draft(confidence: float, novel: bool, retrievers: dict[str, Any]) -> dict[str, Any]:
    return {
        "confidence": confidence,
        "novel": novel,
        "retrieval_trace": {
            "timings_ms": {"sparse_ms": 2.0, "dense_ms": 4.0, "investigate_ms": 10.0},
            "candidates": [{"id": "A", "matched_by": "both", "retrievers": retrievers}],
        },
    }


def test_drift_gauges_over_the_window() -> None:
    m = ServiceMetrics(window=3)
    both = {"sparse": {"rank": 1}, "dense": {"rank": 1}}
    split = {"sparse": {"rank": 1}, "dense": {"rank": 2}}
    flagged = {"candidates": [{"doc_id": "A", "injection_flags": ["tool_call"]}]}
    m.observe_investigation("api", Observation.from_review(_draft(0.9, False, both), {}))
    m.observe_investigation("api", Observation.from_review(_draft(0.3, True, split), flagged))
    m.observe_investigation("api", Observation.from_review(_draft(0.6, False, {"sparse": {}}), {}))
    text = m.render().decode()
    assert metric(text, "seenbefore_drift_top1_confidence_mean") == pytest.approx(0.6)
    assert metric(text, "seenbefore_drift_novelty_rate") == pytest.approx(1 / 3)
    assert metric(text, "seenbefore_drift_sparse_dense_agreement") == pytest.approx(0.5)
    assert metric(text, "seenbefore_drift_injection_flag_rate") == pytest.approx(1 / 3)
    m.observe_investigation("api", Observation.from_review(_draft(0.0, True, split), {}))
    text = m.render().decode()  # the first observation left the window of 3
    assert metric(text, "seenbefore_drift_top1_confidence_mean") == pytest.approx(0.3)
    assert metric(text, "seenbefore_drift_sparse_dense_agreement") == pytest.approx(0.0)
    assert metric(text, "seenbefore_investigations_total", outcome="novel") == 2.0
    assert metric(text, "seenbefore_retrieval_stage_seconds_count", stage="dense") == 4.0
    assert metric(text, "seenbefore_retrieval_stage_seconds_sum", stage="dense") == (
        pytest.approx(0.016)
    )


def test_latency_is_labelled_by_route_template(service: Service) -> None:
    service.as_("viewer", "get", "/v1/postmortems/POOL-1")
    service.as_("viewer", "get", "/v1/postmortems/DNS-1")
    service.client.get("/nothing/here")
    text = service.as_("viewer", "get", "/metrics").text
    name = "seenbefore_http_request_duration_seconds_count"
    assert metric(text, name, route="/v1/postmortems/{doc_id}", status="200") == 2.0
    assert metric(text, name, route="unmatched", status="404") == 1.0
    assert "POOL-1" not in text
