"""``GET /v1/audit``: the append-only audit log (admin)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from seenbefore.service.deps import Admin, App
from seenbefore.service.models import AuditOut, AuditRecordOut, problems

router = APIRouter(prefix="/v1", tags=["audit"], responses=problems())


@router.get("/audit", response_model=AuditOut, summary="Read the audit log (newest last)")
def audit(
    app: App,
    who: Admin,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    action: Annotated[str | None, Query(max_length=64)] = None,
    actor: Annotated[str | None, Query(max_length=200)] = None,
    since_id: Annotated[int | None, Query(ge=0)] = None,
) -> AuditOut:
    records = app.audit.read(limit=limit, action=action, actor=actor, since_id=since_id)
    return AuditOut(
        records=[AuditRecordOut.model_validate(r.to_json()) for r in records],
    )
