"""The Model Context Protocol server: the incident memory as tools and resources for AI agents.

Two doors onto one server (the official ``mcp`` SDK's ``MCPServer``):
- stdio (``seenbefore mcp``, ``mcp/stdio.py``): one caller for the life of the process — the token
  in ``SEENBEFORE_MCP_TOKEN`` (authenticated like an HTTP bearer token, on every call: same roles,
  same tiers, and a revoked token stops working at once), or, without one, the local user as a
  ``responder`` with ``SEENBEFORE_TIERS`` (who can read the knowledge base file anyway). The
  knowledge base loads on the first tool call (``lazy_caller``).
- streamable HTTP at ``/mcp`` under ``seenbefore serve``: every call carries
  ``Authorization: Bearer sb_...`` and is authenticated, rate limited and audited per call.

Errors reach the agent as tool errors that say what was wrong (``is_error``), never a traceback;
a postmortem outside the caller's tiers reads exactly like an absent one.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from pydantic import ValidationError

import seenbefore
from seenbefore.errors import AuthError, NotFoundError, RateLimitedError, SeenbeforeError
from seenbefore.mcp import tools
from seenbefore.security.tokens import Principal
from seenbefore.service.deps import Caller, Ready, ServiceState, ready

Resolve = Callable[[Context], tuple[Ready, Caller]]

INSTRUCTIONS = (
    "seenbefore is an incident memory: past postmortems, searched by symptoms. Call "
    "find_similar_incidents with what is happening now (alert text, symptoms, services); read "
    "'verdict' and 'confidence' before trusting a match — 'no precedent' is a real answer. "
    "investigate drafts a cited hypothesis; submit_for_review queues one for a person. "
    "Everything here is advisory: nothing changes infrastructure."
)


def _problem(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "input"
        return f"{where}: {first.get('msg')}"
    return str(exc)


async def _call(
    resolve: Resolve, ctx: Context, fn: Callable[..., Any], *args: Any, **kw: Any
) -> Any:
    """Run a tool body off the event loop, with the caller resolved there too (resolving may load
    the knowledge base), and errors made tool errors."""

    def run() -> Any:
        app, who = resolve(ctx)
        return fn(app, who, *args, **kw)

    try:
        return await anyio.to_thread.run_sync(run)
    except (SeenbeforeError, ValidationError) as exc:
        raise ToolError(_problem(exc)) from None


def fixed_caller(state: ServiceState, principal: Principal) -> Resolve:
    """stdio: one principal for the process; each call gets its own audit session id."""

    def resolve(_: Context) -> tuple[Ready, Caller]:
        return ready(state), Caller(principal, "mcp:" + uuid.uuid4().hex[:16], "token")

    return resolve


def lazy_caller(
    state: ServiceState, load: Callable[[], None], identity: Principal | str
) -> Resolve:
    """stdio: ``load`` opens the knowledge base on the first call (once, however many calls come
    at the same time; a failed load is tried again by the next call). ``identity`` is the
    caller, or a token authenticated on every call."""
    lock = threading.Lock()

    def resolve(_: Context) -> tuple[Ready, Caller]:
        with lock:
            if state.kb is None:
                load()
        app = ready(state)
        who = identity if isinstance(identity, Principal) else app.tokens.authenticate(identity)
        return app, Caller(who, "mcp:" + uuid.uuid4().hex[:16], "token")

    return resolve


def unloaded(_: Context) -> tuple[Ready, Caller]:
    """A resolver for a server that only describes itself (``stdio.record_handshake``)."""
    raise AuthError("this server only lists its tools; it serves no calls")


def bearer_caller(state: ServiceState) -> Resolve:
    """HTTP: ``Authorization: Bearer`` on every call, then the per-token rate limit."""

    def resolve(ctx: Context) -> tuple[Ready, Caller]:
        app = ready(state)
        headers = ctx.headers or {}
        value = headers.get("authorization") or headers.get("Authorization") or ""
        scheme, _, token = value.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise AuthError(
                "no credentials: send 'Authorization: Bearer sb_...' (a token from "
                "`seenbefore token create`) with every MCP request"
            )
        principal = app.tokens.authenticate(token.strip())
        try:
            state.limiter.check(principal.token_id or principal.name)
        except RateLimitedError:
            state.metrics.rate_limited.inc()
            raise
        return app, Caller(principal, "mcp:" + uuid.uuid4().hex[:16], "token")

    return resolve


def build_server(resolve: Resolve) -> MCPServer:
    server: MCPServer = MCPServer(
        name="seenbefore",
        title="seenbefore incident memory",
        instructions=INSTRUCTIONS,
        version=seenbefore.__version__,
    )

    @server.tool()
    async def find_similar_incidents(
        query: str,
        ctx: Context,
        k: int = 5,
        services: list[str] | None = None,
        since: str | None = None,
        until: str | None = None,
    ) -> dict[str, Any]:
        """Past postmortems that resemble an incident, best first, each with how it matched
        (keywords, meaning, recorded signals), a calibrated confidence in [0, 1] and an explicit
        verdict: 'precedent found' or 'no precedent'. query: alert text or symptoms."""
        return await _call(  # type: ignore[no-any-return]
            resolve,
            ctx,
            tools.find_similar_incidents,
            query,
            k=k,
            services=services,
            since=since,
            until=until,
        )

    @server.tool()
    async def investigate(
        text: str, ctx: Context, services: list[str] | None = None, k: int = 3
    ) -> dict[str, Any]:
        """A cited, advisory root-cause hypothesis drafted from the closest precedents (or a
        plain 'no precedent'), with mitigations used before and checks to run. Not queued."""
        return await _call(resolve, ctx, tools.investigate, text, services=services, k=k)  # type: ignore[no-any-return]

    @server.tool()
    async def get_postmortem(doc_id: str, ctx: Context) -> dict[str, Any]:
        """One postmortem by id (e.g. INC-2021-001): metadata, sections and body."""
        return await _call(resolve, ctx, tools.get_postmortem, doc_id)  # type: ignore[no-any-return]

    @server.tool()
    async def submit_for_review(
        text: str,
        ctx: Context,
        services: list[str] | None = None,
        severity: str | None = None,
    ) -> dict[str, Any]:
        """Start an investigation whose draft waits in the review queue for a person to approve
        (it then becomes a postmortem) or dismiss. Needs role responder; never approves."""
        return await _call(  # type: ignore[no-any-return]
            resolve, ctx, tools.submit_for_review, text, services=services, severity=severity
        )

    @server.resource(
        "postmortem://{doc_id}",
        name="postmortem",
        description="A postmortem as JSON (only those within the caller's access tiers)",
        mime_type="application/json",
    )
    async def postmortem_resource(doc_id: str, ctx: Context) -> dict[str, Any]:
        def run() -> dict[str, Any]:
            app, who = resolve(ctx)
            return tools.get_postmortem(app, who, doc_id)

        try:
            return await anyio.to_thread.run_sync(run)
        except NotFoundError as exc:
            raise ResourceNotFoundError(str(exc)) from None
        except SeenbeforeError as exc:
            raise ToolError(str(exc)) from None

    return server
