"""``POST /v1/alerts/alertmanager``: Alertmanager's webhook (payload version 4).

Each firing alert starts an investigation as the service principal (role responder, tiers
``SEENBEFORE_SERVICE_TIERS``), keyed by ``fingerprint:startsAt`` so a re-delivered webhook
starts nothing new. Such an investigation is readable only by holders of every service tier,
whatever its evidence: otherwise a token with fewer tiers could post a guessed word and learn,
from whether it may then read the investigation, whether a restricted postmortem holds the word.
Each resolved alert closes the investigation of that key when the delivering token may see it
or delivered its firing alert itself (any other is left pending, and the answer is as for none).

Every alert's summary, description, labels and ids are capped first, the cut marked in the text
and listed in the review's ``source.truncated`` (security/alert_caps.py). A batch is atomic: it
is validated whole before any investigation starts, and one bad alert answers 400 naming its
index (``alerts[1] ...``) with nothing started."""

from __future__ import annotations

import hashlib
from typing import Any

from fastapi import APIRouter

from seenbefore.errors import InputError
from seenbefore.investigation.query import from_alertmanager
from seenbefore.security.alert_caps import MAX_URL_CHARS, cap_alert, truncate
from seenbefore.service import actions
from seenbefore.service.deps import App, Responder, service_principal
from seenbefore.service.models import (
    AlertmanagerAlert,
    AlertmanagerWebhook,
    AlertsOut,
    AlertStarted,
    problems,
)

router = APIRouter(prefix="/v1", tags=["alerts"], responses=problems())

SEVERITY_LABELS = {
    "critical": "SEV1",
    "page": "SEV1",
    "high": "SEV2",
    "error": "SEV2",
    "major": "SEV2",
    "warning": "SEV3",
    "minor": "SEV3",
    "info": "SEV4",
    "low": "SEV4",
    "none": "SEV4",
}


def severity_of(labels: dict[str, str]) -> str | None:
    """Alertmanager's conventional ``severity`` label as a seenbefore severity (SEV1..SEV4)."""
    value = labels.get("severity", "").strip()
    if value.upper() in ("SEV1", "SEV2", "SEV3", "SEV4"):
        return value.upper()
    return SEVERITY_LABELS.get(value.lower())


def source_key(alert: AlertmanagerAlert) -> str:
    fingerprint = (
        alert.fingerprint
        or hashlib.sha256(repr(sorted(alert.labels.items())).encode()).hexdigest()[:16]
    )
    return f"{fingerprint}:{alert.startsAt}"


@router.post(
    "/alerts/alertmanager",
    response_model=AlertsOut,
    summary="Alertmanager webhook (v4): firing alerts start investigations, resolved close them",
    responses=problems(400, 413),
)
def alertmanager(body: AlertmanagerWebhook, app: App, who: Responder) -> AlertsOut:
    if body.version != "4":
        raise InputError(
            f"Alertmanager webhook version is {body.version!r}; seenbefore reads version 4"
        )
    # Caps first (security/alert_caps.py), then the whole batch is read before anything starts:
    # one alert that cannot be investigated refuses the batch, named by its own index.
    capped = [cap_alert(a.model_dump(), i) for i, a in enumerate(body.alerts)]
    firing = iter(from_alertmanager({"version": "4", "alerts": [c.alert for c in capped]}))
    alerts = [AlertmanagerAlert.model_validate(c.alert) for c in capped]
    receiver, _ = truncate(body.receiver, MAX_URL_CHARS)
    group_key, _ = truncate(body.groupKey, MAX_URL_CHARS)
    runner = service_principal(app.settings)
    started: list[AlertStarted] = []
    closed: list[str] = []
    ignored = 0
    for alert, cut in zip(alerts, capped, strict=True):
        key = source_key(alert)
        if alert.status == "firing":
            source: dict[str, Any] = {
                "kind": "alertmanager",
                "fingerprint": alert.fingerprint,
                "startsAt": alert.startsAt,
                "labels": dict(alert.labels),
                "receiver": receiver,
                "groupKey": group_key,
                "generatorURL": alert.generatorURL,
                "delivered_by": who.principal.token_id,
            }
            if cut.truncated:
                source["truncated"] = list(cut.truncated)
            review, _ = actions.start_investigation(
                app,
                who,  # the delivering token: recorded in the audit detail
                next(firing),
                channel="alertmanager",
                principal=runner,
                severity=severity_of(alert.labels),
                source_key=key,
                source=source,
            )
            started.append(
                AlertStarted(
                    source_key=key,
                    investigation_id=review.id,
                    status=review.status,
                    round=review.round,
                )
            )
        elif alert.status == "resolved":
            with app.write_lock:  # only a review the delivering token may see is closed
                done = app.workflow.close_by_source(
                    key, tiers=who.principal.tiers, delivered_by=who.principal.token_id
                )
            closed += [r.id for r in done]
            for review in done:
                app.audit.record(
                    runner,
                    "review.close",
                    session=who.session,
                    draft_id=review.id,
                    tiers=actions.review_tiers(review),
                    decision=review.outcome or "alert_resolved",
                    detail={"source_key": key[:200], "delivered_by": who.principal.name},
                )
                app.metrics.observe_decision("closed", review.outcome or "alert_resolved")
        else:
            ignored += 1
    return AlertsOut(started=started, closed=closed, ignored=ignored)
