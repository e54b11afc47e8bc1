"""POST / GET / PUT / DELETE /v1/postmortems."""

from __future__ import annotations

from tests.conftest import postmortem_text
from tests.service.conftest import Service

DOC = postmortem_text("NEW-7", title="Queue consumers stalled on a poison message")


def test_create_read_replace_delete(service: Service) -> None:
    created = service.as_("admin", "post", "/v1/postmortems", json={"markdown": DOC})
    assert created.status_code == 201
    assert created.json()["id"] == "NEW-7" and created.json()["outcome"] == "added"
    assert created.json()["chunks"] >= 2
    again = service.as_("admin", "post", "/v1/postmortems", json={"markdown": DOC})
    assert again.status_code == 409
    assert "PUT /v1/postmortems/NEW-7" in again.json()["detail"]

    doc = service.as_("viewer", "get", "/v1/postmortems/NEW-7").json()
    assert doc["title"] == "Queue consumers stalled on a poison message"
    assert [s["key"] for s in doc["sections"]][:2] == ["summary", "detection"]

    changed = DOC.replace("twenty minutes", "two hours")
    put = service.as_("admin", "put", "/v1/postmortems/NEW-7", json={"markdown": changed})
    assert put.status_code == 200 and put.json()["outcome"] == "updated"
    same = service.as_("admin", "put", "/v1/postmortems/NEW-7", json={"markdown": changed})
    assert same.json()["outcome"] == "unchanged"
    assert "two hours" in service.as_("viewer", "get", "/v1/postmortems/NEW-7").json()["body"]
    mismatch = service.as_("admin", "put", "/v1/postmortems/OTHER", json={"markdown": changed})
    assert mismatch.status_code == 400

    found = service.as_("viewer", "post", "/v1/search", json={"query": "poison message"}).json()
    assert found["results"][0]["id"] == "NEW-7"

    deleted = service.as_("admin", "delete", "/v1/postmortems/NEW-7")
    assert deleted.status_code == 200
    assert deleted.json()["id"] == "NEW-7" and len(deleted.json()["sha256"]) == 64
    assert "kb.sqlite" in deleted.json()["files_compacted"]
    assert service.as_("viewer", "get", "/v1/postmortems/NEW-7").status_code == 404
    assert service.as_("admin", "delete", "/v1/postmortems/NEW-7").status_code == 404
    records = service.as_("admin", "get", "/v1/audit?action=delete").json()["records"]
    assert records[-1]["doc_ids"] == ["NEW-7"]
    assert records[-1]["detail"]["content_hash"] == deleted.json()["sha256"]


def test_writes_stay_within_the_writers_tiers(service: Service) -> None:
    secret = postmortem_text("SEC-9", title="Restricted incident", access_tier="restricted")
    refused = service.as_("admin", "post", "/v1/postmortems", json={"markdown": secret})
    assert refused.status_code == 403
    assert "restricted" in refused.json()["detail"]
    over = postmortem_text("VAULT-1", title="Overwrite attempt")
    hidden = service.as_("admin", "put", "/v1/postmortems/VAULT-1", json={"markdown": over})
    assert hidden.status_code == 409  # a write never says 404: as any conflict (issue 12)
    assert "is taken, or is not yours to write" in hidden.json()["detail"]
    assert service.as_("admin", "delete", "/v1/postmortems/VAULT-1").status_code == 404
    allowed = service.as_("restricted_admin", "post", "/v1/postmortems", json={"markdown": secret})
    assert allowed.status_code == 201
    assert service.as_("viewer", "get", "/v1/postmortems/SEC-9").status_code == 404


def test_invalid_postmortem_says_what_to_fix(service: Service) -> None:
    bad = postmortem_text("BAD-1", date="2024-13-01")
    response = service.as_("admin", "post", "/v1/postmortems", json={"markdown": bad})
    assert response.status_code == 422
    assert "month must be in 1..12" in response.json()["detail"]
    unquoted = postmortem_text("BAD-2", date="'2024-13-01'")
    response = service.as_("admin", "post", "/v1/postmortems", json={"markdown": unquoted})
    assert response.status_code == 422
    assert "2024-13-01" in response.json()["detail"]
