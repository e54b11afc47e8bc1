"""Teams Workflows webhook: the documented message-with-Adaptive-Card shape, against a real
receiver on 127.0.0.1, retried and kept like Slack."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx
import pytest

from seenbefore.errors import ConfigError
from seenbefore.notify import Notification, Outbox, RetryPolicy, Router, build_router
from seenbefore.notify.teams import TeamsNotifier, teams_payload
from tests.notify.conftest import Receiver, Sleeps, make_anomaly

SIGNATURE = "latency_p99_ms up 7.1x (z=7.5), db_connections up 2.5x"
SIG = "Zq3SECRETsignature0123456789abcdefXYZ"
# The shape of a Workflows trigger URL; its sig parameter is what makes it a credential.
TRIGGER = (
    "/workflows/8f1c2a0b9d3e4f5a/triggers/manual/paths/invoke"
    f"?api-version=2016-06-01&sp=%2Ftriggers%2Fmanual%2Frun&sv=1.0&sig={SIG}"
)
DRAFT = {
    "hypothesis": "Connections held by slow calls.",
    "cited_incidents": ["INC-2021-006"],
    "confidence": 0.72,
    "confidence_label": "medium",
    "novel": False,
    "verdict": "precedent found",
    "drafted_by": "drafted without a language model",
}


def test_trigger_is_one_adaptive_card_with_the_documented_envelope() -> None:
    payload = teams_payload(Notification(make_anomaly(), SIGNATURE))
    assert payload == {
        "type": "message",
        "attachments": [
            {
                "contentType": "application/vnd.microsoft.card.adaptive",
                "contentUrl": None,
                "content": {
                    "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
                    "type": "AdaptiveCard",
                    "version": "1.4",
                    "body": [
                        {
                            "type": "RichTextBlock",
                            "inlines": [
                                {
                                    "type": "TextRun",
                                    "text": "SEV1 anomaly on checkout",
                                    "size": "Medium",
                                    "weight": "Bolder",
                                }
                            ],
                        },
                        *[
                            {
                                "type": "RichTextBlock",
                                "inlines": [
                                    {"type": "TextRun", "text": f"{title}: ", "weight": "Bolder"},
                                    {"type": "TextRun", "text": value},
                                ],
                            }
                            for title, value in [
                                ("Service", "checkout"),
                                ("Cloud / region", "aws / us-east-1"),
                                ("Severity", "SEV1"),
                                ("Window", "2024-03-14 10:00 → 10:20 UTC (20 min)"),
                                ("Score", "0.93"),
                            ]
                        ],
                        {
                            "type": "RichTextBlock",
                            "inlines": [{"type": "TextRun", "text": SIGNATURE}],
                        },
                        {
                            "type": "RichTextBlock",
                            "inlines": [
                                {
                                    "type": "TextRun",
                                    "text": "Rules: latency_slo, pool_saturation · anomaly A-1",
                                    "isSubtle": True,
                                    "size": "Small",
                                }
                            ],
                        },
                    ],
                },
            }
        ],
    }


def test_review_url_adds_an_open_url_action_and_resolve_says_so() -> None:
    message = Notification(make_anomaly(severity=None), SIGNATURE, action="resolve")
    card = teams_payload(message, "https://seenbefore.example.test/review")["attachments"][0]
    assert card["content"]["actions"] == [
        {
            "type": "Action.OpenUrl",
            "title": "Open the review queue",
            "url": "https://seenbefore.example.test/review",
        }
    ]
    assert (
        card["content"]["body"][0]["inlines"][0]["text"] == "Resolved: unrated anomaly on checkout"
    )


def test_draft_follows_as_a_second_card() -> None:
    card = teams_payload(Notification(make_anomaly(), SIGNATURE, draft=DRAFT))
    body = card["attachments"][0]["content"]["body"]
    assert [b["type"] for b in body] == ["RichTextBlock"] * 5  # never Markdown (issue 33)
    assert body[0]["inlines"][0]["text"] == "Precedent found for the checkout anomaly"
    assert [[run["text"] for run in b["inlines"]] for b in body[1:3]] == [
        ["Top precedent: ", "INC-2021-006"],
        ["Verdict: ", "p_precedent 0.72 (precedent found)"],
    ]
    assert body[3]["inlines"] == [{"type": "TextRun", "text": "Connections held by slow calls."}]
    novel = teams_payload(
        Notification(
            make_anomaly(), SIGNATURE, draft=DRAFT | {"novel": True, "verdict": "no precedent"}
        )
    )
    first_fact = novel["attachments"][0]["content"]["body"][1]["inlines"][1]
    assert first_fact["text"] == "none: no postmortem in the knowledge base matches"


def test_long_signature_is_cut_to_3000_characters() -> None:
    payload = teams_payload(Notification(make_anomaly(), "x" * 5000))
    text = payload["attachments"][0]["content"]["body"][6]["inlines"][0]["text"]
    assert len(text) == 3000 and text.endswith("…")


def test_send_posts_the_card_to_the_trigger_url(receiver: Receiver, client: httpx.Client) -> None:
    receiver.default = (202, "", {})
    notifier = TeamsNotifier(receiver.url(TRIGGER), client=client)
    result = notifier.send(Notification(make_anomaly(), SIGNATURE))
    assert (result.ok, result.status) == (True, 202)
    [request] = receiver.requests
    assert request.path == TRIGGER
    assert request.headers["content-type"] == "application/json"
    assert request.json() == teams_payload(Notification(make_anomaly(), SIGNATURE))


def test_429_and_5xx_are_retried_through_the_router_then_kept(
    receiver: Receiver, client: httpx.Client, tmp_path: Path, sleeps: Sleeps
) -> None:
    outbox = Outbox(tmp_path / "outbox.sqlite")
    teams = TeamsNotifier(receiver.url(TRIGGER), client=client)
    router = Router(
        {"teams": teams},
        outbox=outbox,
        routes={"SEV2": ["teams"]},
        retry=RetryPolicy(attempts=3, base_delay=0.5, jitter=0.0),
        sleep=sleeps,
    )
    receiver.answer((429, "", {"Retry-After": "2"}), (502, "Bad Gateway"), (202, ""))
    result = router.notify(make_anomaly(severity="SEV2"), SIGNATURE)["teams"]
    assert (result.ok, result.attempts) == (True, 3)
    assert sleeps == [2.0, 1.0]  # Retry-After raised the first wait; then 0.5 * 2
    assert outbox.entries() == []

    receiver.default = (503, "", {})
    failed = router.notify(make_anomaly(severity="SEV2", service="other"), SIGNATURE)["teams"]
    assert (failed.ok, failed.retryable, failed.attempts) == (False, True, 3)
    [entry] = outbox.pending()
    assert (entry.channel, entry.last_status) == ("teams", 503)
    receiver.default = (202, "", {})
    assert router.retry_pending().delivered == 1


def test_400_is_not_retried_and_is_kept_dead(
    receiver: Receiver, client: httpx.Client, tmp_path: Path, sleeps: Sleeps
) -> None:
    outbox = Outbox(tmp_path / "outbox.sqlite")
    router = Router(
        {"teams": TeamsNotifier(receiver.url(TRIGGER), client=client)},
        outbox=outbox,
        routes={"SEV1": ["teams"]},
        retry=RetryPolicy(attempts=4),
        sleep=sleeps,
    )
    receiver.answer((400, '{"error":{"code":"TriggerInputSchemaMismatch"}}'))
    result = router.notify(make_anomaly(), SIGNATURE)["teams"]
    assert (result.ok, result.status, result.retryable, result.attempts) == (False, 400, False, 1)
    assert sleeps == [] and len(receiver.requests) == 1
    [entry] = outbox.entries()
    assert entry.state == "dead"


def test_the_trigger_url_never_reaches_logs_reprs_or_the_outbox(
    receiver: Receiver,
    client: httpx.Client,
    tmp_path: Path,
    sleeps: Sleeps,
    caplog: pytest.LogCaptureFixture,
) -> None:
    url = receiver.url(TRIGGER)
    outbox_path = tmp_path / "outbox.sqlite"
    config = {"teams": {"webhook_url": url}, "routes": {"SEV1": ["teams"]}}
    receiver.default = (500, f"could not run flow {url}", {})
    with (
        caplog.at_level(logging.DEBUG),
        build_router(config, outbox_path=outbox_path, client=client, sleep=sleeps) as router,
    ):
        result = router.notify(make_anomaly(), SIGNATURE)["teams"]
        shown = repr(router.notifiers["teams"])
    assert "HTTP Request: POST" in caplog.text  # httpx logged the request, URL masked
    for text in (
        caplog.text,
        shown,
        result.error,
        result.body,
        outbox_path.read_bytes().decode(errors="replace"),
    ):
        assert SIG not in text and url not in text


def test_config_errors_name_the_key_and_hide_the_secret(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"notify.teams has unknown keys \['url'\]"):
        build_router(
            {"teams": {"webhook_url": "https://x.test/a", "url": 1}}, outbox_path=tmp_path / "o"
        )
    with pytest.raises(
        ConfigError, match=r"teams.webhook_url is missing or not a string \(a secret"
    ):
        build_router({"teams": {}}, outbox_path=tmp_path / "o")
    with pytest.raises(ConfigError, match="teams webhook_url is not an http"):
        build_router({"teams": {"webhook_url": "ftp://x?sig=abc"}}, outbox_path=tmp_path / "o")


def test_retrieved_or_model_text_is_not_read_as_markdown() -> None:
    """A link in a drafted hypothesis must not render as a disguised link: it goes in a TextRun,
    which Adaptive Cards do not parse as Markdown, and is made inert; no TextBlock or fact
    carries text at all."""
    trap = "Restart it, see [the runbook](https://evil.example.test/login)"
    card = teams_payload(Notification(make_anomaly(), trap, draft=DRAFT | {"hypothesis": trap}))
    body = card["attachments"][0]["content"]["body"]
    inert = "Restart it, see the runbook (hxxps://evil[.]example[.]test/login)"
    assert body[3] == {"type": "RichTextBlock", "inlines": [{"type": "TextRun", "text": inert}]}
    assert {b["type"] for b in body} == {"RichTextBlock"}
