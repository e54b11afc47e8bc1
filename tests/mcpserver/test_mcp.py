"""The MCP server through the SDK's own client: in process, over stdio (``seenbefore mcp`` as a
subprocess) and over streamable HTTP (``/mcp`` of the service on a real loopback socket).

The knowledge base is the service tests' (tests/service/conftest.py): two general postmortems and
VAULT-1 in the restricted tier, which a general-tier client must never see."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from seenbefore.kb import KnowledgeBase
from seenbefore.mcp.server import build_server, fixed_caller
from seenbefore.security.audit import AuditLog
from seenbefore.security.tokens import Principal
from seenbefore.service.app import close_state, create_app, new_state, open_state
from tests.service.conftest import prepare_home, service_settings
from tests.service.live import live_server

INIT_PARAMS = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "test", "version": "1"},
}
TOOLS = {
    "find_similar_incidents",
    "investigate",
    "get_postmortem",
    "list_postmortems",
    "find_related",
    "submit_for_review",
    "get_review",
    "record_feedback",
}
POOL_QUERY = "checkout p99 latency up 8x, database connections at the pool limit"
VAULT_QUERY = "payment vault decryption errors after key rotation"


@pytest.fixture
def home(tmp_path: Path) -> tuple[Any, dict[str, str]]:
    settings = service_settings(tmp_path / "home")
    tokens = prepare_home(tmp_path / "home", tmp_path / "docs", settings)
    return settings, tokens


def payload(result: Any) -> Any:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)


async def exercise(client: Client) -> dict[str, Any]:
    """Everything a general-tier responder does; returns what it saw."""
    listed = await client.list_tools()
    names = {t.name for t in listed.tools}
    found = payload(await client.call_tool("find_similar_incidents", {"query": POOL_QUERY, "k": 5}))
    vault = payload(await client.call_tool("find_similar_incidents", {"query": VAULT_QUERY}))
    hidden = await client.call_tool("get_postmortem", {"doc_id": "VAULT-1"})
    absent = await client.call_tool("get_postmortem", {"doc_id": "NOPE-404"})
    shown = payload(await client.call_tool("get_postmortem", {"doc_id": "POOL-1"}))
    draft = payload(await client.call_tool("investigate", {"text": POOL_QUERY}))
    queued = payload(await client.call_tool("submit_for_review", {"text": POOL_QUERY}))
    blank = await client.call_tool("find_similar_incidents", {"query": ""})
    return {
        "names": names,
        "found": found,
        "vault": vault,
        "hidden": hidden,
        "absent": absent,
        "shown": shown,
        "draft": draft,
        "queued": queued,
        "blank": blank,
    }


def check_general_view(seen: dict[str, Any]) -> None:
    assert seen["names"] == TOOLS
    found = seen["found"]
    assert found["results"][0]["id"] == "POOL-1"
    assert found["verdict"] in ("precedent found", "possible precedent — check", "no precedent")
    assert isinstance(found["p_precedent"], float) and 0 <= found["p_precedent"] <= 1
    assert found["results"][0]["matched_by"]
    ids = {r["id"] for r in seen["vault"]["results"]}
    assert "VAULT-1" not in ids  # restricted: never in a general caller's results
    # a hidden id reads exactly like an absent one
    assert seen["hidden"].is_error and seen["absent"].is_error
    hidden_text = seen["hidden"].content[0].text.replace("VAULT-1", "<id>")
    absent_text = seen["absent"].content[0].text.replace("NOPE-404", "<id>")
    assert hidden_text == absent_text
    assert seen["shown"]["id"] == "POOL-1" and "body" not in seen["shown"]
    assert "Root cause" in [s["heading"] for s in seen["shown"]["sections"]]
    assert "POOL-1" in seen["draft"]["cited_incidents"]
    assert seen["queued"]["status"] == "pending" and seen["queued"]["review_id"]
    assert seen["blank"].is_error


def test_in_process_tools_tiers_and_audit(home: tuple[Any, dict[str, str]]) -> None:
    settings, _ = home
    state = new_state(settings)
    open_state(state)
    try:
        general = Principal("agent", "responder", ("general",))
        server = build_server(fixed_caller(state, general))

        async def go() -> dict[str, Any]:
            async with Client(server) as client:
                seen = await exercise(client)
                templates = await client.list_resource_templates()
                seen["templates"] = [t.uri_template for t in templates.resource_templates]
                resource = await client.read_resource("postmortem://POOL-1")
                seen["resource"] = json.loads(resource.contents[0].text)
                try:
                    await client.read_resource("postmortem://VAULT-1")
                    seen["vault_resource"] = "read"
                except Exception as exc:  # the SDK raises the server's not-found error
                    seen["vault_resource"] = str(exc)
                return seen

        seen = asyncio.run(go())
        check_general_view(seen)
        assert "postmortem://{doc_id}" in seen["templates"]
        assert seen["resource"]["id"] == "POOL-1"
        assert seen["vault_resource"] != "read" and "VAULT-1" in seen["vault_resource"]
        assert state.kb is not None
        actions = [r.action for r in AuditLog(state.kb.store).read(actor="agent", limit=100)]
        # every call that touched the knowledge base is audited
        assert actions.count("search") == 2 and "show" in actions
        assert "investigate" in actions and "review.start" in actions
    finally:
        close_state(state)


def test_a_viewer_cannot_queue_and_a_restricted_reader_sees_the_vault(
    home: tuple[Any, dict[str, str]],
) -> None:
    settings, _ = home
    state = new_state(settings)
    open_state(state)
    try:
        viewer = build_server(fixed_caller(state, Principal("v", "viewer", ("general",))))
        vault = build_server(
            fixed_caller(state, Principal("r", "viewer", ("general", "restricted")))
        )

        async def go() -> tuple[Any, Any]:
            async with Client(viewer) as client:
                refused = await client.call_tool("submit_for_review", {"text": POOL_QUERY})
            async with Client(vault) as client:
                doc = payload(await client.call_tool("get_postmortem", {"doc_id": "VAULT-1"}))
            return refused, doc

        refused, doc = asyncio.run(go())
        assert refused.is_error and "responder" in refused.content[0].text
        assert doc["id"] == "VAULT-1" and doc["access_tier"] == "restricted"
    finally:
        close_state(state)


@pytest.mark.integration
def test_stdio_with_a_token(home: tuple[Any, dict[str, str]]) -> None:
    settings, tokens = home
    env = {
        "SEENBEFORE_HOME": str(settings.home),
        "SEENBEFORE_EMBEDDER": "none",
        "SEENBEFORE_MCP_TOKEN": tokens["responder"],
        "PATH": os.environ.get("PATH", ""),
    }
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "seenbefore", "mcp"], env=env
    )

    async def go() -> dict[str, Any]:
        async with Client(params, read_timeout_seconds=60) as client:
            return await exercise(client)

    check_general_view(asyncio.run(go()))


@pytest.mark.integration
def test_streamable_http_under_serve(home: tuple[Any, dict[str, str]]) -> None:
    settings, tokens = home
    app = create_app(settings)
    with live_server(app) as url:

        async def go(token: str) -> Any:
            headers = {"Authorization": f"Bearer {token}"}
            async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
                transport = streamable_http_client(f"{url}/mcp", http_client=http)
                async with Client(transport) as client:
                    return await exercise(client)

        check_general_view(asyncio.run(go(tokens["responder"])))
        # without a good token every request, initialize and tools/list included, is the
        # API's 401 (with WWW-Authenticate), before the MCP server reads it
        accept = {"Accept": "application/json, text/event-stream"}
        for headers in ({}, {"Authorization": "Bearer sb_not-a-token"}):
            for message in (
                {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT_PARAMS},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                {
                    "jsonrpc": "2.0",
                    "id": 3,
                    "method": "resources/read",
                    "params": {"uri": "postmortem://POOL-1"},
                },
            ):
                refused = httpx.post(
                    f"{url}/mcp", json=message, headers={**accept, **headers}, timeout=30
                )
                assert refused.status_code == 401, refused.text
                assert refused.headers["www-authenticate"].startswith("Bearer")
                assert refused.headers["content-type"] == "application/problem+json"
                hint = "Bearer" if not headers else "unknown token"
                assert hint in refused.json()["detail"]


def test_knowledge_base_is_unchanged_by_reads(home: tuple[Any, dict[str, str]]) -> None:
    settings, _ = home
    with KnowledgeBase(settings) as kb:
        before = kb.store.get("POOL-1", ("general",)).postmortem.content_hash
    state = new_state(settings)
    open_state(state)
    try:
        server = build_server(fixed_caller(state, Principal("a", "viewer", ("general",))))

        async def go() -> None:
            async with Client(server) as client:
                await client.call_tool("find_similar_incidents", {"query": POOL_QUERY})
                await client.call_tool("investigate", {"text": POOL_QUERY})

        asyncio.run(go())
    finally:
        close_state(state)
    with KnowledgeBase(settings) as kb:
        assert kb.store.get("POOL-1", ("general",)).postmortem.content_hash == before


def test_arguments_are_checked_and_errors_say_field_and_rule(
    home: tuple[Any, dict[str, str]],
) -> None:
    """Unknown arguments are refused (never dropped), k is 1-50 on every tool that takes it,
    severity is SEV1-SEV4, dates are dates, and errors read ``field: message`` without
    pydantic's internals."""
    settings, _ = home
    state = new_state(settings)
    open_state(state)
    try:
        server = build_server(fixed_caller(state, Principal("a", "responder", ("general",))))
        bad = [
            (
                "find_similar_incidents",
                {"query": POOL_QUERY, "mode": "sparse"},
                "mode: not an argument",
            ),
            ("find_similar_incidents", {"query": POOL_QUERY, "k": 0}, "k: Input should be greater"),
            ("find_similar_incidents", {"query": POOL_QUERY, "k": 51}, "k: Input should be less"),
            ("find_similar_incidents", {"query": POOL_QUERY, "since": "2024-13-01"}, "since: "),
            (
                "find_similar_incidents",
                {"query": POOL_QUERY, "since": "2024-02-01", "until": "2024-01-01"},
                "since",
            ),
            (
                "find_similar_incidents",
                {"query": "x" * 10_001},
                "query: String should have at most",
            ),
            ("investigate", {"text": POOL_QUERY, "k": 10_000}, "k: Input should be less"),
            ("investigate", {"text": POOL_QUERY, "depth": 3}, "depth: not an argument"),
            ("get_postmortem", {"doc_id": "POOL-1", "raw": True}, "raw: not an argument"),
            (
                "submit_for_review",
                {"text": POOL_QUERY, "severity": "P1"},
                "severity: Input should be",
            ),
            ("find_similar_incidents", {"query": 7}, "query: Input should be a valid string"),
        ]

        async def go() -> list[tuple[str, Any]]:
            async with Client(server) as client:
                listed = {t.name: t for t in (await client.list_tools()).tools}
                results = [
                    (expect, await client.call_tool(name, args)) for name, args, expect in bad
                ]
                return [("listed", listed), *results]

        outcomes = asyncio.run(go())
        listed = outcomes[0][1]
        for name in ("find_similar_incidents", "investigate"):
            k = listed[name].input_schema["properties"]["k"]
            assert (k["minimum"], k["maximum"]) == (1, 50)
            assert listed[name].input_schema["additionalProperties"] is False
        assert listed["submit_for_review"].annotations.read_only_hint is False
        assert listed["find_similar_incidents"].annotations.read_only_hint is True
        for expect, result in outcomes[1:]:
            text = result.content[0].text
            assert result.is_error, (expect, text)
            assert expect in text, (expect, text)
            assert "errors.pydantic.dev" not in text and "type=" not in text
    finally:
        close_state(state)
