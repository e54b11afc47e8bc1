"""``POST /v1/detect``: run the detector `seenbefore detect` runs (the NAB-scored streaming
ensemble, per metric, with the same triage and rules) on one service's series sent in the body,
and, with ``investigate``, start an investigation for each anomaly it finds (idempotent per
anomaly id and start, as ``POST /v1/anomalies``). Every point is scored; the learning period is
in the answer's ``detector``."""

from __future__ import annotations

from fastapi import APIRouter

from seenbefore.investigation.query import from_anomaly
from seenbefore.service import actions
from seenbefore.service.deps import App, Responder
from seenbefore.service.models import DetectedAnomaly, DetectIn, DetectOut, problems

router = APIRouter(prefix="/v1", tags=["investigations"], responses=problems())


@router.post(
    "/detect",
    response_model=DetectOut,
    summary="Detect anomalies in one service's series (the streaming ensemble), optionally "
    "investigating each",
    responses=problems(400),
)
def detect_series(body: DetectIn, app: App, who: Responder) -> DetectOut:
    # the detection package loads only for this route (numpy work; its extras are checked when
    # it runs, and a missing one answers with the extra to install)
    from seenbefore.detection.pipeline import DetectionParams, capacity_of, detect, report_json
    from seenbefore.detection.telemetry import parse_series

    telemetry = parse_series(
        body.timestamps, body.metrics, service=body.service, source="the request body"
    )
    n = len(telemetry.timestamps)
    report = detect(telemetry, params=DetectionParams(train_minutes=max(30, int(0.3 * n))))
    found = {a["id"]: a for a in report_json(report)["anomalies"]}
    out: list[DetectedAnomaly] = []
    for a in report.anomalies:
        review_id = None
        if body.investigate:
            review, _ = actions.start_investigation(
                app,
                who,
                from_anomaly(a, capacity_of(telemetry, a.service)),
                channel="anomaly",
                severity=a.severity,
                source_key=f"anomaly:{a.id}:{a.start.isoformat()}",
                source={"kind": "detect", "anomaly_id": a.id, "service": a.service},
            )
            review_id = review.id
        shown = {k: v for k, v in found[a.id].items() if k != "truth"}
        out.append(DetectedAnomaly.model_validate({**shown, "review_id": review_id}))
    return DetectOut(
        detector=report.detector,
        points=n,
        anomalies=out,
        duplicates=len(report.triage.duplicates),
        suppressed=[{"id": a.id, "reason": r} for a, r in report.triage.suppressed],
    )
