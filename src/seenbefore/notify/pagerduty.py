"""PagerDuty Events API v2 sender: trigger, acknowledge and resolve alert events.

``POST https://events.pagerduty.com/v2/enqueue`` with::

    routing_key   the integration key (a secret: registered with ``redact``, never logged)
    event_action  trigger | acknowledge | resolve
    dedup_key     seenbefore-<32 hex of sha256(anomaly.fingerprint)>: the same anomaly always
                  maps to the same key, so a later resolve closes the alert the trigger opened
                  (PagerDuty's limit is 255 characters)
    payload       trigger only: summary (at most 1024 characters), source, severity
                  (critical | error | warning | info), timestamp (ISO 8601), component,
                  group, class, custom_details
    client        "seenbefore" (trigger only)

PagerDuty answers ``202`` with ``{"status": "success", "message": "Event processed",
"dedup_key": ...}``; ``400`` means the event is invalid (do not retry); ``429`` and 5xx are
worth retrying later.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from typing import Any

import httpx

from seenbefore.errors import ConfigError
from seenbefore.notify.base import (
    DEFAULT_TIMEOUT_S,
    DeliveryResult,
    HttpSender,
    Notification,
    finite,
    post_json,
    utc_iso,
)
from seenbefore.notify.options import check_table, number, string
from seenbefore.notify.redact import MASK, register_secret
from seenbefore.notify.safe import safe_message
from seenbefore.types import Anomaly, Severity

EVENTS_URL = "https://events.pagerduty.com/v2/enqueue"
CONFIG_KEYS = ("routing_key", "url", "timeout")
SUMMARY_MAX = 1024
DEDUP_KEY_MAX = 255
CLIENT_NAME = "seenbefore"
PAGERDUTY_SEVERITY: dict[Severity, str] = {
    "SEV1": "critical",
    "SEV2": "error",
    "SEV3": "warning",
    "SEV4": "info",
}
UNRATED_SEVERITY = "warning"  # an anomaly triage has not rated yet


def dedup_key(anomaly: Anomaly) -> str:
    """A stable PagerDuty dedup key: the same fingerprint always gives the same key."""
    digest = hashlib.sha256(anomaly.fingerprint.encode("utf-8")).hexdigest()[:32]
    return f"{CLIENT_NAME}-{digest}"


def event_class(anomaly: Anomaly) -> str:
    """The strongest deviation (``latency_p99_ms up``), else the first rule, else ``anomaly``."""
    if anomaly.deviations:
        top = max(
            anomaly.deviations, key=lambda d: abs(d.zscore) if math.isfinite(d.zscore) else 0.0
        )
        return f"{top.metric} {top.direction}"
    return anomaly.rules[0] if anomaly.rules else "anomaly"


def _summary(message: Notification) -> str:
    anomaly = message.anomaly
    where = f"{anomaly.service} ({anomaly.cloud}/{anomaly.region})"
    text = f"[{anomaly.severity or 'unrated'}] {where}: {message.summary.strip() or 'anomaly'}"
    return text if len(text) <= SUMMARY_MAX else text[: SUMMARY_MAX - 1] + "…"


def _custom_details(message: Notification) -> dict[str, Any]:
    anomaly = message.anomaly
    return {
        "anomaly_id": anomaly.id,
        "fingerprint": anomaly.fingerprint,
        "severity": anomaly.severity,
        "score": finite(anomaly.score),
        "window_start": utc_iso(anomaly.start),
        "window_end": utc_iso(anomaly.end),
        "signature": message.summary,
        "deviations": [
            {
                "metric": d.metric,
                "direction": d.direction,
                "value": finite(d.value),
                "baseline": finite(d.baseline),
                "zscore": finite(d.zscore),
                "unit": d.unit,
            }
            for d in anomaly.deviations
        ],
        "normal": list(anomaly.normal),
        "rules": list(anomaly.rules),
        **({"draft": _draft_details(message.draft)} if message.draft is not None else {}),
    }


def _draft_details(draft: dict[str, Any]) -> dict[str, Any]:
    """The draft as it rides along: sent as a trigger with the same dedup_key, which PagerDuty
    merges into the open alert, updating its custom details."""
    keep = (
        "summary",
        "hypothesis",
        "cited_incidents",
        "confidence",
        "confidence_label",
        "verdict",
        "novel",
        "mitigations",
        "suggested_checks",
        "missing_information",
        "drafted_by",
        "advisory",
        "withheld",  # text kept out as possible prompt injection: which incident, section, why
    )
    return {k: draft[k] for k in keep if k in draft}


def pagerduty_event(message: Notification, routing_key: str) -> dict[str, Any]:
    """The Events API v2 JSON body for ``message`` (its outside text made plain: notify/safe.py)."""
    message = safe_message(message)
    anomaly = message.anomaly
    event: dict[str, Any] = {
        "routing_key": routing_key,
        "event_action": message.action,
        "dedup_key": dedup_key(anomaly),
    }
    if message.action == "trigger":
        severity = PAGERDUTY_SEVERITY[anomaly.severity] if anomaly.severity else UNRATED_SEVERITY
        event["payload"] = {
            "summary": _summary(message),
            "source": f"{anomaly.cloud}/{anomaly.region}/{anomaly.service}",
            "severity": severity,
            "timestamp": utc_iso(anomaly.start),
            "component": anomaly.service,
            "group": f"{anomaly.cloud}/{anomaly.region}",
            "class": event_class(anomaly),
            "custom_details": _custom_details(message),
        }
        event["client"] = CLIENT_NAME
    return event


class PagerDutyNotifier(HttpSender):
    """Sends alert events for one PagerDuty integration (routing key)."""

    def __init__(
        self,
        routing_key: str,
        *,
        url: str = EVENTS_URL,
        client: httpx.Client | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        if not isinstance(routing_key, str) or not routing_key.strip():
            raise ConfigError(
                "pagerduty routing_key is empty; expected the 32-character integration key of "
                "an Events API v2 integration"
            )
        register_secret(routing_key)
        super().__init__(client=client, timeout=timeout)
        self._routing_key = routing_key
        self.url = url

    def __repr__(self) -> str:
        return f"PagerDutyNotifier(routing_key={MASK!r}, url={self.url!r})"

    def send(self, message: Notification) -> DeliveryResult:
        event = pagerduty_event(message, self._routing_key)
        return post_json(self._client, self.url, event, timeout=self.timeout)


def from_config(
    table: Mapping[str, Any], *, client: httpx.Client | None = None
) -> PagerDutyNotifier:
    """The ``[notify.pagerduty]`` table: ``routing_key`` (a secret), ``url``, ``timeout``."""
    table = check_table(table, "pagerduty", CONFIG_KEYS)
    return PagerDutyNotifier(
        string(table, "pagerduty", "routing_key", secret=True),
        url=string(table, "pagerduty", "url", EVENTS_URL),
        client=client,
        timeout=number(table, "pagerduty", "timeout", DEFAULT_TIMEOUT_S),
    )
