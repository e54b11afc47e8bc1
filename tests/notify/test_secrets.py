"""Webhook URLs and routing keys never reach logs or recorded errors."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx
import pytest

from seenbefore.notify import (
    DeliveryResult,
    Notification,
    Notifier,
    Outbox,
    PagerDutyNotifier,
    RetryPolicy,
    Router,
    SlackNotifier,
    redact,
)
from seenbefore.notify.redact import MASK
from tests.notify.conftest import HANG, Receiver, Sleeps, make_anomaly

HOOK_SECRET = "xoxSECRETwebhookTOKEN0123456789"
HOOK = f"/services/T0SECRET/B0SECRET/{HOOK_SECRET}"
KEY = "SECRETROUTINGKEY0123456789abcdef"
SIGNATURE = "latency_p99_ms up 7.1x"


def test_secrets_stay_out_of_logs_and_the_outbox(
    receiver: Receiver,
    receiver2: Receiver,
    client: httpx.Client,
    tmp_path: Path,
    sleeps: Sleeps,
    caplog: pytest.LogCaptureFixture,
) -> None:
    webhook_url = receiver.url(HOOK)
    notifiers: dict[str, Notifier] = {
        "slack": SlackNotifier(webhook_url, client=client, timeout=0.2),
        "pagerduty": PagerDutyNotifier(KEY, url=receiver2.url("/v2/enqueue"), client=client),
    }
    outbox = Outbox(tmp_path / "outbox.sqlite")
    router = Router(notifiers, outbox=outbox, retry=RetryPolicy(attempts=3, jitter=0), sleep=sleeps)
    # Slack: a success, a 500 that echoes the URL back, then timeouts; PagerDuty echoes its key.
    receiver.answer((200, "ok"), (500, f"error posting to {webhook_url}"), (HANG, ""), (HANG, ""))
    receiver2.default = (500, f'{{"message": "bad key {KEY}"}}', {})
    with caplog.at_level(logging.DEBUG):
        first = router.notify(make_anomaly(id="A-1", service="one"), SIGNATURE)
        second = router.notify(make_anomaly(id="A-2", service="two"), SIGNATURE)
        router.retry_pending()

    assert first["slack"].ok and not second["slack"].ok and not second["pagerduty"].ok
    assert "HTTP Request: POST" in caplog.text  # httpx did log the requests...
    assert MASK in caplog.text  # ...with the URL masked
    recorded = [e.last_error for e in outbox.entries()]
    results = [r.error + r.body for r in (*first.values(), *second.values())]
    for text in (caplog.text, *recorded, *results):
        for secret in (HOOK_SECRET, KEY, webhook_url):
            assert secret not in text
    assert "HTTP 500: error posting to [redacted]" in caplog.text  # the retry warning
    assert 'HTTP 500: {"message": "bad key [redacted]"}' in recorded


class Leaky:
    """A notifier whose exception message carries a Slack webhook URL nobody registered."""

    def send(self, message: Notification) -> DeliveryResult:
        raise RuntimeError("POST https://hooks.slack.com/services/T1/B1/unregisteredSecret failed")


def test_unregistered_slack_urls_are_masked_too(
    tmp_path: Path, sleeps: Sleeps, caplog: pytest.LogCaptureFixture
) -> None:
    outbox = Outbox(tmp_path / "outbox.sqlite")
    router = Router({"slack": Leaky()}, outbox=outbox, retry=RetryPolicy(attempts=1), sleep=sleeps)
    with caplog.at_level(logging.DEBUG):
        router.notify(make_anomaly(severity="SEV2"), SIGNATURE)
    assert "unregisteredSecret" not in caplog.text
    assert outbox.pending()[0].last_error == "RuntimeError: POST [redacted] failed"


def test_redact_masks_the_longest_form_first(client: httpx.Client) -> None:
    SlackNotifier("https://chat.example.test/hooks/abc/LONGSECRET99", client=client)
    assert redact("to https://chat.example.test/hooks/abc/LONGSECRET99 now") == "to [redacted] now"
    assert redact("path /hooks/abc/LONGSECRET99") == "path [redacted]"


def test_a_short_registered_secret_cannot_break_slack_url_masking() -> None:
    from seenbefore.notify.redact import register_secret

    register_secret("/hook")  # e.g. the path of a test webhook, registered process-wide
    text = redact("POST https://hooks.slack.com/services/T1/B1/abcSecret failed")
    assert "abcSecret" not in text and "T1/B1" not in text
