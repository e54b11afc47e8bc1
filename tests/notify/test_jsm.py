"""Jira Service Management Operations: the integration events API (create / acknowledge / close /
add note, GenieKey auth, alias = our dedup key) against a real receiver on 127.0.0.1 that answers
as JSM documents (202, "Request will be processed"); retried and kept like the others; Opsgenie's
table still works, with a deprecation warning."""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

import httpx
import pytest

from seenbefore import plugins
from seenbefore.errors import ConfigError
from seenbefore.notify import Notification, Outbox, RetryPolicy, Router, build_router
from seenbefore.notify.jsm import API_URL, JsmNotifier, jsm_request, jsm_responder
from tests.notify.conftest import Receiver, Sleeps, make_anomaly

KEY = "5f0c2a1e-SECRET-4d1b-9a5e-0b3c7d9e1f20"
SIGNATURE = "latency_p99_ms up 7.1x (z=7.5), db_connections up 2.5x"
FINGERPRINT = "checkout|db_connections:up,latency_p99_ms:up"
ALIAS = "seenbefore-" + hashlib.sha256(FINGERPRINT.encode()).hexdigest()[:32]
ACCEPTED = json.dumps(
    {"result": "Request will be processed", "took": 0.012, "requestId": "43a29c5c-3dbf-4b2d"}
)
TEAM = "4513b7ea-3b91-438f-b7e4-e3e54af9147c"
ACCOUNT = "712020:5f0c2a1e-8d3b-4d1b-9a5e-0b3c7d9e1f20"


def test_the_default_base_is_jsm_integration_events() -> None:
    assert API_URL == "https://api.atlassian.com/jsm/ops/integration"
    notifier = JsmNotifier(KEY)
    assert notifier.url + "/v2/alerts" == "https://api.atlassian.com/jsm/ops/integration/v2/alerts"
    assert KEY not in repr(notifier)
    notifier.close()


def test_create_alert_body_and_responders_by_id() -> None:
    responders = (jsm_responder(f"team:{TEAM}"), jsm_responder(f"user:{ACCOUNT}"))
    assert responders == ({"type": "team", "id": TEAM}, {"type": "user", "id": ACCOUNT})
    assert jsm_responder("schedule:primary-oncall") == {
        "type": "schedule",
        "name": "primary-oncall",
    }
    path, body = jsm_request(Notification(make_anomaly(), SIGNATURE), responders, ("prod",))
    assert path == "/v2/alerts"
    assert body["message"] == f"[SEV1] checkout (aws/us-east-1): {SIGNATURE}"
    assert (body["alias"], body["priority"], body["source"], body["entity"]) == (
        ALIAS, "P1", "seenbefore", "checkout",
    )  # fmt: skip
    assert body["responders"] == [{"type": "team", "id": TEAM}, {"type": "user", "id": ACCOUNT}]
    assert body["tags"][-1] == "prod" and all(isinstance(v, str) for v in body["details"].values())
    with pytest.raises(ConfigError, match=r"notify.jsm.responders has 'payments'; expected"):
        jsm_responder("payments")


def test_send_create_ack_note_close_to_a_local_receiver(
    receiver: Receiver, client: httpx.Client
) -> None:
    receiver.default = (202, ACCEPTED, {"Content-Type": "application/json"})
    notifier = JsmNotifier(KEY, url=receiver.url("/jsm/ops/integration"), client=client)
    anomaly = make_anomaly()
    draft = {
        "hypothesis": "Connections held by slow calls.",
        "cited_incidents": ["INC-2021-006"],
        "confidence": 0.72,
        "verdict": "precedent found",
        "drafted_by": "drafted without a language model",
    }
    results = [
        notifier.send(Notification(anomaly, SIGNATURE)),
        notifier.send(Notification(anomaly, SIGNATURE, action="acknowledge")),
        notifier.send(Notification(anomaly, SIGNATURE, draft=draft)),
        notifier.send(Notification(anomaly, SIGNATURE, action="resolve")),
    ]
    assert [(r.ok, r.status) for r in results] == [(True, 202)] * 4
    assert results[0].data["result"] == "Request will be processed"
    base = "/jsm/ops/integration/v2/alerts"
    assert [r.path for r in receiver.requests] == [
        base,
        f"{base}/{ALIAS}/acknowledge?identifierType=alias",
        f"{base}/{ALIAS}/notes?identifierType=alias",
        f"{base}/{ALIAS}/close?identifierType=alias",
    ]
    assert {r.headers["authorization"] for r in receiver.requests} == {f"GenieKey {KEY}"}
    assert {r.headers["content-type"] for r in receiver.requests} == {"application/json"}
    assert receiver.requests[2].json()["note"].startswith("Precedent found: INC-2021-006\n")
    assert receiver.requests[3].json() == {
        "source": "seenbefore",
        "note": f"Resolved by seenbefore: {SIGNATURE}",
    }


