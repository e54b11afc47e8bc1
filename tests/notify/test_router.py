from __future__ import annotations

import logging
import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from seenbefore.errors import ConfigError, NotFoundError
from seenbefore.notify import (
    DeliveryResult,
    Notification,
    Notifier,
    Outbox,
    PagerDutyNotifier,
    RetryPolicy,
    RetryReport,
    Router,
    SlackNotifier,
    build_router,
    dedup_key,
)
from tests.notify.conftest import HANG, Receiver, Sleeps, make_anomaly

KEY = "R0UTINGKEY0000000000000000000002"
HOOK = "/services/T0000/B0000/routertestsecret02"
SIGNATURE = "latency_p99_ms up 7.1x, db_connections up 2.5x"
NO_JITTER = RetryPolicy(attempts=4, base_delay=0.5, max_delay=30.0, jitter=0.0)


@pytest.fixture
def outbox(tmp_path: Path) -> Outbox:
    return Outbox(tmp_path / "home" / "outbox.sqlite")


@pytest.fixture
def router(
    receiver: Receiver, receiver2: Receiver, client: httpx.Client, outbox: Outbox, sleeps: Sleeps
) -> Iterator[Router]:
    """``receiver`` plays Slack, ``receiver2`` plays PagerDuty."""
    receiver2.default = (202, '{"status":"success","message":"Event processed"}', {})
    notifiers: dict[str, Notifier] = {
        "slack": SlackNotifier(receiver.url(HOOK), client=client, timeout=0.2),
        "pagerduty": PagerDutyNotifier(KEY, url=receiver2.url("/v2/enqueue"), client=client),
    }
    with Router(notifiers, outbox=outbox, retry=NO_JITTER, sleep=sleeps) as r:
        yield r


def actions(rec: Receiver) -> list[str]:
    return [r.json().get("event_action", "slack") for r in rec.requests]


@pytest.mark.parametrize(
    ("severity", "slack_calls", "pagerduty_calls"),
    [("SEV1", 1, 1), ("SEV2", 1, 0), ("SEV3", 1, 0), ("SEV4", 0, 0), (None, 1, 0)],
)
def test_default_routes_by_severity(
    router: Router,
    receiver: Receiver,
    receiver2: Receiver,
    severity: str | None,
    slack_calls: int,
    pagerduty_calls: int,
) -> None:
    results = router.notify(make_anomaly(severity=severity), SIGNATURE)
    assert len(receiver.requests) == slack_calls and len(receiver2.requests) == pagerduty_calls
    assert all(r.ok for r in results.values()) and len(results) == slack_calls + pagerduty_calls


def test_routes_come_from_config(
    receiver: Receiver, receiver2: Receiver, client: httpx.Client, outbox: Outbox
) -> None:
    notifiers: dict[str, Notifier] = {
        "slack": SlackNotifier(receiver.url(HOOK), client=client),
        "pagerduty": PagerDutyNotifier(KEY, url=receiver2.url("/v2/enqueue"), client=client),
    }
    routes = {"SEV1": ["pagerduty"], "SEV2": ["pagerduty", "slack"]}
    router = Router(notifiers, outbox=outbox, routes=routes)
    assert set(router.notify(make_anomaly(severity="SEV2"), SIGNATURE)) == {"pagerduty", "slack"}
    assert set(router.notify(make_anomaly(severity="SEV1"), SIGNATURE)) == {"pagerduty"}
    assert router.notify(make_anomaly(severity="SEV3"), SIGNATURE) == {}  # not routed
    assert len(receiver.requests) == 1 and len(receiver2.requests) == 2


def test_default_routes_skip_channels_that_are_not_configured(
    receiver: Receiver, client: httpx.Client, outbox: Outbox
) -> None:
    router = Router({"slack": SlackNotifier(receiver.url(HOOK), client=client)}, outbox=outbox)
    assert router.channels_for("SEV1") == ("slack",)


