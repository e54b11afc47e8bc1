"""The app factory: complete OpenAPI, health and readiness, and one problem+json answer per
branch of the error tree."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from seenbefore.errors import StoreError
from seenbefore.service.app import create_app
from tests.service.conftest import MakeService, Service, service_settings

API_ROUTES = {
    ("post", "/v1/alerts/alertmanager"),
    ("post", "/v1/anomalies"),
    ("post", "/v1/detect"),
    ("post", "/v1/search"),
    ("post", "/v1/investigations"),
    ("get", "/v1/investigations/{investigation_id}"),
    ("get", "/v1/reviews"),
    ("post", "/v1/reviews/{review_id}/approve"),
    ("post", "/v1/reviews/{review_id}/dismiss"),
    ("get", "/v1/postmortems/{doc_id}"),
    ("put", "/v1/postmortems/{doc_id}"),
    ("delete", "/v1/postmortems/{doc_id}"),
    ("post", "/v1/postmortems"),
    ("get", "/v1/audit"),
    ("get", "/healthz"),
    ("get", "/readyz"),
    ("get", "/metrics"),
}
OPEN = {"/healthz", "/readyz"}


def test_openapi_lists_every_route_with_its_response_schema_and_security(
    service: Service,
) -> None:
    spec = service.client.get("/openapi.json").json()
    listed = {(m, p) for p, ops in spec["paths"].items() for m in ops}
    assert listed == API_ROUTES  # the web pages are not API routes
    assert spec["components"]["securitySchemes"]["bearerToken"] == {
        "type": "http",
        "scheme": "bearer",
        "description": "an API token from `seenbefore token create` (sb_...)",
    }
    for method, path in API_ROUTES:
        op = spec["paths"][path][method]
        ok = next(c for c in op["responses"] if c.startswith("2"))
        content = op["responses"][ok]["content"]
        schema = next(iter(content.values()))["schema"]
        assert schema, (method, path)
        if path == "/metrics":
            assert "text/plain" in content
        else:
            assert "$ref" in schema or schema.get("type") == "object", (method, path, schema)
        secured = op.get("security") == [{"bearerToken": []}]
        assert secured == (path not in OPEN), (method, path)
        if path not in OPEN:
            assert op["responses"]["401"]["content"]["application/json"]["schema"] == {
                "$ref": "#/components/schemas/Problem"
            }


def test_health_and_readiness(service: Service) -> None:
    assert service.client.get("/healthz").json() == {"status": "ok"}
    ready = service.client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json()["status"] == "ready"
    assert ready.json()["generation"] >= 3


def test_readyz_reads_state_and_never_builds_the_index(service: Service) -> None:
    kb = service.client.app.state.service.kb  # type: ignore[attr-defined]
    kb.index()
    before = kb.index_generation()
    # a settings write moves only the settings generation: the index stays current
    kb.store.set_json("test.readyz", {"written": True})
    assert kb.store.generation() == before
    assert service.client.get("/readyz").json()["index"] == "current"
    kb.store.delete(kb.store.list_ids(None)[0])  # a corpus write: the generation moves
    assert kb.store.generation() != before
    ready = service.client.get("/readyz").json()
    assert ready["status"] == "ready" and ready["index"] == "stale"
    assert kb.index_generation() == before  # the probe built nothing
    kb.index()  # the next search's work
    assert service.client.get("/readyz").json()["index"] == "current"


def test_readyz_is_503_before_startup_and_when_the_store_fails(tmp_path: Path) -> None:
    app = create_app(service_settings(tmp_path / "home"))
    client = TestClient(app)  # not entered: the lifespan has not loaded the KB
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["status"] == "not ready"
    assert client.get("/healthz").status_code == 200
    with TestClient(app) as running:
        assert running.get("/readyz").status_code == 200
        running.app.state.service.kb.store.close()  # type: ignore[attr-defined]
        broken = running.get("/readyz")
        assert broken.status_code == 503
        assert "store unusable" in broken.json()["reason"]
        running.app.state.service.kb = None  # type: ignore[attr-defined]  # closed already


def _is_problem(response: object, status: int, slug: str) -> dict[str, object]:
    assert response.status_code == status  # type: ignore[attr-defined]
    assert response.headers["content-type"] == "application/problem+json"  # type: ignore[attr-defined]
    body: dict[str, object] = response.json()  # type: ignore[attr-defined]
    assert body["type"] == f"urn:seenbefore:problem:{slug}"
    assert body["status"] == status
    assert set(body) >= {"type", "title", "status", "detail", "instance"}
    return body


def test_error_tree_maps_to_problem_json(service: Service) -> None:
    c = service.client
    body = _is_problem(c.post("/v1/search", json={"query": "x"}), 401, "unauthenticated")
    assert "Bearer" in str(body["detail"])
    assert (
        c.post("/v1/search", json={"query": "x"}).headers["www-authenticate"].startswith("Bearer")
    )
    _is_problem(
        c.post("/v1/search", json={"query": "x"}, headers={"Authorization": "Bearer sb_nope"}),
        401,
        "unauthenticated",
    )
    _is_problem(
        service.as_("viewer", "post", "/v1/search", json={"query": "   "}), 400, "invalid-input"
    )
    body = _is_problem(
        service.as_("viewer", "post", "/v1/search", json={"k": 3}), 422, "validation"
    )
    assert body["errors"][0]["loc"] == ["body", "query"]  # type: ignore[index]
    body = _is_problem(
        service.as_("viewer", "post", "/v1/investigations", json={"text": "db down"}),
        403,
        "forbidden",
    )
    assert "responder" in str(body["detail"])
    _is_problem(
        service.as_("viewer", "get", "/v1/investigations/rev-000000000000"), 404, "not-found"
    )
    _is_problem(
        service.as_("admin", "post", "/v1/postmortems", json={"markdown": "no front matter"}),
        422,
        "invalid-postmortem",
    )
    _is_problem(c.get("/no/such/page"), 404, "not-found")
    _is_problem(service.as_("viewer", "delete", "/v1/search"), 405, "method-not-allowed")


def test_conflict_is_409(service: Service) -> None:
    started = service.as_("responder", "post", "/v1/investigations", json={"text": "pool limit"})
    rid = started.json()["id"]
    assert service.as_("reviewer", "post", f"/v1/reviews/{rid}/approve").status_code == 200
    _is_problem(service.as_("reviewer", "post", f"/v1/reviews/{rid}/approve"), 409, "conflict")


def test_store_error_is_503_and_unexpected_errors_hide_internals(service: Service) -> None:
    state = service.app.state.service

    def broken(*args: object, **kwargs: object) -> None:
        raise StoreError("store kb.sqlite: disk I/O error; check the volume")

    original = state.kb.search
    state.kb.search = broken
    try:
        body = _is_problem(
            service.as_("viewer", "post", "/v1/search", json={"query": "pool"}),
            503,
            "store-unavailable",
        )
        assert "disk I/O" in str(body["detail"])

        def crash(*args: object, **kwargs: object) -> None:
            raise RuntimeError("secret internals at /srv/x.py line 3")

        state.kb.search = crash
        body = _is_problem(
            service.as_("viewer", "post", "/v1/search", json={"query": "pool"}), 500, "internal"
        )
        assert "secret" not in str(body) and "RuntimeError" not in str(body)
    finally:
        state.kb.search = original


def test_requests_carry_an_id(service: Service) -> None:
    first = service.client.get("/healthz").headers["x-request-id"]
    second = service.client.get("/healthz").headers["x-request-id"]
    assert len(first) == 32 and first != second


@pytest.mark.parametrize("status", ["pending", "all"])
def test_reviews_list_accepts_status(service: Service, status: str) -> None:
    response = service.as_("viewer", "get", f"/v1/reviews?status={status}")
    assert response.status_code == 200
    assert response.json() == {"reviews": []}


def test_rate_limit_answers_429_with_retry_after(make_service: MakeService) -> None:
    service = make_service(rate_limit_per_minute=3)
    codes = [service.as_("viewer", "get", "/v1/reviews").status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    limited = service.as_("viewer", "get", "/v1/reviews")
    body = _is_problem(limited, 429, "rate-limited")
    assert int(limited.headers["retry-after"]) >= 1
    assert "per minute" in str(body["detail"])
    assert service.as_("admin", "get", "/v1/reviews").status_code == 200  # per token
    assert service.client.get("/healthz").status_code == 200  # health is not limited
