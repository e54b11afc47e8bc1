"""Servers for the MCP contract tests: the service tests' small knowledge base (POOL-1 and DNS-1
general, VAULT-1 restricted) and the sample knowledge base (examples/postmortems, 71 general
postmortems) for payload sizes, each opened in process for the SDK's own client."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from seenbefore.kb import KnowledgeBase
from seenbefore.mcp.server import build_server, fixed_caller
from seenbefore.security.tokens import Principal
from seenbefore.service.app import close_state, new_state, open_state
from seenbefore.service.deps import ServiceState
from tests.conftest import EXAMPLES
from tests.service.conftest import prepare_home, service_settings

GENERAL = ("general",)
BOTH = ("general", "restricted")
Session = Callable[[Principal, Callable[[Client], Awaitable[Any]]], Any]


def session(state: ServiceState) -> Session:
    """Run ``script`` with an SDK client connected in process as ``principal``."""

    def run(principal: Principal, script: Callable[[Client], Awaitable[Any]]) -> Any:
        server = build_server(fixed_caller(state, principal))

        async def go() -> Any:
            async with Client(server) as client:
                return await script(client)

        return asyncio.run(go())

    return run


@pytest.fixture
def small_state(tmp_path: Path) -> Iterator[ServiceState]:
    settings = service_settings(tmp_path / "home", public_url="https://sb.example.com/")
    prepare_home(tmp_path / "home", tmp_path / "docs", settings)
    state = new_state(settings)
    open_state(state)
    try:
        yield state
    finally:
        close_state(state)


@pytest.fixture
def small(small_state: ServiceState) -> Session:
    return session(small_state)


@pytest.fixture(scope="module")
def sample_state(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceState]:
    settings = service_settings(tmp_path_factory.mktemp("sample") / "home")
    with KnowledgeBase(settings) as kb:
        kb.ingest([EXAMPLES])
    state = new_state(settings)
    open_state(state)
    try:
        yield state
    finally:
        close_state(state)


@pytest.fixture(scope="module")
def sample(sample_state: ServiceState) -> Session:
    return session(sample_state)
