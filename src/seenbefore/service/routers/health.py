"""``/healthz`` (liveness: the process answers) and ``/readyz`` (the knowledge base and its store
are usable). Neither needs a token: orchestrators probe them."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse

from seenbefore.service.deps import ServiceState, service_state
from seenbefore.service.models import Health, Readiness

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=Health, summary="Liveness: the process is up")
def healthz() -> Health:
    return Health()


@router.get(
    "/readyz",
    response_model=Readiness,
    summary="Readiness: the knowledge base and store are usable",
    responses={503: {"model": Readiness, "description": "not ready (loading, or store failed)"}},
)
def readyz(state: Annotated[ServiceState, Depends(service_state)]) -> JSONResponse:
    if state.kb is None or state.workflow is None:
        body = Readiness(status="not ready", reason=state.not_ready)
        return JSONResponse(body.model_dump(), status_code=503)
    try:
        generation = state.kb.store.generation()
        state.kb.index()
    except Exception as exc:  # store errors, sqlite3 errors, I/O: not ready, never a 500
        body = Readiness(status="not ready", reason=f"store unusable: {type(exc).__name__}")
        return JSONResponse(body.model_dump(), status_code=503)
    return JSONResponse(Readiness(status="ready", generation=generation).model_dump())
