"""``POST /v1/anomalies``: investigate a detected anomaly (as `seenbefore detect --json` writes
it). Idempotent per anomaly id and start time."""

from __future__ import annotations

from fastapi import APIRouter, status

from seenbefore.errors import InputError
from seenbefore.investigation.query import from_anomaly
from seenbefore.review.models import Review
from seenbefore.service import actions
from seenbefore.service.deps import App, Responder
from seenbefore.service.models import AnomalyIn, problems
from seenbefore.types import anomaly_from_dict

router = APIRouter(prefix="/v1", tags=["investigations"], responses=problems())


@router.post(
    "/anomalies",
    response_model=Review,
    status_code=status.HTTP_201_CREATED,
    summary="Investigate an anomaly (idempotent per anomaly id and start)",
    responses=problems(400),
)
def anomaly(body: AnomalyIn, app: App, who: Responder) -> Review:
    try:
        found = anomaly_from_dict(body.model_dump(mode="json"))
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(
            f"not an anomaly record ({exc}); send what `detect --json` writes"
        ) from exc
    key = f"anomaly:{found.id}:{found.start.isoformat()}"
    review, _ = actions.start_investigation(
        app,
        who,
        from_anomaly(found),
        channel="anomaly",
        severity=found.severity,
        source_key=key,
        source={"kind": "anomaly", "anomaly_id": found.id, "service": found.service},
    )
    return review
