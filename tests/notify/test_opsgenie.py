"""Opsgenie / JSM Operations Alert API: documented create/close bodies, alias = our dedup key,
GenieKey auth, against a real receiver on 127.0.0.1; retried and kept like PagerDuty."""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

import httpx
import pytest

from seenbefore.errors import ConfigError
from seenbefore.notify import Notification, Outbox, RetryPolicy, Router, build_router
from seenbefore.notify.opsgenie import (
    OpsgenieNotifier,
    create_alert,
    opsgenie_request,
    responder,
)
from seenbefore.types import MetricDeviation
from tests.notify.conftest import Receiver, Sleeps, make_anomaly

KEY = "eb243592-SECRET-4ba2-a551-1afdf565c889"
SIGNATURE = "latency_p99_ms up 7.1x (z=7.5), db_connections up 2.5x"
FINGERPRINT = "checkout|db_connections:up,latency_p99_ms:up"
ALIAS = "seenbefore-" + hashlib.sha256(FINGERPRINT.encode()).hexdigest()[:32]
ACCEPTED = json.dumps(
    {"result": "Request will be processed", "took": 0.107, "requestId": "9ae63dd7-ed00-4c81"}
)


def test_create_alert_has_the_documented_fields() -> None:
    body = create_alert(
        Notification(make_anomaly(), SIGNATURE), ({"type": "team", "name": "payments"},), ("prod",)
    )
    assert body == {
        "message": f"[SEV1] checkout (aws/us-east-1): {SIGNATURE}",
        "alias": ALIAS,
        "description": (
            f"{SIGNATURE}\n"
            "\n"
            "Window: 2024-03-14 10:00 → 10:20 UTC (20 min)\n"
            "Score: 0.93\n"
            "Rules: latency_slo, pool_saturation\n"
            "Deviations:\n"
            "- latency_p99_ms up: 850 ms (baseline 120, z=7.5)\n"
            "- db_connections up: 100 (baseline 40, z=5.0)\n"
            "Normal: cpu_utilization\n"
            "Anomaly A-1"
        ),
        "responders": [{"type": "team", "name": "payments"}],
        "tags": [
            "seenbefore",
            "SEV1",
            "checkout",
            "aws",
            "us-east-1",
            "latency_slo",
            "pool_saturation",
            "prod",
        ],
        "details": {
            "anomaly_id": "A-1",
            "fingerprint": FINGERPRINT,
            "service": "checkout",
            "cloud": "aws",
            "region": "us-east-1",
            "severity": "SEV1",
            "score": "0.934",
            "window_start": "2024-03-14T10:00:00+00:00",
            "window_end": "2024-03-14T10:20:00+00:00",
            "class": "latency_p99_ms up",
            "rules": "latency_slo, pool_saturation",
            "signature": SIGNATURE,
        },
        "entity": "checkout",
        "source": "seenbefore",
        "priority": "P1",
    }
    assert all(isinstance(v, str) for v in body["details"].values())  # a map of strings


@pytest.mark.parametrize(
    ("severity", "priority"),
    [("SEV1", "P1"), ("SEV2", "P2"), ("SEV3", "P3"), ("SEV4", "P4"), (None, "P3")],
)
def test_priority_from_severity(severity: str | None, priority: str) -> None:
    body = create_alert(Notification(make_anomaly(severity=severity), SIGNATURE))
    assert body["priority"] == priority and "responders" not in body


def test_limits_message_130_description_15000_details_8000() -> None:
    anomaly = make_anomaly(
        deviations=(MetricDeviation("m", "up", float("inf"), 1.0, float("nan")),),
        score=float("nan"),
    )
    body = create_alert(Notification(anomaly, "x" * 20000))
    assert len(body["message"]) == 130 and body["message"].endswith("…")
    assert len(body["description"]) == 15000
    assert sum(len(k) + len(v) for k, v in body["details"].items()) == 8000
    assert body["details"]["score"] == ""  # NaN has no string a person can use
    json.dumps(body, allow_nan=False)


def test_close_and_acknowledge_by_alias_with_a_note() -> None:
    anomaly = make_anomaly()
    assert opsgenie_request(Notification(anomaly, SIGNATURE, action="resolve")) == (
        f"/v2/alerts/{ALIAS}/close?identifierType=alias",
        {"source": "seenbefore", "note": f"Resolved by seenbefore: {SIGNATURE}"},
    )
    path, body = opsgenie_request(Notification(anomaly, SIGNATURE, action="acknowledge"))
    assert path == f"/v2/alerts/{ALIAS}/acknowledge?identifierType=alias"
    assert body == {"source": "seenbefore", "note": f"Acknowledged by seenbefore: {SIGNATURE}"}


def test_a_draft_is_a_note_on_the_open_alert() -> None:
    draft = {
        "hypothesis": "Connections held by slow calls.",
        "cited_incidents": ["INC-2021-006"],
        "confidence": 0.72,
        "confidence_label": "medium",
        "verdict": "precedent found",
        "drafted_by": "drafted without a language model",
    }
    path, body = opsgenie_request(Notification(make_anomaly(), SIGNATURE, draft=draft))
    assert path == f"/v2/alerts/{ALIAS}/notes?identifierType=alias"
    assert body == {
        "source": "seenbefore",
        "note": "Precedent found: INC-2021-006\n"
        "p_precedent 0.72 (precedent found)\n"
        "Hypothesis: Connections held by slow calls.\n"
        "drafted without a language model · advisory: a person decides",
    }


