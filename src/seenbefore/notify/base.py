"""What every sender shares: the message, the result, the ``Notifier`` port, one JSON POST.

A ``Notification`` carries the anomaly itself plus the one-line signature text (rendered by the
caller), so a failed delivery can be stored whole and re-sent later. Senders never raise for a
delivery failure; they return a ``DeliveryResult`` that says whether retrying can help.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, Self, cast, runtime_checkable

import httpx

from seenbefore.core.confidence import verdict_of
from seenbefore.errors import ConfigError
from seenbefore.notify.redact import redact
from seenbefore.types import (  # the anomaly's JSON form lives with the type
    Anomaly,
    anomaly_from_dict,
    anomaly_to_dict,
)

EventAction = Literal["trigger", "acknowledge", "resolve"]
EVENT_ACTIONS: tuple[EventAction, ...] = ("trigger", "acknowledge", "resolve")
DEFAULT_TIMEOUT_S = 10.0
_BODY_KEPT = 2000  # characters of a response body kept on a result
_ERROR_BODY_KEPT = 300


@dataclass(frozen=True)
class Notification:
    """One message about one anomaly. ``summary`` is its signature text, rendered by the caller."""

    anomaly: Anomaly
    summary: str
    action: EventAction = "trigger"
    thread_ts: str | None = None  # Slack: post as a reply in this thread
    draft: dict[str, Any] | None = None  # a drafted hypothesis that follows the anomaly

    def to_json(self) -> str:
        return json.dumps(
            {
                "anomaly": anomaly_to_dict(self.anomaly),
                "summary": self.summary,
                "action": self.action,
                "thread_ts": self.thread_ts,
                "draft": self.draft,
            },
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str) -> Notification:
        data = json.loads(text)
        action = data.get("action", "trigger")
        if action not in EVENT_ACTIONS:
            raise ValueError(f"notification action is {action!r}, expected one of {EVENT_ACTIONS}")
        return cls(
            anomaly=anomaly_from_dict(data["anomaly"]),
            summary=str(data["summary"]),
            action=cast(EventAction, action),
            thread_ts=data.get("thread_ts"),
            draft=data.get("draft"),
        )


@dataclass(frozen=True)
class DeliveryResult:
    """What one delivery came to. ``body`` is what the receiver answered (Slack: ``ok``)."""

    ok: bool
    status: int | None = None  # HTTP status; None when no response arrived
    body: str = ""
    error: str = ""  # empty when ok; never holds a webhook URL or routing key
    retryable: bool = False  # worth trying again later (timeouts, 429, 5xx)
    retry_after: float | None = None  # seconds, from a Retry-After header
    attempts: int = 1

    @property
    def data(self) -> dict[str, Any]:
        """The body parsed as a JSON object (PagerDuty answers JSON), or ``{}``."""
        try:
            value = json.loads(self.body)
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}

    @classmethod
    def failure(cls, error: str, *, retryable: bool, status: int | None = None) -> DeliveryResult:
        return cls(ok=False, status=status, error=redact(error), retryable=retryable)


class Notifier(Protocol):
    """A channel that delivers one notification; never raises for a failed delivery."""

    def send(self, message: Notification) -> DeliveryResult: ...


@runtime_checkable
class SupportsClose(Protocol):
    def close(self) -> None: ...


class HttpSender:
    """Base for the HTTP senders: uses the given httpx client, or owns one and closes it."""

    def __init__(self, *, client: httpx.Client | None, timeout: float) -> None:
        if not timeout > 0:
            raise ConfigError(f"notify timeout is {timeout!r}, expected seconds > 0")
        self.timeout = timeout
        self._owns_client = client is None
        self._client = client if client is not None else httpx.Client(timeout=timeout)

    def close(self) -> None:
        """Close the HTTP client if this sender created it."""
        if self._owns_client:
            self._client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def post_json(
    client: httpx.Client,
    url: str,
    payload: dict[str, Any],
    *,
    timeout: float,
    headers: Mapping[str, str] | None = None,
) -> DeliveryResult:
    """POST ``payload`` as JSON and classify the answer. Network errors become results.
    ``headers`` are added to the request (an ``Authorization`` header, say)."""
    body = json.dumps(payload, ensure_ascii=False, allow_nan=False).encode("utf-8")
    headers = {"Content-Type": "application/json", **(headers or {})}
    try:
        response = client.post(url, content=body, headers=headers, timeout=timeout)
    except httpx.TimeoutException as exc:
        return DeliveryResult.failure(
            f"timed out after {timeout:g}s ({type(exc).__name__})", retryable=True
        )
    except httpx.HTTPError as exc:  # connection refused, reset, protocol errors
        return DeliveryResult.failure(f"{type(exc).__name__}: {exc}", retryable=True)
    text = response.text
    status = response.status_code
    if 200 <= status < 300:
        return DeliveryResult(ok=True, status=status, body=text[:_BODY_KEPT])
    retryable = status in (408, 429) or status >= 500
    return DeliveryResult(
        ok=False,
        status=status,
        body=redact(text[:_BODY_KEPT]),
        error=redact(f"HTTP {status}: {text[:_ERROR_BODY_KEPT].strip() or response.reason_phrase}"),
        retryable=retryable,
        retry_after=_retry_after(response.headers.get("Retry-After")),
    )


def _retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header given in seconds; dates and junk are ignored."""
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def finite(value: float) -> float | None:
    """``value`` when it is a finite number, else None (JSON has no NaN or infinity)."""
    return value if math.isfinite(value) else None


