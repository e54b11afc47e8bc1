"""The FastAPI app factory.

One KnowledgeBase per process, opened (and its embedder and index loaded) in the lifespan;
``/readyz`` says 503 with the reason until then and whenever the store fails. By default the
lifespan waits for it (the first request finds the service ready); with ``background_start``
(``seenbefore serve``) the socket is served at once, ``/healthz`` answers from the first second,
and the loading — and a sample ingest, when asked — runs behind it. The store is the
one the settings select (storage/factory.py): SQLite, or PostgreSQL when
``SEENBEFORE_DATABASE_URL`` is set, shared by any number of replicas. A database server that does
not answer at startup does not stop the process: it serves /healthz, reports not ready with the
reason on /readyz, and keeps trying to open the store (``OPEN_RETRY_S``). One exception handler
maps the error tree to problem+json (``service/errors.py``). Every route but /healthz and
/readyz needs a token (``service/deps.py``)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

import seenbefore
from seenbefore.config import Settings, load_settings
from seenbefore.errors import StoreError
from seenbefore.extras import available
from seenbefore.kb import KnowledgeBase
from seenbefore.security.audit import AuditLog
from seenbefore.security.tokens import TokenStore
from seenbefore.service import errors
from seenbefore.service.bodylimit import BodyLimitMiddleware
from seenbefore.service.deps import ServiceState
from seenbefore.service.mcp_door import BearerGate, McpDoor
from seenbefore.service.metrics import LatencyMiddleware, ServiceMetrics
from seenbefore.service.ratelimit import RateLimiter
from seenbefore.service.routers import (
    alerts,
    anomalies,
    audit,
    detect,
    docs,
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
from seenbefore.service.work_budget import MIB, WorkBudget
from seenbefore.storage.factory import open_store

log = logging.getLogger(__name__)

REQUEST_ID_HEADER = b"x-request-id"
OPEN_RETRY_S = (1.0, 2.0, 5.0, 10.0, 30.0)  # waits between attempts to open a server store
OnOpen = Callable[[KnowledgeBase], None]


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


def open_state(
    state: ServiceState,
    kb: KnowledgeBase | None = None,
    on_open: OnOpen | None = None,
    *,
    warm_reviews: bool = True,
) -> None:
    """Load everything a request needs (blocking: the embedder and the index). Nothing is
    published to ``state`` unless all of it loaded; a knowledge base opened here is closed
    again when a later step fails. The review engine (LangGraph) loads when a review first
    needs it, or, with ``warm_reviews``, on a background thread once the state is published
    (ready does not wait for it: a store with no unfinished review needs none of it)."""
    from seenbefore.review.workflow import ReviewWorkflow

    settings = state.settings
    base = kb or KnowledgeBase(settings, store=open_store(settings))
    try:
        if on_open is not None:  # first: a sample ingest there is in the index loaded below
            on_open(base)
        base.embedder()  # the heavy model load happens here, not on the first request
        base.index()
        audit = AuditLog(base.store)
        audit.key()  # a keyed chain (PostgreSQL) without its key: not ready
        sessions = SessionSigner(store_secret(base.store), store=base.store)
        workflow = ReviewWorkflow(base, settings)
        try:
            resumed = workflow.recover()  # decisions a stopped process recorded, unfinished
        except BaseException:
            workflow.close()
            raise
    except BaseException:
        if kb is None:
            base.close()
        raise
    if resumed:
        log.info("resumed %d interrupted reviews", len(resumed))
    shared = base.store.shared_buckets()  # PostgreSQL: one limit across replicas
    state.limiter.share(shared)
    state.investigations.share(shared)
    state.failures.share(shared)
    state.tokens = TokenStore(base.store)
    state.audit = audit
    state.sessions = sessions
    state.workflow = workflow
    state.kb = base
    state.not_ready = ""
    if warm_reviews:
        threading.Thread(target=workflow.warm, name="review-engine", daemon=True).start()


async def keep_opening(
    state: ServiceState, kb: KnowledgeBase | None, on_open: OnOpen | None
) -> None:
    """Retry :func:`open_state` until the store answers (the database server was down at
    startup); /readyz reports the latest reason meanwhile."""
    attempt = 0
    while True:
        await asyncio.sleep(OPEN_RETRY_S[min(attempt, len(OPEN_RETRY_S) - 1)])
        attempt += 1
        try:
            await run_in_threadpool(open_state, state, kb, on_open)
        except StoreError as exc:
            state.not_ready = f"store unusable: {exc}"
            log.warning("store still unusable (attempt %d): %s", attempt, exc)
            continue
        except Exception as exc:
            state.not_ready = f"startup failed: {type(exc).__name__}: {exc}"
            log.error("service startup failed: %s", state.not_ready)
            return
        log.info("store opened after %d retries; ready", attempt)
        return


def close_state(state: ServiceState) -> None:
    workflow, kb = state.workflow, state.kb
    state.workflow = state.kb = None
    state.not_ready = "shutting down"
    close = getattr(workflow, "close", None)
    if callable(close):
        close()
    if kb is not None and state.owns_kb:
        kb.close()


def new_state(cfg: Settings) -> ServiceState:
    """A service state, nothing opened yet (``open_state`` loads the knowledge base)."""
    return ServiceState(
        settings=cfg,
        metrics=ServiceMetrics(),
        limiter=RateLimiter(cfg.rate_limit_per_minute),
        failures=RateLimiter(
            cfg.auth_failures_per_minute,
            setting="SEENBEFORE_AUTH_FAILURES_PER_MINUTE",
            what="failed authentications per minute from this address",
        ),
        sampler=InvestigationSampler(cfg.home / "logs" / LOG_NAME, cfg.log_sample_fraction),
        detect_budget=WorkBudget(
            concurrency=cfg.detect_concurrency, memory_bytes=cfg.detect_memory_mib * MIB
        ),
        investigations=RateLimiter(
            cfg.investigations_per_minute,
            setting="SEENBEFORE_INVESTIGATIONS_PER_MINUTE",
            what="investigations per minute for this principal",
        ),
    )


def _startup_failed(state: ServiceState, exc: Exception) -> bool:
    """Record why opening failed on /readyz and in the log; True when it is a database server
    that does not answer (the service stays up and ``keep_opening`` retries), False when the
    failure is fatal."""
    if isinstance(exc, StoreError) and state.settings.database_url:
        state.not_ready = f"store unusable: {exc}"
        log.error("store unusable at startup, retrying: %s", exc)
        return True
    state.not_ready = state.startup_error = f"startup failed: {type(exc).__name__}: {exc}"
    log.error("service startup failed: %s", state.not_ready)
    return False


async def start_behind(
    state: ServiceState,
    kb: KnowledgeBase | None,
    on_open: OnOpen | None,
    on_fatal: Callable[[], None] | None,
) -> None:
    """Open the state while requests are already served; a fatal failure calls ``on_fatal``."""
    try:
        await run_in_threadpool(open_state, state, kb, on_open)
    except Exception as exc:
        if _startup_failed(state, exc):
            await keep_opening(state, kb, on_open)
        elif on_fatal is not None:
            on_fatal()


def create_app(
    settings: Settings | None = None,
    *,
    kb: KnowledgeBase | None = None,
    on_open: OnOpen | None = None,
    background_start: bool = False,
    on_fatal: Callable[[], None] | None = None,
) -> FastAPI:
    """The service. ``kb``: an open knowledge base to serve; the app closes it on shutdown.
    ``on_open`` runs on the knowledge base once its store answers, before the embedder and the
    index load (``seenbefore serve`` ingests the sample there when asked, and bootstraps there
    when the database was down at its start). ``background_start``: serve requests at once
    (/healthz, and 503 "not ready" elsewhere) while that startup work runs; a fatal failure of
    it then calls ``on_fatal`` (``seenbefore serve`` stops the server)."""
    cfg = settings or load_settings()
    service = new_state(cfg)
    door = McpDoor(service) if available("mcp") else None

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        task: asyncio.Task[None] | None = None
        if background_start:
            task = asyncio.create_task(start_behind(service, kb, on_open, on_fatal))
        else:
            try:
                await run_in_threadpool(open_state, service, kb, on_open)
            except Exception as exc:
                if not _startup_failed(service, exc):
                    raise
                task = asyncio.create_task(keep_opening(service, kb, on_open))
        opening = asyncio.create_task(door.serve()) if door is not None else None
        try:
            yield
        finally:
            if door is not None and opening is not None:
                await door.stop(opening)
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            opened = service.kb is not None
            await run_in_threadpool(close_state, service)
            if kb is not None and not opened:  # given to us, never served: still ours to close
                await run_in_threadpool(kb.close)

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
        docs_url=None,  # served by routers/docs.py from the package: no CDN
        redoc_url=None,
        swagger_ui_oauth2_redirect_url=None,
    )
    app.state.service = service
    errors.install(app)
    for module in (
        health,
        metrics,
        search,
        investigations,
        anomalies,
        detect,
        alerts,
        reviews,
        postmortems,
        audit,
        web,
        docs,
    ):
        app.include_router(module.router)
    if door is not None:  # /mcp: a bearer token first, then the MCP server (service/mcp_door.py)
        gated = BearerGate(door, service)
        app.router.routes.append(Route("/mcp", endpoint=gated, include_in_schema=False))
    app.add_middleware(LatencyMiddleware, metrics=service.metrics)
    app.add_middleware(BodyLimitMiddleware, max_bytes=cfg.max_request_bytes)  # before auth
    app.add_middleware(RequestIdMiddleware)
    return app


def openapi(app: FastAPI) -> dict[str, Any]:
    return app.openapi()
