"""The service over the PostgreSQL store: the same API on a shared database, sessions valid at
every replica, deletion in the database, and a database that is down or goes away makes the
service not ready (503 with the reason), never a crash."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from seenbefore.config import Settings
from seenbefore.kb import KnowledgeBase
from seenbefore.notify import DeliveryResult, Notification, Outbox
from seenbefore.security.tokens import TokenStore
from seenbefore.service.app import create_app
from seenbefore.storage.factory import open_store
from seenbefore.storage.postgres.pool import PgOptions
from seenbefore.storage.postgres.schema import OWNER_ROLE
from seenbefore.storage.postgres.store import PostgresStore
from tests.notify.conftest import make_anomaly
from tests.pg import LOGIN_ROLE, LocalPostgres
from tests.service.conftest import ROLES, service_settings, write_kb
from tests.service.test_reviews import POOL_ALERT

pytestmark = pytest.mark.integration


def pg_home(tmp_path: Path, url: str, name: str = "home") -> tuple[Settings, dict[str, str]]:
    """The small service KB ingested into the database at ``url``; one token per role."""
    settings = service_settings(tmp_path / name, database_url=url)
    tokens: dict[str, str] = {}
    with KnowledgeBase(settings, store=open_store(settings)) as kb:
        kb.ingest([write_kb(tmp_path / "docs")])
        store = TokenStore(kb.store)
        for role in ROLES:
            tokens[role], _ = store.create(f"{role}-user", role, ["general"])
    return settings, tokens


def auth(tokens: dict[str, str], role: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {tokens[role]}"}


@pytest.fixture
def pg_service(tmp_path: Path, pg_url: str) -> Iterator[tuple[TestClient, dict[str, str]]]:
    settings, tokens = pg_home(tmp_path, pg_url)
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        yield client, tokens


def test_the_review_loop_runs_over_postgres(
    pg_service: tuple[TestClient, dict[str, str]], tmp_path: Path
) -> None:
    client, tokens = pg_service
    ready = client.get("/readyz").json()
    assert ready["status"] == "ready" and ready["generation"] >= 3
    assert client.app.state.service.kb.store.dialect == "postgres"  # type: ignore[attr-defined]
    assert client.get("/v1/postmortems/VAULT-1", headers=auth(tokens, "viewer")).status_code == 404
    review = client.post(
        "/v1/investigations", json={"text": POOL_ALERT}, headers=auth(tokens, "responder")
    ).json()
    assert review["draft"]["cited_incidents"][0] == "POOL-1"
    approved = client.post(
        f"/v1/reviews/{review['id']}/approve", headers=auth(tokens, "reviewer")
    ).json()
    new_id = approved["postmortem_id"]
    assert approved["status"] == "approved" and new_id == f"PM-{review['id']}"
    found = client.post(
        "/v1/search", json={"query": POOL_ALERT}, headers=auth(tokens, "viewer")
    ).json()
    assert new_id in [r["id"] for r in found["results"]]
    again = client.post(f"/v1/reviews/{review['id']}/approve", headers=auth(tokens, "reviewer"))
    assert again.status_code == 409
    # a notification that quotes the draft waits in the database's outbox (not a file)
    store = client.app.state.service.kb.store  # type: ignore[attr-defined]
    outbox = Outbox(rows=store.outbox_rows(tmp_path / "unused.sqlite"))
    outbox.add(
        "slack",
        Notification(make_anomaly(), "pool saturated", draft=review["draft"]),
        DeliveryResult.failure("HTTP 503", retryable=True, status=503),
    )
    assert outbox.local_file is None and len(outbox.pending()) == 1
    gone = client.delete("/v1/postmortems/POOL-1", headers=auth(tokens, "admin"))
    assert gone.status_code == 200
    assert gone.json()["derived_deleted"] == [new_id]  # the approved draft quoted it
    assert gone.json()["reviews_purged"] == 1
    assert gone.json()["notifications_purged"] == 1 and outbox.entries() == []
    assert not (tmp_path / "unused.sqlite").exists()
    audit = client.get("/v1/audit?limit=50", headers=auth(tokens, "admin")).json()["records"]
    actions = [r["action"] for r in audit]
    assert {"search", "review.start", "review.approve", "delete"} <= set(actions)
    verified = client.app.state.service.audit.verify()  # type: ignore[attr-defined]
    assert verified.ok and verified.checked == len(audit)


def test_a_session_signed_by_one_replica_is_good_at_another(tmp_path: Path, pg_url: str) -> None:
    settings, tokens = pg_home(tmp_path, pg_url)
    other = settings.model_copy(update={"home": tmp_path / "home-b"})
    with TestClient(create_app(settings)) as a, TestClient(create_app(other)) as b:
        signer_a = a.app.state.service.sessions  # type: ignore[attr-defined]
        signer_b = b.app.state.service.sessions  # type: ignore[attr-defined]
        reviewer = a.app.state.service.tokens.authenticate(tokens["reviewer"])  # type: ignore[attr-defined]
        cookie, session = signer_a.issue(reviewer.token_id)
        assert signer_b.read(cookie) == session
        b.cookies.set("sb_session", cookie)
        assert b.get("/reviews").status_code == 200  # the web queue, logged in at A


def test_two_replicas_together_allow_the_rate_limit_once(tmp_path: Path, pg_url: str) -> None:
    """Each replica alone would allow 10 a minute; over one database the two share the bucket,
    so 30 requests alternating between them get at most 10 (plus what refilled meanwhile)."""
    settings, tokens = pg_home(tmp_path, pg_url)
    limited = settings.model_copy(update={"rate_limit_per_minute": 10})
    other = limited.model_copy(update={"home": tmp_path / "home-b"})
    with TestClient(create_app(limited)) as a, TestClient(create_app(other)) as b:
        started = time.monotonic()
        codes = [
            (a, b)[n % 2].get("/v1/reviews", headers=auth(tokens, "viewer")).status_code
            for n in range(30)
        ]
        elapsed = time.monotonic() - started
    assert set(codes) == {200, 429}
    assert 10 <= codes.count(200) <= 10 + int(elapsed / 6) + 1, (codes, elapsed)
    assert codes[:10] == [200] * 10 and codes[10] == 429  # the eleventh, at either replica


def dead_port_url() -> str:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"postgresql://{LOGIN_ROLE}@127.0.0.1:{port}/nowhere"


def wait_for(client: TestClient, status: str, timeout_s: float = 20.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        body: dict[str, Any] = client.get("/readyz").json()
        if body["status"] == status or time.monotonic() > deadline:
            return body
        time.sleep(0.2)


def test_a_database_down_at_startup_is_not_ready_then_ready_when_it_answers(
    tmp_path: Path, pg_server: LocalPostgres
) -> None:
    settings = service_settings(tmp_path / "home", database_url=dead_port_url())
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        down = client.get("/readyz")
        assert down.status_code == 503
        assert "unreachable" in down.json()["reason"] and "nowhere" in down.json()["reason"]
        assert client.get("/healthz").status_code == 200  # the process is alive
        search = client.post("/v1/search", json={"query": "x"})
        assert search.status_code == 503 and search.json()["type"].endswith("store-unavailable")

    # a database that does not exist yet: the service waits for it, then serves it
    name = f"late_{int(time.time() * 1000)}"
    settings = service_settings(tmp_path / "late", database_url=pg_server.url(name, LOGIN_ROLE))
    try:
        with TestClient(create_app(settings), raise_server_exceptions=False) as client:
            assert client.get("/readyz").status_code == 503
            with pg_server.admin() as conn:  # what create_database does, with our name
                conn.execute(f'CREATE DATABASE "{name}"')
                conn.execute(f'GRANT CREATE ON DATABASE "{name}" TO {OWNER_ROLE}')
            assert wait_for(client, "ready")["status"] == "ready"
    finally:
        pg_server.drop_database(name)


def test_a_database_that_goes_away_makes_readyz_503_and_the_process_lives(
    tmp_path: Path, pg_server: LocalPostgres
) -> None:
    name = pg_server.create_database()
    url = pg_server.url(name, LOGIN_ROLE)
    settings, tokens = pg_home(tmp_path, url)
    store = PostgresStore(url, options=PgOptions(connect_timeout_s=1, retries=1))
    kb = KnowledgeBase(settings, store=store)
    with TestClient(create_app(settings, kb=kb), raise_server_exceptions=False) as client:
        assert client.get("/readyz").status_code == 200
        pg_server.drop_database(name)  # terminates every connection; nothing to reconnect to
        broken = client.get("/readyz")
        assert broken.status_code == 503
        reason = broken.json()["reason"]
        assert reason.startswith("store unusable: StoreError") and "unreachable" in reason
        assert "seenbefore-test-only" not in reason  # never the password
        assert client.get("/healthz").status_code == 200
        search = client.post("/v1/search", json={"query": "pool"}, headers=auth(tokens, "viewer"))
        assert search.status_code == 503


def test_a_service_login_waits_not_ready_until_the_database_is_set_up(
    tmp_path: Path, pg_url: str, pg_service_url: str
) -> None:
    """A replica on the service login meets a database nobody has migrated: not ready, saying
    what to run; once `database setup` has run on the maintenance login (registering the
    replica's tier key), it opens and serves."""
    from seenbefore.storage.postgres.maintenance import Maintenance

    key = "sbk_" + "W" * 43
    settings = service_settings(
        tmp_path / "home", database_url=pg_service_url, database_tier_key=key
    )
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        waiting = client.get("/readyz")
        assert waiting.status_code == 503
        assert "seenbefore database setup" in waiting.json()["reason"]
        with Maintenance(pg_url) as admin:  # what the overlay's setup Job does
            admin.setup_checkpoints()
            admin.make_key("replicas", None, key)
        assert wait_for(client, "ready", timeout_s=30.0)["status"] == "ready"
        assert client.app.state.service.kb.store.server.maintenance is False  # type: ignore[attr-defined]
