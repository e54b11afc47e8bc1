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

    [notify.teams]               # optional channel: a Teams Workflows webhook
    webhook_url = "https://....logic.azure.com/workflows/.../invoke?...&sig=..."  # a secret
    timeout = 10

    [notify.jsm]                 # optional channel: Jira Service Management Operations
    api_key = "..."              # a secret: the key of an API integration created in JSM
    url = "https://api.atlassian.com/jsm/ops/integration"   # optional
    responders = []              # optional, e.g. ["team:4513b7ea-3b91-438f-b7e4-e3e54af9147c"]
    tags = []                    # optional, added to seenbefore's own tags
    timeout = 10

    [notify.opsgenie]            # DEPRECATED (Opsgenie's end of support: 2027-04-05): use jsm
    api_key = "..."              # a secret: the API integration's key
    url = "https://api.opsgenie.com"   # optional; EU: https://api.eu.opsgenie.com
    responders = []              # optional, e.g. ["team:payments"]
    tags = []                    # optional, added to seenbefore's own tags
    timeout = 10

    [notify.<name>]              # any other notifier registered by entry point (a plugin);
                                 # its factory checks its own keys

    [notify.retry]               # optional; RetryPolicy fields
    attempts = 4
    base_delay = 0.5
    max_delay = 30
    multiplier = 2
    jitter = 0.5

    [notify.outbox]              # optional
    lease_s = 300                # seconds a retry pass keeps others off what it claimed

Each channel table is built by the factory registered under its name in the entry-point group
``seenbefore.notifiers`` (see ``seenbefore.plugins``); the built-ins register the same way.
The outbox is the caller's: a file path (``<home>/outbox.sqlite``), or rows from
``storage.factory.open_outbox_rows`` (the database's, on PostgreSQL). Error messages name the
key that is wrong but never repeat a secret's value.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import httpx

from seenbefore import plugins
from seenbefore.errors import ConfigError
from seenbefore.notify.base import Notifier, SupportsClose
from seenbefore.notify.options import check_table, number
from seenbefore.notify.outbox import DEFAULT_LEASE_S, Outbox
from seenbefore.notify.router import RetryPolicy, Router
from seenbefore.storage.outbox import OutboxRows

log = logging.getLogger(__name__)
RESERVED = ("retry", "routes", "outbox")  # every other key of [notify] names a notifier
DEPRECATED = {
    "opsgenie": "Opsgenie's end of support is 2027-04-05 (Atlassian moves its customers to Jira "
    "Service Management): create an API integration in JSM and move this table to [notify.jsm] "
    "with that integration's key",
}
RETRY_KEYS = ("attempts", "base_delay", "max_delay", "multiplier", "jitter")
OUTBOX_KEYS = ("lease_s",)
MIN_LEASE_S = 5.0  # shorter than a send's timeout: another replica would re-send in flight


def outbox_lease(table: Mapping[str, Any] | None) -> float:
    """``[notify.outbox] lease_s``, checked (default DEFAULT_LEASE_S)."""
    if not table:
        return DEFAULT_LEASE_S
    lease = number(check_table(table, "outbox", OUTBOX_KEYS), "outbox", "lease_s", DEFAULT_LEASE_S)
    if not lease >= MIN_LEASE_S:
        raise ConfigError(
            f"notify.outbox.lease_s is {lease:g}; expected at least {MIN_LEASE_S:g} seconds (a"
            " lease shorter than a send lets another replica send the same notification again)"
        )
    return lease


def retry_policy(table: Mapping[str, Any] | None) -> RetryPolicy:
    """A ``RetryPolicy`` from the ``[notify.retry]`` table (defaults for missing keys)."""
    if not table:
        return RetryPolicy()
    values: dict[str, Any] = {}
    for key, value in check_table(table, "retry", RETRY_KEYS).items():
        if key == "attempts":
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(f"notify.retry.attempts is {value!r}; expected an integer")
            values[key] = value
        else:
            values[key] = number(table, "retry", key, 0.0)
    return RetryPolicy(**values)


def _check_names(config: Mapping[str, Any]) -> None:
    channels = [k for k in config if k not in RESERVED]
    if not channels:
        return
    known = plugins.names(plugins.NOTIFIERS)
    unknown = sorted(k for k in channels if k not in known)
    if unknown:
        raise ConfigError(
            f"notify has unknown keys {unknown}; allowed: {list(RESERVED)} and one table per "
            f"notifier (registered: {', '.join(known)}). A notifier from another package "
            f"registers under the entry-point group {plugins.NOTIFIERS!r}: pip install that "
            "package, or fix the name"
        )


def build_notifiers(
    config: Mapping[str, Any], *, client: httpx.Client | None = None
) -> dict[str, Notifier]:
    """One notifier per ``[notify.<name>]`` table, each built by the factory registered as
    ``<name>`` (built-ins: slack, pagerduty, teams, jsm, opsgenie (deprecated); others by entry
    point)."""
    _check_names(config)
    notifiers: dict[str, Notifier] = {}
    try:
        for name, table in config.items():
            if name in RESERVED or table is None:
                continue
            if name in DEPRECATED:
                log.warning("notify.%s is deprecated: %s", name, DEPRECATED[name])
            factory = plugins.notifier_factory(name)
            notifiers[name] = factory(check_table(table, name), client=client)
    except BaseException:
        _close(notifiers)
        raise
    return notifiers


def _close(notifiers: Mapping[str, Notifier]) -> None:
    for notifier in notifiers.values():
        if isinstance(notifier, SupportsClose):
            notifier.close()


def build_router(
    config: Mapping[str, Any],
    *,
    outbox_path: Path | str | None = None,
    outbox_rows: OutboxRows | None = None,
    client: httpx.Client | None = None,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
) -> Router:
    """A ``Router`` for ``config`` with its outbox at ``outbox_path`` or in ``outbox_rows`` (the
    router closes them with itself). Raises ``ConfigError``."""
    routes = config.get("routes")
    if routes is not None:
        routes = check_table(routes, "routes")
    retry_table = config.get("retry")
    retry = retry_policy(None if retry_table is None else check_table(retry_table, "retry"))
    lease = outbox_lease(config.get("outbox"))
    notifiers = build_notifiers(config, client=client)
    try:
        return Router(
            notifiers,
            outbox=Outbox(outbox_path, rows=outbox_rows, lease_s=lease),
            routes=routes,
            retry=retry,
            sleep=sleep,
            rng=rng,
            owns_outbox=True,
        )
    except BaseException:
        _close(notifiers)
        if outbox_rows is not None:
            outbox_rows.close()
        raise