def test_responders() -> None:
    assert responder("team:payments") == {"type": "team", "name": "payments"}
    assert responder("user:ana@example.com") == {"type": "user", "username": "ana@example.com"}
    uuid = "4513b7ea-3b91-438f-b7e4-e3e54af9147c"
    assert responder(f"escalation:{uuid}") == {"type": "escalation", "id": uuid}
    with pytest.raises(ConfigError, match=r"has 'payments'; expected <type>:<name>"):
        responder("payments")


def test_send_create_then_close_with_the_genie_key(
    receiver: Receiver, client: httpx.Client
) -> None:
    receiver.default = (202, ACCEPTED, {"Content-Type": "application/json"})
    notifier = OpsgenieNotifier(KEY, url=receiver.url("/"), client=client)
    created = notifier.send(Notification(make_anomaly(), SIGNATURE))
    closed = notifier.send(Notification(make_anomaly(), SIGNATURE, action="resolve"))
    assert (created.ok, created.status, closed.ok) == (True, 202, True)
    assert created.data["result"] == "Request will be processed"
    paths = [r.path for r in receiver.requests]
    assert paths == ["/v2/alerts", f"/v2/alerts/{ALIAS}/close?identifierType=alias"]
    assert {r.headers["authorization"] for r in receiver.requests} == {f"GenieKey {KEY}"}
    assert receiver.requests[0].json()["alias"] == ALIAS
    assert receiver.requests[1].json() == {
        "source": "seenbefore",
        "note": f"Resolved by seenbefore: {SIGNATURE}",
    }


def test_429_and_5xx_are_retried_through_the_router_and_the_outbox(
    receiver: Receiver, client: httpx.Client, tmp_path: Path, sleeps: Sleeps
) -> None:
    outbox = Outbox(tmp_path / "outbox.sqlite")
    router = Router(
        {"opsgenie": OpsgenieNotifier(KEY, url=receiver.url(), client=client)},
        outbox=outbox,
        routes={"SEV1": ["opsgenie"]},
        retry=RetryPolicy(attempts=2, base_delay=0.5, jitter=0.0),
        sleep=sleeps,
    )
    receiver.answer((429, '{"message":"Rate limit"}'), (500, ""), (503, ""))
    first = router.notify(make_anomaly(), SIGNATURE)["opsgenie"]
    assert (first.ok, first.retryable, first.attempts, first.status) == (False, True, 2, 500)
    assert sleeps == [0.5]
    # the resolve queues behind the undelivered trigger, so it cannot close it first
    queued = router.notify(make_anomaly(), SIGNATURE, action="resolve")["opsgenie"]
    assert (queued.ok, queued.attempts) == (False, 0)
    assert len(receiver.requests) == 2
    assert router.retry_pending().pending == 1  # 503: still down, the resolve waits
    receiver.default = (202, ACCEPTED, {})
    assert router.retry_pending().delivered == 2
    assert [r.path.split("?")[0] for r in receiver.requests[3:]] == [
        "/v2/alerts",
        f"/v2/alerts/{ALIAS}/close",
    ]


def test_400_is_not_retried(
    receiver: Receiver, client: httpx.Client, tmp_path: Path, sleeps: Sleeps
) -> None:
    outbox = Outbox(tmp_path / "outbox.sqlite")
    router = Router(
        {"opsgenie": OpsgenieNotifier(KEY, url=receiver.url(), client=client)},
        outbox=outbox,
        routes={"SEV1": ["opsgenie"]},
        sleep=sleeps,
    )
    receiver.answer((422, '{"message":"Request body is not processable"}'))
    result = router.notify(make_anomaly(), SIGNATURE)["opsgenie"]
    assert (result.ok, result.status, result.retryable, result.attempts) == (False, 422, False, 1)
    assert sleeps == [] and outbox.entries()[0].state == "dead"


def test_the_key_stays_out_of_logs_reprs_and_the_outbox(
    receiver: Receiver,
    client: httpx.Client,
    tmp_path: Path,
    sleeps: Sleeps,
    caplog: pytest.LogCaptureFixture,
) -> None:
    config = {
        "opsgenie": {"api_key": KEY, "url": receiver.url(), "responders": ["team:ops"]},
        "routes": {"SEV1": ["opsgenie"]},
    }
    receiver.default = (500, f'{{"message": "bad key GenieKey {KEY}"}}', {})
    outbox_path = tmp_path / "outbox.sqlite"
    with (
        caplog.at_level(logging.DEBUG),
        build_router(config, outbox_path=outbox_path, client=client, sleep=sleeps) as router,
    ):
        result = router.notify(make_anomaly(), SIGNATURE)["opsgenie"]
        shown = repr(router.notifiers["opsgenie"])
    assert "bad key GenieKey [redacted]" in result.error
    stored = outbox_path.read_bytes().decode(errors="replace")
    for text in (caplog.text, shown, result.error, result.body, stored):
        assert KEY not in text


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({}, r"opsgenie.api_key is missing or not a string \(a secret"),
        ({"api_key": KEY, "region": "eu"}, r"opsgenie has unknown keys \['region'\]"),
        ({"api_key": KEY, "url": "api.opsgenie.com"}, "expected an http"),
        ({"api_key": KEY, "tags": "prod"}, "expected a list of strings"),
    ],
)
def test_config_errors(table: dict[str, object], message: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        build_router({"opsgenie": table}, outbox_path=tmp_path / "outbox.sqlite")
    assert KEY not in str(caught.value)
