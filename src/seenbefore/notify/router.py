"""Route notifications to channels by severity, retry with backoff, and keep what fails.

``Router.dispatch`` sends one notification to every channel its severity routes to. Each
channel is tried up to ``RetryPolicy.attempts`` times with exponential backoff and jitter (the
sleep is injectable). A delivery that still fails goes to the ``Outbox`` with its attempts and
last error; ``Router.retry_pending`` sends those later (claiming them first: over PostgreSQL
several processes drain one outbox, and what a dead one had claimed is retried by another once
its lease runs out). Nothing here raises into the caller:
detection must not crash because Slack is down, and no anomaly is dropped.

If a channel already has an undelivered message for the same anomaly fingerprint, a new one
for it is queued behind that message instead of being sent, so a ``resolve`` cannot overtake
the ``trigger`` it closes.
"""

from __future__ import annotations

import logging
import random
import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar, Self

from seenbefore.errors import ConfigError, StoreError
from seenbefore.notify.base import (
    DeliveryResult,
    EventAction,
    Notification,
    Notifier,
    SupportsClose,
)
from seenbefore.notify.outbox import Outbox, OutboxEntry
from seenbefore.notify.redact import redact
from seenbefore.retry import Backoff
from seenbefore.types import SEVERITIES, Anomaly, Severity

if TYPE_CHECKING:
    import tenacity

log = logging.getLogger(__name__)

# what an outbox that cannot be read or written raises (a file, or the database)
OUTBOX_ERRORS = (sqlite3.Error, OSError, StoreError)
CLAIM_BATCH = 50  # outbox entries (groups, in a database) a retry pass claims at a time

UNRATED = "unrated"  # route key for anomalies triage has not given a severity
ROUTE_KEYS: tuple[str, ...] = (*SEVERITIES, UNRATED)
DEFAULT_ROUTES: dict[str, tuple[str, ...]] = {
    "SEV1": ("pagerduty", "slack"),
    "SEV2": ("slack",),
    "SEV3": ("slack",),
    "SEV4": (),
    UNRATED: ("slack",),
}


class RetryPolicy(Backoff):
    """The router's retry policy: ``seenbefore.retry.Backoff`` (shared with the PostgreSQL pool),
    named in its error messages as the notify retry policy."""

    label: ClassVar[str] = "notify retry policy"


@dataclass(frozen=True)
class RetryReport:
    """What one ``retry_pending`` pass did with the outbox."""

    delivered: int = 0
    pending: int = 0  # tried again and failed, still pending
    dead: int = 0  # failed for good this time
    skipped: int = 0  # not tried: channel not configured, or it already failed in this pass


def check_routes(
    routes: Mapping[str, Sequence[str]], channels: Iterable[str]
) -> dict[str, tuple[str, ...]]:
    """Validated routes: keys are severities or ``unrated``, values name configured channels."""
    known = set(channels)
    checked: dict[str, tuple[str, ...]] = {}
    for key, names in routes.items():
        if key not in ROUTE_KEYS:
            raise ConfigError(
                f"notify routes: key {key!r} is not a severity; expected one of {ROUTE_KEYS}"
            )
        if isinstance(names, str) or not all(isinstance(n, str) for n in names):
            raise ConfigError(
                f"notify routes.{key} is {names!r}; expected a list of channel names "
                f'such as ["pagerduty", "slack"]'
            )
        missing = [n for n in names if n not in known]
        if missing:
            raise ConfigError(
                f"notify routes.{key} names {missing}, which {'is' if len(missing) == 1 else 'are'}"
                f" not configured (configured: {sorted(known)}); configure the channel or "
                "remove it from the route"
            )
        checked[key] = tuple(dict.fromkeys(names))
    return checked


