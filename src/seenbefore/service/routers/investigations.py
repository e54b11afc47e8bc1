"""``POST /v1/investigations`` (start one from text) and ``GET /v1/investigations/{id}``.
An investigation is a review: the id is the same, and the review holds the draft."""

from __future__ import annotations

import dataclasses

from fastapi import APIRouter, status

from seenbefore.investigation.query import from_text
from seenbefore.review.models import Review
from seenbefore.service import actions
from seenbefore.service.deps import App, Responder, Viewer
from seenbefore.service.models import InvestigationIn, problems

router = APIRouter(prefix="/v1", tags=["investigations"], responses=problems())


@router.post(
    "/investigations",
    response_model=Review,
    status_code=status.HTTP_201_CREATED,
    summary="Investigate a text: retrieve precedents and draft a hypothesis for review",
    responses=problems(400),
)
def start(body: InvestigationIn, app: App, who: Responder) -> Review:
    request = from_text(body.text)
    if body.services:
        request = dataclasses.replace(request, services=tuple(body.services))
    review, _ = actions.start_investigation(
        app, who, request, channel="api", severity=body.severity
    )
    return review


@router.get(
    "/investigations/{investigation_id}",
    response_model=Review,
    summary="One investigation (its review, draft, evidence and history)",
    responses=problems(404),
)
def get(investigation_id: str, app: App, who: Viewer) -> Review:
    return app.workflow.get(investigation_id, tiers=who.principal.tiers)
