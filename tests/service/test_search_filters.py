"""POST /v1/search refuses since > until with 422, as the CLI refuses it (one check:
seenbefore.limits.check_filters); before, it answered 200 with novel: true."""

from __future__ import annotations

from tests.service.conftest import Service


def test_since_after_until_is_422(service: Service) -> None:
    body = {"query": "pool exhausted", "since": "2025-01-01", "until": "2020-01-01"}
    response = service.as_("viewer", "post", "/v1/search", json=body)
    assert response.status_code == 422
    assert response.headers["content-type"] == "application/problem+json"
    problem = response.json()
    assert "since 2025-01-01 is after until 2020-01-01" in str(problem)
    ordered = {**body, "since": "2020-01-01", "until": "2025-01-01"}
    assert service.as_("viewer", "post", "/v1/search", json=ordered).status_code == 200


def test_k_and_services_limits_are_the_clis(service: Service) -> None:
    too_many = {"query": "pool", "services": [f"s{i}" for i in range(51)]}
    assert service.as_("viewer", "post", "/v1/search", json=too_many).status_code == 422
    assert (
        service.as_("viewer", "post", "/v1/search", json={"query": "p", "k": 51}).status_code == 422
    )


def test_an_empty_result_names_the_filter(service: Service) -> None:
    body = {"query": "pool exhausted", "services": ["nosuch-api"]}
    out = service.as_("viewer", "post", "/v1/search", json=body).json()
    assert out["results"] == []
    assert out["empty_because"] == "no postmortem you can see names the service(s) nosuch-api"
    found = service.as_("viewer", "post", "/v1/search", json={"query": "pool exhausted"}).json()
    assert found["results"] and found["empty_because"] is None
