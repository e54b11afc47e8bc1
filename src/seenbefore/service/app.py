"""The FastAPI app factory.

One KnowledgeBase per process, opened (and its embedder and index loaded) in the lifespan, before
the first request; ``/readyz`` says 503 until then and whenever the store fails. One exception
handler maps the error tree to problem+json (``service/errors.py``). Every route but /healthz
and /readyz needs a token (``service/deps.py``)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Message, Receive, Scope, Send

import seenbefore
from seenbefore.config import Settings, load_settings
from seenbefore.kb import KnowledgeBase
from seenbefore.security.audit import AuditLog
from seenbefore.security.tokens import TokenStore
from seenbefore.service import errors
from seenbefore.service.deps import ServiceState
from seenbefore.service.metrics import LatencyMiddleware, ServiceMetrics
from seenbefore.service.ratelimit import RateLimiter
from seenbefore.service.routers import (
    alerts,
    anomalies,
    audit,
    health,
    investigations,
    metrics,
    postmortems,
    reviews,
    search,
    web,
)
from seenbefore.service.sampling import LOG_NAME, InvestigationSampler
from seenbefore.service.sessions import SessionSigner, store_secret

log = logging.getLogger(__name__)

REQUEST_ID_HEADER = b"x-request-id"


class RequestIdMiddleware:
    """Gives each request an id (``request.state.request_id``), echoed as X-Request-ID. An id
    sent by the client is not trusted: the audit uses ours."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = uuid.uuid4().hex
        scope.setdefault("state", {})["request_id"] = rid

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], (REQUEST_ID_HEADER, rid.encode())]
            await send(message)

        await self.app(scope, receive, send_wrapper)


def open_state(state: ServiceState, kb: KnowledgeBase | None = None) -> None:
    """Load everything a request needs (blocking: the embedder and the index)."""
    from seenbefore.review.workflow import ReviewWorkflow

    settings = state.settings
    state.kb = kb or KnowledgeBase(settings)
    state.kb.embedder()  # the heavy model load happens here, not on the first request
    state.kb.index()
    state.tokens = TokenStore(state.kb.store)
    state.audit = AuditLog(state.kb.store)
    state.sessions = SessionSigner(store_secret(state.kb.store))
    state.workflow = ReviewWorkflow(state.kb, settings)
    resumed = state.workflow.recover()  # decisions a stopped process recorded but did not finish
    if resumed:
        log.info("resumed %d interrupted reviews", len(resumed))
    state.not_ready = ""


def close_state(state: ServiceState) -> None:
    workflow, kb = state.workflow, state.kb
    state.workflow = state.kb = None
    state.not_ready = "shutting down"
    close = getattr(workflow, "close", None)
    if callable(close):
        close()
    if kb is not None and state.owns_kb:
        kb.close()


def create_app(
    settings: Settings | None = None,
    *,
    kb: KnowledgeBase | None = None,
) -> FastAPI:
    """The service. ``kb``: an open knowledge base to serve (``seenbefore serve`` passes the one
    it bootstrapped, so the model is loaded once); the app closes it on shutdown."""
    cfg = settings or load_settings()
    service = ServiceState(
        settings=cfg,
        metrics=ServiceMetrics(),
        limiter=RateLimiter(cfg.rate_limit_per_minute),
        sampler=InvestigationSampler(cfg.home / "logs" / LOG_NAME, cfg.log_sample_fraction),
    )

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        try:
            await run_in_threadpool(open_state, service, kb)
        except Exception as exc:
            service.not_ready = f"startup failed: {type(exc).__name__}: {exc}"
            log.error("service startup failed: %s", service.not_ready)
            raise
        try:
            yield
        finally:
            await run_in_threadpool(close_state, service)

    app = FastAPI(
        title="seenbefore",
        version=seenbefore.__version__,
        summary="Have we seen this incident before? Precedents, drafts and their review.",
        description=(
            "Every route but /healthz and /readyz needs an API token: "
            "`Authorization: Bearer sb_...` (`seenbefore token create`). Errors are RFC 9457 "
            "problem details (application/problem+json). Roles: viewer (search, read) < "
            "responder (+ investigations, anomalies, alerts) < reviewer (+ approve, dismiss) < "
            "admin (+ postmortem writes and deletes, audit). /metrics needs a token too (any "
            "role): give Prometheus one in its scrape config's `authorization`."
        ),
        lifespan=lifespan,
    )
    app.state.service = service
    errors.install(app)
    for module in (
        health,
        metrics,
        search,
        investigations,
        anomalies,
        alerts,
        reviews,
        postmortems,
        audit,
        web,
    ):
        app.include_router(module.router)
    app.add_middleware(LatencyMiddleware, metrics=service.metrics)
    app.add_middleware(RequestIdMiddleware)
    return app


def openapi(app: FastAPI) -> dict[str, Any]:
    return app.openapi()
