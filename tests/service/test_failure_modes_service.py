"""The HTTP API and the web postmortem page show each postmortem's failure mode: the author's
type plainly, an inferred one marked as inferred."""

from __future__ import annotations

from tests.knowledge.test_failure_modes import TLS_POSTMORTEM
from tests.service.conftest import Service
from tests.service.test_web import _csrf, login


def test_api_and_web_page_mark_an_inferred_failure_mode(service: Service) -> None:
    created = service.as_("admin", "post", "/v1/postmortems", json={"markdown": TLS_POSTMORTEM})
    assert created.status_code == 201, created.text
    doc = service.as_("viewer", "get", "/v1/postmortems/T-1").json()
    assert doc["type"] == ""
    mode = doc["failure_mode"]
    assert mode["slug"] == "certificate-expiry" and mode["inferred"] is True
    assert mode["known"] is True and 0.5 <= mode["p"] <= 1.0
    pool = service.as_("viewer", "get", "/v1/postmortems/POOL-1").json()
    assert pool["type"] == "connection-pool-exhaustion"
    assert pool["failure_mode"] == {
        "slug": "connection-pool-exhaustion",
        "inferred": False,
        "p": 1.0,
        "known": True,
    }
    dns = service.as_("viewer", "get", "/v1/postmortems/DNS-1").json()
    assert dns["type"] == "dns" and dns["failure_mode"]["slug"] == "dns-failure"  # alias

    found = service.as_(
        "viewer", "post", "/v1/search", json={"query": "TLS certificate expired", "k": 3}
    ).json()
    by_id = {r["id"]: r for r in found["results"]}
    assert by_id["T-1"]["failure_mode"] == mode
    assert all(r["failure_mode"] is not None for r in found["results"])

    login(service.client, service.tokens["reviewer"])
    page = service.client.get("/postmortems/T-1").text
    assert f"certificate-expiry (inferred, p {mode['p']:.2f})" in page
    assert 'class="inferred"' in page
    typed = service.client.get("/postmortems/POOL-1").text
    assert '<span id="type">connection-pool-exhaustion</span>' in typed


def test_api_and_web_search_say_when_the_query_names_another_failure(service: Service) -> None:
    created = service.as_("admin", "post", "/v1/postmortems", json={"markdown": TLS_POSTMORTEM})
    assert created.status_code == 201, created.text
    query = "disk full: no space left on device, every write to the volume failed"
    found = service.as_("viewer", "post", "/v1/search", json={"query": query, "k": 3}).json()
    assert found["query_failure_mode"]["slug"] == "disk-full"
    assert found["query_failure_mode"]["inferred"] is True
    assert found["verdict"] != "precedent found"
    top = found["results"][0]["failure_mode"]
    named = top["slug"] + (f" (inferred, p {top['p']:.2f})" if top["inferred"] else "")
    assert found["another_failure"] == (
        f"the query reads as disk-full (inferred, p {found['query_failure_mode']['p']:.2f}); "
        f"the first postmortem is {named}: another failure"
    )
    vague = service.as_(
        "viewer", "post", "/v1/search", json={"query": "some requests are slower than usual"}
    ).json()
    assert vague["another_failure"] is None

    login(service.client, service.tokens["reviewer"])
    token = _csrf(service.client.get("/search").text)
    page = service.client.post("/search", data={"q": query, "csrf_token": token}).text
    assert 'id="another-failure"' in page and "the query reads as disk-full" in page
