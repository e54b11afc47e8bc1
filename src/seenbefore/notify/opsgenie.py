"""Opsgenie / Jira Service Management Operations sender: the Alert API (v2).

Every request carries ``Authorization: GenieKey <api key>`` (the key of an API integration; a
secret, registered with ``redact``). The alias is our dedup key (``seenbefore-<32 hex>``, the
same as PagerDuty's), so the alert a trigger opens is the one a resolve closes::

    trigger      POST {url}/v2/alerts
                 {message (at most 130 characters), alias (at most 512), description (at most
                  15000), responders, tags (at most 20, 50 characters each), details (a map of
                  strings, at most 8000 characters in all), entity (at most 512), source (at most
                  100), priority P1..P5}
    acknowledge  POST {url}/v2/alerts/{alias}/acknowledge?identifierType=alias  {source, note}
    resolve      POST {url}/v2/alerts/{alias}/close?identifierType=alias        {source, note}
    draft        POST {url}/v2/alerts/{alias}/notes?identifierType=alias        {source, note}

A trigger for an alias that is already open is de-duplicated by Opsgenie (its count goes up), so
a drafted hypothesis goes to the open alert as a note (at most 25000 characters) instead.

Requests are processed asynchronously: a valid one is answered ``202`` with ``{"result":
"Request will be processed", "took": ..., "requestId": ...}``. 429 and 5xx are worth retrying;
other 4xx (a body that is not processable, a key that is not valid) need a person.

``url`` is the API base: ``https://api.opsgenie.com`` (default) or ``https://api.eu.opsgenie.com``
for Opsgenie's EU instance. Jira Service Management Operations keeps the same Alert API shape
behind its own base URL (``https://api.atlassian.com/jsm/ops/integration`` for an API
integration created in JSM, with that integration's key): set ``url`` to it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import httpx

from seenbefore.core.confidence import NONE
from seenbefore.errors import ConfigError
from seenbefore.notify.base import (
    DEFAULT_TIMEOUT_S,
    DeliveryResult,
    HttpSender,
    Notification,
    draft_headline,
    finite,
    post_json,
    utc_iso,
    withheld_notes,
)
from seenbefore.notify.options import check_table, number, string, strings
from seenbefore.notify.pagerduty import CLIENT_NAME, dedup_key, event_class
from seenbefore.notify.redact import MASK, register_secret
from seenbefore.notify.safe import safe_message
from seenbefore.notify.slack import truncate, window_text
from seenbefore.types import MetricDeviation, Severity

API_URL = "https://api.opsgenie.com"
EU_API_URL = "https://api.eu.opsgenie.com"
CONFIG_KEYS = ("api_key", "url", "responders", "tags", "timeout")
MESSAGE_MAX = 130
ALIAS_MAX = 512
DESCRIPTION_MAX = 15000
NOTE_MAX = 25000
ENTITY_MAX = 512
TAG_MAX = 50
TAGS_MAX = 20
DETAILS_MAX = 8000  # characters over every key and value
OPSGENIE_PRIORITY: dict[Severity, str] = {"SEV1": "P1", "SEV2": "P2", "SEV3": "P3", "SEV4": "P4"}
UNRATED_PRIORITY = "P3"  # Opsgenie's own default
RESPONDER_TYPES = {"team": "name", "user": "username", "escalation": "name", "schedule": "name"}
_UUID = re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}")
_ENDPOINT = {"acknowledge": "acknowledge", "resolve": "close"}
_NOTE_PREFIX = {"acknowledge": "Acknowledged by seenbefore", "resolve": "Resolved by seenbefore"}


def responder(text: str) -> dict[str, str]:
    """``team:payments`` → ``{"type": "team", "name": "payments"}`` (``user:`` takes a username);
    a UUID after the colon is sent as ``id`` (JSM Operations names responders by id)."""
    kind, _, name = text.partition(":")
    name = name.strip()
    if kind not in RESPONDER_TYPES or not name:
        raise ConfigError(
            f"notify.opsgenie.responders has {text!r}; expected <type>:<name> with type one of "
            f"{sorted(RESPONDER_TYPES)}, such as 'team:payments' or 'user:ana@example.com'"
        )
    key = "id" if _UUID.fullmatch(name) else RESPONDER_TYPES[kind]
    return {"type": kind, key: name}


def _tags(message: Notification, extra: tuple[str, ...]) -> list[str]:
    anomaly = message.anomaly
    tags = [CLIENT_NAME, anomaly.severity or "unrated", anomaly.service, anomaly.cloud]
    tags += [anomaly.region, *anomaly.rules, *extra]
    unique = [t[:TAG_MAX] for t in dict.fromkeys(t.strip() for t in tags) if t]
    return unique[:TAGS_MAX]


def _details(message: Notification) -> dict[str, str]:
    anomaly = message.anomaly
    score = finite(anomaly.score)
    details = {
        "anomaly_id": anomaly.id,
        "fingerprint": anomaly.fingerprint,
        "service": anomaly.service,
        "cloud": anomaly.cloud,
        "region": anomaly.region,
        "severity": anomaly.severity or "unrated",
        "score": "" if score is None else f"{score:.3f}",
        "window_start": utc_iso(anomaly.start),
        "window_end": utc_iso(anomaly.end),
        "class": event_class(anomaly),
        "rules": ", ".join(anomaly.rules),
        "signature": message.summary,
    }
    kept: dict[str, str] = {}
    used = 0
    for key, value in details.items():  # the signature is last: it is what gets cut
        room = DETAILS_MAX - used - len(key)
        if room <= 0:
            break
        kept[key] = truncate(value, room) if len(value) > room else value
        used += len(key) + len(kept[key])
    return kept


def _deviation(d: MetricDeviation) -> str:
    z = f"{d.zscore:.1f}" if math.isfinite(d.zscore) else "?"
    unit = f" {d.unit}" if d.unit else ""
    return f"- {d.metric} {d.direction}: {d.value:g}{unit} (baseline {d.baseline:g}, z={z})"


def _description(message: Notification) -> str:
    anomaly = message.anomaly
    lines = [
        message.summary.strip() or "(no signature text)",
        "",
        f"Window: {window_text(anomaly.start, anomaly.end)}",
        f"Score: {anomaly.score:.2f}",
        f"Rules: {', '.join(anomaly.rules) or 'none'}",
    ]
    if anomaly.deviations:
        lines += ["Deviations:", *(_deviation(d) for d in anomaly.deviations)]
    if anomaly.normal:
        lines.append(f"Normal: {', '.join(anomaly.normal)}")
    lines.append(f"Anomaly {anomaly.id}")
    return truncate("\n".join(lines), DESCRIPTION_MAX)


def create_alert(
    message: Notification,
    responders: tuple[dict[str, str], ...] = (),
    tags: tuple[str, ...] = (),
) -> dict[str, Any]:
    """The Create Alert JSON body for a trigger; ``tags`` are added to seenbefore's own."""
    message = safe_message(message)
    anomaly = message.anomaly
    where = f"{anomaly.service} ({anomaly.cloud}/{anomaly.region})"
    text = f"[{anomaly.severity or 'unrated'}] {where}: {message.summary.strip() or 'anomaly'}"
    body: dict[str, Any] = {
        "message": truncate(text, MESSAGE_MAX),
        "alias": dedup_key(anomaly)[:ALIAS_MAX],
        "description": _description(message),
        "tags": _tags(message, tags),
        "details": _details(message),
        "entity": truncate(anomaly.service, ENTITY_MAX),
        "source": CLIENT_NAME,
        "priority": OPSGENIE_PRIORITY[anomaly.severity] if anomaly.severity else UNRATED_PRIORITY,
    }
    if responders:
        body["responders"] = [dict(r) for r in responders]
    return body


