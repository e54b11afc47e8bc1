"""``POST /v1/detect``: run the detector `seenbefore detect` runs (the NAB-scored streaming
ensemble, per metric, with the same triage and rules) on one service's series sent in the body,
and, with ``investigate``, start an investigation for each anomaly it finds (idempotent per
anomaly id and start, as ``POST /v1/anomalies``). Every point is scored; the learning period is
in the answer's ``detector``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends

from seenbefore.errors import RateLimitedError
from seenbefore.investigation.query import from_anomaly
from seenbefore.service import actions
from seenbefore.service.deps import App, Caller, Ready, Responder, ServiceState, service_state
from seenbefore.service.models import DetectedAnomaly, DetectIn, DetectOut, problems
from seenbefore.service.work_budget import detect_cost

router = APIRouter(prefix="/v1", tags=["investigations"], responses=problems())
State = Annotated[ServiceState, Depends(service_state)]


@router.post(
    "/detect",
    response_model=DetectOut,
    summary="Detect anomalies in one service's series (the streaming ensemble), optionally "
    "investigating each",
    responses=problems(400, 503),
)
def detect_series(body: DetectIn, app: App, who: Responder, state: State) -> DetectOut:
    # the detection package loads only for this route (numpy work; its extras are checked when
    # it runs, and a missing one answers with the extra to install)
    from seenbefore.detection.pipeline import DetectionParams, capacity_of, detect, report_json
    from seenbefore.detection.telemetry import parse_series

    points, metrics = len(body.timestamps), len(body.metrics)
    shape = f"this series ({points:,} points x {metrics} metrics)"
    with state.detect_budget.reserve(detect_cost(points, metrics), what=shape):
        telemetry = parse_series(
            body.timestamps, body.metrics, service=body.service, source="the request body"
        )
        n = len(telemetry.timestamps)
        report = detect(telemetry, params=DetectionParams(train_minutes=max(30, int(0.3 * n))))
    found = {a["id"]: a for a in report_json(report)["anomalies"]}
    out: list[DetectedAnomaly] = []
    started = skipped = 0
    for a in report.anomalies:
        review_id = why = None
        if body.investigate:
            key = f"anomaly:{a.id}:{a.start.isoformat()}"
            repeat = app.workflow.records.by_source(key) is not None  # found, not started
            why = None if repeat else _skip_reason(app, state, who, started)
            if why is None:
                review, fresh = actions.start_investigation(
                    app,
                    who,
                    from_anomaly(a, capacity_of(telemetry, a.service)),
                    channel="anomaly",
                    severity=a.severity,
                    source_key=key,
                    source={"kind": "detect", "anomaly_id": a.id, "service": a.service},
                )
                review_id, started = review.id, started + fresh
            else:
                skipped += 1
        shown = {k: v for k, v in found[a.id].items() if k != "truth"}
        out.append(
            DetectedAnomaly.model_validate(
                {**shown, "review_id": review_id, "investigation_skipped": why}
            )
        )
    return DetectOut(
        detector=report.detector,
        points=n,
        anomalies=out,
        duplicates=len(report.triage.duplicates),
        suppressed=[{"id": a.id, "reason": r} for a, r in report.triage.suppressed],
        investigations_started=started,
        investigations_skipped=skipped,
    )


def _skip_reason(app: Ready, state: ServiceState, who: Caller, started: int) -> str | None:
    """Why a new investigation is not started (None: start it, one taken from the caller's
    per-minute allowance)."""
    cap = app.settings.detect_max_investigations
    if started >= cap:
        return (
            f"this request already started {cap} investigations, the most one may "
            "(SEENBEFORE_DETECT_MAX_INVESTIGATIONS); investigate this anomaly with POST "
            "/v1/anomalies, or send the series again once those are reviewed"
        )
    try:
        state.investigations.check(who.principal.name)
    except RateLimitedError as exc:
        return str(exc)
    return None
