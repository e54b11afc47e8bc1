"""Channel-safe notifications (issue 33): a Prometheus ``service`` label like ``[Open the
runbook](http://…/phish)`` landed verbatim in the Teams heading and the "Service" fact, both
rendered as Markdown (a disguised link in an incident channel), and U+202E (right-to-left
override) reached Slack and Teams. Now every channel gets outside text plain (no bidi or control
characters, links inert) and escaped for its own markup."""

from __future__ import annotations

import json
from typing import Any

import pytest

from seenbefore.notify import Notification
from seenbefore.notify.opsgenie import create_alert, draft_note
from seenbefore.notify.pagerduty import pagerduty_event
from seenbefore.notify.safe import label, plain
from seenbefore.notify.slack import slack_payload
from seenbefore.notify.teams import teams_payload
from seenbefore.types import MetricDeviation
from tests.notify.conftest import make_anomaly

PHISH = "[Open the runbook](http://evil.example/phish)"
RLO = "checkout\u202egnp.exe"  # shows as "checkoutexe.png" where the override is honoured
CONTROLS = "\u200e\u200f\u061c\u2066\u2069\u200b\x1b[31m\x07"
HOSTILE = make_anomaly(
    service=PHISH,
    cloud=RLO,
    region=f"eu{CONTROLS}-west-1",
    id="A-1\u202e",
    rules=(f"rule <!channel> {PHISH}",),
    deviations=(MetricDeviation(f"lat\u202eency_ms {PHISH}", "up", 900.0, 100.0, 8.0, "ms"),),
)
DRAFT = {
    "hypothesis": f"Resembles INC-1. {PHISH} \u202eevil",
    "cited_incidents": ["INC-1"],
    "confidence": 0.7,
    "verdict": "precedent found",
    "drafted_by": "offline",
    "withheld": [{"note": "Withheld from X (root cause): see https://evil.example/x"}],
}
MESSAGES = {
    "anomaly": Notification(HOSTILE, f"signature {PHISH}\u202e"),
    "draft": Notification(HOSTILE, "sig", draft=DRAFT),
}
PAYLOADS = {
    "slack": slack_payload,
    "teams": teams_payload,
    "pagerduty": lambda m: pagerduty_event(m, "R" * 32),
    "opsgenie": lambda m: create_alert(m) if m.draft is None else {"note": draft_note(m)},
}


def strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in strings(v)]
    return []


@pytest.mark.parametrize("kind", list(MESSAGES))
@pytest.mark.parametrize("channel", list(PAYLOADS))
def test_no_channel_carries_a_live_link_or_a_bidi_or_control_character(
    channel: str, kind: str
) -> None:
    payload = PAYLOADS[channel](MESSAGES[kind])
    for text in strings(payload):
        assert not any(ch in text for ch in "\u202e\u200e\u200f\u061c\u2066\u2069\u200b\x1b\x07")
        assert "](http" not in text and "http://evil" not in text and "https://evil" not in text
    assert "evil[.]example" in json.dumps(payload, ensure_ascii=False)  # shown, as data


def test_teams_puts_every_outside_string_in_a_text_run_never_markdown() -> None:
    for message in MESSAGES.values():
        body = teams_payload(message)["attachments"][0]["content"]["body"]
        assert {b["type"] for b in body} == {"RichTextBlock"}
    body = teams_payload(MESSAGES["anomaly"])["attachments"][0]["content"]["body"]
    assert body[0]["inlines"][0]["text"] == (
        "SEV1 anomaly on Open the runbook (hxxp://evil[.]example/phish)"
    )
    assert [r["text"] for r in body[1]["inlines"]] == [
        "Service: ",
        "Open the runbook (hxxp://evil[.]example/phish)",
    ]
    assert body[2]["inlines"][1]["text"] == "checkoutgnp.exe / eu[31m-west-1"


def test_slack_escapes_mrkdwn_so_no_mention_or_link_is_made() -> None:
    payload = slack_payload(MESSAGES["anomaly"])
    context = payload["blocks"][3]["elements"][0]["text"]
    assert context.startswith("Rules: rule &lt;!channel&gt; Open the runbook (hxxp://evil[.]")
    fields = [f["text"] for f in payload["blocks"][1]["fields"]]
    assert fields[0] == "*Service*\nOpen the runbook (hxxp://evil[.]example/phish)"
    assert payload["blocks"][0]["text"]["type"] == "plain_text"


def test_pagerduty_and_opsgenie_take_plain_text() -> None:
    event = pagerduty_event(MESSAGES["anomaly"], "R" * 32)["payload"]
    assert event["component"] == "Open the runbook (hxxp://evil[.]example/phish)"
    assert event["custom_details"]["deviations"][0]["metric"].startswith("latency_ms Open")
    alert = create_alert(MESSAGES["anomaly"])
    assert alert["entity"] == "Open the runbook (hxxp://evil[.]example/phish)"[:512]


def test_plain_and_label_worked_by_hand() -> None:
    assert plain("a\u202eb\r\nc\u2028d\te\x00") == "ab\nc\nd\te"
    assert label("  two\nlines\u200b here ") == "two lines here"
    assert plain("see https://a.example/x") == "see hxxps://a[.]example/x"
