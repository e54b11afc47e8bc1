"""``GET /v1/reviews`` (by severity, only drafts whose tiers the caller holds),
``POST /v1/reviews/{id}/approve`` (optionally with edits) and ``POST /v1/reviews/{id}/dismiss``
(a structured reason and a note: the review is investigated again without the dismissed
precedents, or closed as no precedent after the configured rounds)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query

from seenbefore.review.models import Review
from seenbefore.service import actions
from seenbefore.service.deps import App, Reviewer, Viewer
from seenbefore.service.models import ApproveIn, DismissIn, ReviewsOut, problems

router = APIRouter(prefix="/v1/reviews", tags=["reviews"], responses=problems())


@router.get("", response_model=ReviewsOut, summary="Reviews visible to the caller, by severity")
def list_reviews(
    app: App,
    who: Viewer,
    status: Annotated[
        Literal["pending", "approved", "closed", "all"], Query(description="which reviews")
    ] = "pending",
) -> ReviewsOut:
    chosen = None if status == "all" else status
    return ReviewsOut(reviews=app.workflow.list(tiers=who.principal.tiers, status=chosen))


@router.post(
    "/{review_id}/approve",
    response_model=Review,
    summary="Approve a draft (optionally edited): it becomes a postmortem",
    description="A draft whose verdict is 'no precedent', or whose precedent a reviewer "
    "already dismissed, cannot be approved as drafted: give edits.root_cause (what it was), "
    "edits.resolution (what fixed it) and edits.type (the failure mode), else the answer is "
    "422 account-required with ``missing`` naming each field still to write. Only what a "
    "person wrote is stored: never the draft's verdict prose or its nearest-neighbour lists.",
    responses=problems(404, 409, 422),
)
def approve(review_id: str, app: App, who: Reviewer, body: ApproveIn | None = None) -> Review:
    return actions.approve(app, who, review_id, body.edits if body else None)


@router.post(
    "/{review_id}/dismiss",
    response_model=Review,
    summary="Dismiss a draft with a reason: re-investigate without it, or close",
    responses=problems(404, 409),
)
def dismiss(review_id: str, body: DismissIn, app: App, who: Reviewer) -> Review:
    return actions.dismiss(app, who, review_id, body.reason, body.note)
