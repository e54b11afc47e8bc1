"""A decision that loses a race to another replica is a conflict (409), not a missing checkpoint
(503): the winner's claim commits before its graph moves past the human review, so a loser that
finds no waiting checkpoint re-reads the review and sees it decided."""

from __future__ import annotations

import pytest

from seenbefore.errors import ConflictError
from seenbefore.investigation.query import from_text
from seenbefore.review import ReviewWorkflow
from seenbefore.security.tokens import Principal
from tests.review.conftest import ALL_TIERS, CERT


def test_the_loser_of_a_race_gets_a_conflict(
    workflow: ReviewWorkflow, alice: Principal, monkeypatch: pytest.MonkeyPatch
) -> None:
    review = workflow.start(from_text(CERT), principal=alice)
    bob = Principal("bob", "reviewer", ALL_TIERS)
    waiting = workflow.engine.waiting
    raced: list[str] = []

    def decided_meanwhile(review_id: str) -> bool:
        # the loser has read the review (pending, awaiting a decision); now the winner decides
        if not raced:
            raced.append("racing")  # the winner's own call checks the real checkpoint
            raced.append(workflow.approve(review_id, reviewer=bob).status)
        return waiting(review_id)

    monkeypatch.setattr(workflow.engine, "waiting", decided_meanwhile)
    with pytest.raises(ConflictError, match="already approved"):
        workflow.approve(review.id, reviewer=alice)
    assert raced == ["racing", "approved"]
    final = workflow.get(review.id, tiers=ALL_TIERS)
    assert final.status == "approved" and final.history[-2].actor == "bob"