class Router:
    """Sends each notification to the channels its severity routes to."""

    def __init__(
        self,
        notifiers: Mapping[str, Notifier],
        *,
        outbox: Outbox,
        routes: Mapping[str, Sequence[str]] | None = None,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
        owns_outbox: bool = False,
    ) -> None:
        """``owns_outbox``: close the outbox with the router (build_router's own outbox)."""
        self.notifiers = dict(notifiers)
        self._owns_outbox = owns_outbox
        if routes is None:  # the defaults, limited to the channels that are configured
            routes = {k: [n for n in v if n in self.notifiers] for k, v in DEFAULT_ROUTES.items()}
        self.routes = check_routes(routes, self.notifiers)
        self.outbox = outbox
        self.retry = retry or RetryPolicy()
        self._sleep = sleep
        self._rng = rng or random.Random()

    def channels_for(self, severity: Severity | None) -> tuple[str, ...]:
        return self.routes.get(severity or UNRATED, ())

    def notify(
        self,
        anomaly: Anomaly,
        summary: str,
        *,
        action: EventAction = "trigger",
        thread_ts: str | None = None,
    ) -> dict[str, DeliveryResult]:
        """Build a notification for ``anomaly`` (``summary`` is its signature text) and dispatch."""
        return self.dispatch(Notification(anomaly, summary, action=action, thread_ts=thread_ts))

    def notify_draft(
        self,
        anomaly: Anomaly,
        summary: str,
        draft: dict[str, Any],
        *,
        thread_ts: str | None = None,
    ) -> dict[str, DeliveryResult]:
        """Send the drafted hypothesis after its anomaly, to the same channels: a Slack follow-up
        (threaded when ``thread_ts`` is known) and a PagerDuty trigger with the same dedup_key."""
        return self.dispatch(Notification(anomaly, summary, thread_ts=thread_ts, draft=dict(draft)))

    def dispatch(self, message: Notification) -> dict[str, DeliveryResult]:
        """Deliver ``message`` to each routed channel; failures go to the outbox. Never raises."""
        results: dict[str, DeliveryResult] = {}
        for channel in self.channels_for(message.anomaly.severity):
            try:
                results[channel] = self._dispatch_one(channel, message)
            except Exception as exc:  # last guard: detection must not crash on a notifier bug
                error = redact(f"{type(exc).__name__}: {exc}")
                log.error(  # the anomaly goes into the log so it is not lost
                    "notify %s: unexpected %s; the anomaly: %r", channel, error, message.anomaly
                )
                results[channel] = DeliveryResult.failure(error, retryable=True)
        return results

    def _dispatch_one(self, channel: str, message: Notification) -> DeliveryResult:
        try:
            waiting = self.outbox.count_pending(channel, message.anomaly.fingerprint)
        except OUTBOX_ERRORS as exc:
            log.error("notify outbox %s unreadable (%s); sending anyway", self.outbox.location, exc)
            waiting = 0
        if waiting:
            result = DeliveryResult.failure(
                f"queued behind {waiting} undelivered message(s) for the same anomaly",
                retryable=True,
            )
            result = replace(result, attempts=0)
        else:
            result = self._deliver(channel, message, self.retry.attempts)
        if not result.ok:
            self._keep(channel, message, result)
        return result

    def _deliver(self, channel: str, message: Notification, attempts: int) -> DeliveryResult:
        notifier = self.notifiers[channel]
        anomaly_id = message.anomaly.id
        tries = 0

        def attempt() -> DeliveryResult:
            nonlocal tries
            tries += 1
            try:
                result = notifier.send(message)
            except Exception as exc:  # a notifier must not raise; treat it as a failed try
                result = DeliveryResult.failure(f"{type(exc).__name__}: {exc}", retryable=True)
            return replace(
                result, attempts=tries, error=redact(result.error), body=redact(result.body)
            )

        def before_sleep(state: tenacity.RetryCallState) -> None:
            outcome, upcoming = state.outcome, state.next_action
            failed: DeliveryResult | None = outcome.result() if outcome is not None else None
            log.warning(
                "notify %s: anomaly %s attempt %d/%d failed (%s); retrying in %.2fs",
                channel,
                anomaly_id,
                state.attempt_number,
                attempts,
                failed.error if failed is not None else "",
                upcoming.sleep if upcoming is not None else 0.0,
            )

        retrying = self.retry.retrying(
            on_result=lambda r: not r.ok and r.retryable,
            sleep=self._sleep,
            rand=self._rng.random,
            retry_after=lambda r: r.retry_after,
            before_sleep=before_sleep,
            attempts=attempts,
        )
        result: DeliveryResult = retrying(attempt)
        if result.ok:
            if result.attempts > 1:
                log.info(
                    "notify %s: anomaly %s delivered on attempt %d",
                    channel,
                    anomaly_id,
                    result.attempts,
                )
            return result
        log.warning(
            "notify %s: anomaly %s not delivered after %d attempt(s): %s",
            channel,
            anomaly_id,
            result.attempts,
            result.error,
        )
        return result

    def _keep(self, channel: str, message: Notification, result: DeliveryResult) -> None:
        try:
            entry_id = self.outbox.add(channel, message, result)
        except OUTBOX_ERRORS as exc:
            # The last place the notification exists: log it whole (it holds no secrets).
            log.error(
                "notify %s: could not keep anomaly %s in outbox %s (%s); the notification: %s",
                channel,
                message.anomaly.id,
                self.outbox.location,
                exc,
                message.to_json(),
            )
            return
        state = "pending" if result.retryable else "dead (needs a person)"
        log.warning(
            "notify %s: anomaly %s kept in outbox as #%d, %s",
            channel,
            message.anomaly.id,
            entry_id,
            state,
        )

    def retry_pending(self, *, limit: int | None = None, attempts: int = 1) -> RetryReport:
        """Send pending outbox entries again, oldest first; ``attempts`` tries each. Never raises.

        Entries are claimed a batch at a time (leased from other processes where the outbox
        is shared) and each is recorded, or given back untried. After a retryable failure on a
        channel the rest of that channel's entries wait for the next pass: the receiver is
        likely still down, and order per anomaly is kept. ``limit`` bounds the entries tried.
        """
        attempts = max(1, attempts)
        counts = {"delivered": 0, "pending": 0, "dead": 0, "skipped": 0}
        down: set[str] = set()
        seen: set[int] = set()
        while limit is None or len(seen) < limit:
            want = CLAIM_BATCH if limit is None else min(CLAIM_BATCH, limit - len(seen))
            try:
                batch = self.outbox.claim(limit=want, exclude=sorted(seen))
            except OUTBOX_ERRORS as exc:
                log.error("notify outbox %s unreadable: %s", self.outbox.location, exc)
                break
            if not batch:
                break
            untried = []
            for entry in batch:
                seen.add(entry.id)
                outcome = self._retry_one(entry, attempts, down)
                if outcome == "untried":
                    untried.append(entry.id)
                    outcome = "skipped"
                counts[outcome] += 1
            try:
                self.outbox.release(untried)
            except OUTBOX_ERRORS as exc:  # their lease runs out instead
                log.error(
                    "notify outbox %s: could not release entries: %s", self.outbox.location, exc
                )
        return RetryReport(**counts)

    def _retry_one(self, entry: OutboxEntry, attempts: int, down: set[str]) -> str:
        """One claimed entry: 'delivered', 'pending', 'dead', 'skipped' (noted, not tried) or
        'untried' (to give back)."""
        try:
            if entry.channel not in self.notifiers:
                self.outbox.note(
                    entry.id,
                    f"channel {entry.channel!r} is not configured now; configure it to send "
                    "this entry",
                )
                return "skipped"
            if entry.channel in down:
                return "untried"
            result = self._deliver(entry.channel, entry.message, attempts)
            self.outbox.record(entry.id, result)
        except Exception as exc:  # keep going: one bad entry must not stop the others
            log.error(
                "notify outbox entry %d: %s", entry.id, redact(f"{type(exc).__name__}: {exc}")
            )
            return "untried"
        if result.ok:
            return "delivered"
        if result.retryable:
            down.add(entry.channel)
            return "pending"
        return "dead"

    def close(self) -> None:
        """Close the notifiers that hold connections, and the outbox if the router owns it."""
        for notifier in self.notifiers.values():
            if isinstance(notifier, SupportsClose):
                notifier.close()
        if self._owns_outbox:
            self.outbox.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
