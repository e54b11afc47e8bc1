from __future__ import annotations

import datetime as dt
import hashlib
import json

import httpx
import pytest

from seenbefore.errors import ConfigError
from seenbefore.notify import (
    PAGERDUTY_SEVERITY,
    Notification,
    PagerDutyNotifier,
    dedup_key,
    pagerduty_event,
)
from seenbefore.types import MetricDeviation
from tests.notify.conftest import Receiver, make_anomaly

KEY = "R0UTINGKEY0000000000000000000001"  # 32 characters, like an integration key
SIGNATURE = "latency_p99_ms up 7.1x (z=7.5), db_connections up 2.5x"
REQUIRED_PAYLOAD = {"summary", "source", "severity"}
SEVERITY_ENUM = {"critical", "error", "warning", "info"}


def test_trigger_event_has_the_documented_fields() -> None:
    event = pagerduty_event(Notification(make_anomaly(), SIGNATURE), KEY)
    assert set(event) == {"routing_key", "event_action", "dedup_key", "payload", "client"}
    assert event["routing_key"] == KEY and event["event_action"] == "trigger"
    payload = event["payload"]
    assert set(payload) >= REQUIRED_PAYLOAD and payload["severity"] in SEVERITY_ENUM
    assert payload == {
        "summary": f"[SEV1] checkout (aws/us-east-1): {SIGNATURE}",
        "source": "aws/us-east-1/checkout",
        "severity": "critical",
        "timestamp": "2024-03-14T10:00:00+00:00",
        "component": "checkout",
        "group": "aws/us-east-1",
        "class": "latency_p99_ms up",  # the deviation with the largest |z|
        "custom_details": {
            "anomaly_id": "A-1",
            "fingerprint": "checkout|db_connections:up,latency_p99_ms:up",
            "severity": "SEV1",
            "score": 0.934,
            "window_start": "2024-03-14T10:00:00+00:00",
            "window_end": "2024-03-14T10:20:00+00:00",
            "signature": SIGNATURE,
            "deviations": [
                {
                    "metric": "latency_p99_ms",
                    "direction": "up",
                    "value": 850.0,
                    "baseline": 120.0,
                    "zscore": 7.5,
                    "unit": "ms",
                },
                {
                    "metric": "db_connections",
                    "direction": "up",
                    "value": 100.0,
                    "baseline": 40.0,
                    "zscore": 5.0,
                    "unit": "",
                },
            ],
            "normal": ["cpu_utilization"],
            "rules": ["latency_slo", "pool_saturation"],
        },
    }
    assert dt.datetime.fromisoformat(payload["timestamp"]).utcoffset() == dt.timedelta(0)


@pytest.mark.parametrize(
    ("severity", "expected"),
    [
        ("SEV1", "critical"),
        ("SEV2", "error"),
        ("SEV3", "warning"),
        ("SEV4", "info"),
        (None, "warning"),
    ],
)
def test_severity_mapping(severity: str | None, expected: str) -> None:
    event = pagerduty_event(Notification(make_anomaly(severity=severity), SIGNATURE), KEY)
    assert event["payload"]["severity"] == expected
    assert set(PAGERDUTY_SEVERITY.values()) == SEVERITY_ENUM


def test_dedup_key_is_stable_for_the_same_anomaly() -> None:
    first = make_anomaly()
    again = make_anomaly(id="A-2", score=0.5, start=dt.datetime(2024, 3, 15, tzinfo=dt.UTC))
    expected = "seenbefore-" + hashlib.sha256(first.fingerprint.encode()).hexdigest()[:32]
    assert dedup_key(first) == dedup_key(again) == expected
    assert len(expected) <= 255
    other = make_anomaly(deviations=(MetricDeviation("error_rate", "up", 0.2, 0.01, 9.0),))
    assert dedup_key(other) != expected


def test_acknowledge_and_resolve_reuse_the_trigger_key_and_carry_no_payload() -> None:
    anomaly = make_anomaly()
    events = [
        pagerduty_event(Notification(anomaly, SIGNATURE, action=action), KEY)
        for action in ("trigger", "acknowledge", "resolve")
    ]
    assert len({e["dedup_key"] for e in events}) == 1
    for event, action in zip(events[1:], ("acknowledge", "resolve"), strict=True):
        assert event == {
            "routing_key": KEY,
            "event_action": action,
            "dedup_key": dedup_key(anomaly),
        }


def test_summary_is_cut_to_1024_characters() -> None:
    event = pagerduty_event(Notification(make_anomaly(), "x" * 5000), KEY)
    summary = event["payload"]["summary"]
    assert len(summary) == 1024 and summary.endswith("…")


def test_non_finite_numbers_become_null_so_the_body_is_valid_json() -> None:
    anomaly = make_anomaly(
        score=float("nan"),
        deviations=(MetricDeviation("queue_depth", "up", 50.0, 0.0, float("inf")),),
    )
    event = pagerduty_event(Notification(anomaly, SIGNATURE), KEY)
    json.dumps(event, allow_nan=False)  # raises on NaN / Infinity
    assert event["payload"]["custom_details"]["score"] is None
    assert event["payload"]["custom_details"]["deviations"][0]["zscore"] is None
    assert event["payload"]["class"] == "queue_depth up"


def test_send_trigger_then_resolve_to_the_configured_url(
    receiver: Receiver, client: httpx.Client
) -> None:
    anomaly = make_anomaly()
    key = dedup_key(anomaly)
    reply = json.dumps({"status": "success", "message": "Event processed", "dedup_key": key})
    receiver.default = (202, reply, {"Content-Type": "application/json"})
    notifier = PagerDutyNotifier(KEY, url=receiver.url("/v2/enqueue"), client=client)
    trigger = notifier.send(Notification(anomaly, SIGNATURE))
    resolve = notifier.send(Notification(anomaly, SIGNATURE, action="resolve"))
    assert trigger.ok and trigger.status == 202 and trigger.data["dedup_key"] == key
    assert resolve.ok
    sent = [r.json() for r in receiver.requests]
    assert [r.path for r in receiver.requests] == ["/v2/enqueue", "/v2/enqueue"]
    assert [s["event_action"] for s in sent] == ["trigger", "resolve"]
    assert sent[0]["dedup_key"] == sent[1]["dedup_key"] == key
    assert sent[0] == pagerduty_event(Notification(anomaly, SIGNATURE), KEY)


def test_invalid_event_is_not_retryable(receiver: Receiver, client: httpx.Client) -> None:
    receiver.answer((400, '{"status":"invalid event","message":"Event object is invalid"}'))
    notifier = PagerDutyNotifier(KEY, url=receiver.url("/v2/enqueue"), client=client)
    result = notifier.send(Notification(make_anomaly(), SIGNATURE))
    assert (result.ok, result.status, result.retryable) == (False, 400, False)
    assert result.data == {"status": "invalid event", "message": "Event object is invalid"}


@pytest.mark.parametrize("status", [429, 500, 503])
def test_rate_limit_and_server_errors_are_retryable(
    receiver: Receiver, client: httpx.Client, status: int
) -> None:
    receiver.answer((status, ""))
    notifier = PagerDutyNotifier(KEY, url=receiver.url("/v2/enqueue"), client=client)
    result = notifier.send(Notification(make_anomaly(), SIGNATURE))
    assert (result.ok, result.retryable) == (False, True)


def test_empty_routing_key_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="routing_key is empty"):
        PagerDutyNotifier("  ")


def test_repr_hides_the_routing_key(client: httpx.Client) -> None:
    assert KEY not in repr(PagerDutyNotifier(KEY, client=client))
