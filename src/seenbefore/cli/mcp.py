"""`seenbefore mcp`: the incident memory as a Model Context Protocol server over stdio.

An MCP client (Claude Desktop, HolmesGPT, any agent) starts this command and talks JSON-RPC on its
stdin/stdout; nothing else is written to stdout. The caller is the API token in
SEENBEFORE_MCP_TOKEN (same roles and tiers as the HTTP API, checked on every call), or, without
one, the local user as a responder with the tiers given (--tier / SEENBEFORE_TIERS).

The console entry point (cli/launch.py) starts ``seenbefore mcp [--tier T]...`` without the Typer
app; this command is the same server for ``python -m seenbefore mcp`` and for options the fast
path leaves to Typer."""

from __future__ import annotations

from seenbefore.cli.mcp_stdio import run_mcp
from seenbefore.cli.search import TierOption


def mcp(tier: TierOption = None) -> None:
    """Serve the incident memory to AI agents over stdio (Model Context Protocol). Answers the
    handshake at once; the knowledge base loads on the first tool call."""
    run_mcp(list(tier or []))
