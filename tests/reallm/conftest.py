"""The real-model tier's servers: one llama.cpp server per context size for the session, each
behind a recording proxy. Skipped where the ``local-llm`` extra is not installed, unless
``SEENBEFORE_REQUIRE_REAL_LLM=1`` (``make test`` sets it: there the tier must run)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.reallm.server import LlamaServer, RecordingProxy, missing


def _require() -> None:
    why = missing()
    if why is None:
        return
    if os.environ.get("SEENBEFORE_REQUIRE_REAL_LLM") == "1":
        pytest.fail(f"the real-model tier must run here (SEENBEFORE_REQUIRE_REAL_LLM=1): {why}")
    pytest.skip(why)


_STARTED: list[LlamaServer] = []  # the servers this session started, for failure reports


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Any:
    """A failed real-model test shows whether each server still runs and what it printed last:
    a crashed server otherwise reads as a bare "connection refused"."""
    report = yield
    if report.failed:
        for server in _STARTED:
            report.sections.append((f"llama.cpp server n_ctx={server.n_ctx}", server.state()))
    return report


def _serve(n_ctx: int) -> Iterator[LlamaServer]:
    _require()
    with LlamaServer(n_ctx=n_ctx) as server:
        _STARTED.append(server)
        yield server
        _STARTED.remove(server)


@pytest.fixture(scope="session")
def llama_8192() -> Iterator[LlamaServer]:
    yield from _serve(8192)


@pytest.fixture(scope="session")
def llama_2048() -> Iterator[LlamaServer]:
    yield from _serve(2048)


def _record(server: LlamaServer) -> Iterator[RecordingProxy]:
    with RecordingProxy(server.base_url, server) as recording:
        yield recording
    # a test whose drafts all fell back (call-failed) would pass against a dead server: a server
    # that died during the test fails it, with what it printed
    if not server.running():
        pytest.fail(f"the real model's server died during this test: {server.state()}")


@pytest.fixture
def proxy(llama_8192: LlamaServer) -> Iterator[RecordingProxy]:
    yield from _record(llama_8192)


@pytest.fixture
def proxy_2048(llama_2048: LlamaServer) -> Iterator[RecordingProxy]:
    yield from _record(llama_2048)