def draft_note(message: Notification) -> str:
    """A drafted hypothesis as the text of a note on the open alert."""
    message = safe_message(message)
    draft = message.draft or {}
    cited = draft.get("cited_incidents") or []
    head = draft_headline(message)  # the words every channel uses
    novel = head.verdict == NONE or not cited
    lines = [
        "No precedent in the knowledge base." if novel else f"{head.lead}: {cited[0]}",
        head.confidence,
        # the withheld lines come ahead of the hypothesis, so truncation keeps them
        *[f"⚠ {note}" for note in withheld_notes(draft)],
        f"Hypothesis: {draft.get('hypothesis', '')}",
        f"{draft.get('drafted_by', '')} · advisory: a person decides",
    ]
    return truncate("\n".join(lines), NOTE_MAX)


def opsgenie_request(
    message: Notification, responders: tuple[dict[str, str], ...] = (), tags: tuple[str, ...] = ()
) -> tuple[str, dict[str, Any]]:
    """``(path and query, JSON body)`` of the Alert API request for ``message`` (its outside
    text made plain: notify/safe.py)."""
    message = safe_message(message)
    alias = quote(dedup_key(message.anomaly)[:ALIAS_MAX], safe="")
    if message.draft is not None:
        return (
            f"/v2/alerts/{alias}/notes?identifierType=alias",
            {"source": CLIENT_NAME, "note": draft_note(message)},
        )
    if message.action == "trigger":
        return "/v2/alerts", create_alert(message, responders, tags)
    note = f"{_NOTE_PREFIX[message.action]}: {message.summary.strip() or 'anomaly'}"
    return (
        f"/v2/alerts/{alias}/{_ENDPOINT[message.action]}?identifierType=alias",
        {"source": CLIENT_NAME, "note": truncate(note, NOTE_MAX)},
    )