def to_utc(moment: dt.datetime) -> dt.datetime:
    """``moment`` in UTC; a naive datetime is taken to be UTC already."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=dt.UTC)
    return moment.astimezone(dt.UTC)


def utc_iso(moment: dt.datetime) -> str:
    """ISO 8601 in UTC, e.g. ``2024-03-14T10:00:00+00:00``."""
    return to_utc(moment).isoformat()


def url_secrets(url: str) -> tuple[str, ...]:
    """The forms of a secret URL that could show up in a log: as given, as httpx prints it,
    and its path and query (the credential part of a Slack webhook URL)."""
    forms = [url]
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL:
        return tuple(forms)
    forms.append(str(parsed))
    path = parsed.raw_path.decode("ascii", "replace")  # path with its query, if any
    if path not in ("", "/"):
        forms.append(path)
    query = parsed.query.decode("ascii", "replace")
    if query:
        forms.append(query)
    return tuple(forms)


@dataclass(frozen=True)
class DraftHeadline:
    """What every channel says first about a drafted hypothesis."""

    title: str  # "No precedent for …", "Precedent found for …", "Possible precedent — check for …"
    precedent: str  # the top cited incident, or why there is none
    confidence: str  # "p_precedent 0.62 (possible precedent — check)"
    verdict: str  # core.confidence.VERDICTS

    @property
    def lead(self) -> str:
        """The verdict as the start of a sentence: "Precedent found"."""
        return _lead(self.verdict)


def _lead(verdict: str) -> str:
    return f"{verdict[0].upper()}{verdict[1:]}"


def withheld_notes(draft: Mapping[str, Any] | None) -> list[str]:
    """The draft's lines about text it withheld (flagged as possible prompt injection): which
    incident's section and why. Every channel shows them; the withheld text itself is never in
    the draft."""
    entries = (draft or {}).get("withheld") or []
    return [str(e["note"]) for e in entries if isinstance(e, Mapping) and e.get("note")]


def draft_headline(message: Notification) -> DraftHeadline:
    anomaly, draft = message.anomaly, message.draft or {}
    verdict = verdict_of(draft)
    novel = verdict == "no precedent"
    title = (
        f"No precedent for the {anomaly.service} anomaly"
        if novel
        else f"{_lead(verdict)} for the {anomaly.service} anomaly"
    )
    cited = draft.get("cited_incidents") or []
    precedent = (
        "none: no postmortem in the knowledge base matches" if novel or not cited else str(cited[0])
    )
    confidence = f"p_precedent {float(draft.get('confidence', 0.0)):.2f} ({verdict})"
    return DraftHeadline(title, precedent, confidence, verdict)
