"""``/healthz`` (liveness: the process answers) and ``/readyz`` (the knowledge base and its store
are usable). Neither needs a token: orchestrators probe them. An unusable store (a database
server that went away, a closed file) is a 503 with the reason, never a 500: the process stays
up, and is ready again once the store answers."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse

from seenbefore.errors import SeenbeforeError
from seenbefore.service.deps import ServiceState, service_state
from seenbefore.service.models import Health, IndexState, Readiness

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=Health, summary="Liveness: the process is up")
async def healthz() -> Health:
    # on the event loop, not the thread pool: it answers while every worker thread is busy
    # (startup work, a burst of searches)
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
    try:  # reads state only: building the index is the next search's work, never a probe's
        generation = state.kb.store.generation()
        built = state.kb.index_generation()
    except Exception as exc:  # store errors, sqlite3 errors, I/O: not ready, never a 500
        # our errors say what failed and what to do (and name a database without its password)
        why = f"{type(exc).__name__}: {exc}" if isinstance(exc, SeenbeforeError) else ""
        body = Readiness(status="not ready", reason=f"store unusable: {why or type(exc).__name__}")
        return JSONResponse(body.model_dump(), status_code=503)
    index: IndexState = (
        "not built" if built is None else ("current" if built == generation else "stale")
    )
    return JSONResponse(Readiness(status="ready", generation=generation, index=index).model_dump())