class OpsgenieNotifier(HttpSender):
    """Creates, acknowledges and closes alerts through one Opsgenie API integration."""

    def __init__(
        self,
        api_key: str,
        *,
        url: str = API_URL,
        responders: tuple[str, ...] = (),
        tags: tuple[str, ...] = (),
        client: httpx.Client | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        if not isinstance(api_key, str) or not api_key.strip():
            raise ConfigError(
                "opsgenie api_key is empty; expected the API key of an Opsgenie (or JSM "
                "Operations) API integration"
            )
        if not isinstance(url, str) or not url.startswith(("https://", "http://")):
            raise ConfigError(
                f"opsgenie url is {url!r}; expected an http(s) base URL such as {API_URL} "
                f"or {EU_API_URL}"
            )
        self.responders = tuple(responder(r) for r in responders)
        self.tags = tuple(tags)
        register_secret(api_key)
        super().__init__(client=client, timeout=timeout)
        self._headers = {"Authorization": f"GenieKey {api_key}"}
        self.url = url.rstrip("/")

    def __repr__(self) -> str:
        return f"OpsgenieNotifier(api_key={MASK!r}, url={self.url!r})"

    def send(self, message: Notification) -> DeliveryResult:
        path, body = opsgenie_request(message, self.responders, self.tags)
        return post_json(
            self._client, self.url + path, body, timeout=self.timeout, headers=self._headers
        )


def from_config(
    table: Mapping[str, Any], *, client: httpx.Client | None = None
) -> OpsgenieNotifier:
    """The ``[notify.opsgenie]`` table: ``api_key`` (a secret), ``url``, ``responders``,
    ``tags``, ``timeout``."""
    table = check_table(table, "opsgenie", CONFIG_KEYS)
    return OpsgenieNotifier(
        string(table, "opsgenie", "api_key", secret=True),
        url=string(table, "opsgenie", "url", API_URL),
        responders=strings(table, "opsgenie", "responders"),
        tags=strings(table, "opsgenie", "tags"),
        client=client,
        timeout=number(table, "opsgenie", "timeout", DEFAULT_TIMEOUT_S),
    )
