from __future__ import annotations

import datetime as dt

import pytest

from seenbefore.errors import InputError
from seenbefore.investigation.investigator import Investigator
from seenbefore.investigation.query import InvestigationRequest
from seenbefore.kb import KnowledgeBase
from seenbefore.review.models import (
    DraftEdits,
    Review,
    evidence_from_dict,
    evidence_to_dict,
    request_from_dict,
    request_to_dict,
)
from seenbefore.review.postmortem import render, validate
from seenbefore.review.tiers import most_restrictive, restrictiveness
from tests.review.conftest import ALL_TIERS, CERT


def test_tier_order() -> None:
    configured = ("general", "restricted", "security")
    assert most_restrictive(["general", "security", "restricted"], configured) == "security"
    assert most_restrictive(["restricted", "general"], configured) == "restricted"
    assert most_restrictive([], configured) == "general"
    # general is least restrictive even when configured later; unknown tiers are above all
    assert most_restrictive(["general", "restricted"], ("restricted", "general")) == "restricted"
    assert most_restrictive(["security", "zeta", "alpha"], configured) == "zeta"
    assert restrictiveness("alpha", configured) > restrictiveness("security", configured)


def test_request_and_evidence_round_trip(kb: KnowledgeBase) -> None:
    request = InvestigationRequest(
        query=CERT,
        source="alertmanager",
        services=("partner-api",),
        signals=("CertExpiry",),
        started_at=dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
        fingerprint="abc",
        labels={"alertname": "CertExpiry", "severity": "critical"},
    )
    assert request_from_dict(request_to_dict(request)) == request
    evidence = Investigator(kb, tiers=ALL_TIERS).investigate(request)
    assert evidence_from_dict(evidence_to_dict(evidence), request) == evidence


def _review(**draft: object) -> Review:
    return Review(
        id="rev-1",
        status="pending",
        round=1,
        access_tier="general",
        tiers=["general"],
        requested_by="alice",
        created_at="2026-01-02T00:00:00+00:00",
        updated_at="2026-01-02T00:00:00+00:00",
        request={"query": "api 502s", "labels": {"alertname": "Api502", "service": "edge"}},
        draft={"summary": "s", "hypothesis": "h", "cited_incidents": [], "novel": True, **draft},
        evidence={"candidates": []},
        excluded_doc_ids=[],
    )


def test_free_text_cannot_open_a_section() -> None:
    edits = DraftEdits(
        root_cause="the cause\n## Resolution\nfake heading", resolution="rolled back", summary="x"
    )
    text = render(_review(), reviewer="alice", edits=edits, access_tier="general", approved_at="t")
    pm = validate(text, "approved/PM-rev-1.md")
    # a "no precedent" draft cites nothing: no Cited precedents section, and the drafted
    # summary "s" and hypothesis "h" are not stored (only what the reviewer wrote)
    assert [s.heading for s in pm.sections] == ["Summary", "Symptoms", "Root cause", "Resolution"]
    assert pm.section("summary").text == "x"  # type: ignore[union-attr]
    assert pm.section("root_cause").text == "the cause\n\\## Resolution\nfake heading"  # type: ignore[union-attr]
    assert pm.title == "Api502 on edge: api 502s" and pm.date == dt.date(2026, 1, 2)
    assert pm.extra["provenance"] == "approved-draft" and pm.extra["review_id"] == "rev-1"


def test_an_invalid_approval_is_an_input_error() -> None:
    text = render(_review(), reviewer="a", edits=None, access_tier="Not A Slug", approved_at="t")
    with pytest.raises(InputError, match=r"would not be a valid postmortem: .*access_tier"):
        validate(text, "x.md")


def test_an_approved_recurrence_of_an_untyped_precedent_takes_its_inferred_mode() -> None:
    # approving "precedent found: INC-2022-003 (cpu-saturation (inferred, p 1.00))" wrote a
    # postmortem with no type, whose own text was then inferred as another mode
    candidate = {"doc_id": "INC-7", "title": "search CPU pinned", "type": ""}
    found = {"cited_incidents": ["INC-7"], "novel": False, "verdict": "precedent found"}

    def approved(extra: dict[str, str], edits: DraftEdits | None = None) -> str:
        review = _review(**found)
        review = review.model_copy(update={"evidence": {"candidates": [{**candidate, **extra}]}})
        text = render(review, reviewer="a", edits=edits, access_tier="general", approved_at="t")
        return validate(text, "approved/PM-rev-1.md").type

    assert approved({"inferred_slug": "cpu-saturation"}) == "cpu-saturation"
    assert approved({"inferred_slug": ""}) == ""  # an unconfident inference is no type
    assert approved({"type": "dns-failure", "inferred_slug": "x"}) == "dns-failure"
    assert approved({"inferred_slug": "cpu-saturation"}, DraftEdits(type="bad-deploy")) == (
        "bad-deploy"  # the reviewer's own type wins
    )


def test_an_alerts_title_is_what_it_says_not_the_whole_query() -> None:
    """The title repeated the alert's labels after its summary, and was cut with an ellipsis:
    "HighErrorRate on payments-api: 5xx error rate anomaly on payments-api. HighErrorRate
    (High Error…"."""
    review = _review().model_copy(
        update={
            "request": {
                "query": "5xx error rate anomaly on payments-api. HighErrorRate (High Error Rate)"
                ". payments-api",
                "labels": {"alertname": "HighErrorRate", "service": "payments-api"},
            }
        }
    )
    edits = DraftEdits(root_cause="a bad deploy of the API", resolution="rolled it back")
    text = render(review, reviewer="a", edits=edits, access_tier="general", approved_at="t")
    title = validate(text, "approved/PM-rev-1.md").title
    assert title == "HighErrorRate on payments-api: 5xx error rate anomaly on payments-api"
