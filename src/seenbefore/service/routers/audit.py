"""``GET /v1/audit``: the append-only audit log (admin), filtered to the caller's tiers.

An admin reads the records whose every named tier they hold and whose review (``draft_id``),
while it exists, they may see (``security.audit.visible_sql``); the others are left out whole,
not redacted. An admin holding every tier reads everything. ``seenbefore audit`` on the host
(which holds the store) reads and verifies the whole chain."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from seenbefore.service.deps import Admin, App
from seenbefore.service.models import AuditOut, AuditRecordOut, problems

router = APIRouter(prefix="/v1", tags=["audit"], responses=problems())


@router.get(
    "/audit",
    response_model=AuditOut,
    summary="Read the audit log (newest last): records of tiers the caller holds",
)
def audit(
    app: App,
    who: Admin,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    action: Annotated[str | None, Query(max_length=64)] = None,
    actor: Annotated[str | None, Query(max_length=200)] = None,
    since_id: Annotated[int | None, Query(ge=0)] = None,
) -> AuditOut:
    records = app.audit.read(
        limit=limit, action=action, actor=actor, since_id=since_id, tiers=who.principal.tiers
    )
    return AuditOut(
        records=[AuditRecordOut.model_validate(r.to_json()) for r in records],
    )
