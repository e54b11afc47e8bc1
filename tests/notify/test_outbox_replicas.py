"""The outbox over PostgreSQL survives the replica that queued it (issue 26, part 4).

Replica A, a real process, routes notifications while the receiver is down (each is queued in
the database), then starts a retry pass: it claims every queued notification, fails on the
first, and sleeps in its backoff holding the claims, when it is killed with SIGKILL. Replica B
(the CLI, `seenbefore notify retry`, another process) gets nothing while A's lease lasts; once it
has run out, B delivers every notification, and a further pass sends nothing more. The
receiver (a local HTTP server on 127.0.0.1) gets each notification exactly once here, because A
died before reaching it; in general the outbox is at-least-once, and each PagerDuty event
carries a stable ``dedup_key`` (the anomaly's fingerprint) for the receiver to fold repeats.
Bounded: N notifications, a 6 s lease, and every wait has a deadline.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path

import psycopg
import pytest

from seenbefore.storage.postgres.store import PostgresStore
from tests.conftest import REPO
from tests.notify.conftest import Receiver, _handler

pytestmark = pytest.mark.integration

N = 5
LEASE_S = 6.0
KEY = "R0UTINGKEY0000000000000000000003"
# Replica A: the CLI's own router (cli/common.py: the outbox follows SEENBEFORE_DATABASE_URL);
# it routes N SEV1 anomalies, then claims them all for a retry pass that sleeps in its backoff.
REPLICA_A = f"""
import sys
from seenbefore.cli.common import notify_router
from tests.notify.conftest import make_anomaly
router = notify_router()
for n in range({N}):
    router.notify(make_anomaly(id=f"A-{{n}}", service=f"svc{{n}}", severity="SEV1"), "sig")
print("queued", flush=True)
router.retry_pending(attempts=2)  # claims, fails once, then sleeps 60 s holding the claims
print("not killed", flush=True)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def receiver_port() -> int:
    return free_port()  # nothing listens on it until the receiver comes up


@pytest.fixture
def env(tmp_path: Path, pg_url: str, receiver_port: int) -> dict[str, str]:
    PostgresStore(pg_url).close()  # migrated
    config = tmp_path / "config.toml"
    config.write_text(
        f"""
[notify.pagerduty]
routing_key = "{KEY}"
url = "http://127.0.0.1:{receiver_port}/v2/enqueue"
timeout = 2

[notify.routes]
SEV1 = ["pagerduty"]

[notify.retry]
attempts = 1
base_delay = 60
max_delay = 60
jitter = 0

[notify.outbox]
lease_s = {LEASE_S}
"""
    )
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("SEENBEFORE_")},
        "SEENBEFORE_HOME": str(tmp_path / "home"),
        "SEENBEFORE_CONFIG": str(config),
        "SEENBEFORE_DATABASE_URL": pg_url,
        "PYTHONPATH": os.pathsep.join(
            [str(REPO / "src"), str(REPO), os.environ.get("PYTHONPATH", "")]
        ),
    }


@pytest.fixture
def receiver(receiver_port: int) -> Iterator[tuple[Receiver, Callable[[], None]]]:
    rec = Receiver(default=(202, '{"status":"success"}', {}))
    servers: list[ThreadingHTTPServer] = []
    threads: list[threading.Thread] = []

    def up() -> None:
        server = ThreadingHTTPServer(("127.0.0.1", receiver_port), _handler(rec))
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01})
        thread.start()
        servers.append(server)
        threads.append(thread)

    yield rec, up
    for server in servers:
        server.shutdown()
        server.server_close()
    for thread in threads:
        thread.join(5)


def outbox(pg_url: str) -> list[tuple[int, str, bool]]:
    """(attempts, state, leased now) per row, in id order."""
    with psycopg.connect(pg_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT attempts, state, coalesce(claimed_until > clock_timestamp(), false)"
            " FROM seenbefore.notify_outbox ORDER BY id"
        ).fetchall()
    return [(int(a), str(s), bool(c)) for a, s, c in rows]


def retry_b(env: dict[str, str]) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-m", "seenbefore", "notify", "retry", "--json"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def wait_for(what: str, check: Callable[[], object], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    pytest.fail(f"timed out after {timeout_s} s waiting for {what}")


def test_a_killed_replicas_notifications_are_delivered_by_another(
    env: dict[str, str], pg_url: str, receiver: tuple[Receiver, Callable[[], None]]
) -> None:
    rec, up = receiver
    a = subprocess.Popen(
        [sys.executable, "-c", REPLICA_A],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        # queued while the receiver is down, then all claimed by A's retry pass
        wait_for(
            "replica A to queue and claim",
            lambda: (rows := outbox(pg_url)) and len(rows) == N and all(r[2] for r in rows),
            90,
        )
        assert a.poll() is None, a.communicate()
        a.send_signal(signal.SIGKILL)
        a.wait(10)
    finally:
        if a.poll() is None:
            a.kill()
            a.wait(10)
    out, err = a.communicate()
    assert a.returncode == -signal.SIGKILL and "queued" in out and "not killed" not in out, err
    assert [r[1] for r in outbox(pg_url)] == ["pending"] * N
    up()  # the receiver is back

    early = retry_b(env)  # within A's lease: B takes nothing
    assert early["delivered"] == 0 and rec.requests == []

    wait_for("A's lease to run out", lambda: not any(r[2] for r in outbox(pg_url)), LEASE_S + 30)
    drained = retry_b(env)
    assert drained["delivered"] == N and drained["pending"] == 0, drained
    assert [r[1] for r in outbox(pg_url)] == ["delivered"] * N
    events = [r.json() for r in rec.requests]
    anomalies = sorted(e["payload"]["custom_details"]["anomaly_id"] for e in events)
    assert anomalies == sorted(f"A-{n}" for n in range(N))  # each exactly once
    assert len({e["dedup_key"] for e in events}) == N  # one stable key per anomaly

    again = retry_b(env)  # nothing left: nothing sent twice
    assert again["delivered"] == 0 and len(rec.requests) == N
