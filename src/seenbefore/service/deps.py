"""What routes share: the service state (one KnowledgeBase per process) and the caller.

A caller is authenticated by ``Authorization: Bearer <token>`` or, for the web UI, by the
signed session cookie; then rate limited per token; then checked for a role. Every route but
/healthz and /readyz depends on :func:`caller`."""

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


def authenticate(
    request: Request, credentials: HTTPAuthorizationCredentials | None, app: Ready
) -> Caller:
    if credentials is not None:
        principal = app.tokens.authenticate(credentials.credentials)
        caller = Caller(principal, "req:" + request_id(request), "token")
    else:
        session = app.sessions.read(request.cookies.get(SESSION_COOKIE))
        principal_or_none = session_principal(app.tokens, session) if session else None
        if session is None or principal_or_none is None:
            raise AuthError(
                "no credentials: send 'Authorization: Bearer sb_...' (a token from "
                "`seenbefore token create`), or log in at /login"
            )
        caller = Caller(principal_or_none, "web:" + session.sid, "session", session)
    state: ServiceState = request.app.state.service
    try:
        state.limiter.check(caller.principal.token_id or caller.principal.name)
    except RateLimitedError:
        state.metrics.rate_limited.inc()
        raise
    return caller


def caller(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    app: Annotated[Ready, Depends(ready)],
) -> Caller:
    return authenticate(request, credentials, app)


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
