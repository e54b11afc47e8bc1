"""Investigations, anomalies and the review loop through the API: dismiss re-investigates
without the dismissed precedent, approve writes a postmortem that search then finds."""

from __future__ import annotations

from tests.service.conftest import Service

POOL_ALERT = "checkout-api: database connections at the pool limit, p99 latency eightfold"


def test_investigate_dismiss_approve_then_search_finds_the_new_postmortem(
    service: Service,
) -> None:
    started = service.as_(
        "responder", "post", "/v1/investigations", json={"text": POOL_ALERT, "severity": "SEV2"}
    )
    assert started.status_code == 201
    review = started.json()
    assert review["status"] == "pending" and review["round"] == 1
    assert review["severity"] == "SEV2"
    assert review["requested_by"] == "responder-user"
    top = review["evidence"]["candidates"][0]
    assert top["doc_id"] == "POOL-1"
    assert review["draft"]["cited_incidents"][0] == "POOL-1"

    fetched = service.as_("viewer", "get", f"/v1/investigations/{review['id']}").json()
    assert fetched["id"] == review["id"] and fetched["draft"] == review["draft"]

    queue = service.as_("reviewer", "get", "/v1/reviews").json()["reviews"]
    assert [r["id"] for r in queue] == [review["id"]]

    dismissed = service.as_(
        "reviewer",
        "post",
        f"/v1/reviews/{review['id']}/dismiss",
        json={"reason": "wrong_precedent", "note": "it was the resolver"},
    ).json()
    assert dismissed["round"] == 2 and dismissed["status"] == "pending"
    assert dismissed["excluded_doc_ids"] == ["POOL-1"]
    assert "POOL-1" not in [c["doc_id"] for c in dismissed["evidence"]["candidates"]]
    assert [e["action"] for e in dismissed["history"]].count("dismissed") == 1

    assert dismissed["draft"]["verdict"] == "no precedent"  # POOL-1 gone, nothing else fits
    refused = service.as_(
        "reviewer",
        "post",
        f"/v1/reviews/{review['id']}/approve",
        json={"edits": {"title": "Checkout pool limit after resolver trouble"}},
    )
    assert refused.status_code == 422
    assert refused.headers["content-type"] == "application/problem+json"
    problem = refused.json()
    assert problem["type"] == "urn:seenbefore:problem:account-required"
    assert problem["missing"] == ["root_cause", "resolution", "type"]
    assert "cannot be approved as drafted: its draft says no precedent" in problem["detail"]
    account = {
        "title": "Checkout pool limit after resolver trouble",
        "root_cause": "Resolver timeouts held checkout connections until the pool ran out.",
        "resolution": "Restarted the resolver pods and capped lookup timeouts at one second.",
        "type": "dns-failure",
    }
    approved = service.as_(
        "reviewer", "post", f"/v1/reviews/{review['id']}/approve", json={"edits": account}
    ).json()
    assert approved["status"] == "approved" and approved["outcome"] == "approved"
    new_id = approved["postmortem_id"]
    assert new_id

    found = service.as_(
        "viewer", "post", "/v1/search", json={"query": "checkout pool limit resolver trouble"}
    ).json()
    assert new_id in [r["id"] for r in found["results"]]
    doc = service.as_("viewer", "get", f"/v1/postmortems/{new_id}").json()
    assert doc["title"] == "Checkout pool limit after resolver trouble"
    assert doc["extra"]["provenance"] == "approved-draft" and doc["type"] == "dns-failure"

    audit = service.as_("admin", "get", "/v1/audit?limit=50").json()["records"]
    actions = [(r["action"], r["decision"]) for r in audit]
    assert ("review.start", None) in actions
    assert ("review.dismiss", "dismissed:wrong_precedent") in actions
    assert ("review.approve", "approved") in actions
    dismiss = next(r for r in audit if r["action"] == "review.dismiss")
    assert dismiss["draft_id"] == review["id"]
    assert dismiss["doc_ids"][0] == "POOL-1"
    assert "note_hash" in dismiss["detail"] and "resolver" not in str(dismiss)

    metrics = service.as_("viewer", "get", "/metrics").text
    assert (
        'seenbefore_review_decisions_total{decision="dismissed",reason="wrong_precedent"} 1.0'
        in (metrics)
    )
    assert 'seenbefore_review_decisions_total{decision="approved",reason="-"} 1.0' in metrics


def test_reviewers_see_only_drafts_whose_tiers_they_hold(service: Service) -> None:
    text = {"text": "card payments failing with vault decryption errors after key rotation"}
    started = service.as_("restricted_admin", "post", "/v1/investigations", json=text).json()
    assert "restricted" in started["tiers"]
    assert service.as_("reviewer", "get", "/v1/reviews").json()["reviews"] == []
    hidden = service.as_("reviewer", "get", f"/v1/investigations/{started['id']}")
    assert hidden.status_code == 404
    decide = service.as_("reviewer", "post", f"/v1/reviews/{started['id']}/approve")
    assert decide.status_code == 404
    listed = service.as_("restricted_admin", "get", "/v1/reviews").json()["reviews"]
    assert [r["id"] for r in listed] == [started["id"]]


def test_anomaly_starts_an_idempotent_investigation(service: Service) -> None:
    anomaly = {
        "id": "A-42",
        "service": "checkout-api",
        "cloud": "aws",
        "region": "us-east-1",
        "start": "2025-06-01T10:00:00+00:00",
        "end": "2025-06-01T10:20:00+00:00",
        "score": 0.93,
        "severity": "SEV1",
        "deviations": [
            {
                "metric": "db_connections_in_use",
                "direction": "up",
                "value": 100,
                "baseline": 40,
                "zscore": 6.0,
            },
            {
                "metric": "p99_latency",
                "direction": "up",
                "value": 900,
                "baseline": 120,
                "zscore": 5.0,
            },
        ],
    }
    first = service.as_("responder", "post", "/v1/anomalies", json=anomaly)
    assert first.status_code == 201
    body = first.json()
    assert body["severity"] == "SEV1"
    assert body["source_key"] == "anomaly:A-42:2025-06-01T10:00:00+00:00"
    assert body["evidence"]["candidates"][0]["doc_id"] == "POOL-1"
    again = service.as_("responder", "post", "/v1/anomalies", json=anomaly).json()
    assert again["id"] == body["id"]
    metrics = service.as_("viewer", "get", "/metrics").text
    assert 'seenbefore_investigations_total{outcome="precedent",source="anomaly"} 1.0' in metrics
    bad = service.as_("responder", "post", "/v1/anomalies", json={**anomaly, "score": 7})
    assert bad.status_code == 422


def test_the_review_page_names_each_candidates_failure_mode(service: Service) -> None:
    from tests.service.test_web import login

    rid = service.as_("responder", "post", "/v1/investigations", json={"text": POOL_ALERT}).json()
    login(service.client, service.tokens["reviewer"])
    page = service.client.get(f"/reviews/{rid['id']}").text
    evidence = page.split('id="evidence"', 1)[1]
    # the author's type (or the inferred one, marked so, as search and show say it)
    assert '<span class="failure-mode">connection-pool-exhaustion</span>' in evidence
