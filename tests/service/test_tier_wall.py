"""Tiers are a wall in every derived fact (issue 12): the five ways a general-tier caller learnt
about restricted documents, each reproduced as the stranger did it.

1. ``GET /v1/postmortems/{id}`` (and ``seenbefore show``) said a general document was superseded
   by a restricted one; 2. the same link dropped it from general searches; 3. ``GET /v1/audit``
   showed restricted activity; 4. ``POST /v1/postmortems`` answered 404 for a hidden id, 409 for
   a visible one; 5. a resolved webhook closed a review its token could not see."""

from __future__ import annotations

import json
from typing import Any

import pytest

from seenbefore.kb import KnowledgeBase
from seenbefore.security.tokens import TokenStore
from tests.conftest import postmortem_text
from tests.service.conftest import POOL_BODY, MakeService, Service

SUCCESSOR = postmortem_text(
    "INC-2099-902",
    title="Checkout pool exhaustion, the full analysis",
    body=POOL_BODY.replace("forty minutes", "forty-one minutes"),
    date="2099-01-02",
    access_tier="restricted",
    supersedes="POOL-1",
)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.integration)])
def backend(request: pytest.FixtureRequest) -> dict[str, Any]:
    """Settings selecting the backend: SQLite, or a fresh PostgreSQL database (row-level
    security by tier; tests/pg.py)."""
    if request.param == "sqlite":
        return {}
    return {"database_url": request.getfixturevalue("pg_url")}


@pytest.fixture
def service(make_service: MakeService, backend: dict[str, Any]) -> Service:
    return make_service(**backend)


def _supersede_across_tiers(service: Service) -> None:
    out = service.as_("restricted_admin", "post", "/v1/postmortems", json={"markdown": SUCCESSOR})
    assert out.status_code == 201, out.text


def test_get_and_show_keep_a_document_current_for_callers_without_the_superseding_tier(
    service: Service,
) -> None:
    _supersede_across_tiers(service)
    general = service.as_("viewer", "get", "/v1/postmortems/POOL-1").json()
    assert (general["effective_status"], general["superseded_by"]) == ("current", None)
    both = service.as_("restricted_viewer", "get", "/v1/postmortems/POOL-1").json()
    assert (both["effective_status"], both["superseded_by"]) == ("superseded", "INC-2099-902")
    # `seenbefore show` reads through Store.get with the caller's tiers
    with KnowledgeBase(service.settings) as kb:
        shown = kb.store.get("POOL-1", ("general",))
        assert (shown.effective_status, shown.superseded_by) == ("current", None)
        assert kb.store.get("POOL-1", ("general", "restricted")).superseded_by == "INC-2099-902"
        assert kb.store.stats(("general",)).superseded == 0
        assert kb.store.stats(("general", "restricted")).superseded == 1


def _search(service: Service, who: str, **body: Any) -> list[tuple[str, str, str | None]]:
    out = service.as_(
        who, "post", "/v1/search", json={"query": "checkout pool fraud", "k": 50, **body}
    )
    assert out.status_code == 200, out.text
    return [(r["id"], r["status"], r["superseded_by"]) for r in out.json()["results"]]


def test_search_keeps_the_older_document_current_for_callers_without_the_superseding_tier(
    service: Service,
) -> None:
    _supersede_across_tiers(service)
    general = _search(service, "viewer")
    assert ("POOL-1", "current", None) in general
    assert _search(service, "viewer", include_superseded=True)[0] == ("POOL-1", "current", None)
    both = _search(service, "restricted_viewer")
    assert [r[0] for r in both][:1] == ["INC-2099-902"] and "POOL-1" not in [r[0] for r in both]
    with_old = _search(service, "restricted_viewer", include_superseded=True)
    assert ("POOL-1", "superseded", "INC-2099-902") in with_old


def test_audit_shows_an_admin_only_records_of_tiers_they_hold(service: Service) -> None:
    assert service.as_("restricted_viewer", "get", "/v1/postmortems/VAULT-1").status_code == 200
    hit = service.as_(
        "restricted_viewer", "post", "/v1/search", json={"query": "vault key rotation"}
    )
    assert "VAULT-1" in [r["id"] for r in hit.json()["results"]]
    assert service.as_("viewer", "get", "/v1/postmortems/POOL-1").status_code == 200

    general = service.as_("admin", "get", "/v1/audit?limit=1000").json()["records"]
    assert [r["action"] for r in general] == ["show"]  # the viewer's show of POOL-1 only
    assert all("VAULT-1" not in r["doc_ids"] and "restricted" not in r["tiers"] for r in general)
    everything = service.as_("restricted_admin", "get", "/v1/audit?limit=1000").json()["records"]
    assert [r["action"] for r in everything] == ["show", "search", "show"]
    assert everything[0]["doc_ids"] == ["VAULT-1"]


