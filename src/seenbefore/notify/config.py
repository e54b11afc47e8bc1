"""Build a ``Router`` from a plain mapping (the ``[notify]`` table of the TOML file, say).

::

    [notify.routes]              # optional; default below, limited to configured channels
    SEV1 = ["pagerduty", "slack"]
    SEV2 = ["slack"]
    SEV3 = ["slack"]
    SEV4 = []
    unrated = ["slack"]          # anomalies without a severity yet

    [notify.slack]               # optional channel
    webhook_url = "https://hooks.slack.com/services/..."   # a secret
    timeout = 10                 # seconds, optional

    [notify.pagerduty]           # optional channel
    routing_key = "..."          # a secret: the Events API v2 integration key
    url = "https://events.pagerduty.com/v2/enqueue"        # optional
    timeout = 10

    [notify.retry]               # optional; RetryPolicy fields
    attempts = 4
    base_delay = 0.5
    max_delay = 30
    multiplier = 2
    jitter = 0.5

The outbox path is the caller's (``<home>/outbox.sqlite``). Error messages name the key that is
wrong but never repeat a secret's value.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import httpx

from seenbefore.errors import ConfigError
from seenbefore.notify.base import DEFAULT_TIMEOUT_S, Notifier, SupportsClose
from seenbefore.notify.outbox import Outbox
from seenbefore.notify.pagerduty import EVENTS_URL, PagerDutyNotifier
from seenbefore.notify.router import RetryPolicy, Router
from seenbefore.notify.slack import SlackNotifier

_SECTIONS = {
    "routes": None,
    "slack": ("webhook_url", "timeout"),
    "pagerduty": ("routing_key", "url", "timeout"),
    "retry": ("attempts", "base_delay", "max_delay", "multiplier", "jitter"),
}
_SECRETS = {"webhook_url", "routing_key"}


def _table(config: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    value = config.get(name)
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ConfigError(f"notify.{name} is a {type(value).__name__}; expected a table")
    allowed = _SECTIONS[name]
    if allowed is not None:
        unknown = sorted(set(value) - set(allowed))
        if unknown:
            raise ConfigError(f"notify.{name} has unknown keys {unknown}; allowed: {list(allowed)}")
    return dict(value)


def _string(table: Mapping[str, Any], section: str, key: str, default: str | None = None) -> str:
    value = table.get(key, default)
    if not isinstance(value, str) or not value:
        shown = "a secret, not shown" if key in _SECRETS else repr(value)
        raise ConfigError(f"notify.{section}.{key} is missing or not a string ({shown})")
    return value


def _number(table: Mapping[str, Any], section: str, key: str, default: float) -> float:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"notify.{section}.{key} is {value!r}; expected a number")
    return float(value)


def retry_policy(table: Mapping[str, Any] | None) -> RetryPolicy:
    """A ``RetryPolicy`` from the ``[notify.retry]`` table (defaults for missing keys)."""
    if not table:
        return RetryPolicy()
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key == "attempts":
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(f"notify.retry.attempts is {value!r}; expected an integer")
            values[key] = value
        else:
            values[key] = _number(table, "retry", key, 0.0)
    return RetryPolicy(**values)


def build_notifiers(
    config: Mapping[str, Any], *, client: httpx.Client | None = None
) -> dict[str, Notifier]:
    """The channels configured in ``config``: ``slack`` and/or ``pagerduty``."""
    notifiers: dict[str, Notifier] = {}
    slack = _table(config, "slack")
    if slack is not None:
        notifiers["slack"] = SlackNotifier(
            _string(slack, "slack", "webhook_url"),
            client=client,
            timeout=_number(slack, "slack", "timeout", DEFAULT_TIMEOUT_S),
        )
    pagerduty = _table(config, "pagerduty")
    if pagerduty is not None:
        notifiers["pagerduty"] = PagerDutyNotifier(
            _string(pagerduty, "pagerduty", "routing_key"),
            url=_string(pagerduty, "pagerduty", "url", EVENTS_URL),
            client=client,
            timeout=_number(pagerduty, "pagerduty", "timeout", DEFAULT_TIMEOUT_S),
        )
    return notifiers


def build_router(
    config: Mapping[str, Any],
    *,
    outbox_path: Path | str,
    client: httpx.Client | None = None,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
) -> Router:
    """A ``Router`` for ``config`` with its outbox at ``outbox_path``. Raises ``ConfigError``."""
    unknown = sorted(set(config) - set(_SECTIONS))
    if unknown:
        raise ConfigError(f"notify has unknown keys {unknown}; allowed: {sorted(_SECTIONS)}")
    routes = _table(config, "routes")
    retry = retry_policy(_table(config, "retry"))
    notifiers = build_notifiers(config, client=client)
    try:
        return Router(
            notifiers,
            outbox=Outbox(outbox_path),
            routes=routes,
            retry=retry,
            sleep=sleep,
            rng=rng,
        )
    except BaseException:
        for notifier in notifiers.values():
            if isinstance(notifier, SupportsClose):
                notifier.close()
        raise
