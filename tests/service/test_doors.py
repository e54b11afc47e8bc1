"""Doors a hostile tester found (issue 22): cross-site approval through the JSON API with the web
session cookie, forms posted from another origin, a session cookie that outlives logout, and
failed authentication that is never throttled."""

from __future__ import annotations

import re
from typing import Any

import pytest
from fastapi.testclient import TestClient

from seenbefore.service.sessions import SESSION_COOKIE
from tests.service.conftest import MakeService, Service
from tests.service.test_web import _csrf, login

POOL = {"text": "checkout database connections at the pool limit", "severity": "SEV2"}
EVIL = "http://127.0.0.1:8081"  # another port of the same host: the same *site*, not origin


def _pending(service: Service) -> str:
    rid: str = service.as_("responder", "post", "/v1/investigations", json=POOL).json()["id"]
    return rid


def _cookie_value(set_cookie: str) -> str:
    return set_cookie.split(";", 1)[0].split("=", 1)[1]


def test_the_api_refuses_the_web_session_cookie(service: Service) -> None:
    """A page on another origin auto-submits an empty form to /v1/reviews/<id>/approve while a
    reviewer is logged in to the queue: the browser sends the session cookie, and no bearer."""
    rid = _pending(service)
    login(service.client, service.tokens["reviewer"])
    for method, url, kwargs in (
        ("post", f"/v1/reviews/{rid}/approve", {"data": {}}),
        ("post", f"/v1/reviews/{rid}/dismiss", {"data": {"reason": "other"}}),
        ("get", "/v1/reviews", {}),
        ("post", "/v1/search", {"json": {"query": "pool"}}),
    ):
        answer = service.client.request(method, url, headers={"Origin": EVIL}, **kwargs)
        assert answer.status_code == 401, (url, answer.text)
        assert "cookie does not open the API" in answer.json()["detail"]
    review = service.as_("reviewer", "get", f"/v1/investigations/{rid}").json()
    assert review["status"] == "pending"  # nothing was decided


@pytest.mark.parametrize(
    "headers",
    [{"Origin": EVIL}, {"Referer": EVIL + "/attack.html"}, {"Origin": "null"}],
    ids=["origin", "referer", "null-origin"],
)
def test_queue_forms_posted_from_another_origin_are_refused(
    service: Service, headers: dict[str, str]
) -> None:
    rid = _pending(service)
    login(service.client, service.tokens["reviewer"])
    token = _csrf(service.client.get(f"/reviews/{rid}").text)  # even with the right CSRF token
    for url, data in (
        (f"/reviews/{rid}/approve", {"csrf_token": token}),
        (f"/reviews/{rid}/dismiss", {"csrf_token": token, "reason": "other"}),
        ("/search", {"csrf_token": token, "q": "pool"}),
        ("/logout", {"csrf_token": token}),
    ):
        refused = service.client.post(url, data=data, headers=headers)
        assert refused.status_code == 403, (url, refused.text)
        assert "not from the review queue" in refused.text
    assert service.as_("reviewer", "get", f"/v1/investigations/{rid}").json()["status"] == "pending"
    # the same forms from the queue's own origin still work
    own = {"Origin": "http://testserver"}
    done = service.client.post(
        f"/reviews/{rid}/dismiss", data={"csrf_token": token, "reason": "other"}, headers=own
    )
    assert done.status_code == 200 and re.search(r'id="review-round">2<', done.text)


def test_login_from_another_origin_is_refused(service: Service) -> None:
    form = service.client.get("/login")
    refused = service.client.post(
        "/login",
        data={"token": service.tokens["reviewer"], "csrf_token": _csrf(form.text)},
        headers={"Origin": EVIL},
        follow_redirects=False,
    )
    assert refused.status_code == 403
    assert not any(h.startswith(SESSION_COOKIE) for h in refused.headers.get_list("set-cookie"))


def test_a_cookie_saved_before_logout_opens_nothing_after(service: Service) -> None:
    cookie = _cookie_value(login(service.client, service.tokens["reviewer"]))
    thief = TestClient(service.app)  # a copy of the cookie, in another browser
    thief.cookies.set(SESSION_COOKIE, cookie)
    assert thief.get("/reviews", follow_redirects=False).status_code == 200
    page = service.client.get("/reviews")
    out = service.client.post(
        "/logout", data={"csrf_token": _csrf(page.text)}, follow_redirects=False
    )
    assert out.status_code == 303
    assert thief.get("/reviews", follow_redirects=False).headers["location"] == "/login"
    # and the same user logging in again gets a new session that works
    login(service.client, service.tokens["reviewer"])
    assert service.client.get("/reviews", follow_redirects=False).status_code == 200


def test_failed_tokens_are_throttled_per_address(make_service: MakeService) -> None:
    service = make_service(auth_failures_per_minute=5)
    wrong = {"Authorization": "Bearer sb_" + "W" * 43}
    answers = [
        service.client.post("/v1/search", json={"query": "x"}, headers=wrong).status_code
        for _ in range(8)
    ]
    assert answers[:5] == [401] * 5 and answers[5:] == [429] * 3
    # throttled before the token is looked at: even a good token waits now
    good = service.as_("viewer", "post", "/v1/search", json={"query": "pool"})
    assert good.status_code == 429 and int(good.headers["retry-after"]) >= 1
    assert "failed authentications per minute" in good.json()["detail"]


def test_failed_logins_are_throttled_too(make_service: MakeService) -> None:
    service = make_service(auth_failures_per_minute=3)
    codes: list[int] = []
    for _ in range(5):
        form = service.client.get("/login")
        codes.append(
            service.client.post(
                "/login", data={"token": "sb_guess", "csrf_token": _csrf(form.text)}
            ).status_code
        )
    assert codes == [401, 401, 401, 429, 429]


def test_mcp_without_a_token_is_the_apis_401(service: Service) -> None:
    body: dict[str, Any] = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    accept = {"Accept": "application/json, text/event-stream"}
    refused = service.client.post("/mcp", json=body, headers=accept)
    assert refused.status_code == 401
    assert refused.headers["www-authenticate"] == 'Bearer realm="seenbefore"'
    # with a good token the MCP server answers (tests/mcpserver/test_mcp.py, on a real socket)


def test_the_audit_never_shows_a_general_admin_other_tiers_names(service: Service) -> None:
    """`seenbefore token create --tiers general,restricted` and a restricted admin's reads are
    audited; an admin holding only `general` reads neither record, nor the word `restricted`."""
    from seenbefore.security.audit import AuditLog
    from seenbefore.security.tokens import local_principal

    store = service.app.state.service.kb.store
    audit = AuditLog(store)
    root = local_principal(("general", "restricted"))
    audit.record(
        root,
        "token.create",
        detail={"token_id": "t1", "token_role": "viewer", "token_tiers": ["restricted"]},
    )
    service.as_("restricted_admin", "post", "/v1/search", json={"query": "pool limit"})
    service.as_("admin", "post", "/v1/search", json={"query": "pool limit"})
    general = service.as_("admin", "get", "/v1/audit?limit=500").json()["records"]
    assert general, "the general admin's own reads are still there"
    assert "restricted" not in str(general)
    full = service.as_("restricted_admin", "get", "/v1/audit?limit=500").json()["records"]
    assert {"token.create", "search"} <= {r["action"] for r in full}
