"""What routes share: the service state (one KnowledgeBase per process) and the caller.

An API caller (``/v1/*``, ``/metrics``, ``/mcp``) is authenticated by ``Authorization: Bearer
<token>`` only: the web session cookie opens the review queue's pages, never the JSON API, so a
page on another origin cannot make a logged-in browser approve a review through ``/v1`` (the
queue's own forms carry a CSRF token and are checked for their origin, routers/web.py). Then the
caller is rate limited per token and checked for a role. Failed authentication is throttled per
client address before a token is even looked at (``SEENBEFORE_AUTH_FAILURES_PER_MINUTE``). Every
route but /healthz and /readyz depends on :func:`caller`."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Literal

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from seenbefore.config import Settings
from seenbefore.errors import AuthError, RateLimitedError, StoreError
from seenbefore.kb import KnowledgeBase
from seenbefore.security.audit import AuditLog
from seenbefore.security.tokens import Principal, TokenStore
from seenbefore.service.metrics import ServiceMetrics
from seenbefore.service.ratelimit import RateLimiter
from seenbefore.service.sampling import InvestigationSampler
from seenbefore.service.sessions import SESSION_COOKIE, Session, SessionSigner
from seenbefore.service.work_budget import WorkBudget

if TYPE_CHECKING:
    from seenbefore.review.workflow import ReviewWorkflow

SERVICE_ALERTMANAGER = "service:alertmanager"


@dataclass
class ServiceState:
    """Everything one app instance holds. ``kb`` is None until startup has loaded it."""

    settings: Settings
    metrics: ServiceMetrics
    limiter: RateLimiter
    sampler: InvestigationSampler
    failures: RateLimiter  # failed authentications per client address
    detect_budget: WorkBudget  # concurrent /v1/detect requests and their memory
    investigations: RateLimiter  # investigations started per principal (via /v1/detect)
    kb: KnowledgeBase | None = None
    tokens: TokenStore | None = None
    audit: AuditLog | None = None
    workflow: ReviewWorkflow | None = None
    sessions: SessionSigner | None = None
    owns_kb: bool = True
    not_ready: str = "starting: the knowledge base is loading"
    startup_error: str = ""  # why startup failed for good (not_ready moves on at shutdown)
    write_lock: threading.RLock = field(default_factory=threading.RLock)


@dataclass(frozen=True)
class Ready:
    """The parts of the state a request needs, all present."""

    settings: Settings
    kb: KnowledgeBase
    tokens: TokenStore
    audit: AuditLog
    workflow: ReviewWorkflow
    sessions: SessionSigner
    metrics: ServiceMetrics
    sampler: InvestigationSampler
    write_lock: threading.RLock


def service_state(request: Request) -> ServiceState:
    state: ServiceState = request.app.state.service
    return state


def ready(state: Annotated[ServiceState, Depends(service_state)]) -> Ready:
    if (
        state.kb is None
        or state.tokens is None
        or state.audit is None
        or state.workflow is None
        or state.sessions is None
    ):
        raise StoreError(f"the service is not ready ({state.not_ready}); retry shortly")
    return Ready(
        state.settings,
        state.kb,
        state.tokens,
        state.audit,
        state.workflow,
        state.sessions,
        state.metrics,
        state.sampler,
        state.write_lock,
    )


def service_principal(settings: Settings) -> Principal:
    """Who alert-triggered investigations run as: role responder, ``SEENBEFORE_SERVICE_TIERS``."""
    return Principal(SERVICE_ALERTMANAGER, "responder", tuple(settings.service_tiers))


bearer = HTTPBearer(
    auto_error=False,
    scheme_name="bearerToken",
    description="an API token from `seenbefore token create` (sb_...)",
)


@dataclass(frozen=True)
class Caller:
    principal: Principal
    session: str  # the web session id, or this request's id
    via: Literal["token", "session"]
    web: Session | None = None


def request_id(request: Request) -> str:
    rid = getattr(request.state, "request_id", None)
    if not rid:
        rid = uuid.uuid4().hex
        request.state.request_id = rid
    return str(rid)


def session_principal(tokens: TokenStore, session: Session) -> Principal | None:
    """The principal of the token a web session was opened with, if it is still active."""
    for info in tokens.list():
        if info.id == session.token_id:
            if not info.active:
                return None
            return Principal(info.name, info.role, info.tiers, info.id)
    return None


def client_key(request: Request) -> str:
    """Whom failed authentications are counted against: the peer address (not a forwarded
    header, which the client writes)."""
    return "addr:" + (request.client.host if request.client else "unknown")


def refuse_if_throttled(state: ServiceState, key: str) -> None:
    """429 for a client whose failed authentications used up their allowance."""
    try:
        state.failures.peek(key)
    except RateLimitedError:
        state.metrics.rate_limited.inc()
        raise


def authenticated(state: ServiceState, key: str, attempt: Callable[[], Principal]) -> Principal:
    """``attempt()``'s principal; a failure counts against ``key`` (and may throttle it)."""
    refuse_if_throttled(state, key)
    try:
        return attempt()
    except AuthError:
        try:
            state.failures.check(key)
        except RateLimitedError:
            state.metrics.rate_limited.inc()
            raise
        raise


def limit(state: ServiceState, principal: Principal) -> None:
    """The per-token rate limit."""
    try:
        state.limiter.check(principal.token_id or principal.name)
    except RateLimitedError:
        state.metrics.rate_limited.inc()
        raise


def bearer_principal(
    state: ServiceState,
    request: Request,
    credentials: HTTPAuthorizationCredentials | None,
    app: Ready,
) -> Principal:
    """Who a bearer token is (failures throttled per address); nothing else authenticates."""
    if credentials is None:
        refuse_if_throttled(state, client_key(request))
        raise AuthError(
            "no credentials: send 'Authorization: Bearer sb_...' (a token from "
            "`seenbefore token create`); the web queue's login cookie does not open the API"
        )
    token = credentials.credentials
    return authenticated(state, client_key(request), lambda: app.tokens.authenticate(token))


def bearer_caller(
    request: Request, credentials: HTTPAuthorizationCredentials | None, app: Ready
) -> Caller:
    """The API caller: a bearer token, then the per-token rate limit."""
    state: ServiceState = request.app.state.service
    principal = bearer_principal(state, request, credentials, app)
    limit(state, principal)
    return Caller(principal, "req:" + request_id(request), "token")


def session_caller(request: Request, app: Ready) -> Caller | None:
    """The web queue's user: an open session whose token is still active, or None."""
    session = app.sessions.read(request.cookies.get(SESSION_COOKIE))
    principal = session_principal(app.tokens, session) if session else None
    if session is None or principal is None:
        return None
    state: ServiceState = request.app.state.service
    limit(state, principal)
    return Caller(principal, "web:" + session.sid, "session", session)


def caller(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    app: Annotated[Ready, Depends(ready)],
) -> Caller:
    return bearer_caller(request, credentials, app)


def role(name: str, action: str) -> Callable[[Caller], Caller]:
    """A dependency: the caller, who must hold at least role ``name`` to do ``action``."""

    def dependency(who: Annotated[Caller, Depends(caller)]) -> Caller:
        who.principal.require(name, action)
        return who

    return dependency


Viewer = Annotated[Caller, Depends(role("viewer", "reading"))]
Responder = Annotated[Caller, Depends(role("responder", "starting investigations"))]
Reviewer = Annotated[Caller, Depends(role("reviewer", "deciding reviews"))]
Admin = Annotated[Caller, Depends(role("admin", "writing postmortems and reading the audit"))]
App = Annotated[Ready, Depends(ready)]
