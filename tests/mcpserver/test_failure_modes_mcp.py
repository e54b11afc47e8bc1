"""MCP outputs carry each postmortem's failure mode (the author's type, or an inferred one
marked inferred) within their declared schemas, and list_postmortems' type filter matches it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp import Client

from seenbefore.mcp import outputs
from seenbefore.service.deps import ServiceState
from tests.knowledge.test_failure_modes import TLS_POSTMORTEM
from tests.mcpserver.conftest import Session
from tests.mcpserver.test_new_tools import RESPONDER


def _with_tls(state: ServiceState, tmp_path: Path) -> None:
    folder = tmp_path / "more"
    folder.mkdir()
    (folder / "tls.md").write_text(TLS_POSTMORTEM)
    assert state.kb is not None
    state.kb.ingest([folder])


def test_failure_modes_in_search_list_and_get(
    small: Session, small_state: ServiceState, tmp_path: Path
) -> None:
    _with_tls(small_state, tmp_path)

    async def script(client: Client) -> dict[str, Any]:
        found = await client.call_tool(
            "find_similar_incidents", {"query": "TLS certificate expired, handshakes fail"}
        )
        return {
            "found": found,
            "inferred": await client.call_tool("list_postmortems", {"type": "certificate-expiry"}),
            "alias": await client.call_tool("list_postmortems", {"type": "cert-expiry"}),
            "dns": await client.call_tool("list_postmortems", {"type": "dns-failure"}),
            "none": await client.call_tool("list_postmortems", {"type": "disk-full"}),
            "get": await client.call_tool("get_postmortem", {"doc_id": "T-1"}),
            "typed": await client.call_tool("get_postmortem", {"doc_id": "DNS-1"}),
        }

    seen = small(RESPONDER, script)
    hits = {h["id"]: h for h in seen["found"].structured_content["results"]}
    mode = hits["T-1"]["failure_mode"]
    assert mode["slug"] == "certificate-expiry" and mode["inferred"] and mode["known"]
    assert hits["T-1"]["type"] == ""
    # every answer validates against its declared model (extra fields are refused)
    outputs.SimilarIncidents.model_validate(seen["found"].structured_content)
    text = seen["found"].content[0].text
    assert f"type certificate-expiry (inferred, p {mode['p']:.2f})" in text
    listed = [p["id"] for p in seen["inferred"].structured_content["postmortems"]]
    assert listed == ["T-1"]
    assert [p["id"] for p in seen["alias"].structured_content["postmortems"]] == ["T-1"]
    # DNS-1's author wrote `type: dns`, an alias of dns-failure
    assert [p["id"] for p in seen["dns"].structured_content["postmortems"]] == ["DNS-1"]
    assert seen["none"].structured_content["total"] == 0
    entry = seen["inferred"].structured_content["postmortems"][0]
    assert entry["failure_mode"] == mode
    outputs.PostmortemList.model_validate(seen["inferred"].structured_content)
    got = seen["get"].structured_content
    outputs.Postmortem.model_validate(got)
    assert got["type"] == "" and got["failure_mode"] == mode
    # where the author wrote a type, `type` says it and failure_mode is left out
    typed = seen["typed"].structured_content
    assert typed["type"] == "dns" and "failure_mode" not in typed
    outputs.Postmortem.model_validate(typed)
    assert all("failure_mode" not in h for i, h in hits.items() if i != "T-1")
