"""``POST /v1/detect``: the detector `seenbefore detect` runs, on a series sent to the service:
it finds a step change where it was put and names the metric, stays quiet on the same series
without one, investigates what it finds once however often the series is sent, and refuses
malformed series saying what was wrong."""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np

from tests.service.conftest import Service

START = dt.datetime(2025, 6, 1, tzinfo=dt.UTC)
POINTS = 2 * 1440  # two days of one-minute points
CHANGE = POINTS - 180  # the pool fills three hours before the end


def series(*, change: bool, seed: int = 7) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    minute = np.arange(POINTS)
    daily = 1 + 0.3 * np.sin(2 * np.pi * minute / 1440)
    connections = 40 * daily + rng.normal(0, 2, POINTS)
    latency = 120 * daily + rng.normal(0, 6, POINTS)
    if change:
        connections[CHANGE:] = 100 + rng.normal(0, 1, POINTS - CHANGE)
        latency[CHANGE:] = 900 + rng.normal(0, 20, POINTS - CHANGE)
    return {
        "service": "payments",
        "timestamps": [(START + dt.timedelta(minutes=int(m))).isoformat() for m in minute],
        "metrics": {
            "db_connections_in_use": [round(float(v), 3) for v in connections],
            "p99_latency": [round(float(v), 3) for v in latency],
        },
    }


def test_the_ensemble_finds_the_change_and_names_the_metric(service: Service) -> None:
    answer = service.as_("responder", "post", "/v1/detect", json=series(change=True))
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["points"] == POINTS
    assert body["detector"]["name"] == "ensemble"
    assert body["detector"]["learning_period"]["points"] > 0
    # one anomaly: it opens at the change, names both metrics and carries the pool rule; a
    # noise fire 90 minutes before does not hide it (the events' stream has no rest after a
    # fire), and it lasts while the metrics stay up, so the later fires (new extremes of the
    # shifted latency) are the same incident, not new anomalies
    [first] = body["anomalies"]
    start = dt.datetime.fromisoformat(first["start"])
    changed = START + dt.timedelta(minutes=CHANGE)
    assert changed <= start <= changed + dt.timedelta(minutes=5)
    assert {d["metric"] for d in first["deviations"]} == {"db_connections_in_use", "p99_latency"}
    assert first["severity"] == "SEV1" and "db-pool-saturated" in first["rules"]
    assert first["end"].startswith("2025-06-02T23:59")  # still up at the last point
    assert first["review_id"] is None  # not asked to investigate
    # the change comes after a day of the series: it was judged against a day earlier too
    checked_from = dt.datetime.fromisoformat(body["detector"]["day_check_from"])
    assert checked_from == START + dt.timedelta(days=1)
    assert first["compared_with_a_day_earlier"] is True


def test_the_same_series_without_a_change_raises_nothing(service: Service) -> None:
    body = service.as_("responder", "post", "/v1/detect", json=series(change=False)).json()
    assert body["anomalies"] == [], body["anomalies"]


def test_investigating_what_it_finds_starts_one_review_per_anomaly(service: Service) -> None:
    sent = {**series(change=True), "investigate": True}
    first = service.as_("responder", "post", "/v1/detect", json=sent).json()
    review_id = first["anomalies"][0]["review_id"]
    assert review_id
    review = service.as_("responder", "get", f"/v1/investigations/{review_id}").json()
    assert review["evidence"]["candidates"][0]["doc_id"] == "POOL-1"
    again = service.as_("responder", "post", "/v1/detect", json=sent).json()
    assert again["anomalies"][0]["review_id"] == review_id  # idempotent per anomaly and start


def test_malformed_series_are_refused_with_the_reason(service: Service) -> None:
    sent = series(change=False)
    sent["metrics"]["p99_latency"] = sent["metrics"]["p99_latency"][:-5]
    short = service.as_("responder", "post", "/v1/detect", json=sent)
    assert short.status_code == 400
    assert "'p99_latency' has 2875 values for 2880 timestamps" in short.json()["detail"]
    few = service.as_(
        "responder",
        "post",
        "/v1/detect",
        json={"service": "x", "timestamps": [START.isoformat()], "metrics": {"m": [1.0]}},
    )
    assert few.status_code == 400 and "needs at least" in few.json()["detail"]
    assert service.as_("viewer", "post", "/v1/detect", json=sent).status_code == 403


def test_values_past_the_detectors_limit_answer_400_not_500(service: Service) -> None:
    """±1e308 alternating once answered 500 and 1e300 x (i mod 7) reset the connection
    (issue 33): both are refused as invalid input, saying the limit."""
    n = 300
    for values in (
        [1e308 if i % 2 else -1e308 for i in range(n)],
        [1e300 * (i % 7) for i in range(n)],
    ):
        body = {
            "service": "payments",
            "timestamps": [(START + dt.timedelta(minutes=i)).isoformat() for i in range(n)],
            "metrics": {"latency": values},
        }
        answer = service.as_("responder", "post", "/v1/detect", json=body)
        assert answer.status_code == 400, answer.text
        assert answer.headers["content-type"].startswith("application/problem+json")
        assert "±1e+100" in answer.json()["detail"] and "rescale" in answer.json()["detail"]
