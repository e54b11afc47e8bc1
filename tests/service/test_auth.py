"""Roles, access tiers (a hidden postmortem is a 404 exactly like an absent one) and audit."""

from __future__ import annotations

from seenbefore.security.tokens import TokenStore
from tests.service.conftest import Service


def test_hidden_postmortem_is_indistinguishable_from_an_absent_one(service: Service) -> None:
    hidden = service.as_("viewer", "get", "/v1/postmortems/VAULT-1")
    absent = service.as_("viewer", "get", "/v1/postmortems/VAULT-2")
    assert hidden.status_code == absent.status_code == 404
    assert hidden.headers["content-type"] == absent.headers["content-type"]
    h, a = hidden.json(), absent.json()
    assert set(h) == set(a)
    assert h["detail"].replace("VAULT-1", "X") == a["detail"].replace("VAULT-2", "X")
    assert h["instance"].replace("VAULT-1", "X") == a["instance"].replace("VAULT-2", "X")
    shown = service.as_("restricted_viewer", "get", "/v1/postmortems/VAULT-1")
    assert shown.status_code == 200
    assert shown.json()["access_tier"] == "restricted"
    assert "key rotation" in shown.json()["body"]


def test_search_is_prefiltered_by_the_callers_tiers(service: Service) -> None:
    query = {"query": "vault key rotation decryption errors", "k": 5}
    general = service.as_("viewer", "post", "/v1/search", json=query).json()
    restricted = service.as_("restricted_viewer", "post", "/v1/search", json=query).json()
    assert "VAULT-1" not in [r["id"] for r in general["results"]]
    assert restricted["results"][0]["id"] == "VAULT-1"
    assert restricted["results"][0]["access_tier"] == "restricted"


def test_role_rules(service: Service) -> None:
    text = {"text": "database connections at the pool limit, p99 latency up"}
    assert service.as_("viewer", "post", "/v1/investigations", json=text).status_code == 403
    started = service.as_("responder", "post", "/v1/investigations", json=text)
    assert started.status_code == 201
    rid = started.json()["id"]
    assert service.as_("viewer", "get", f"/v1/investigations/{rid}").status_code == 200
    dismiss = {"reason": "wrong_precedent", "note": ""}
    assert (
        service.as_("responder", "post", f"/v1/reviews/{rid}/dismiss", json=dismiss).status_code
        == 403
    )
    assert service.as_("reviewer", "get", "/v1/audit").status_code == 403
    assert service.as_("admin", "get", "/v1/audit").status_code == 200
    doc = "---\nid: NEW-1\ntitle: A new one\n---\n## Summary\nSomething broke.\n"
    assert (
        service.as_("reviewer", "post", "/v1/postmortems", json={"markdown": doc}).status_code
        == 403
    )
    assert service.as_("viewer", "get", "/metrics").status_code == 200
    assert service.client.get("/metrics").status_code == 401


def test_revoked_token_is_refused_at_once(service: Service) -> None:
    assert service.as_("viewer", "get", "/v1/reviews").status_code == 200
    tokens = TokenStore(service.app.state.service.kb.store)
    info = next(i for i in tokens.list() if i.name == "viewer-user")
    tokens.revoke(info.id)
    refused = service.as_("viewer", "get", "/v1/reviews")
    assert refused.status_code == 401
    assert "revoked" in refused.json()["detail"]


def test_audit_records_searches_with_hashed_query_ids_and_tiers(service: Service) -> None:
    query = "vault key rotation decryption errors"
    service.as_("restricted_viewer", "post", "/v1/search", json={"query": query, "k": 2})
    general = service.as_("admin", "get", "/v1/audit?action=search").json()["records"]
    assert general == []  # a restricted hit: not for an admin holding only general
    records = service.as_("restricted_admin", "get", "/v1/audit?action=search").json()["records"]
    record = records[-1]
    assert record["actor"] == "vault-viewer"
    assert record["session"].startswith("req:")
    assert record["doc_ids"][0] == "VAULT-1"
    assert "restricted" in record["tiers"]
    assert record["query_hash"] and len(record["query_hash"]) == 64
    assert query not in str(records)
    assert record["detail"]["principal"]["role"] == "viewer"