def test_a_write_to_a_hidden_id_answers_like_any_conflict(service: Service) -> None:
    def post(doc_id: str) -> Any:
        text = postmortem_text(doc_id, title="A clash", body="## Summary\nClash.\n")
        return service.as_("admin", "post", "/v1/postmortems", json={"markdown": text})

    def put(doc_id: str) -> Any:
        text = postmortem_text(doc_id, title="A clash", body="## Summary\nClash.\n")
        return service.as_("admin", "put", f"/v1/postmortems/{doc_id}", json={"markdown": text})

    hidden, visible = post("VAULT-1"), post("POOL-1")
    assert (hidden.status_code, visible.status_code) == (409, 409)
    assert hidden.json()["detail"] == visible.json()["detail"].replace("POOL-1", "VAULT-1")
    replaced = put("VAULT-1")
    assert replaced.status_code == 409
    assert replaced.json()["detail"] == hidden.json()["detail"]
    # the hidden document is untouched
    with KnowledgeBase(service.settings) as kb:
        assert kb.store.get("VAULT-1", ("restricted",)).postmortem.title.startswith("Payment")


def _alert(status: str) -> dict[str, Any]:
    return {
        "version": "4",
        "status": status,
        "alerts": [
            {
                "status": status,
                "labels": {"alertname": "VaultDecryptErrors", "service": "vault"},
                "annotations": {"summary": "vault key rotation broke card decryption"},
                "startsAt": "2026-11-30T00:11:42Z",
                "fingerprint": "f00dfeed",
            }
        ],
    }


def test_a_resolved_webhook_closes_only_reviews_its_token_may_see_or_delivered(
    make_service: MakeService, backend: dict[str, Any]
) -> None:
    service = make_service(service_tiers=("general", "restricted"), **backend)
    with KnowledgeBase(service.settings) as kb:
        store = TokenStore(kb.store)
        service.tokens["restricted_responder"], _ = store.create(
            "vault-responder", "responder", ["general", "restricted"]
        )
        service.tokens["other_responder"], _ = store.create("other", "responder", ["general"])
    started = service.as_("responder", "post", "/v1/alerts/alertmanager", json=_alert("firing"))
    rid = started.json()["started"][0]["investigation_id"]
    assert service.as_("responder", "get", f"/v1/investigations/{rid}").status_code == 404

    # a general token that did not deliver the firing alert cannot close it
    refused = service.as_(
        "other_responder", "post", "/v1/alerts/alertmanager", json=_alert("resolved")
    )
    assert refused.json() == {"started": [], "closed": [], "ignored": 0}
    still = service.as_("restricted_responder", "get", f"/v1/investigations/{rid}").json()
    assert still["status"] == "pending"
    for action, body in (("dismiss", {"reason": "wrong_precedent"}), ("approve", {})):
        acted = service.as_("reviewer", "post", f"/v1/reviews/{rid}/{action}", json=body)
        assert acted.status_code == 404, acted.text

    # the token that delivered it knows it exists: its resolved alert closes it
    done = service.as_("responder", "post", "/v1/alerts/alertmanager", json=_alert("resolved"))
    assert done.json()["closed"] == [rid]
    closed = service.as_("restricted_responder", "get", f"/v1/investigations/{rid}").json()
    assert closed["status"] == "closed"


def _alert_about(summary: str, fingerprint: str) -> dict[str, Any]:
    alert = _alert("firing")
    alert["alerts"][0]["labels"] = {"alertname": "Guess", "service": "guess"}
    alert["alerts"][0]["annotations"] = {"summary": summary}
    alert["alerts"][0]["fingerprint"] = fingerprint
    return alert


