"""Slack incoming-webhook sender: one Block Kit message per notification.

The JSON body (Slack incoming webhooks with Block Kit layout blocks)::

    text       fallback for notifications and clients that cannot render blocks
    blocks     header   plain_text, at most 150 characters
               section  fields: service, cloud / region, severity, score, window
                        (mrkdwn, at most 10 fields of 2000 characters each)
               section  the anomaly's signature text (mrkdwn, at most 3000 characters)
               context  the rules that fired and the anomaly id (at most 10 elements)
               (a draft: header, precedent and confidence, the hypothesis, a context block of
               the lines about text withheld as possible prompt injection when there are any,
               then who drafted it)
    thread_ts  optional: post as a reply in that thread

Slack answers ``200`` with the body ``ok``. Failures are 4xx/5xx with a short code as the body
(``invalid_payload``, ``channel_not_found``, ``channel_is_archived``, ``rollup_error``; 429 when
rate limited): 429 and 5xx are worth retrying, the rest need a person.

Text from outside (labels, the signature, a draft) is made plain first (notify/safe.py: no bidi
or control characters such as U+202E, links inert), then escaped for mrkdwn (``&``, ``<``,
``>``: the only characters mrkdwn lets one escape, and the ones that make links and mentions).

The webhook URL is the credential: it is registered with ``redact`` and never logged or recorded.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from typing import Any

import httpx

from seenbefore.errors import ConfigError
from seenbefore.notify.base import (
    DEFAULT_TIMEOUT_S,
    DeliveryResult,
    HttpSender,
    Notification,
    draft_headline,
    post_json,
    to_utc,
    url_secrets,
    withheld_notes,
)
from seenbefore.notify.options import check_table, number, string
from seenbefore.notify.redact import MASK, register_secret
from seenbefore.notify.safe import safe_message

CONFIG_KEYS = ("webhook_url", "timeout")
HEADER_MAX = 150
FIELD_MAX = 2000
TEXT_MAX = 3000
FALLBACK_MAX = 3000
CONTEXT_ELEMENTS_MAX = 10
_ACTION_PREFIX = {"trigger": "", "acknowledge": "Acknowledged: ", "resolve": "Resolved: "}
_PARTIAL_ENTITY = re.compile(r"&[a-z]*$")


def escape(text: str) -> str:
    """Escape the three characters Slack's mrkdwn treats as control characters."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def truncate(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, ending in an ellipsis when cut."""
    if len(text) <= limit:
        return text
    return _PARTIAL_ENTITY.sub("", text[: limit - 1]) + "…"


def mrkdwn(text: str, limit: int = TEXT_MAX) -> dict[str, str]:
    return {"type": "mrkdwn", "text": truncate(escape(text), limit)}


def window_text(start: dt.datetime, end: dt.datetime) -> str:
    """``2024-03-14 10:00 → 10:20 UTC (20 min)``; the end date is shown when it differs."""
    start, end = to_utc(start), to_utc(end)
    minutes = round((end - start).total_seconds() / 60)
    end_format = "%H:%M" if start.date() == end.date() else "%Y-%m-%d %H:%M"
    return f"{start:%Y-%m-%d %H:%M} → {end.strftime(end_format)} UTC ({minutes} min)"


def draft_payload(message: Notification) -> dict[str, Any]:
    """A drafted hypothesis following its anomaly: in the anomaly's thread when ``thread_ts`` is
    known (incoming webhooks do not return one; a bot posting with chat.postMessage does)."""
    message = safe_message(message)
    anomaly, draft = message.anomaly, message.draft or {}
    head = draft_headline(message)
    header, precedent, confidence = head.title, head.precedent, head.confidence
    payload: dict[str, Any] = {
        "text": truncate(escape(f"{header}: {draft.get('summary', '')}"), FALLBACK_MAX),
        "blocks": [
            {
                "type": "header",
                "text": {"type": "plain_text", "text": truncate(header, HEADER_MAX), "emoji": True},
            },
            {
                "type": "section",
                "fields": [
                    mrkdwn(f"*Top precedent*\n{precedent}", FIELD_MAX),
                    mrkdwn(f"*Verdict*\n{confidence}", FIELD_MAX),
                ],
            },
            {"type": "section", "text": mrkdwn(str(draft.get("hypothesis", "")))},
            *_withheld_block(draft),
            {
                "type": "context",
                "elements": [
                    mrkdwn(
                        f"{draft.get('drafted_by', '')} · anomaly {anomaly.id} · advisory: a person decides"
                    )
                ],
            },
        ],
    }
    if message.thread_ts:
        payload["thread_ts"] = message.thread_ts
    return payload


