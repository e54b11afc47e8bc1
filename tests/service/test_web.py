"""The web review queue over HTTP (the browser test drives the same pages in Chromium)."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from seenbefore.service.sessions import SESSION_COOKIE, SessionSigner
from tests.conftest import postmortem_text
from tests.service.conftest import Service


def _csrf(html: str) -> str:
    found = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert found, html[:500]
    return found.group(1)


def login(client: TestClient, token: str) -> str:
    form = client.get("/login")
    assert form.status_code == 200
    response = client.post(
        "/login", data={"token": token, "csrf_token": _csrf(form.text)}, follow_redirects=False
    )
    assert response.status_code == 303, response.text
    assert response.headers["location"] == "/reviews"
    cookie = next(
        h for h in response.headers.get_list("set-cookie") if h.startswith(SESSION_COOKIE)
    )
    return cookie


def test_login_sets_a_hardened_session_cookie_without_the_token(service: Service) -> None:
    cookie = login(service.client, service.tokens["reviewer"])
    lowered = cookie.lower()
    assert "httponly" in lowered and "samesite=strict" in lowered and "path=/" in lowered
    assert service.tokens["reviewer"] not in cookie
    page = service.client.get("/reviews")
    assert page.status_code == 200
    assert "reviewer-user" in page.text
    assert "default-src 'none'" in page.headers["content-security-policy"]


def test_pages_need_a_login_and_a_bad_token_is_refused(service: Service) -> None:
    assert service.client.get("/reviews", follow_redirects=False).headers["location"] == "/login"
    form = service.client.get("/login")
    bad = service.client.post("/login", data={"token": "sb_wrong", "csrf_token": _csrf(form.text)})
    assert bad.status_code == 401
    assert "unknown token" in bad.text
    forged = service.client.post("/login", data={"token": "x", "csrf_token": "forged"})
    assert forged.status_code == 400
    service.client.cookies.set(SESSION_COOKIE, "e30.deadbeef")
    assert service.client.get("/reviews", follow_redirects=False).status_code == 303


def test_queue_decide_and_csrf(service: Service) -> None:
    text = {"text": "checkout database connections at the pool limit", "severity": "SEV1"}
    rid = service.as_("responder", "post", "/v1/investigations", json=text).json()["id"]
    login(service.client, service.tokens["reviewer"])
    queue = service.client.get("/reviews").text
    assert rid in queue and "SEV1" in queue
    page = service.client.get(f"/reviews/{rid}")
    assert "POOL-1" in page.text and 'id="novel-flag"' in page.text
    assert "matched by" in page.text
    token = _csrf(page.text)
    refused = service.client.post(
        f"/reviews/{rid}/dismiss", data={"reason": "wrong_precedent", "csrf_token": "nope"}
    )
    assert refused.status_code == 400 and "CSRF" in refused.text
    dismissed = service.client.post(
        f"/reviews/{rid}/dismiss",
        data={"reason": "wrong_precedent", "note": "not the pool", "csrf_token": token},
    )
    assert dismissed.status_code == 200  # followed the redirect to the review page
    assert re.search(r'id="review-round">2<', dismissed.text)
    assert "not the pool" in dismissed.text  # the history shows the note
    # round 2 says no precedent: no "approve as drafted", a short form asking for the account
    assert 'id="account-form"' in dismissed.text and 'id="approve"' not in dismissed.text
    assert "cannot be approved as drafted: its draft says no precedent" in dismissed.text
    assert '<option value="connection-pool-exhaustion">' in dismissed.text
    asked = service.client.post(
        f"/reviews/{rid}/approve",
        data={
            "csrf_token": token,
            "title": "Checkout stalled on the pool",
            "root_cause": "A slow fraud call held connections open.",
        },
    )
    assert asked.status_code == 422  # the form again, what was written kept
    assert 'id="account-error"' in asked.text
    assert "Write resolution (what fixed it), type (the failure mode" in asked.text
    assert ">A slow fraud call held connections open.</textarea>" in asked.text
    approved = service.client.post(
        f"/reviews/{rid}/approve",
        data={
            "csrf_token": token,
            "title": "Checkout stalled on the pool",
            "root_cause": "A slow fraud call held connections open.",
            "resolution": "Moved the fraud call out of the transaction.",
            "type": "connection-pool-exhaustion",
        },
    )
    assert 'id="review-status">approved<' in approved.text
    assert 'id="postmortem-link"' in approved.text
    found = service.client.post("/search", data={"q": "checkout stalled", "csrf_token": token})
    assert f"PM-{rid}" in found.text


def test_viewers_cannot_decide(service: Service) -> None:
    rid = service.as_(
        "responder", "post", "/v1/investigations", json={"text": "pool limit"}
    ).json()["id"]
    login(service.client, service.tokens["viewer"])
    page = service.client.get(f"/reviews/{rid}")
    assert 'id="decide"' not in page.text
    refused = service.client.post(f"/reviews/{rid}/approve", data={"csrf_token": _csrf(page.text)})
    assert refused.status_code == 403


def test_retrieved_text_is_escaped_and_cleaned(service: Service) -> None:
    body = (
        "## Summary\nThe <script>alert(1)</script> pool\u200b exhausted.\n\n"
        "## Root cause\nA <img src=x onerror=alert(2)> pool leak exhausted connections.\n"
    )
    doc = postmortem_text("XSS-1", title="Pool <b>exhausted</b> again", body=body)
    service.as_("admin", "post", "/v1/postmortems", json={"markdown": doc})
    rid = service.as_(
        "responder", "post", "/v1/investigations", json={"text": "pool leak exhausted"}
    ).json()["id"]
    login(service.client, service.tokens["reviewer"])
    page = service.client.get(f"/reviews/{rid}").text
    assert "XSS-1" in page
    assert "<script>alert(1)" not in page and "<img src=x" not in page
    assert "&lt;img src=x onerror=alert(2)&gt;" in page
    doc_page = service.client.get("/postmortems/XSS-1").text
    assert "&lt;script&gt;" in doc_page and "\u200b" not in doc_page


def test_session_follows_the_token(service: Service) -> None:
    login(service.client, service.tokens["reviewer"])
    store = service.app.state.service.kb.store
    from seenbefore.security.tokens import TokenStore

    tokens = TokenStore(store)
    tokens.revoke(next(i.id for i in tokens.list() if i.name == "reviewer-user"))
    assert service.client.get("/reviews", follow_redirects=False).status_code == 303


def test_signed_session_expires_and_rejects_tampering() -> None:
    now = [1000.0]
    signer = SessionSigner(b"k" * 32, ttl_s=60, clock=lambda: now[0])
    cookie, session = signer.issue("tok_1")
    assert signer.read(cookie) == session
    payload, signature = cookie.split(".")
    assert signer.read(payload + "." + "0" * len(signature)) is None
    assert SessionSigner(b"j" * 32).read(cookie) is None  # another store's secret
    now[0] += 61
    assert signer.read(cookie) is None
    assert signer.check_csrf(session, session.csrf) and not signer.check_csrf(session, "")
