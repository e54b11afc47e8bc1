"""``seenbefore mcp`` on stdio, light to import: the console entry point (cli/launch.py) calls
``run_mcp`` without the Typer app; the settings, the SDK server and the knowledge base load only
when the first request past the handshake needs them (mcp/stdio.py)."""

from __future__ import annotations

import importlib
import logging
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from seenbefore.extras import absent

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

TOKEN_ENV = "SEENBEFORE_MCP_TOKEN"
MCP_PURPOSE = "`seenbefore mcp` (the MCP server)"


def run_mcp(tiers: list[str]) -> None:
    """Serve MCP on stdio as the token in SEENBEFORE_MCP_TOKEN, or as the local user with
    ``tiers`` (default: SEENBEFORE_TIERS)."""
    error = absent("server", MCP_PURPOSE, "mcp", "fastapi", "langgraph")
    if error is not None:
        raise error
    from seenbefore.mcp import stdio

    stdio.serve(lambda: build_stdio_server(tiers), prepare=import_server_modules)


# what build_stdio_server imports: the MCP SDK alone takes about half a second
SERVER_MODULES = (
    "seenbefore.cli.common",
    "seenbefore.mcp.server",
    "seenbefore.security.tokens",
    "seenbefore.service.app",
)


def import_server_modules() -> None:
    """Import the SDK server and the service's modules while the handshake is answered, so a
    client's first tool call (usually seconds after ``tools/list``: the model decides first)
    waits only for the knowledge base to open. Imports only: nothing is opened or written."""
    for name in SERVER_MODULES:
        importlib.import_module(name)


def build_stdio_server(tiers: list[str]) -> tuple[Server[Any], Callable[[], None]]:
    """The SDK server for the stdio door, and what closes it; the knowledge base it serves
    opens on the first tool call."""
    from seenbefore.cli.common import caller_tiers, err_console, settings
    from seenbefore.mcp.server import build_server, lazy_caller
    from seenbefore.security.tokens import Principal
    from seenbefore.service.app import close_state, new_state, open_state

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)  # stdout is the protocol's
    cfg = settings()
    state = new_state(cfg)
    token = os.environ.get(TOKEN_ENV, "").strip()
    identity: Principal | str
    if token:
        identity = token
        err_console.print(f"seenbefore MCP on stdio as the token in {TOKEN_ENV}")
    else:
        identity = Principal("local:mcp", "responder", caller_tiers(tiers or None, cfg))
        err_console.print(
            f"seenbefore MCP on stdio as {identity.name} (role {identity.role}, "
            f"tiers {', '.join(identity.tiers)})"
        )

    def load() -> None:
        err_console.print(
            "seenbefore MCP: loading the knowledge base (store, embedder, index) for the first "
            "tool call"
        )
        open_state(state, warm_reviews=False)  # the engine loads if a tool needs it

    return build_server(lazy_caller(state, load, identity)), lambda: close_state(state)