@pytest.mark.parametrize(
    ("routes", "message"),
    [
        ({"SEV5": ["slack"]}, "'SEV5' is not a severity"),
        ({"SEV1": ["pagerduty"]}, r"names \['pagerduty'\], which is not configured"),
        ({"SEV1": "slack"}, "expected a list of channel names"),
    ],
)
def test_bad_routes_are_config_errors(
    receiver: Receiver,
    client: httpx.Client,
    outbox: Outbox,
    routes: dict[str, object],
    message: str,
) -> None:
    notifiers = {"slack": SlackNotifier(receiver.url(HOOK), client=client)}
    with pytest.raises(ConfigError, match=message):
        Router(notifiers, outbox=outbox, routes=routes)  # type: ignore[arg-type]


def test_backoff_is_exponential_and_capped() -> None:
    policy = RetryPolicy(attempts=8, base_delay=0.5, max_delay=4.0, jitter=0.0)
    assert [policy.delay(n, 0.0) for n in range(1, 7)] == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    assert policy.delay(1, 0.0, retry_after=3.0) == 3.0  # the receiver asked for longer
    assert policy.delay(1, 0.0, retry_after=600.0) == 4.0  # but never above max_delay


def test_jitter_stays_within_its_band() -> None:
    policy = RetryPolicy(base_delay=1.0, multiplier=2.0, jitter=0.5)
    rng = random.Random(7)
    waits = [policy.delay(3, rng.random()) for _ in range(200)]
    assert all(2.0 <= w <= 4.0 for w in waits)  # cap 4.0, half of it random
    assert len(set(waits)) == 200
    assert policy.delay(3, 0.0) == 2.0 and policy.delay(3, 0.999) == pytest.approx(3.998)


@pytest.mark.parametrize(
    "kwargs", [{"attempts": 0}, {"base_delay": 5.0, "max_delay": 1.0}, {"jitter": 1.5}]
)
def test_bad_retry_policy_is_a_config_error(kwargs: dict[str, float]) -> None:
    with pytest.raises(ConfigError, match="notify retry policy"):
        RetryPolicy(**kwargs)  # type: ignore[arg-type]


def test_retries_a_500_then_succeeds(
    router: Router, receiver: Receiver, outbox: Outbox, sleeps: Sleeps
) -> None:
    receiver.answer((500, "rollup_error"), (503, "busy"))
    result = router.notify(make_anomaly(severity="SEV2"), SIGNATURE)["slack"]
    assert (result.ok, result.attempts, result.body) == (True, 3, "ok")
    assert len(receiver.requests) == 3
    assert sleeps == [0.5, 1.0]
    assert outbox.entries() == []


def test_a_4xx_is_not_retried_and_is_kept_dead(
    router: Router, receiver: Receiver, outbox: Outbox, sleeps: Sleeps
) -> None:
    receiver.answer((404, "channel_not_found"))
    result = router.notify(make_anomaly(severity="SEV2"), SIGNATURE)["slack"]
    assert (result.ok, result.attempts, len(receiver.requests), sleeps) == (False, 1, 1, [])
    [entry] = outbox.entries()
    assert (entry.state, entry.attempts, entry.last_status) == ("dead", 1, 404)
    assert entry.last_error == "HTTP 404: channel_not_found"
    assert outbox.pending() == []
    outbox.requeue(entry.id)
    assert [e.id for e in outbox.pending()] == [entry.id]
    with pytest.raises(NotFoundError, match="not a dead entry"):
        outbox.requeue(entry.id)