def test_an_alert_is_no_tier_oracle(make_service: MakeService, backend: dict[str, Any]) -> None:
    """A general responder posts alerts whose summary is a guessed word: one found only in a
    restricted postmortem, one found nowhere. What it can read afterwards is the same."""
    service = make_service(service_tiers=("general", "restricted"), **backend)
    with KnowledgeBase(service.settings) as kb:
        service.tokens["restricted_responder"], _ = TokenStore(kb.store).create(
            "vault-responder", "responder", ["general", "restricted"]
        )
    for n in range(4):  # general postmortems about another failure: the control's precedents
        text = postmortem_text(
            f"DISK-{n}",
            title=f"Log volume {n} full, writes failing",
            body="## Symptoms\nThe log volume filled up and every write failed with ENOSPC.\n",
        )
        added = service.as_("admin", "post", "/v1/postmortems", json={"markdown": text})
        assert added.status_code == 201, added.text
    seen: dict[str, Any] = {}
    for name, summary, fingerprint in (
        ("restricted word", "payment vault decryption errors after key rotation", "aa01"),
        ("general word", "log volume full, writes failing with ENOSPC", "aa02"),
    ):
        posted = service.as_(
            "responder", "post", "/v1/alerts/alertmanager", json=_alert_about(summary, fingerprint)
        )
        assert posted.status_code == 200, posted.text
        rid = posted.json()["started"][0]["investigation_id"]
        as_general = service.as_("responder", "get", f"/v1/investigations/{rid}")
        listed = service.as_("reviewer", "get", "/v1/reviews").json()
        as_restricted = service.as_("restricted_responder", "get", f"/v1/investigations/{rid}")
        seen[name] = {
            "post": {
                k: v
                for k, v in posted.json()["started"][0].items()
                if k not in ("source_key", "investigation_id")
            },
            "get": (as_general.status_code, as_general.json()["detail"].replace(rid, "<id>")),
            "listed": rid in json.dumps(listed),
            "restricted_get": as_restricted.status_code,
        }
    assert (
        seen["restricted word"]["restricted_get"] == seen["general word"]["restricted_get"] == 200
    )
    for key in ("post", "get", "listed"):
        assert seen["restricted word"][key] == seen["general word"][key], key
    assert seen["general word"]["get"][0] == 404 and not seen["general word"]["listed"]


def test_superseding_a_hidden_document_answers_like_an_absent_one(service: Service) -> None:
    def post(target: str) -> Any:
        text = postmortem_text(f"NEW-{target}", title="Retires", supersedes=target)
        return service.as_("admin", "post", "/v1/postmortems", json={"markdown": text})

    hidden, absent = post("VAULT-1"), post("NOPE-1")
    assert (hidden.status_code, absent.status_code) == (400, 400)
    assert hidden.json()["detail"] == absent.json()["detail"].replace("NOPE-1", "VAULT-1")
    # a general writer did not retire the restricted document for its readers
    vault = service.as_("restricted_viewer", "get", "/v1/postmortems/VAULT-1").json()
    assert (vault["effective_status"], vault["superseded_by"]) == ("current", None)
    assert post("POOL-1").status_code == 201  # one it can see: allowed


def test_an_empty_search_does_not_blame_a_superseder_the_caller_cannot_see(
    service: Service,
) -> None:
    _supersede_across_tiers(service)
    dns = postmortem_text(
        "INC-2099-903",
        title="Resolver outage, restricted notes",
        access_tier="restricted",
        supersedes="DNS-1",
    )
    assert (
        service.as_(
            "restricted_admin", "post", "/v1/postmortems", json={"markdown": dns}
        ).status_code
        == 201
    )
    # every general document is superseded, but only by restricted ones: current for the viewer
    out = service.as_("viewer", "post", "/v1/search", json={"query": "zebra quasar"}).json()
    assert out["results"] == [] and out["empty_because"] is None
    both = service.as_("restricted_viewer", "post", "/v1/search", json={"query": "zebra"}).json()
    assert both["empty_because"] is None  # the restricted successors are current


def test_a_delete_does_not_cascade_into_documents_the_caller_cannot_see(service: Service) -> None:
    from tests.service.test_deletion import BODY, MARKER, TOKEN

    ledger = postmortem_text("LEDGER-9", title="Ledger writer stalled by compaction", body=BODY)
    out = service.as_("admin", "post", "/v1/postmortems", json={"markdown": ledger})
    assert out.status_code == 201
    text = {"text": f"ledger writes stalled, {TOKEN} queue growing, {MARKER} running; vault key"}
    review = service.as_("restricted_admin", "post", "/v1/investigations", json=text).json()
    assert review["draft"]["cited_incidents"][0] == "LEDGER-9"
    assert "restricted" in review["tiers"], review["tiers"]
    approved = service.as_("restricted_admin", "post", f"/v1/reviews/{review['id']}/approve")
    derived = approved.json()["postmortem_id"]
    assert service.as_("viewer", "get", f"/v1/postmortems/{derived}").status_code == 404

    refused = service.as_("admin", "delete", "/v1/postmortems/LEDGER-9")
    assert refused.status_code == 409 and derived not in refused.text
    assert service.as_("viewer", "get", "/v1/postmortems/LEDGER-9").status_code == 200
    done = service.as_("restricted_admin", "delete", "/v1/postmortems/LEDGER-9").json()
    assert done["derived_deleted"] == [derived]
