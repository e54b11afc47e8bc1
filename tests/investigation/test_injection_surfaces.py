"""MCP's ``investigate`` and ``submit_for_review`` return the draft (``model_dump``): the
withheld flag rides along and the injected root cause is not stated (in-process SDK client, the
pattern of tests/mcpserver/test_mcp.py)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from mcp import Client

from seenbefore.kb import KnowledgeBase
from seenbefore.mcp.server import build_server, fixed_caller
from seenbefore.security.tokens import Principal
from seenbefore.service.app import close_state, new_state, open_state
from tests.investigation.injection_case import DOC_ID, QUERY, assert_withheld, write_injected
from tests.service.conftest import prepare_home, service_settings


def _payload(result: Any) -> Any:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)


def test_mcp_investigate_and_submit_carry_the_withheld_flag(tmp_path: Path) -> None:
    settings = service_settings(tmp_path / "home")
    prepare_home(tmp_path / "home", tmp_path / "docs", settings)
    with KnowledgeBase(settings) as kb:
        kb.ingest([write_injected(tmp_path / "more")])
    state = new_state(settings)
    open_state(state)
    try:
        server = build_server(fixed_caller(state, Principal("agent", "responder", ("general",))))

        async def go() -> tuple[Any, Any]:
            async with Client(server) as client:
                draft = _payload(await client.call_tool("investigate", {"text": QUERY}))
                queued = _payload(await client.call_tool("submit_for_review", {"text": QUERY}))
                return draft, queued

        draft, queued = asyncio.run(go())
    finally:
        close_state(state)
    assert draft["cited_incidents"][0] == DOC_ID
    assert_withheld(draft)
    assert_withheld(queued["draft"])
