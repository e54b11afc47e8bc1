"""Web sessions against a model: random logins, logouts (from any copy of a cookie), token
revocations and requests; a session cookie opens the queue exactly while the model says it is
open and its token active, and never opens the JSON API (issue 22)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seenbefore.security.tokens import TokenStore
from seenbefore.service.sessions import SESSION_COOKIE
from tests.service.conftest import (
    MakeService,
    Service,
    make_service,  # noqa: F401  (the fixture)
)

OPS = st.lists(
    st.tuples(st.sampled_from(["login", "logout", "revoke", "page", "api"]), st.integers(0, 5)),
    min_size=1,
    max_size=14,
)


@dataclass
class Model:
    tokens: list[str]
    token_ids: list[str]
    revoked: set[int] = field(default_factory=set)
    cookies: list[tuple[str, int]] = field(default_factory=list)  # (cookie, token index)
    ended: set[int] = field(default_factory=set)  # cookie indexes logged out

    def opens(self, cookie: int) -> bool:
        return cookie not in self.ended and self.cookies[cookie][1] not in self.revoked


def _login(app: object, token: str) -> str | None:
    client = TestClient(app)  # type: ignore[arg-type]
    form = client.get("/login")
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', form.text)
    assert csrf is not None
    done = client.post(
        "/login", data={"token": token, "csrf_token": csrf.group(1)}, follow_redirects=False
    )
    if done.status_code != 303:
        return None
    return str(done.cookies.get(SESSION_COOKIE))


def _with(cookie: str) -> dict[str, str]:
    return {"Cookie": f"{SESSION_COOKIE}={cookie}"}


@pytest.fixture
def queue(make_service: MakeService) -> Service:  # noqa: F811
    # logins with revoked tokens are failed authentications: over 25 examples they passed the
    # default 20 a minute, and the throttle then refused a good token (a flaky failure)
    return make_service(auth_failures_per_minute=100_000)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=OPS)
def test_sessions_follow_logout_and_revocation(queue: Service, ops: list[tuple[str, int]]) -> None:
    store = TokenStore(queue.app.state.service.kb.store)  # type: ignore[attr-defined]
    model = Model([], [])
    for n in range(2):  # fresh tokens per example: earlier examples' revocations do not leak in
        plaintext, principal = store.create(
            f"prop-{len(store.list())}-{n}", "reviewer", ["general"]
        )
        model.tokens.append(plaintext)
        model.token_ids.append(str(principal.token_id))
    client = TestClient(queue.app)
    for op, n in ops:
        if op == "login":
            who = n % 2
            cookie = _login(queue.app, model.tokens[who])
            assert (cookie is not None) == (who not in model.revoked)
            if cookie is not None:
                model.cookies.append((cookie, who))
        elif op == "revoke":
            who = n % 2
            store.revoke(model.token_ids[who])
            model.revoked.add(who)
        elif model.cookies:
            index = n % len(model.cookies)
            cookie = model.cookies[index][0]
            page = client.get("/reviews", headers=_with(cookie), follow_redirects=False)
            assert (page.status_code == 200) == model.opens(index), (op, index, model)
            if op == "logout" and page.status_code == 200:
                csrf = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
                assert csrf is not None
                out = client.post(
                    "/logout",
                    data={"csrf_token": csrf.group(1)},
                    headers=_with(cookie),
                    follow_redirects=False,
                )
                assert out.status_code == 303
                model.ended.add(index)
            elif op == "api":
                api = client.get("/v1/reviews", headers=_with(cookie))
                assert api.status_code == 401  # a session cookie never opens the API