def test_429_retried_then_kept_422_dead(
    receiver: Receiver, client: httpx.Client, tmp_path: Path, sleeps: Sleeps
) -> None:
    outbox = Outbox(tmp_path / "outbox.sqlite")
    router = Router(
        {"jsm": JsmNotifier(KEY, url=receiver.url(), client=client)},
        outbox=outbox,
        routes={"SEV1": ["jsm"], "SEV2": ["jsm"]},
        retry=RetryPolicy(attempts=2, base_delay=0.5, jitter=0.0),
        sleep=sleeps,
    )
    receiver.answer((429, '{"message":"Rate limit"}'), (503, ""))
    first = router.notify(make_anomaly(), SIGNATURE)["jsm"]
    assert (first.ok, first.retryable, first.attempts, first.status) == (False, True, 2, 503)
    receiver.answer((422, '{"message":"Request body is not processable"}'))
    other = router.notify(make_anomaly(service="ledger", severity="SEV2"), SIGNATURE)["jsm"]
    assert (other.ok, other.status, other.retryable) == (False, 422, False)
    assert sorted(e.state for e in outbox.entries()) == ["dead", "pending"]
    receiver.default = (202, ACCEPTED, {})
    assert router.retry_pending().delivered == 1


def test_built_from_its_table_key_kept_out_and_opsgenie_warned(
    receiver: Receiver,
    client: httpx.Client,
    tmp_path: Path,
    sleeps: Sleeps,
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert "jsm" in plugins.names(plugins.NOTIFIERS)
    config = {
        "jsm": {"api_key": KEY, "url": receiver.url(), "responders": [f"team:{TEAM}"]},
        "opsgenie": {"api_key": "og-" + KEY, "url": receiver.url()},
        "routes": {"SEV1": ["jsm"]},
    }
    receiver.default = (500, f'{{"message": "bad key GenieKey {KEY}"}}', {})
    outbox_path = tmp_path / "outbox.sqlite"
    with (
        caplog.at_level(logging.DEBUG),
        build_router(config, outbox_path=outbox_path, client=client, sleep=sleeps) as router,
    ):
        result = router.notify(make_anomaly(), SIGNATURE)["jsm"]
        shown = repr(router.notifiers["jsm"])
    assert "bad key GenieKey [redacted]" in result.error
    for text in (caplog.text, shown, result.error, outbox_path.read_bytes().decode("latin-1")):
        assert KEY not in text
    assert "notify.opsgenie is deprecated: Opsgenie's end of support is 2027-04-05" in caplog.text
    assert "[notify.jsm]" in caplog.text


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({}, r"jsm.api_key is missing or not a string \(a secret"),
        ({"api_key": KEY, "cloud_id": "x"}, r"jsm has unknown keys \['cloud_id'\]"),
        ({"api_key": KEY, "url": "api.atlassian.com"}, "notify.jsm.url is 'api.atlassian.com'"),
        ({"api_key": KEY, "responders": ["payments"]}, "expected <type>:<id>"),
    ],
)
def test_bad_tables_say_what_is_wrong(table: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        build_router({"jsm": table})
