"""Approval keeps memory clean: a "no precedent" draft, or one whose precedent a reviewer already
dismissed, is not approved as drafted; what is stored is only what a person wrote."""

from __future__ import annotations

import re

import pytest

from seenbefore.errors import AccountRequired
from seenbefore.investigation.query import from_text
from seenbefore.kb import KnowledgeBase
from seenbefore.review import DismissReason, DraftEdits, ReviewWorkflow
from seenbefore.review.account import reason
from seenbefore.security.tokens import Principal
from seenbefore.types import SearchFilters
from tests.review.conftest import ALL_TIERS, CERT

OFF_TOPIC = "the office coffee machine descaling reminder keeps beeping"  # no precedent
VAGUE = "some requests are slower than usual"  # possible precedent — check
ACCOUNT = DraftEdits(
    root_cause="A descaling timer firmware bug repeated the reminder every minute.",
    resolution="Facilities flashed the vendor's firmware 2.4 onto the machine.",
    type="Hardware Failure",  # stored as the slug hardware-failure
)
# Words of the search's own account of a draft; none may become postmortem text.
VERDICT_PROSE = (
    "No postmortem among",
    "credible precedent",
    "nearest postmortems",
    "listed for reference",
    "not scored as matching",
    "turns out to be the same failure",
    "p_precedent",
    "Precedent found",
    "Possible precedent",
    "This resembles",
    "may be a precedent",
    "may not apply",
    "the alert names none",
    "In that incident",
    "Signals shared",
    "Treat this as a new kind",
    "Nothing to compare with",
    "says nothing about whether it happened before",
    "Not recorded at approval",
    "matched by",
)


def test_no_precedent_is_refused_until_a_person_writes_what_it_was(
    workflow: ReviewWorkflow, kb: KnowledgeBase, alice: Principal
) -> None:
    review = workflow.start(from_text(OFF_TOPIC), principal=alice)
    assert review.draft["verdict"] == "no precedent" and review.evidence["candidates"]
    assert reason(review) == (
        "its draft says no precedent, so nothing in it is an account of this incident"
    )
    with pytest.raises(AccountRequired) as refused:
        workflow.approve(review.id, reviewer=alice)
    assert refused.value.missing == ("root_cause", "resolution", "type")
    message = str(refused.value)
    assert message.startswith(f"review {review.id} cannot be approved as drafted: its draft says")
    assert "root_cause (what it was), resolution (what fixed it), type (the failure mode" in message
    # the draft's own words pasted back, or a word or two, are not an account
    copied = ACCOUNT.model_copy(update={"root_cause": review.draft["hypothesis"]})
    with pytest.raises(AccountRequired, match="root_cause repeats the draft's wording"):
        workflow.approve(review.id, reviewer=alice, edits=copied)
    short = ACCOUNT.model_copy(update={"resolution": "restarted it", "type": "  "})
    with pytest.raises(AccountRequired, match="under 3 words") as partial:
        workflow.approve(review.id, reviewer=alice, edits=short)
    assert partial.value.missing == ("resolution", "type")
    still = workflow.get(review.id, tiers=ALL_TIERS)
    assert still.status == "pending" and still.awaiting_decision  # nothing was claimed

    approved = workflow.approve(review.id, reviewer=alice, edits=ACCOUNT)
    pm = kb.store.get(approved.postmortem_id or "", ALL_TIERS).postmortem
    assert pm.type == "hardware-failure" and pm.extra["cited"] == []
    assert [(s.heading, s.text) for s in pm.sections] == [
        ("Symptoms", OFF_TOPIC),
        ("Root cause", ACCOUNT.root_cause),
        ("Resolution", ACCOUNT.resolution),
    ]


def test_a_precedent_dismissed_then_kept_needs_an_account(
    workflow: ReviewWorkflow, kb: KnowledgeBase, alice: Principal
) -> None:
    review = workflow.start(from_text(CERT), principal=alice)
    assert reason(review) is None  # a found precedent may be approved as drafted
    again = workflow.dismiss(review.id, reviewer=alice, reason=DismissReason.NOT_ENOUGH_EVIDENCE)
    assert again.draft["cited_incidents"][0] == "INC-2021-007"  # kept: not excluded
    with pytest.raises(
        AccountRequired, match="its precedent INC-2021-007 was dismissed in round 1"
    ):
        workflow.approve(review.id, reviewer=alice)
    approved = workflow.approve(
        review.id,
        reviewer=alice,
        edits=DraftEdits(
            root_cause="The partner pinned an intermediate we had rotated out.",
            resolution="The partner updated their trust store.",
            type="certificate-expiry",
        ),
    )
    pm = kb.store.get(approved.postmortem_id or "", ALL_TIERS).postmortem
    assert pm.extra["cited"] == ["INC-2021-007"]
    assert pm.section("root_cause").text.startswith("The partner pinned")  # type: ignore[union-attr]


def test_a_wrong_precedent_excluded_then_a_new_one_found_may_stand(
    workflow: ReviewWorkflow, alice: Principal
) -> None:
    """Dismissed, not kept: the next round names another precedent, approved as drafted."""
    review = workflow.start(from_text(CERT), principal=alice)
    again = workflow.dismiss(review.id, reviewer=alice, reason=DismissReason.WRONG_PRECEDENT)
    # the sample KB holds other certificate expiries: the next round finds one of them
    assert again.draft["verdict"] == "precedent found"
    assert again.draft["cited_incidents"][0] in ("INC-2023-020", "INC-2025-033")
    assert reason(again) is None
    assert workflow.approve(review.id, reviewer=alice).status == "approved"


def test_approved_postmortems_hold_only_what_people_wrote(
    workflow: ReviewWorkflow, kb: KnowledgeBase, alice: Principal
) -> None:
    found = workflow.start(from_text(CERT), principal=alice)
    possible = workflow.start(from_text(VAGUE), principal=alice)
    novel = workflow.start(from_text(OFF_TOPIC), principal=alice)
    assert [r.draft["verdict"] for r in (found, possible, novel)] == [
        "precedent found",
        "possible precedent — check",
        "no precedent",
    ]
    approved = [
        workflow.approve(found.id, reviewer=alice),
        workflow.approve(possible.id, reviewer=alice),
        workflow.approve(novel.id, reviewer=alice, edits=ACCOUNT),
    ]
    for before, after in zip((found, possible, novel), approved, strict=True):
        pm = kb.store.get(after.postmortem_id or "", ALL_TIERS).postmortem
        written = (workflow.approved_dir / f"{pm.id}.md").read_text(encoding="utf-8")
        for text in (pm.body, written.split("---\n", 2)[2]):
            for words in VERDICT_PROSE:
                assert words not in text, (pm.id, words)
            for sentence in (before.draft["summary"], before.draft["hypothesis"]):
                assert sentence not in text
            for mitigation in before.draft.get("mitigations") or []:
                assert mitigation not in text  # another incident's fix is not this one's
        # no neighbour's id in the body (a body mention reads as a link to it)
        cited = pm.extra["cited"]
        mentioned = set(re.findall(r"INC-\d{4}-\d{3}", pm.body))
        assert mentioned == set(cited)
        assert len(cited) <= 1 and (cited == []) == (before is novel)
    # the no-precedent postmortem does not answer for its former neighbours' incidents
    neighbour = novel.evidence["candidates"][0]
    hits = kb.search(neighbour["title"], SearchFilters(tiers=ALL_TIERS))
    assert approved[2].postmortem_id not in [c.doc_id for c in hits.candidates]
