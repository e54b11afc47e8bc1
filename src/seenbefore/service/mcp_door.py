"""``/mcp`` under ``seenbefore serve``: the MCP server as streamable HTTP (stateless, JSON
answers), behind the same bearer tokens as ``/v1``.

* :class:`BearerGate` answers a request without a valid bearer token as ``/v1`` does (401 with
  ``WWW-Authenticate``, or 429 once the address's failed attempts are used up) before the MCP
  server reads it: ``initialize`` and ``tools/list`` included. Each tool call still checks its
  token again (mcp/server.py ``bearer_caller``), for the caller's identity.
* :class:`McpDoor` builds the server behind the socket: importing the MCP SDK takes a second or
  more on a small machine, which ``/healthz`` does not wait for. The lifespan starts
  :meth:`McpDoor.serve`; a request that arrives before the server is up waits for it (at most
  ``WAIT_S``), then is served by it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from fastapi import Request
from fastapi.security import HTTPAuthorizationCredentials
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Receive, Scope, Send

from seenbefore.errors import SeenbeforeError, StoreError
from seenbefore.service import errors
from seenbefore.service.deps import ServiceState, bearer_principal, ready

log = logging.getLogger(__name__)

WAIT_S = 60.0  # how long a first /mcp request waits for the server to be built


class BearerGate:
    def __init__(self, app: ASGIApp, state: ServiceState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        try:
            await run_in_threadpool(self._authenticate, request)
        except SeenbeforeError as exc:
            response = await errors.seenbefore_error(request, exc)
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _authenticate(self, request: Request) -> None:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        credentials = (
            HTTPAuthorizationCredentials(scheme=scheme, credentials=token.strip())
            if scheme.lower() == "bearer" and token.strip()
            else None
        )
        bearer_principal(self.state, request, credentials, ready(self.state))


class McpDoor:
    def __init__(self, state: ServiceState) -> None:
        self.state = state
        self.http: ASGIApp | None = None
        self.failed = ""
        self._ready: asyncio.Event | None = None
        self._stop: asyncio.Event | None = None

    def _events(self) -> tuple[asyncio.Event, asyncio.Event]:
        if self._ready is None or self._stop is None:
            self._ready, self._stop = asyncio.Event(), asyncio.Event()
        return self._ready, self._stop

    async def serve(self) -> None:
        """Build the server (its imports in a thread), then hold its session manager open
        until :meth:`stop`."""
        ready_event, stop = self._events()
        try:
            server = await run_in_threadpool(_build, self.state)
            self.http = server.streamable_http_app(
                streamable_http_path="/mcp", stateless_http=True, json_response=True
            )
            async with server.session_manager.run():
                ready_event.set()
                await stop.wait()
        except Exception as exc:  # reported on every /mcp request, and logged once
            self.failed = f"{type(exc).__name__}: {exc}"
            log.error("the MCP server could not start: %s", self.failed)
        finally:
            self.http = None
            ready_event.set()

    async def stop(self, task: asyncio.Task[None]) -> None:
        _, stop = self._events()
        stop.set()
        await task

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        ready_event, _ = self._events()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(ready_event.wait(), WAIT_S)
        if self.http is None:
            why = self.failed or f"it was not up within {WAIT_S:.0f} s of the request"
            exc = StoreError(f"the MCP server is unavailable ({why}); retry shortly")
            response = await errors.seenbefore_error(Request(scope), exc)
            await response(scope, receive, send)
            return
        await self.http(scope, receive, send)


def _build(state: ServiceState) -> Any:
    from seenbefore.mcp.server import bearer_caller, build_server

    return build_server(bearer_caller(state))
