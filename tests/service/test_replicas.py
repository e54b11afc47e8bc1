"""Two `seenbefore serve` replicas (processes, ports and data directories of their own) over one
PostgreSQL database: what one ingests the other finds, and two approvals of one review sent to
the two replicas at the same instant take effect exactly once. They run as a split deployment
does (docs/postgres.md): `seenbefore database setup` on the maintenance login first, then the
replicas on the service login with a tier key."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import psycopg
import pytest

from seenbefore.security.audit import AuditLog
from seenbefore.storage.postgres.store import PostgresStore
from tests.conftest import REPO, postmortem_text

pytestmark = pytest.mark.integration

ADMIN = "sb_" + "R" * 43
TIER_KEY = "sbk_" + "K" * 43
MARKER = "periwinkle semaphore"  # words no sample postmortem has
BODY = f"""## Summary
Order exports stalled for two hours.

## Detection
The export queue grew and the {MARKER} lock was held by one worker.

## Root cause
A worker crashed while holding the {MARKER} lock, so no other worker could take exports.

## Resolution
Released the lock by hand and gave it a lease that expires.
"""


@dataclass
class Replica:
    name: str
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def client(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {ADMIN}"}, timeout=60.0
        )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def replica_env(home: Path, database_url: str) -> dict[str, str]:
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("SEENBEFORE_")},
        "SEENBEFORE_HOME": str(home),
        "SEENBEFORE_DATABASE_URL": database_url,
        "SEENBEFORE_DATABASE_TIER_KEY": TIER_KEY,
        "SEENBEFORE_EMBEDDER": "none",
        "SEENBEFORE_ADMIN_TOKEN": ADMIN,
        "SEENBEFORE_LOG_SAMPLE_FRACTION": "0",
    }


def set_up(tmp_path: Path, admin_url: str, service_url: str) -> None:
    """What a deployment runs before the replicas: migrations, checkpoint tables, the key."""
    env = replica_env(tmp_path / "setup", service_url) | {
        "SEENBEFORE_DATABASE_ADMIN_URL": admin_url
    }
    done = subprocess.run(
        [sys.executable, "-m", "seenbefore", "database", "setup", "--json"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def start(name: str, tmp_path: Path, database_url: str) -> Replica:
    port = free_port()
    env = replica_env(tmp_path / f"home-{name}", database_url)
    log = tmp_path / f"{name}.log"
    with log.open("wb") as out:  # the child keeps its own descriptor
        process = subprocess.Popen(
            [sys.executable, "-m", "seenbefore", "serve", "--no-sample", "--port", str(port),
             "--log-level", "warning"],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
    return Replica(name, f"http://127.0.0.1:{port}", process, log)


def wait_ready(replica: Replica, timeout_s: float = 90.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if replica.process.poll() is not None:
            pytest.fail(f"replica {replica.name} exited: {replica.log.read_text()[-3000:]}")
        try:
            if httpx.get(replica.url + "/readyz", timeout=5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    pytest.fail(f"replica {replica.name} not ready in {timeout_s} s: {replica.log.read_text()}")


@pytest.fixture
def replicas(tmp_path: Path, pg_url: str, pg_service_url: str) -> Iterator[tuple[Replica, Replica]]:
    set_up(tmp_path, pg_url, pg_service_url)
    started = [start(name, tmp_path, pg_service_url) for name in ("a", "b")]  # at once
    try:
        for replica in started:
            wait_ready(replica)
        yield started[0], started[1]
    finally:
        for replica in started:
            replica.process.terminate()
        for replica in started:
            try:
                replica.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                replica.process.kill()
                replica.process.wait(timeout=30)


def test_two_replicas_share_one_knowledge_base_and_decide_once(
    replicas: tuple[Replica, Replica], pg_url: str
) -> None:
    a, b = replicas
    with a.client() as at_a, b.client() as at_b:
        assert at_b.post("/v1/search", json={"query": MARKER}).json()["results"] == []
        doc = postmortem_text("EXPORT-7", title="Order exports stalled on a held lock", body=BODY)
        assert at_a.post("/v1/postmortems", json={"markdown": doc}).status_code == 201
        found = at_b.post("/v1/search", json={"query": MARKER}).json()["results"]
        assert [r["id"] for r in found][:1] == ["EXPORT-7"]  # B's index saw the generation move

        alert = {"text": f"exports stuck, {MARKER} lock held by a dead worker"}
        review = at_a.post("/v1/investigations", json=alert).json()
        assert review["draft"]["cited_incidents"][0] == "EXPORT-7"
        assert at_b.get(f"/v1/investigations/{review['id']}").json()["awaiting_decision"]

        barrier = threading.Barrier(2)
        statuses: dict[str, int] = {}

        def approve(name: str, client: httpx.Client) -> None:
            barrier.wait()
            statuses[name] = client.post(f"/v1/reviews/{review['id']}/approve").status_code

        threads = [
            threading.Thread(target=approve, args=(name, client))
            for name, client in (("a", at_a), ("b", at_b))
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(statuses.values()) == [200, 409], statuses

        done = at_b.get(f"/v1/investigations/{review['id']}").json()
        assert done["status"] == "approved" and done["postmortem_id"] == f"PM-{review['id']}"
        assert [e["action"] for e in done["history"]].count("approved") == 1
        assert [e["action"] for e in done["history"]].count("postmortem_written") == 1
        for client in (at_a, at_b):  # the approved postmortem is found through either replica
            hits = client.post("/v1/search", json={"query": MARKER}).json()["results"]
            assert f"PM-{review['id']}" in [r["id"] for r in hits]
        approvals = at_a.get("/v1/audit", params={"action": "review.approve"}).json()["records"]
        assert len(approvals) == 1

    with psycopg.connect(pg_url) as conn:  # the service tables carry no row-level security
        labels = conn.execute(
            "SELECT doc_id, label FROM seenbefore.calibration_labels WHERE review_id = %s",
            (review["id"],),
        ).fetchall()
    assert labels == [("EXPORT-7", 1)]
    with PostgresStore(pg_url) as store:
        assert [d for d in store.list_ids() if d.startswith("PM-")] == [f"PM-{review['id']}"]
        assert AuditLog(store).verify().ok  # both replicas appended to one chain
