"""The real-model tier's servers: one llama.cpp server per context size for the session, each
behind a recording proxy. Skipped where the ``local-llm`` extra is not installed, unless
``SEENBEFORE_REQUIRE_REAL_LLM=1`` (``make test`` sets it: there the tier must run)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.reallm.server import LlamaServer, RecordingProxy, missing


def _require() -> None:
    why = missing()
    if why is None:
        return
    if os.environ.get("SEENBEFORE_REQUIRE_REAL_LLM") == "1":
        pytest.fail(f"the real-model tier must run here (SEENBEFORE_REQUIRE_REAL_LLM=1): {why}")
    pytest.skip(why)


@pytest.fixture(scope="session")
def llama_8192() -> Iterator[LlamaServer]:
    _require()
    with LlamaServer(n_ctx=8192) as server:
        yield server


@pytest.fixture(scope="session")
def llama_2048() -> Iterator[LlamaServer]:
    _require()
    with LlamaServer(n_ctx=2048) as server:
        yield server


@pytest.fixture
def proxy(llama_8192: LlamaServer) -> Iterator[RecordingProxy]:
    with RecordingProxy(llama_8192.base_url) as recording:
        yield recording


@pytest.fixture
def proxy_2048(llama_2048: LlamaServer) -> Iterator[RecordingProxy]:
    with RecordingProxy(llama_2048.base_url) as recording:
        yield recording
