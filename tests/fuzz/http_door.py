"""What the HTTP fuzz tests share: one service (SQLite, in process) with a token per role, the
strategies for hostile request bodies, and the checks every answer must pass."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import strategies as st

from seenbefore.service.app import create_app
from tests.service.conftest import prepare_home, service_settings

# the API's own words, so generated bodies often get past the first check
KEYS = ["query", "k", "mode", "text", "markdown", "reason", "note", "edits", "services", "since"]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.text(max_size=30),
    st.sampled_from(["", " ", "pool", "2024-02-30", "SEV1", "hybrid", "wrong_precedent", "\x00"]),
)
values: st.SearchStrategy[Any] = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.sampled_from(KEYS), st.text(max_size=6)), inner, max_size=4),
    ),
    max_leaves=10,
)
raw = st.one_of(
    st.binary(max_size=200),
    st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")),
)


def shaped(fields: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    """The right keys (some missing, some extra) with values of any type."""
    return st.fixed_dictionaries({}, optional={**fields, "extra": values})


def bodies(fields: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[bytes]:
    """A request body: raw bytes, any JSON value, or the endpoint's shape with wrong values."""
    return st.one_of(
        raw,
        values.map(json.dumps).map(str.encode),
        shaped(fields).map(json.dumps).map(str.encode),
        shaped(fields).map(json.dumps).map(str.encode),
    )


@dataclass
class Door:
    client: TestClient
    tokens: dict[str, str]
    sent: int = 0

    def post(self, who: str, url: str, body: bytes, method: str = "post") -> Any:
        out = self.client.request(
            method,
            url,
            content=body,
            headers={
                "Authorization": f"Bearer {self.tokens[who]}",
                "Content-Type": "application/json",
            },
        )
        self.sent += 1
        check_answer(out)
        return out

    def known_good(self) -> tuple[bytes, bytes]:
        """The general and the restricted postmortem, as the API returns them (bytes)."""
        return tuple(  # type: ignore[return-value]
            self.client.get(
                f"/v1/postmortems/{doc_id}",
                headers={"Authorization": f"Bearer {self.tokens['restricted_admin']}"},
            ).content
            for doc_id in ("POOL-1", "VAULT-1")
        )

    def reviews(self) -> int:
        store = self.client.app.state.service.kb.store  # type: ignore[attr-defined]
        return int(store.query("SELECT count(*) FROM reviews")[0][0])


def check_answer(out: Any) -> None:
    """No 5xx, never a traceback, every error a problem+json."""
    assert out.status_code < 500, (out.status_code, out.text[:500])
    assert "Traceback" not in out.text and 'File "' not in out.text
    if out.status_code >= 400:
        assert out.headers["content-type"].startswith("application/problem+json"), out.text
        assert out.json()["status"] == out.status_code


@pytest.fixture(scope="module")
def door(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Door]:
    tmp = tmp_path_factory.mktemp("fuzz")
    cfg = service_settings(tmp / "home", log_sample_fraction=0.0)
    tokens = prepare_home(tmp / "home", tmp / "docs", cfg)
    with TestClient(create_app(cfg), raise_server_exceptions=False) as client:
        yield Door(client, tokens)


def no_logged_tracebacks(records: list[logging.LogRecord]) -> None:
    bad = [r for r in records if r.exc_info or r.levelno >= logging.ERROR]
    assert not bad, [r.getMessage() for r in bad][:3]
