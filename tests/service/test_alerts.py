"""The Alertmanager webhook with bodies a real Alertmanager 0.25 delivered (shared data):
firing starts an investigation as the service principal, a re-delivery starts nothing new,
resolved closes it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from seenbefore.service.routers.alerts import severity_of
from tests.service.conftest import Service, metric


def _load(shared_data: Path, name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((shared_data / "alertmanager" / name).read_text())
    return data


def test_firing_then_redelivered_then_resolved(service: Service, shared_data: Path) -> None:
    firing = _load(shared_data, "webhook_v4_firing.json")
    resolved = _load(shared_data, "webhook_v4_resolved.json")
    key = "093f2550cadd6e45:2026-11-30T00:11:42Z"

    first = service.as_("responder", "post", "/v1/alerts/alertmanager", json=firing)
    assert first.status_code == 200
    started = first.json()["started"]
    assert [s["source_key"] for s in started] == [key]
    rid = started[0]["investigation_id"]
    review = service.as_("viewer", "get", f"/v1/investigations/{rid}").json()
    assert review["requested_by"] == "service:alertmanager"
    assert review["severity"] == "SEV1"  # severity=critical
    assert review["source"]["fingerprint"] == "093f2550cadd6e45"
    assert review["draft"]["summary"]
    assert "payments-api" in review["request"]["query"]

    again = service.as_("responder", "post", "/v1/alerts/alertmanager", json=firing).json()
    assert again["started"][0]["investigation_id"] == rid
    assert len(service.as_("viewer", "get", "/v1/reviews").json()["reviews"]) == 1

    done = service.as_("responder", "post", "/v1/alerts/alertmanager", json=resolved).json()
    assert done == {"started": [], "closed": [rid], "ignored": 0}
    closed = service.as_("viewer", "get", f"/v1/investigations/{rid}").json()
    assert closed["status"] == "closed" and closed["outcome"] == "alert_resolved"
    repeat = service.as_("responder", "post", "/v1/alerts/alertmanager", json=resolved).json()
    assert repeat["closed"] == []

    audit = service.as_("admin", "get", "/v1/audit?actor=service:alertmanager").json()
    actions = [r["action"] for r in audit["records"]]
    assert actions == ["review.start", "review.start", "review.close"]
    assert audit["records"][0]["detail"]["delivered_by"] == "responder-user"
    metrics = service.as_("viewer", "get", "/metrics").text
    assert metric(metrics, "seenbefore_investigations_total", source="alertmanager") == 1.0
    assert metric(metrics, "seenbefore_review_decisions_total", decision="closed") == 1.0


def test_webhook_needs_a_responder_and_version_4(service: Service, shared_data: Path) -> None:
    firing = _load(shared_data, "webhook_v4_firing.json")
    assert service.as_("viewer", "post", "/v1/alerts/alertmanager", json=firing).status_code == 403
    old = service.as_(
        "responder", "post", "/v1/alerts/alertmanager", json={**firing, "version": "3"}
    )
    assert old.status_code == 400
    assert "version 4" in old.json()["detail"]


def test_severity_labels() -> None:
    assert severity_of({"severity": "critical"}) == "SEV1"
    assert severity_of({"severity": "warning"}) == "SEV3"
    assert severity_of({"severity": "sev2"}) == "SEV2"
    assert severity_of({}) is None
