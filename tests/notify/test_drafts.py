"""The draft follows its anomaly to Slack and PagerDuty (real receivers on 127.0.0.1)."""

from __future__ import annotations

from pathlib import Path

import httpx

from seenbefore.notify import (
    Notification,
    Outbox,
    PagerDutyNotifier,
    Router,
    SlackNotifier,
    dedup_key,
)
from seenbefore.notify.slack import slack_payload
from tests.notify.conftest import Receiver, make_anomaly

DRAFT = {
    "summary": "Possible precedent: INC-2021-006.",
    "hypothesis": "Connections held by slow calls.",
    "cited_incidents": ["INC-2021-006", "INC-2023-019"],
    "confidence": 0.72,
    "confidence_label": "medium",
    "novel": False,
    "mitigations": ["restart pods"],
    "drafted_by": "drafted without a language model",
    "retrieval_trace": {"big": "not sent"},
}


def test_slack_draft_is_a_threaded_block_kit_reply() -> None:
    anomaly = make_anomaly()
    payload = slack_payload(Notification(anomaly, "sig", thread_ts="1700.01", draft=DRAFT))
    assert payload["thread_ts"] == "1700.01"
    blocks = payload["blocks"]
    assert [b["type"] for b in blocks] == ["header", "section", "section", "context"]
    assert "*Top precedent*\nINC-2021-006" in blocks[1]["fields"][0]["text"]
    # a draft stored before the three states (no verdict field) reads "possible precedent — check"
    assert "0.72 (possible precedent — check)" in blocks[1]["fields"][1]["text"]
    found = slack_payload(
        Notification(anomaly, "sig", draft={**DRAFT, "verdict": "precedent found"})
    )
    assert "0.72 (precedent found)" in found["blocks"][1]["fields"][1]["text"]
    assert blocks[2]["text"]["text"] == "Connections held by slow calls."
    novel = slack_payload(Notification(anomaly, "sig", draft={**DRAFT, "novel": True}))
    assert novel["blocks"][0]["text"]["text"].startswith("No precedent")
    assert "no postmortem in the knowledge base matches" in novel["blocks"][1]["fields"][0]["text"]
    assert "thread_ts" not in novel


def test_router_sends_the_draft_after_the_anomaly(
    receiver: Receiver, client: httpx.Client, tmp_path: Path
) -> None:
    receiver.default = (202, '{"status": "success"}', {"Content-Type": "application/json"})
    notifiers = {
        "slack": SlackNotifier(receiver.url("/services/T9/B9/draftsecret"), client=client),
        "pagerduty": PagerDutyNotifier("key", url=receiver.url("/v2/enqueue"), client=client),
    }
    anomaly = make_anomaly(severity="SEV1")
    with Router(notifiers, outbox=Outbox(tmp_path / "outbox.sqlite")) as router:
        router.notify(anomaly, "sig")
        results = router.notify_draft(anomaly, "sig", DRAFT)
    assert all(r.ok for r in results.values())
    pd = [r.json() for r in receiver.requests if r.path == "/v2/enqueue"]
    assert [e["dedup_key"] for e in pd] == [dedup_key(anomaly)] * 2  # merged into one alert
    details = pd[1]["payload"]["custom_details"]["draft"]
    assert details["cited_incidents"] == ["INC-2021-006", "INC-2023-019"]
    assert "retrieval_trace" not in details
    slack = [r.json() for r in receiver.requests if r.path.startswith("/services/")]
    assert slack[1]["blocks"][2]["text"]["text"] == "Connections held by slow calls."


def test_draft_survives_the_outbox_round_trip() -> None:
    message = Notification(make_anomaly(), "sig", draft=DRAFT)
    assert Notification.from_json(message.to_json()).draft == DRAFT
