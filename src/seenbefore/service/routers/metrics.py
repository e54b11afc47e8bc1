"""``/metrics``: Prometheus text format. It needs a token (any role): Prometheus scrapes with
``authorization: {credentials_file: ...}`` in its scrape config, and drift figures are not
for anyone on the network."""

from __future__ import annotations

from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST

from seenbefore.service.deps import App, Viewer
from seenbefore.service.models import problems

router = APIRouter(tags=["metrics"], responses=problems(401, 429, 503))


@router.get(
    "/metrics",
    summary="Prometheus metrics (latency per route, investigations, stages, drift)",
    response_class=Response,
    responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}},
)
def metrics(app: App, who: Viewer) -> Response:
    return Response(app.metrics.render(), media_type=CONTENT_TYPE_LATEST)