def test_persistent_failure_goes_to_the_outbox_and_is_delivered_later(
    router: Router, receiver: Receiver, receiver2: Receiver, outbox: Outbox, sleeps: Sleeps
) -> None:
    receiver.default = (500, "rollup_error", {})
    anomaly = make_anomaly()
    results = router.notify(anomaly, SIGNATURE)  # must not raise
    assert results["pagerduty"].ok and not results["slack"].ok
    assert results["slack"].attempts == 4 and sleeps == [0.5, 1.0, 2.0]
    [entry] = outbox.pending()
    assert (entry.channel, entry.state, entry.attempts, entry.last_status) == (
        "slack",
        "pending",
        4,
        500,
    )
    assert entry.last_error == "HTTP 500: rollup_error"
    assert entry.message == Notification(anomaly, SIGNATURE)  # the whole anomaly survives

    assert router.retry_pending() == RetryReport(pending=1)  # still down
    assert outbox.entries()[0].attempts == 5

    receiver.default = (200, "ok", {})
    assert router.retry_pending() == RetryReport(delivered=1)
    [done] = outbox.entries()
    assert (done.state, done.attempts, done.last_status, done.last_error) == (
        "delivered",
        6,
        200,
        "",
    )
    assert receiver.requests[-1].json() == receiver.requests[0].json()
    assert router.retry_pending() == RetryReport()  # nothing left


def test_outbox_survives_a_new_process(
    receiver: Receiver, client: httpx.Client, tmp_path: Path, sleeps: Sleeps
) -> None:
    path = tmp_path / "outbox.sqlite"
    receiver.default = (503, "", {})
    slack = {"slack": SlackNotifier(receiver.url(HOOK), client=client)}
    Router(slack, outbox=Outbox(path), retry=NO_JITTER, sleep=sleeps).notify(
        make_anomaly(), SIGNATURE
    )
    receiver.default = (200, "ok", {})
    later = Router(slack, outbox=Outbox(path), sleep=sleeps)
    assert later.retry_pending() == RetryReport(delivered=1)


def test_timeouts_are_retried_and_kept(
    router: Router, receiver: Receiver, outbox: Outbox, sleeps: Sleeps
) -> None:
    router.retry = RetryPolicy(attempts=2, jitter=0.0)
    receiver.answer((HANG, ""), (HANG, ""))
    result = router.notify(make_anomaly(severity="SEV3"), SIGNATURE)["slack"]
    assert (result.ok, result.attempts, result.status) == (False, 2, None)
    assert outbox.pending()[0].last_error == "timed out after 0.2s (ReadTimeout)"
    assert sleeps == [0.5]


def test_unreachable_receiver_does_not_raise(
    outbox: Outbox, sleeps: Sleeps, closed_port: int
) -> None:
    slack = SlackNotifier(f"http://127.0.0.1:{closed_port}{HOOK}", timeout=1)
    with Router({"slack": slack}, outbox=outbox, retry=NO_JITTER, sleep=sleeps) as router:
        result = router.notify(make_anomaly(severity="SEV2"), SIGNATURE)["slack"]
    assert not result.ok and result.error.startswith("ConnectError")
    assert outbox.pending()[0].attempts == 4


class Exploding:
    def send(self, message: Notification) -> DeliveryResult:
        raise RuntimeError(f"bug while sending {message.anomaly.id}")


def test_a_notifier_that_raises_never_crashes_the_caller(outbox: Outbox, sleeps: Sleeps) -> None:
    router = Router({"slack": Exploding()}, outbox=outbox, retry=NO_JITTER, sleep=sleeps)
    result = router.notify(make_anomaly(severity="SEV2"), SIGNATURE)["slack"]
    assert (result.ok, result.attempts) == (False, 4)
    assert outbox.pending()[0].last_error == "RuntimeError: bug while sending A-1"


