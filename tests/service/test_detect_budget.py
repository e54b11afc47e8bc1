"""Bounded work per ``POST /v1/detect`` request (issue 33): one request with ``investigate``
once queued 300 pending reviews in 15 s, and four concurrent 1 MiB requests added 809 MiB with
nothing capping them. Now a request starts at most the configured number of investigations, a
principal at most so many a minute, the rest reported as skipped with the reason; detections
run at most N at once within a memory budget (503 with Retry-After while it is taken)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
import pytest

from seenbefore.errors import BusyError, InputError
from seenbefore.service.work_budget import MIB, WorkBudget, detect_cost
from tests.service.conftest import MakeService

START = dt.datetime(2025, 6, 1, tzinfo=dt.UTC)
POINTS = 2 * 1440
CHANGES = [("a_ms", 1700), ("b_ms", 2000), ("c_ms", 2300), ("d_ms", 2600)]


def four_anomalies(*, investigate: bool = True) -> dict[str, Any]:
    """Four 90-minute bursts, one metric each, five hours apart: four separate anomalies."""
    rng = np.random.default_rng(3)
    metrics = {}
    for name, at in CHANGES:
        x = 100 + rng.normal(0, 3, POINTS)
        x[at : at + 90] += 200
        metrics[name] = [round(float(v), 3) for v in x]
    return {
        "service": "payments",
        "timestamps": [(START + dt.timedelta(minutes=m)).isoformat() for m in range(POINTS)],
        "metrics": metrics,
        "investigate": investigate,
    }


def pending(service: Any) -> int:
    listed = service.as_("reviewer", "get", "/v1/reviews", params={"status": "pending"})
    assert listed.status_code == 200, listed.text
    return len(listed.json()["reviews"])


def test_one_request_starts_at_most_the_configured_investigations(
    make_service: MakeService,
) -> None:
    service = make_service(detect_max_investigations=2)
    answer = service.as_("responder", "post", "/v1/detect", json=four_anomalies())
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert [a["deviations"][0]["metric"] for a in body["anomalies"]] == [m for m, _ in CHANGES]
    started = [a for a in body["anomalies"] if a["review_id"]]
    skipped = [a for a in body["anomalies"] if a["investigation_skipped"]]
    assert [a["deviations"][0]["metric"] for a in started] == ["a_ms", "b_ms"]  # the first two
    assert len(skipped) == 2 and all(a["review_id"] is None for a in skipped)
    assert "SEENBEFORE_DETECT_MAX_INVESTIGATIONS" in skipped[0]["investigation_skipped"]
    assert (body["investigations_started"], body["investigations_skipped"]) == (2, 2)
    assert pending(service) == 2


def test_a_principal_starts_at_most_so_many_a_minute_and_repeats_cost_nothing(
    make_service: MakeService,
) -> None:
    service = make_service(detect_max_investigations=2, investigations_per_minute=3)
    first = service.as_("responder", "post", "/v1/detect", json=four_anomalies()).json()
    again = service.as_("responder", "post", "/v1/detect", json=four_anomalies()).json()
    # the first two are found again (same anomaly id and start), not started: no cost; the
    # third takes the last of the minute's three; the fourth is over the minute's allowance
    ids = [a["review_id"] for a in again["anomalies"]]
    assert ids[:2] == [a["review_id"] for a in first["anomalies"][:2]]
    assert ids[2] is not None and ids[3] is None
    assert (
        "investigations per minute for this principal"
        in (again["anomalies"][3]["investigation_skipped"])
    )
    assert "SEENBEFORE_INVESTIGATIONS_PER_MINUTE" in again["anomalies"][3]["investigation_skipped"]
    assert (again["investigations_started"], again["investigations_skipped"]) == (1, 1)
    assert pending(service) == 3


def test_without_investigate_nothing_is_started_or_skipped(make_service: MakeService) -> None:
    service = make_service(detect_max_investigations=0)
    body = service.as_(
        "responder", "post", "/v1/detect", json=four_anomalies(investigate=False)
    ).json()
    assert len(body["anomalies"]) == 4
    assert all(a["investigation_skipped"] is None for a in body["anomalies"])
    assert (body["investigations_started"], body["investigations_skipped"]) == (0, 0)


def test_a_busy_server_answers_503_with_retry_after(make_service: MakeService) -> None:
    service = make_service(detect_concurrency=1)
    budget = service.app.state.service.detect_budget
    with budget.reserve(MIB, what="another request"):  # one detection running
        busy = service.as_("responder", "post", "/v1/detect", json=four_anomalies())
    assert busy.status_code == 503, busy.text
    assert busy.headers["Retry-After"] == "2"
    assert "SEENBEFORE_DETECT_CONCURRENCY" in busy.json()["detail"]
    assert budget.running == 0 and budget.reserved == 0  # given back
    ok = service.as_("responder", "post", "/v1/detect", json=four_anomalies(investigate=False))
    assert ok.status_code == 200


def test_a_request_over_the_whole_budget_is_refused_400(make_service: MakeService) -> None:
    service = make_service(detect_memory_mib=64)  # 2,880 points x 4: about 47 MiB, fits
    fits = service.as_("responder", "post", "/v1/detect", json=four_anomalies(investigate=False))
    assert fits.status_code == 200, fits.text
    sent = four_anomalies(investigate=False)
    sent["metrics"] = {f"m{i}": sent["metrics"]["a_ms"] for i in range(20)}  # about 69 MiB
    answer = service.as_("responder", "post", "/v1/detect", json=sent)
    assert answer.status_code == 400, answer.text
    assert "SEENBEFORE_DETECT_MEMORY_MIB" in answer.json()["detail"]


def test_the_budget_counts_memory_and_slots_and_gives_them_back() -> None:
    budget = WorkBudget(concurrency=3, memory_bytes=100 * MIB)
    with budget.reserve(60 * MIB, what="a"):
        with pytest.raises(BusyError, match="about 50 MiB"), budget.reserve(50 * MIB, what="b"):
            pass
        with budget.reserve(40 * MIB, what="c"):
            assert (budget.running, budget.reserved) == (2, 100 * MIB)
    assert (budget.running, budget.reserved) == (0, 0)
    with pytest.raises(InputError, match="over the server's budget of 100 MiB"):
        budget.reserve(101 * MIB, what="d").__enter__()
    # the estimate: 16 MiB + 9 KiB a point + 512 B a cell (hand-worked)
    assert detect_cost(20_000, 3) == 16 * MIB + 20_000 * 9 * 1024 + 60_000 * 512
