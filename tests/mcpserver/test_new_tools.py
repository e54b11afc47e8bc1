"""The tools peers offer (list_postmortems, find_related, get_review, record_feedback), the
incident-triage prompt and the resource listing, through the SDK's own client: their tier walls
(a restricted postmortem reads exactly like an absent one to a general caller), pagination, the
calibration label feedback writes, and the MCP Inspector's CLI where Node allows it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from seenbefore.calibration.people import labels
from seenbefore.mcp import browse
from seenbefore.security.audit import AuditLog
from seenbefore.security.tokens import Principal
from seenbefore.service.deps import ServiceState
from tests.mcpserver.conftest import BOTH, GENERAL, Session
from tests.service.conftest import prepare_home, service_settings

POOL_QUERY = "checkout p99 latency up 8x, database connections at the pool limit"
VAULT_QUERY = "payment vault decryption errors after key rotation"
RESPONDER = Principal("agent", "responder", GENERAL)
VAULT_RESPONDER = Principal("vault-agent", "responder", BOTH)
INSPECTOR = "@modelcontextprotocol/inspector"
NODE_NEEDED = (22, 7, 5)


def error_text(result: Any, doc_id: str) -> str:
    assert result.is_error, result.content
    return str(result.content[0].text).replace(doc_id, "<id>")


def test_general_callers_cannot_list_read_relate_or_rate_a_restricted_postmortem(
    small: Session,
) -> None:
    async def script(client: Client) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        listed = await client.call_tool("list_postmortems", {"limit": 100})
        seen["listed"] = [p["id"] for p in (listed.structured_content or {})["postmortems"]]
        for tool, args in (
            ("get_postmortem", {}),
            ("find_related", {}),
            ("record_feedback", {"query": VAULT_QUERY, "helpful": True}),
        ):
            for doc_id in ("VAULT-1", "NOPE-404"):
                result = await client.call_tool(tool, {**args, "doc_id": doc_id})
                seen[tool, doc_id] = error_text(result, doc_id)
        related = await client.call_tool("find_related", {"doc_id": "POOL-1", "k": 50})
        seen["related"] = [h["id"] for h in (related.structured_content or {})["results"]]
        seen["resources"] = [str(r.uri) for r in (await client.list_resources()).resources]
        return seen

    seen = small(RESPONDER, script)
    assert seen["listed"] == ["POOL-1", "DNS-1"]  # newest first
    for tool in ("get_postmortem", "find_related", "record_feedback"):
        assert seen[tool, "VAULT-1"] == seen[tool, "NOPE-404"], tool
    assert seen["related"] == ["DNS-1"]  # never itself, never the vault
    assert seen["resources"] == ["postmortem://DNS-1", "postmortem://POOL-1"]


def test_a_restricted_caller_sees_the_vault_everywhere(small: Session) -> None:
    async def script(client: Client) -> dict[str, Any]:
        listed = await client.call_tool("list_postmortems", {"type": "KEY-ROTATION"})
        related = await client.call_tool("find_related", {"doc_id": "VAULT-1"})
        resources = await client.list_resources()
        return {
            "listed": [p["id"] for p in (listed.structured_content or {})["postmortems"]],
            "related": (related.structured_content or {})["related_to"],
            "resources": {str(r.uri) for r in resources.resources},
        }

    seen = small(VAULT_RESPONDER, script)
    assert seen["listed"] == ["VAULT-1"] and seen["related"] == "VAULT-1"
    assert "postmortem://VAULT-1" in seen["resources"]


def test_a_review_outside_the_callers_tiers_reads_like_an_absent_one(small: Session) -> None:
    async def queue(client: Client) -> str:
        queued = await client.call_tool("submit_for_review", {"text": VAULT_QUERY})
        return str((queued.structured_content or {})["review_id"])

    review_id = small(VAULT_RESPONDER, queue)

    async def read(client: Client) -> tuple[Any, Any, Any]:
        args = {"review_id": review_id}
        return (
            await client.call_tool("get_review", args),
            await client.call_tool("get_review", {"review_id": "rev-000000000000"}),
            None,
        )

    hidden, absent, _ = small(RESPONDER, read)
    assert error_text(hidden, review_id) == error_text(absent, "rev-000000000000")

    async def own(client: Client) -> Any:
        return (await client.call_tool("get_review", {"review_id": review_id})).structured_content

    review = small(VAULT_RESPONDER, own)
    assert review["id"] == review_id and review["status"] == "pending"
    assert review["evidence"][0] == "VAULT-1" and review["query"] == VAULT_QUERY
    assert review["link"] == f"https://sb.example.com/v1/investigations/{review_id}"


def test_feedback_writes_a_calibration_label_for_the_top_result(
    small: Session, small_state: ServiceState
) -> None:
    async def script(client: Client) -> list[Any]:
        return [
            await client.call_tool(
                "record_feedback", {"query": POOL_QUERY, "doc_id": doc, "helpful": helpful}
            )
            for doc, helpful in (
                ("POOL-1", True),
                ("pool-1", False),
                ("DNS-1", True),
                ("DNS-1", False),
            )
        ]

    top_yes, top_no, other_yes, other_no = (r.structured_content for r in small(RESPONDER, script))
    assert (top_yes["recorded"], top_yes["label"], top_yes["top"]) == (True, 1, "POOL-1")
    assert (top_no["label"], top_no["doc_id"]) == (0, "POOL-1")  # ids match regardless of case
    assert other_yes["label"] == 0 and "not the query's top result" in other_yes["note"]
    assert other_no["recorded"] is False and other_no["review_id"] is None
    assert "nothing recorded" in other_no["note"]
    assert small_state.kb is not None
    rows = labels(small_state.kb.store)
    assert [(r.doc_id, r.label, r.reason) for r in rows] == [
        ("POOL-1", 1, "feedback:helpful"),
        ("POOL-1", 0, "feedback:not_helpful"),
        ("POOL-1", 0, "feedback:helpful"),
    ]
    assert all(r.signals and r.model_key for r in rows)  # what a refit learns from
    assert {r.who for r in rows} == {"agent"}  # and who said it
    assert rows[0].review_id == top_yes["review_id"]
    review = small_state.workflow.get(top_yes["review_id"], tiers=GENERAL)  # type: ignore[union-attr]
    assert (review.status, review.outcome) == ("closed", "feedback")
    audit = AuditLog(small_state.kb.store).read(actor="agent", limit=100)
    decisions = [r.decision for r in audit if r.action == "feedback"]
    assert sorted(decisions, key=str) == ["label:0", "label:0", "label:1", "no_label"]


def test_feedback_needs_a_responder(small: Session) -> None:
    async def script(client: Client) -> Any:
        args = {"query": POOL_QUERY, "doc_id": "POOL-1", "helpful": True}
        return await client.call_tool("record_feedback", args)

    refused = small(Principal("v", "viewer", GENERAL), script)
    assert refused.is_error and "responder" in refused.content[0].text


def test_list_postmortems_pages_with_an_opaque_cursor(sample: Session) -> None:
    async def script(client: Client) -> dict[str, Any]:
        pages, cursor = [], None
        while True:
            args: dict[str, Any] = {"limit": 7, "service": "checkout-api"}
            if cursor:
                args["cursor"] = cursor
            page = (await client.call_tool("list_postmortems", args)).structured_content or {}
            pages.append(page)
            cursor = page["next_cursor"]
            if cursor is None:
                break
        whole = await client.call_tool(
            "list_postmortems", {"service": "checkout-api", "limit": 100}
        )
        dated = await client.call_tool(
            "list_postmortems", {"since": "2024-01-01", "until": "2024-12-31", "limit": 100}
        )
        wrong = await client.call_tool("list_postmortems", {"cursor": pages[0]["next_cursor"]})
        return {"pages": pages, "whole": whole, "dated": dated, "wrong": wrong}

    seen = sample(RESPONDER, script)
    ids = [p["id"] for page in seen["pages"] for p in page["postmortems"]]
    whole = seen["whole"].structured_content
    assert ids == [p["id"] for p in whole["postmortems"]] and len(ids) == whole["total"] > 7
    assert all("checkout-api" in p["services"] for p in whole["postmortems"])
    dates = [p["date"] for p in whole["postmortems"]]
    assert dates == sorted(dates, reverse=True)
    assert all(p["link"] is None for p in whole["postmortems"])  # no public URL configured
    assert all(
        p["date"].startswith("2024") for p in seen["dated"].structured_content["postmortems"]
    )
    assert seen["wrong"].is_error and "same service" in seen["wrong"].content[0].text


def test_the_triage_prompt_and_the_instructions(small: Session) -> None:
    async def script(client: Client) -> Any:
        listed = await client.list_prompts()
        got = await client.get_prompt(
            "incident-triage", {"alert": "HighLatency on checkout-api", "services": "checkout-api"}
        )
        try:
            await client.get_prompt("incident-triage", {})
            missing = "answered"
        except Exception as exc:  # the SDK raises the server's error
            missing = str(exc)
        return listed, got, missing

    listed, got, missing = small(RESPONDER, script)
    [prompt] = listed.prompts
    assert prompt.name == "incident-triage"
    assert [(a.name, a.required) for a in prompt.arguments or []] == [
        ("alert", True),
        ("services", False),
    ]
    text = got.messages[0].content.text
    assert text.endswith("HighLatency on checkout-api") and "services [checkout-api]" in text
    for tool in ("find_similar_incidents", "get_postmortem", "record_feedback", "find_related"):
        assert tool in text
    assert "alert" in missing


def test_resources_are_bounded() -> None:
    assert browse.MAX_RESOURCES == 100


def _node_version() -> tuple[int, ...] | None:
    node = shutil.which("node")
    if node is None:
        return None
    done = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=10)
    try:
        return tuple(int(p) for p in done.stdout.strip().lstrip("v").split("."))
    except ValueError:
        return None


def _inspector_installed() -> bool:
    """Installed here already (the repository's node_modules or npm's global root)? Never
    fetched: the test runs it with ``npx --no-install``."""
    roots = [Path(__file__).resolve().parents[2] / "node_modules"]
    npm = shutil.which("npm")
    if npm is not None:
        done = subprocess.run([npm, "root", "-g"], capture_output=True, text=True, timeout=20)
        if done.returncode == 0 and done.stdout.strip():
            roots.append(Path(done.stdout.strip()))
    return any((root / INSPECTOR / "package.json").exists() for root in roots)


def test_the_mcp_inspector_cli_drives_the_stdio_server(tmp_path: Path) -> None:
    version = _node_version()
    if version is None or version < NODE_NEEDED:
        shown = ".".join(map(str, version)) if version else "no node"
        pytest.skip(
            f"the MCP Inspector's current release needs Node >= 22.7.5 (found {shown}); "
            "Debian's Node 20 gets inspector 0.15.0, which cannot send headers"
        )
    if shutil.which("npx") is None or not _inspector_installed():
        pytest.skip(f"{INSPECTOR} is not installed locally (this test never downloads it)")
    settings = service_settings(tmp_path / "home")
    tokens = prepare_home(tmp_path / "home", tmp_path / "docs", settings)
    base = ["npx", "--no-install", INSPECTOR, "--cli"]
    for key, value in (
        ("SEENBEFORE_HOME", str(settings.home)),
        ("SEENBEFORE_EMBEDDER", "none"),
        ("SEENBEFORE_MCP_TOKEN", tokens["responder"]),
    ):
        base += ["-e", f"{key}={value}"]
    base += [sys.executable, "-m", "seenbefore", "mcp"]
    env = {**os.environ, "PATH": os.environ.get("PATH", "")}
    listed = subprocess.run(
        [*base, "--method", "tools/list"], capture_output=True, text=True, timeout=120, env=env
    )
    assert listed.returncode == 0, listed.stderr
    assert {t["name"] for t in json.loads(listed.stdout)["tools"]} >= {"list_postmortems"}
    called = subprocess.run(
        [
            *base,
            *("--method", "tools/call", "--tool-name", "find_similar_incidents"),
            *("--tool-arg", f"query={POOL_QUERY}"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert called.returncode == 0, called.stderr
    result = json.loads(called.stdout)
    assert result["structuredContent"]["results"][0]["id"] == "POOL-1"
