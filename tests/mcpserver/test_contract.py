"""The MCP tool contract through the SDK's own client: every tool's input and output schema (valid
JSON Schema, closed, its model's), results that validate against them, one copy of each result
(structured, plus a short text reading), bounds refused, and payload sizes on the sample KB."""

from __future__ import annotations

import base64
import json
from typing import Any

import jsonschema
import pytest
from mcp import Client

from seenbefore.mcp import browse, catalog, outputs, shaping
from seenbefore.mcp.catalog import ListPostmortems
from seenbefore.security.tokens import Principal
from tests.mcpserver.conftest import GENERAL, Session

POOL_QUERY = "checkout p99 latency up 8x, database connections at the pool limit"
RESPONDER = Principal("agent", "responder", GENERAL)


def wire_bytes(structured: Any) -> int:
    return len(json.dumps(structured, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def result_bytes(result: Any) -> int:
    """The whole tool result as the SDK sends it (text and structured content)."""
    return wire_bytes(json.loads(result.model_dump_json(by_alias=True, exclude_none=True)))


def test_every_tool_lists_strict_schemas_annotations_and_one_paragraph(small: Session) -> None:
    async def script(client: Client) -> Any:
        return (await client.list_tools()).tools

    listed = {t.name: t for t in small(RESPONDER, script)}
    assert set(listed) == set(catalog.TOOLS)
    for name, tool in listed.items():
        spec = catalog.TOOLS[name]
        for schema in (tool.input_schema, tool.output_schema):
            assert schema is not None
            jsonschema.Draft202012Validator.check_schema(schema)  # strict: a valid schema
            assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert tool.input_schema == spec.arguments.model_json_schema()
        assert tool.output_schema == spec.output.model_json_schema(mode="serialization")
        assert tool.output_schema != {"type": "object", "additionalProperties": True}
        description = tool.description or ""
        assert "\n" not in description and "  " not in description and description.endswith(".")
        assert tool.annotations is not None and tool.annotations.title
        assert tool.annotations.read_only_hint is spec.read_only
        assert tool.annotations.destructive_hint is False
    for writer in ("submit_for_review", "record_feedback"):
        assert listed[writer].annotations.read_only_hint is False  # type: ignore[union-attr]
    search = listed["find_similar_incidents"].output_schema or {}
    assert {"verdict", "p_precedent", "thresholds", "advisory", "truncated"} <= set(
        search["properties"]
    )
    hit = search["$defs"]["Hit"]["properties"]
    assert {"link", "similarity", "matched_by", "root_cause", "resolution"} <= set(hit)
    assert (hit["similarity"]["minimum"], hit["similarity"]["maximum"]) == (0.0, 1.0)


def test_every_result_validates_against_its_output_schema_with_text_beside_it(
    small: Session,
) -> None:
    async def script(client: Client) -> Any:
        schemas = {t.name: t.output_schema for t in (await client.list_tools()).tools}
        queued = await client.call_tool("submit_for_review", {"text": POOL_QUERY})
        review_id = (queued.structured_content or {})["review_id"]
        calls = {
            "find_similar_incidents": {"query": POOL_QUERY, "k": 3},
            "investigate": {"text": POOL_QUERY},
            "get_postmortem": {"doc_id": "POOL-1"},
            "list_postmortems": {},
            "find_related": {"doc_id": "POOL-1"},
            "get_review": {"review_id": review_id},
            "record_feedback": {"query": POOL_QUERY, "doc_id": "POOL-1", "helpful": True},
        }
        results = {"submit_for_review": queued}
        for name, args in calls.items():
            results[name] = await client.call_tool(name, args)
        return schemas, results

    schemas, results = small(RESPONDER, script)
    assert set(results) == set(catalog.TOOLS)
    for name, result in results.items():
        assert not result.is_error, (name, result.content)
        structured = result.structured_content
        jsonschema.validate(structured, schemas[name])
        catalog.TOOLS[name].output.model_validate(structured)  # and the model round-trips
        assert len(result.content) == 1  # one text reading, not a second copy of the JSON
        text = result.content[0].text
        with pytest.raises(ValueError):
            json.loads(text)
        assert len(text.encode()) < wire_bytes(structured) or name == "record_feedback"
    found = results["find_similar_incidents"].structured_content
    top = found["results"][0]
    assert top["id"] == "POOL-1" and top["similarity"] == 1.0
    assert top["link"] == "https://sb.example.com/v1/postmortems/POOL-1"
    assert top["root_cause"].startswith("A fraud check held database connections")
    assert top["resolution"].startswith("Restarted the checkout pods")
    assert top["snippet_section"] != "metadata"
    assert found["verdict"] in ("precedent found", "possible precedent — check", "no precedent")
    assert set(found["thresholds"]) == {"lo", "hi"} and "confidence" not in found
    text = results["find_similar_incidents"].content[0].text
    assert text.startswith("verdict: ") and "1. POOL-1" in text and "   cause: " in text


def test_get_postmortem_returns_sections_not_the_body_and_filters_them(small: Session) -> None:
    async def script(client: Client) -> Any:
        whole = await client.call_tool("get_postmortem", {"doc_id": "POOL-1"})
        some = await client.call_tool(
            "get_postmortem", {"doc_id": "POOL-1", "sections": ["root_cause", "lessons"]}
        )
        return whole.structured_content, some.structured_content

    whole, some = small(RESPONDER, script)
    assert "body" not in whole and whole["truncated"] is None
    assert [s["key"] for s in whole["sections"]] == whole["section_keys"]
    assert whole["section_keys"] == ["summary", "detection", "root_cause", "resolution"]
    assert [s["key"] for s in some["sections"]] == ["root_cause"]
    assert some["absent_sections"] == ["lessons"]
    assert some["link"] == "https://sb.example.com/v1/postmortems/POOL-1"


def forged_cursor(offset_json: str) -> str:
    """A cursor with the right fingerprint (no filters) and a hostile offset, as raw JSON: what
    a stranger makes by decoding one real cursor and editing it."""
    mark = browse._fingerprint(ListPostmortems())
    raw = f'{{"o":{offset_json},"f":"{mark}"}}'.encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


# offsets that once reached int() and crashed the tool (OverflowError: "Internal server error")
# or were taken as a page (a float, a boolean); each is refused as a wrong cursor now
HOSTILE_OFFSETS = ["1e400", "Infinity", "-Infinity", "NaN", "1.5", "true", '"3"', "-1", "1e9999"]

BAD = [
    *(
        ("list_postmortems", {"cursor": forged_cursor(o)}, "cursor: not a next_cursor")
        for o in HOSTILE_OFFSETS
    ),
    ("list_postmortems", {"limit": 0}, "limit: Input should be greater"),
    ("list_postmortems", {"limit": 101}, "limit: Input should be less"),
    ("list_postmortems", {"since": "2024-02-01", "until": "2024-01-01"}, "since"),
    ("list_postmortems", {"since": "yesterday"}, "since: "),
    ("list_postmortems", {"page": 2}, "page: not an argument"),
    ("list_postmortems", {"cursor": "x" * 401}, "cursor: String should have at most"),
    ("list_postmortems", {"cursor": "not-a-cursor"}, "cursor: not a next_cursor"),
    ("find_related", {"doc_id": "POOL-1", "k": 0}, "k: Input should be greater"),
    ("find_related", {"doc_id": "POOL-1", "k": 51}, "k: Input should be less"),
    ("find_related", {}, "doc_id: Field required"),
    ("get_postmortem", {"doc_id": "POOL-1", "sections": ["Root Cause!"]}, "sections.0: String"),
    ("get_postmortem", {"doc_id": "POOL-1", "body": True}, "body: not an argument"),
    ("get_review", {"review_id": ""}, "review_id: String should have at least"),
    ("record_feedback", {"query": POOL_QUERY, "doc_id": "POOL-1"}, "helpful: Field required"),
    (
        "record_feedback",
        {"query": "x" * 10_001, "doc_id": "POOL-1", "helpful": True},
        "query: String should have at most",
    ),
    ("find_similar_incidents", {"query": POOL_QUERY, "k": 51}, "k: Input should be less"),
]


def test_bounds_and_unknown_arguments_are_refused(small: Session) -> None:
    async def script(client: Client) -> Any:
        return [(expect, await client.call_tool(name, args)) for name, args, expect in BAD]

    for expect, result in small(RESPONDER, script):
        text = result.content[0].text
        assert result.is_error, (expect, text)
        assert expect in text, (expect, text)
        assert "errors.pydantic.dev" not in text


def test_payload_sizes_on_the_sample_kb(sample: Session) -> None:
    """k=10 fits the cap (the whole result, JSON and text) untouched; k=50 is held under it,
    saying what was cut; similarity is
    relative to the top, matched_by counts only ranks within the cut, snippets are not the
    metadata chunk and excerpts are at most 300 characters."""

    async def script(client: Client) -> Any:
        out = {}
        for k in (10, 50):
            result = await client.call_tool("find_similar_incidents", {"query": POOL_QUERY, "k": k})
            assert not result.is_error, result.content
            out[k] = result
        return out

    results = sample(RESPONDER, script)
    ten = results[10].structured_content
    assert result_bytes(results[10]) < 12_000, result_bytes(results[10])  # JSON and text
    assert ten["truncated"] is None and ten["returned"] == ten["found"] == 10
    assert len(results[10].content[0].text.encode()) < 3_000
    hits = ten["results"]
    assert hits[0]["similarity"] == 1.0
    assert all(0 < h["similarity"] <= 1 for h in hits)
    assert [h["similarity"] for h in hits] == sorted((h["similarity"] for h in hits), reverse=True)
    for h in hits:
        assert all(h["ranks"][r] <= 10 for r in h["matched_by"])
        assert all(r in h["matched_by"] for r, rank in h["ranks"].items() if rank <= 10)
        assert h["snippet_section"] != "metadata" and len(h["snippet"]) <= shaping.SNIPPET_CHARS
        for field in ("root_cause", "resolution"):
            assert h[field] is None or len(h[field]) <= shaping.EXCERPT_CHARS
    assert sum(h["root_cause"] is not None for h in hits) >= 8
    fifty = results[50].structured_content
    assert result_bytes(results[50]) <= shaping.MAX_RESPONSE_BYTES
    assert fifty["truncated"] and "trailing results left out" in fifty["truncated"]
    assert fifty["found"] == 50 and fifty["returned"] == len(fifty["results"]) < 50
    assert "(truncated: " in results[50].content[0].text


def test_the_cap_shortens_excerpts_before_dropping_hits() -> None:
    hit = outputs.Hit(
        rank=1,
        id="X-1",
        title="t",
        date=None,
        services=[],
        type="",
        status="current",
        similarity=1.0,
        matched_by=["sparse"],
        ranks={"sparse": 1},
        snippet="s " * 100,
        snippet_section="detection",
        root_cause="word " * 60,
        resolution="word " * 60,
    )
    answer = outputs.Related(related_to="Y", results=[hit] * 3, returned=3, found=3)
    full = shaping.size(answer)
    capped = shaping.cap_hits(answer, limit=full - 10)
    assert capped.returned == 3 and capped.truncated and "shortened" in capped.truncated
    assert all(len(h.root_cause or "") <= shaping.SHORT_CHARS for h in capped.results)
    tiny = shaping.cap_hits(answer, limit=600)
    assert tiny.returned == len(tiny.results) < 3 and "trailing" in (tiny.truncated or "")
    assert shaping.excerpt("`sv_active` 80/80 **held**; p99_latency up") == (
        "sv_active 80/80 held; p99_latency up"
    )


def test_find_similar_incidents_says_when_the_query_names_another_failure(small: Session) -> None:
    query = "disk full: no space left on device, every write to the volume failed"

    async def script(client: Client) -> Any:
        return await client.call_tool("find_similar_incidents", {"query": query, "k": 3})

    result = small(RESPONDER, script)
    found = result.structured_content
    assert found["verdict"] != "precedent found"
    assert found["another_failure"].startswith("the query reads as disk-full (inferred, p 0.")
    assert found["another_failure"].endswith(": another failure")
    assert found["another_failure"] in result.content[0].text.splitlines()[1]
