"""`seenbefore mcp`: the incident memory as a Model Context Protocol server over stdio.

An MCP client (Claude Desktop, HolmesGPT, any agent) starts this command and talks JSON-RPC on its
stdin/stdout; nothing else is written to stdout. The caller is the API token in
SEENBEFORE_MCP_TOKEN (same roles and tiers as the HTTP API), or, without one, the local user as a
responder with the tiers given (--tier / SEENBEFORE_TIERS)."""

from __future__ import annotations

import logging
import os
import sys

from seenbefore.cli.common import caller_tiers, err_console, settings
from seenbefore.cli.search import TierOption
from seenbefore.extras import requires

TOKEN_ENV = "SEENBEFORE_MCP_TOKEN"


def mcp(tier: TierOption = None) -> None:
    """Serve the incident memory to AI agents over stdio (Model Context Protocol)."""
    with requires("server", "`seenbefore mcp` (the MCP server)"):
        from seenbefore.mcp.server import build_server, fixed_caller
        from seenbefore.service.app import close_state, new_state, open_state
        from seenbefore.service.deps import ready
    from seenbefore.security.tokens import Principal

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)  # stdout is the protocol's
    cfg = settings()
    state = new_state(cfg)
    open_state(state)
    try:
        token = os.environ.get(TOKEN_ENV, "").strip()
        if token:
            principal = ready(state).tokens.authenticate(token)
        else:
            principal = Principal("local:mcp", "responder", caller_tiers(tier, cfg))
        err_console.print(
            f"seenbefore MCP on stdio as {principal.name} (role {principal.role}, "
            f"tiers {', '.join(principal.tiers)})"
        )
        build_server(fixed_caller(state, principal)).run("stdio")
    finally:
        close_state(state)
