"""Microsoft Teams sender: an Adaptive Card posted to a Workflows webhook.

Teams' Office 365 connectors (incoming webhooks) are retired; the replacement is a Workflows
(Power Automate) flow started by the template "Post to a channel when a webhook request is
received", whose trigger URL accepts a message with Adaptive Card attachments (Workflows take
Adaptive Cards only, not the old MessageCard format)::

    {"type": "message",
     "attachments": [{"contentType": "application/vnd.microsoft.card.adaptive",
                      "contentUrl": null,
                      "content": {"$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
                                  "type": "AdaptiveCard", "version": "1.4",
                                  "body": [RichTextBlock title, RichTextBlock per fact,
                                           RichTextBlock signature,
                                           RichTextBlock rules and anomaly id],
                                  "actions": [Action.OpenUrl]}}]}   # actions: when review_url is set

Every piece of text that comes from outside (the title and the facts name the alert's service,
cloud and region; the signature, a drafted hypothesis, rule names and ids) goes in a
RichTextBlock, whose TextRun is not read as Markdown, so it shows as written: a service label
``[Open the runbook](http://x/phish)`` is not a disguised link in the heading or the "Service"
fact (issue 33; TextBlock and FactSet values are Markdown). It is made plain first
(notify/safe.py: no bidi or control characters, links inert). A drafted hypothesis
follows its anomaly as a second card (Workflows cannot thread replies).
The flow answers ``202 Accepted`` with an empty body; 429 (throttled) and 5xx are worth
retrying, other 4xx (a payload the flow rejects, a signature that is no longer valid, a deleted
flow) need a person.

The trigger URL is the credential (its ``sig`` query parameter signs it): it is registered with
``redact`` and never logged or recorded.
"""

from __future__ import annotations

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
    url_secrets,
    withheld_notes,
)
from seenbefore.notify.options import check_table, number, string
from seenbefore.notify.redact import MASK, register_secret
from seenbefore.notify.safe import safe_message
from seenbefore.notify.slack import truncate, window_text

CONFIG_KEYS = ("webhook_url", "review_url", "timeout")
CARD_SCHEMA = "http://adaptivecards.io/schemas/adaptive-card.json"
CARD_VERSION = "1.4"
CARD_CONTENT_TYPE = "application/vnd.microsoft.card.adaptive"
TITLE_MAX = 150
TEXT_MAX = 3000  # our own cap per text block; a Teams message may be at most about 28 KB
_ACTION_PREFIX = {"trigger": "", "acknowledge": "Acknowledged: ", "resolve": "Resolved: "}


def _literal(text: str, **style: Any) -> dict[str, Any]:
    """Text shown as given: a RichTextBlock's TextRun is not read as Markdown (a TextBlock is, so
    a ``[link](url)`` in retrieved or model-written text would render as a disguised link)."""
    return {
        "type": "RichTextBlock",
        "inlines": [{"type": "TextRun", "text": truncate(text, TEXT_MAX), **style}],
    }


def _facts(pairs: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """One RichTextBlock per fact: its title in bold, its value as written (a FactSet's values
    are read as Markdown)."""
    return [
        {
            "type": "RichTextBlock",
            "inlines": [
                {"type": "TextRun", "text": f"{title}: ", "weight": "Bolder"},
                {"type": "TextRun", "text": truncate(value, TEXT_MAX)},
            ],
        }
        for title, value in pairs
    ]


def adaptive_card(body: list[dict[str, Any]], review_url: str | None = None) -> dict[str, Any]:
    """An Adaptive Card 1.4 with ``body``, and an "Open" action when ``review_url`` is set."""
    card: dict[str, Any] = {
        "$schema": CARD_SCHEMA,
        "type": "AdaptiveCard",
        "version": CARD_VERSION,
        "body": body,
    }
    if review_url:
        card["actions"] = [
            {"type": "Action.OpenUrl", "title": "Open the review queue", "url": review_url}
        ]
    return card


def _heading(text: str) -> dict[str, Any]:
    return _literal(truncate(text, TITLE_MAX), size="Medium", weight="Bolder")


def anomaly_card(message: Notification, review_url: str | None = None) -> dict[str, Any]:
    message = safe_message(message)
    anomaly = message.anomaly
    severity = anomaly.severity or "unrated"
    title = f"{_ACTION_PREFIX[message.action]}{severity} anomaly on {anomaly.service}"
    rules = ", ".join(anomaly.rules) if anomaly.rules else "none"
    body = [
        _heading(title),
        *_facts(
            [
                ("Service", anomaly.service),
                ("Cloud / region", f"{anomaly.cloud} / {anomaly.region}"),
                ("Severity", severity),
                ("Window", window_text(anomaly.start, anomaly.end)),
                ("Score", f"{anomaly.score:.2f}"),
            ]
        ),
        _literal(message.summary.strip() or "(no signature text)"),
        _literal(f"Rules: {rules} · anomaly {anomaly.id}", isSubtle=True, size="Small"),
    ]
    return adaptive_card(body, review_url)


def draft_card(message: Notification, review_url: str | None = None) -> dict[str, Any]:
    message = safe_message(message)
    anomaly, draft = message.anomaly, message.draft or {}
    head = draft_headline(message)
    body = [
        _heading(head.title),
        *_facts([("Top precedent", head.precedent), ("Verdict", head.confidence)]),
        _literal(str(draft.get("hypothesis", ""))),
        *[_literal(f"⚠ {note}", color="Warning") for note in withheld_notes(draft)],
        _literal(
            f"{draft.get('drafted_by', '')} · anomaly {anomaly.id} · advisory: a person decides",
            isSubtle=True,
            size="Small",
        ),
    ]
    return adaptive_card(body, review_url)


def teams_payload(message: Notification, review_url: str | None = None) -> dict[str, Any]:
    """The Workflows webhook JSON body for ``message``: one Adaptive Card attachment."""
    card = (
        draft_card(message, review_url)
        if message.draft is not None
        else anomaly_card(message, review_url)
    )
    return {
        "type": "message",
        "attachments": [{"contentType": CARD_CONTENT_TYPE, "contentUrl": None, "content": card}],
    }


def _secret_forms(url: str) -> tuple[str, ...]:
    """The URL's secret forms (notify.base.url_secrets) plus the Workflows signature alone."""
    try:
        signatures = httpx.URL(url).params.get_list("sig")
    except httpx.InvalidURL:
        signatures = []
    return (*url_secrets(url), *signatures)


class TeamsNotifier(HttpSender):
    """Posts Adaptive Cards to one Teams Workflows webhook (trigger URL)."""

    def __init__(
        self,
        webhook_url: str,
        *,
        review_url: str | None = None,
        client: httpx.Client | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        if not isinstance(webhook_url, str) or not webhook_url.startswith(("https://", "http://")):
            raise ConfigError(
                "teams webhook_url is not an http(s) URL; expected the HTTP POST URL of a "
                "Workflows flow started by 'When a Teams webhook request is received' "
                "(the value is a secret and is not shown)"
            )
        if review_url is not None and not review_url.startswith(("https://", "http://")):
            raise ConfigError(
                f"teams review_url is {review_url!r}; expected an http(s) URL such as "
                "https://seenbefore.example.com/review"
            )
        register_secret(*_secret_forms(webhook_url))
        super().__init__(client=client, timeout=timeout)
        self._url = webhook_url
        self.review_url = review_url

    def __repr__(self) -> str:
        return f"TeamsNotifier(webhook_url={MASK!r}, timeout={self.timeout!r})"

    def send(self, message: Notification) -> DeliveryResult:
        payload = teams_payload(message, self.review_url)
        return post_json(self._client, self._url, payload, timeout=self.timeout)


def from_config(table: Mapping[str, Any], *, client: httpx.Client | None = None) -> TeamsNotifier:
    """The ``[notify.teams]`` table: ``webhook_url`` (a secret), ``review_url``, ``timeout``."""
    table = check_table(table, "teams", CONFIG_KEYS)
    review_url = string(table, "teams", "review_url") if "review_url" in table else None
    return TeamsNotifier(
        string(table, "teams", "webhook_url", secret=True),
        review_url=review_url,
        client=client,
        timeout=number(table, "teams", "timeout", DEFAULT_TIMEOUT_S),
    )
