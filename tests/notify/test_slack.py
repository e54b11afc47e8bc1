from __future__ import annotations

import datetime as dt

import httpx
import pytest

from seenbefore.errors import ConfigError
from seenbefore.notify import Notification, SlackNotifier, slack_payload
from seenbefore.notify.slack import HEADER_MAX, TEXT_MAX, window_text
from tests.notify.conftest import HANG, Receiver, make_anomaly

SIGNATURE = "latency_p99_ms up 7.1x (z=7.5), db_connections up 2.5x; cpu_utilization normal"
HOOK_PATH = "/services/T0000/B0000/slacktestsecret0001"


def test_payload_is_a_block_kit_message() -> None:
    payload = slack_payload(Notification(make_anomaly(), SIGNATURE))
    assert set(payload) == {"text", "blocks"}  # no thread_ts unless asked
    assert payload["text"] == f"SEV1 anomaly on checkout: {SIGNATURE}"
    assert [b["type"] for b in payload["blocks"]] == ["header", "section", "section", "context"]
    header, fields, signature, context = payload["blocks"]
    assert header["text"] == {
        "type": "plain_text",
        "text": "SEV1 anomaly on checkout",
        "emoji": True,
    }
    assert fields["fields"] == [
        {"type": "mrkdwn", "text": "*Service*\ncheckout"},
        {"type": "mrkdwn", "text": "*Cloud / region*\naws / us-east-1"},
        {"type": "mrkdwn", "text": "*Severity*\nSEV1"},
        {"type": "mrkdwn", "text": "*Score*\n0.93"},
        {"type": "mrkdwn", "text": "*Window*\n2024-03-14 10:00 → 10:20 UTC (20 min)"},
    ]
    assert "text" not in fields  # a fields-only section is valid Block Kit
    assert signature["text"] == {"type": "mrkdwn", "text": SIGNATURE}
    assert context["elements"] == [
        {"type": "mrkdwn", "text": "Rules: latency_slo, pool_saturation · anomaly A-1"}
    ]


def test_thread_ts_makes_a_threaded_reply() -> None:
    message = Notification(
        make_anomaly(), SIGNATURE, action="resolve", thread_ts="1710410400.000100"
    )
    payload = slack_payload(message)
    assert payload["thread_ts"] == "1710410400.000100"
    assert payload["blocks"][0]["text"]["text"] == "Resolved: SEV1 anomaly on checkout"


def test_unrated_without_rules() -> None:
    payload = slack_payload(Notification(make_anomaly(severity=None, rules=()), ""))
    assert payload["blocks"][0]["text"]["text"] == "unrated anomaly on checkout"
    assert payload["blocks"][2]["text"]["text"] == "(no signature text)"
    assert payload["blocks"][3]["elements"][0]["text"] == "Rules: none · anomaly A-1"


def test_mrkdwn_control_characters_are_escaped() -> None:
    payload = slack_payload(Notification(make_anomaly(), "p99 > 800ms & pool <full>"))
    assert payload["blocks"][2]["text"]["text"] == "p99 &gt; 800ms &amp; pool &lt;full&gt;"


def test_long_texts_are_cut_to_block_kit_limits() -> None:
    payload = slack_payload(Notification(make_anomaly(service="s" * 400), "&" * 5000))
    header = payload["blocks"][0]["text"]["text"]
    assert len(header) == HEADER_MAX and header.endswith("…")
    text = payload["blocks"][2]["text"]["text"]
    assert len(text) <= TEXT_MAX and text.endswith("&amp;…")  # never half an entity
    assert all(len(f["text"]) <= 2000 for f in payload["blocks"][1]["fields"])


def test_window_across_midnight_and_naive_times() -> None:
    start = dt.datetime(2024, 3, 14, 23, 50)  # naive: taken as UTC
    end = dt.datetime(2024, 3, 15, 1, 20, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    assert window_text(start, end) == "2024-03-14 23:50 → 2024-03-15 00:20 UTC (30 min)"


def test_send_posts_the_payload_and_returns_what_slack_returns(
    receiver: Receiver, client: httpx.Client
) -> None:
    message = Notification(make_anomaly(), SIGNATURE, thread_ts="1710410400.000100")
    notifier = SlackNotifier(receiver.url(HOOK_PATH), client=client)
    result = notifier.send(message)
    assert (result.ok, result.status, result.body, result.error) == (True, 200, "ok", "")
    [request] = receiver.requests
    assert request.path == HOOK_PATH
    assert request.headers["content-type"] == "application/json"
    assert request.json() == slack_payload(message)


@pytest.mark.parametrize(
    ("status", "body", "retryable"),
    [
        (400, "invalid_payload", False),
        (404, "channel_not_found", False),
        (410, "channel_is_archived", False),
        (500, "rollup_error", True),
    ],
)
def test_slack_errors_are_classified(
    receiver: Receiver, client: httpx.Client, status: int, body: str, retryable: bool
) -> None:
    receiver.answer((status, body))
    result = SlackNotifier(receiver.url(HOOK_PATH), client=client).send(
        Notification(make_anomaly(), SIGNATURE)
    )
    assert not result.ok
    assert (result.status, result.error, result.retryable) == (
        status,
        f"HTTP {status}: {body}",
        retryable,
    )


def test_rate_limit_carries_retry_after(receiver: Receiver, client: httpx.Client) -> None:
    receiver.answer((429, "rate_limited", {"Retry-After": "3"}))
    result = SlackNotifier(receiver.url(HOOK_PATH), client=client).send(
        Notification(make_anomaly(), SIGNATURE)
    )
    assert (result.ok, result.retryable, result.retry_after) == (False, True, 3.0)


def test_timeout_is_a_retryable_result(receiver: Receiver, client: httpx.Client) -> None:
    receiver.answer((HANG, ""))
    notifier = SlackNotifier(receiver.url(HOOK_PATH), client=client, timeout=0.2)
    result = notifier.send(Notification(make_anomaly(), SIGNATURE))
    assert (result.ok, result.status, result.retryable) == (False, None, True)
    assert result.error == "timed out after 0.2s (ReadTimeout)"


def test_connection_refused_is_a_retryable_result(closed_port: int) -> None:
    with SlackNotifier(f"http://127.0.0.1:{closed_port}{HOOK_PATH}", timeout=1) as notifier:
        result = notifier.send(Notification(make_anomaly(), SIGNATURE))
    assert (result.ok, result.status, result.retryable) == (False, None, True)
    assert result.error.startswith("ConnectError")


def test_bad_webhook_url_is_a_config_error_that_hides_the_value() -> None:
    with pytest.raises(ConfigError, match="not an http") as caught:
        SlackNotifier("hooks.slack.com/services/T/B/notashownsecret")
    assert "notashownsecret" not in str(caught.value)


def test_repr_hides_the_webhook_url(client: httpx.Client) -> None:
    notifier = SlackNotifier("https://hooks.slack.com/services/T1/B1/reprsecret01", client=client)
    assert "reprsecret01" not in repr(notifier)