def test_an_unwritable_outbox_logs_the_whole_notification(
    outbox: Outbox,
    sleeps: Sleeps,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(*args: object) -> int:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(outbox, "add", broken)
    router = Router({"slack": Exploding()}, outbox=outbox, retry=NO_JITTER, sleep=sleeps)
    with caplog.at_level(logging.ERROR, logger="seenbefore.notify"):
        router.notify(make_anomaly(severity="SEV2"), SIGNATURE)
    assert "disk I/O error" in caplog.text and '"id": "A-1"' in caplog.text


def test_resolve_waits_behind_an_undelivered_trigger(
    router: Router, receiver2: Receiver, outbox: Outbox
) -> None:
    anomaly = make_anomaly(severity="SEV1", rules=())
    router.routes = {"SEV1": ("pagerduty",)}
    receiver2.answer(*[(500, "")] * 4)
    assert not router.notify(anomaly, SIGNATURE)["pagerduty"].ok
    queued = router.notify(anomaly, SIGNATURE, action="resolve")["pagerduty"]
    assert (queued.ok, queued.attempts) == (False, 0)
    assert "queued behind 1 undelivered message(s)" in queued.error
    assert actions(receiver2) == ["trigger"] * 4  # the resolve was not sent ahead

    assert router.retry_pending() == RetryReport(delivered=2)
    assert actions(receiver2)[-2:] == ["trigger", "resolve"]
    keys = {r.json()["dedup_key"] for r in receiver2.requests}
    assert keys == {dedup_key(anomaly)}


def test_retry_pass_skips_the_rest_of_a_channel_that_is_still_down(
    router: Router, receiver: Receiver, outbox: Outbox
) -> None:
    router.retry = RetryPolicy(attempts=1)
    receiver.default = (500, "", {})
    for n in range(3):
        router.notify(make_anomaly(id=f"A-{n}", service=f"svc{n}", severity="SEV2"), SIGNATURE)
    assert len(outbox.pending()) == 3 and len(receiver.requests) == 3
    assert router.retry_pending() == RetryReport(pending=1, skipped=2)
    assert len(receiver.requests) == 4


def test_entries_for_a_channel_no_longer_configured_stay_pending(
    router: Router, receiver: Receiver, outbox: Outbox, sleeps: Sleeps
) -> None:
    receiver.default = (500, "", {})
    router.notify(make_anomaly(severity="SEV2"), SIGNATURE)
    slack_only_gone = Router({}, outbox=outbox, sleep=sleeps)
    assert slack_only_gone.retry_pending() == RetryReport(skipped=1)
    [entry] = outbox.pending()
    assert entry.last_error.startswith("channel 'slack' is not configured now")


def test_build_router_from_a_mapping(
    receiver: Receiver, receiver2: Receiver, client: httpx.Client, tmp_path: Path, sleeps: Sleeps
) -> None:
    receiver2.default = (202, "{}", {})
    config = {
        "routes": {"SEV1": ["pagerduty", "slack"], "SEV2": ["slack"], "SEV3": [], "SEV4": []},
        "slack": {"webhook_url": receiver.url(HOOK), "timeout": 2},
        "pagerduty": {"routing_key": KEY, "url": receiver2.url("/v2/enqueue")},
        "retry": {"attempts": 2, "base_delay": 0.1, "jitter": 0},
    }
    outbox_path = tmp_path / "home" / "outbox.sqlite"
    with build_router(config, outbox_path=outbox_path, client=client, sleep=sleeps) as router:
        assert router.retry == RetryPolicy(attempts=2, base_delay=0.1, jitter=0.0)
        assert set(router.notify(make_anomaly(), SIGNATURE)) == {"pagerduty", "slack"}
    assert outbox_path.exists()


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"slak": {}}, r"unknown keys \['slak'\]"),
        (
            {"slack": {"webhook_url": 42}},
            r"slack.webhook_url is missing or not a string \(a secret",
        ),
        ({"pagerduty": {"routing_key": KEY, "tiemout": 3}}, r"unknown keys \['tiemout'\]"),
        ({"retry": {"attempts": "four"}}, "attempts is 'four'; expected an integer"),
        ({"routes": {"SEV1": ["pagerduty"]}}, "not configured"),
    ],
)
def test_build_router_config_errors(
    config: dict[str, object], message: str, tmp_path: Path
) -> None:
    with pytest.raises(ConfigError, match=message):
        build_router(config, outbox_path=tmp_path / "outbox.sqlite")


def test_an_outbox_that_cannot_be_opened_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a directory")
    with pytest.raises(ConfigError, match="cannot open it as SQLite"):
        Outbox(tmp_path / "file" / "outbox.sqlite")


def test_notification_round_trips_through_json() -> None:
    message = Notification(
        make_anomaly(severity=None), SIGNATURE, action="acknowledge", thread_ts="1.2"
    )
    assert Notification.from_json(message.to_json()) == message