def _withheld_block(draft: dict[str, Any]) -> list[dict[str, Any]]:
    """A context block of the draft's withheld lines (plain text: shown as written), if any."""
    notes = withheld_notes(draft)[:CONTEXT_ELEMENTS_MAX]
    elements = [
        {"type": "plain_text", "text": truncate(f"⚠ {note}", TEXT_MAX), "emoji": True}
        for note in notes
    ]
    return [{"type": "context", "elements": elements}] if elements else []


def slack_payload(message: Notification) -> dict[str, Any]:
    """The incoming-webhook JSON body for ``message``."""
    if message.draft is not None:
        return draft_payload(message)
    message = safe_message(message)
    anomaly = message.anomaly
    severity = anomaly.severity or "unrated"
    header = f"{_ACTION_PREFIX[message.action]}{severity} anomaly on {anomaly.service}"
    summary = message.summary.strip() or "(no signature text)"
    fields = [
        ("Service", anomaly.service),
        ("Cloud / region", f"{anomaly.cloud} / {anomaly.region}"),
        ("Severity", severity),
        ("Score", f"{anomaly.score:.2f}"),
        ("Window", window_text(anomaly.start, anomaly.end)),
    ]
    rules = ", ".join(anomaly.rules) if anomaly.rules else "none"
    payload: dict[str, Any] = {
        "text": truncate(escape(f"{header}: {summary}"), FALLBACK_MAX),
        "blocks": [
            {
                "type": "header",
                "text": {"type": "plain_text", "text": truncate(header, HEADER_MAX), "emoji": True},
            },
            {
                "type": "section",
                "fields": [mrkdwn(f"*{name}*\n{value}", FIELD_MAX) for name, value in fields],
            },
            {"type": "section", "text": mrkdwn(summary)},
            {
                "type": "context",
                "elements": [mrkdwn(f"Rules: {rules} · anomaly {anomaly.id}")],
            },
        ],
    }
    if message.thread_ts:
        payload["thread_ts"] = message.thread_ts
    return payload


class SlackNotifier(HttpSender):
    """Posts notifications to one Slack incoming webhook."""

    def __init__(
        self,
        webhook_url: str,
        *,
        client: httpx.Client | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        if not isinstance(webhook_url, str) or not webhook_url.startswith(("https://", "http://")):
            raise ConfigError(
                "slack webhook_url is not an http(s) URL; expected "
                "https://hooks.slack.com/services/... (the value is a secret and is not shown)"
            )
        register_secret(*url_secrets(webhook_url))
        super().__init__(client=client, timeout=timeout)
        self._url = webhook_url

    def __repr__(self) -> str:
        return f"SlackNotifier(webhook_url={MASK!r}, timeout={self.timeout!r})"

    def send(self, message: Notification) -> DeliveryResult:
        return post_json(self._client, self._url, slack_payload(message), timeout=self.timeout)


def from_config(table: Mapping[str, Any], *, client: httpx.Client | None = None) -> SlackNotifier:
    """The ``[notify.slack]`` table: ``webhook_url`` (a secret), ``timeout`` (seconds)."""
    table = check_table(table, "slack", CONFIG_KEYS)
    return SlackNotifier(
        string(table, "slack", "webhook_url", secret=True),
        client=client,
        timeout=number(table, "slack", "timeout", DEFAULT_TIMEOUT_S),
    )
