"""The Model Context Protocol server: the incident memory as tools and resources for AI agents.

Two doors onto one server (the official ``mcp`` SDK's low-level ``Server``, serving the contract
in ``mcp/catalog.py``: arguments validated by its models, unknown ones refused):
- stdio (``seenbefore mcp``, ``mcp/stdio.py``): one caller for the life of the process — the token
  in ``SEENBEFORE_MCP_TOKEN`` (authenticated like an HTTP bearer token, on every call: same roles,
  same tiers, and a revoked token stops working at once), or, without one, the local user as a
  ``responder`` with ``SEENBEFORE_TIERS`` (who can read the knowledge base file anyway). The
  knowledge base loads on the first tool call (``lazy_caller``).
- streamable HTTP at ``/mcp`` under ``seenbefore serve``: every call carries
  ``Authorization: Bearer sb_...`` and is authenticated, rate limited and audited per call.

Each tool result is one copy of the answer: ``structuredContent`` (the tool's output model, whose
JSON Schema is its ``outputSchema``) and a short text reading of it (``mcp/shaping.render``).
``resources/list`` lists the postmortems the caller may read (the first ``MAX_RESOURCES``) as
``postmortem://ID``; ``prompts/get incident-triage`` tells an agent how to use the tools on an
alert (``mcp/prompts.py``).

Errors reach the agent as tool errors that say what was wrong (``is_error``, ``field: message``
for bad arguments), never a traceback; a postmortem outside the caller's tiers reads exactly
like an absent one.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections.abc import Callable
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

import seenbefore
from seenbefore.errors import AuthError, NotFoundError, RateLimitedError, SeenbeforeError
from seenbefore.mcp import browse, prompts, shaping, tools
from seenbefore.mcp.catalog import TOOLS, GetPostmortem, problem
from seenbefore.security.tokens import Principal
from seenbefore.service.deps import Caller, Ready, ServiceState, ready

log = logging.getLogger(__name__)

Context = ServerRequestContext[Any, Any]
Resolve = Callable[[Context], tuple[Ready, Caller]]
TEMPLATE = "postmortem://{doc_id}"

INSTRUCTIONS = (
    "seenbefore is an incident memory: past postmortems, searched by symptoms. Call "
    "find_similar_incidents with what is happening now (alert text, symptoms, services); read "
    "'verdict' and 'p_precedent' (with its 'thresholds') before trusting a match — 'possible "
    "precedent — check' means read it first (get_postmortem, sections root_cause and "
    "resolution), and 'no precedent' is a real answer. find_related and list_postmortems browse "
    "the postmortems; investigate drafts a cited hypothesis; submit_for_review queues one for a "
    "person and get_review follows it; record_feedback says whether a result was the precedent, "
    "which calibrates p_precedent. The incident-triage prompt walks through an alert. "
    "Everything here is advisory: nothing changes infrastructure."
)


def _headers(ctx: Context) -> dict[str, str]:
    found = getattr(ctx.request, "headers", None)
    return dict(found) if found is not None else {}


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
        headers = _headers(ctx)
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


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def build_server(resolve: Resolve) -> Server[Any]:
    """The MCP server over ``resolve`` (who calls, and the service state to run against)."""

    async def list_tools(
        _: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=spec.name,
                    title=spec.title,
                    description=spec.description,
                    input_schema=spec.input_schema(),
                    output_schema=spec.output_schema(),
                    annotations=types.ToolAnnotations(**spec.annotations()),
                )
                for spec in TOOLS.values()
            ]
        )

    async def call_tool(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        spec = TOOLS.get(params.name)
        if spec is None:
            return _error(f"no tool {params.name!r}; the tools are {', '.join(TOOLS)}")
        try:
            args = spec.arguments.model_validate(params.arguments or {})
        except ValidationError as exc:
            return _error(problem(spec, exc))

        def run() -> Any:
            app, who = resolve(ctx)  # off the event loop: resolving may load the knowledge base
            return tools.RUN[spec.name](app, who, args)

        try:
            out = await anyio.to_thread.run_sync(run)
        except SeenbeforeError as exc:
            return _error(str(exc))
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=shaping.render(out))],
            structured_content=out.model_dump(mode="json"),
        )

    async def list_resources(
        ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        def run() -> list[tuple[str, str]]:
            app, who = resolve(ctx)
            return browse.resources(app, who)

        try:
            listed = await anyio.to_thread.run_sync(run)
        except SeenbeforeError as exc:
            raise MCPError(code=types.INTERNAL_ERROR, message=str(exc)) from None
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=f"postmortem://{doc_id}",
                    name=doc_id,
                    title=title,
                    mime_type="application/json",
                )
                for doc_id, title in listed
            ]
        )

    async def list_prompts(
        _: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[prompts.TRIAGE])

    async def get_prompt(_: Context, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        try:
            return prompts.get(params.name, params.arguments or {})
        except ValueError as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=str(exc)) from None

    async def list_templates(
        _: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template=TEMPLATE,
                    name="postmortem",
                    description="A postmortem as JSON (only those within the caller's access tiers)",
                    mime_type="application/json",
                )
            ]
        )

    async def read_resource(
        ctx: Context, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        doc_id = uri.removeprefix("postmortem://")
        if doc_id == uri or not doc_id:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"no resource {uri!r}; postmortems are postmortem://<id>",
                data={"uri": uri},
            )

        def run() -> dict[str, Any]:
            app, who = resolve(ctx)
            return tools.get_postmortem(app, who, GetPostmortem(doc_id=doc_id)).model_dump(
                mode="json"
            )

        try:
            doc = await anyio.to_thread.run_sync(run)
        except (NotFoundError, ValidationError) as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=str(exc), data={"uri": uri}) from None
        except SeenbeforeError as exc:
            raise MCPError(code=types.INTERNAL_ERROR, message=str(exc), data={"uri": uri}) from None
        return types.ReadResourceResult(
            contents=[
                types.TextResourceContents(
                    uri=uri, mime_type="application/json", text=json.dumps(doc, ensure_ascii=False)
                )
            ]
        )

    return Server(
        "seenbefore",
        version=seenbefore.__version__,
        title="seenbefore incident memory",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )
