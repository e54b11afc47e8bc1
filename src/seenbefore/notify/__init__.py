"""Notify: send anomalies to Slack, PagerDuty, Teams, Jira Service Management and Opsgenie
(deprecated: its end of support is 2027-04-05) and any notifier a plugin registers, routed by
severity, never losing one.

::

    router = build_router(settings_table, outbox_path=home / "outbox.sqlite")
    router.notify(anomaly, render_signature(anomaly))     # trigger; never raises
    router.notify(anomaly, text, action="resolve")        # same PagerDuty dedup_key
    router.retry_pending()                                # later: re-send what failed

Modules: ``slack``, ``pagerduty``, ``teams``, ``jsm`` and ``opsgenie`` (the senders; each has a
``from_config`` factory registered in the ``seenbefore.notifiers`` entry-point group, see
``seenbefore.plugins``; ``teams``, ``jsm`` and ``opsgenie`` are imported only when configured),
``router`` (routing, retries on ``seenbefore.retry``), ``outbox`` (durable SQLite record of
failed deliveries), ``config`` (build from a mapping), ``options`` (reading a channel's table),
``base`` (shared types), ``redact`` (secrets out of logs).
"""

from __future__ import annotations

from seenbefore.notify.base import (
    EVENT_ACTIONS,
    DeliveryResult,
    EventAction,
    Notification,
    Notifier,
)
from seenbefore.notify.config import build_notifiers, build_router, retry_policy
from seenbefore.notify.outbox import Outbox, OutboxEntry, OutboxState
from seenbefore.notify.pagerduty import (
    EVENTS_URL,
    PAGERDUTY_SEVERITY,
    PagerDutyNotifier,
    dedup_key,
    pagerduty_event,
)
from seenbefore.notify.redact import redact, register_secret
from seenbefore.notify.router import (
    DEFAULT_ROUTES,
    UNRATED,
    RetryPolicy,
    RetryReport,
    Router,
    check_routes,
)
from seenbefore.notify.slack import SlackNotifier, slack_payload

__all__ = [
    "DEFAULT_ROUTES",
    "EVENTS_URL",
    "EVENT_ACTIONS",
    "PAGERDUTY_SEVERITY",
    "UNRATED",
    "DeliveryResult",
    "EventAction",
    "Notification",
    "Notifier",
    "Outbox",
    "OutboxEntry",
    "OutboxState",
    "PagerDutyNotifier",
    "RetryPolicy",
    "RetryReport",
    "Router",
    "SlackNotifier",
    "build_notifiers",
    "build_router",
    "check_routes",
    "dedup_key",
    "pagerduty_event",
    "redact",
    "register_secret",
    "retry_policy",
    "slack_payload",
]
