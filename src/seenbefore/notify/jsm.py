"""Jira Service Management (JSM) Operations sender: the integration events API, where Opsgenie's
alerting moved (Opsgenie's own API ends with its end of support, 2027-04-05).

Atlassian's JSM Operations API documents "Integration events" (create / acknowledge / close /
add note) for monitoring tools: requests go to ``https://api.atlassian.com/jsm/ops/integration``
and carry ``Authorization: GenieKey <api key>``, the key of an API integration created in JSM
(a secret, registered with ``redact``; the integration events take such keys, not Atlassian API
tokens). The alias is our dedup key (``seenbefore-<32 hex>``, as PagerDuty's), so the alert a
trigger opens is the one a resolve closes::

    trigger      POST {url}/v2/alerts
                 {message (at most 130 characters), alias, description, responders, tags,
                  details (a map of strings), entity, source, priority P1..P5}
    acknowledge  POST {url}/v2/alerts/{alias}/acknowledge?identifierType=alias  {source, note}
    resolve      POST {url}/v2/alerts/{alias}/close?identifierType=alias        {source, note}
    draft        POST {url}/v2/alerts/{alias}/notes?identifierType=alias        {source, note}

The bodies and limits are those of the Alert API that JSM took over from Opsgenie, so they are
built by :mod:`seenbefore.notify.opsgenie`'s functions (when that module goes with Opsgenie,
they move here). A valid request is answered ``202`` with ``{"result": "Request will be
processed", "requestId": ...}`` (processing is asynchronous); 429 and 5xx are worth retrying,
other 4xx (a key that is not valid, a body JSM rejects) need a person.

Responders are written ``<type>:<id>`` with type ``team``, ``user``, ``escalation`` or
``schedule``: JSM names them by id (a team's or user's id from JSM); a name that is not an id is
sent as ``name`` (``username`` for a user), as the Alert API also accepts.
"""

from __future__ import annotations

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
    post_json,
)
from seenbefore.notify.opsgenie import RESPONDER_TYPES, opsgenie_request
from seenbefore.notify.options import check_table, number, string, strings
from seenbefore.notify.redact import MASK, register_secret

NAME = "jsm"
API_URL = "https://api.atlassian.com/jsm/ops/integration"
CONFIG_KEYS = ("api_key", "url", "responders", "tags", "timeout")
# a UUID (teams, schedules, escalations), or an Atlassian account id: 557058:<uuid>, or 24 hex
_ID = re.compile(
    r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}|\d+:[0-9a-fA-F-]{8,}|[0-9a-fA-F]{24}"
)


def jsm_responder(text: str) -> dict[str, str]:
    """``team:4513b7ea-3b91-438f-b7e4-e3e54af9147c`` → ``{"type": "team", "id": "4513…"}``;
    ``user:712020:5f0c…`` (an Atlassian account id) → ``{"type": "user", "id": …}``; a plain
    name is sent as ``name`` (a user's as ``username``)."""
    kind, _, who = text.partition(":")
    who = who.strip()
    if kind not in RESPONDER_TYPES or not who:
        raise ConfigError(
            f"notify.{NAME}.responders has {text!r}; expected <type>:<id> with type one of "
            f"{sorted(RESPONDER_TYPES)}, such as 'team:4513b7ea-3b91-438f-b7e4-e3e54af9147c' "
            "(the team's id in JSM)"
        )
    return {"type": kind, "id" if _ID.fullmatch(who) else RESPONDER_TYPES[kind]: who}


def jsm_request(
    message: Notification, responders: tuple[dict[str, str], ...] = (), tags: tuple[str, ...] = ()
) -> tuple[str, dict[str, Any]]:
    """``(path and query, JSON body)`` of the integration events request for ``message``."""
    return opsgenie_request(message, responders, tags)


class JsmNotifier(HttpSender):
    """Creates, acknowledges and closes alerts through one JSM Operations API integration."""

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
                f"notify.{NAME}.api_key is empty; expected the API key of an API integration "
                "created in Jira Service Management (Operations → Integrations → API)"
            )
        if not isinstance(url, str) or not url.startswith(("https://", "http://")):
            raise ConfigError(
                f"notify.{NAME}.url is {url!r}; expected an http(s) base URL such as {API_URL}"
            )
        self.responders = tuple(jsm_responder(r) for r in responders)
        self.tags = tuple(tags)
        register_secret(api_key)
        super().__init__(client=client, timeout=timeout)
        self._headers = {"Authorization": f"GenieKey {api_key}"}
        self.url = url.rstrip("/")

    def __repr__(self) -> str:
        return f"JsmNotifier(api_key={MASK!r}, url={self.url!r})"

    def send(self, message: Notification) -> DeliveryResult:
        path, body = jsm_request(message, self.responders, self.tags)
        return post_json(
            self._client, self.url + path, body, timeout=self.timeout, headers=self._headers
        )


def from_config(table: Mapping[str, Any], *, client: httpx.Client | None = None) -> JsmNotifier:
    """The ``[notify.jsm]`` table: ``api_key`` (a secret), ``url``, ``responders``, ``tags``,
    ``timeout``."""
    table = check_table(table, NAME, CONFIG_KEYS)
    return JsmNotifier(
        string(table, NAME, "api_key", secret=True),
        url=string(table, NAME, "url", API_URL),
        responders=strings(table, NAME, "responders"),
        tags=strings(table, NAME, "tags"),
        client=client,
        timeout=number(table, NAME, "timeout", DEFAULT_TIMEOUT_S),
    )
