"""The Investigator's LLM query rewrite, against a real local OpenAI-compatible server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from seenbefore.config import Settings
from seenbefore.investigation.investigator import Investigator
from seenbefore.investigation.llm import OpenAICompatibleLLM
from seenbefore.investigation.query import from_text
from seenbefore.investigation.reporter import OfflineReporter
from seenbefore.investigation.rewriter import QueryRewriter, parse_queries
from seenbefore.kb import KnowledgeBase
from tests.conftest import postmortem_text
from tests.investigation.fake_openai import FakeOpenAI, chat

pytestmark = pytest.mark.llm


def test_parse_queries_bounds_and_dedupes() -> None:
    text = json.dumps({"queries": [" pool   exhausted ", "Pool exhausted", "b", "c", "d"]})
    assert parse_queries(text) == ("pool exhausted", "b", "c")
    assert parse_queries('```json\n{"queries": ["x"]}\n```') == ("x",)
    for bad in ("not json", '{"queries": []}', '{"queries": [1]}', '{"q": ["x"]}', '["x"]'):
        with pytest.raises(ValueError):
            parse_queries(bad)


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    folder = tmp_path / "docs"
    folder.mkdir()
    docs = {
        "POOL": "The connection pool was exhausted: every database connection was checked out.",
        "DISK": "Disk I/O saturated on the volume; IOPS throttled at the burst limit.",
    }
    for doc_id, text in docs.items():
        (folder / f"{doc_id}.md").write_text(
            postmortem_text(doc_id, body=f"## Summary\n{text}\n\n## Root cause\n{text}\n")
        )
    with KnowledgeBase(Settings(home=tmp_path / "home", embedder="none")) as base:
        base.ingest([folder])
        yield base


def test_rewrites_are_searched_and_fused_with_the_original(kb: KnowledgeBase) -> None:
    # the original words match nothing; the rewrite speaks the postmortems' vocabulary
    reply = chat(json.dumps({"queries": ["connection pool exhausted", "database connections"]}))
    with FakeOpenAI([reply]) as server, OpenAICompatibleLLM(server.base_url, "m") as llm:
        investigator = Investigator(kb, tiers=("general",), rewriter=QueryRewriter(llm))
        evidence = investigator.investigate(from_text("checkout hangs waiting, 30s timeouts"))
        prompt = server.requests[0]["body"]["messages"]
    assert evidence.items and evidence.items[0].doc_id == "POOL"
    rewrite = evidence.searched["rewrite"]
    assert rewrite["queries"] == ["connection pool exhausted", "database connections"]
    assert rewrite["prompt_tokens"] == 120 and rewrite["error"] is None
    assert "rewrite_ms" in evidence.timings
    # the fused ranking put POOL on top, which the original query did not: the confidence is the
    # original query's and the draft says it is not calibrated for the new list
    assert rewrite["top_changed"] is True
    assert rewrite["confidence_scored_on"].startswith("the original query's ranking")
    draft = OfflineReporter().draft(evidence)
    assert "not calibrated for this one" in draft.summary
    # its own context: the observation only, never retrieved postmortem text
    sent = " ".join(m["content"] for m in prompt)
    assert "checkout hangs" in sent and "burst limit" not in sent


def test_a_malformed_rewrite_falls_back_to_the_original_query(kb: KnowledgeBase) -> None:
    with (
        FakeOpenAI([chat("sure! here are some queries")]) as server,
        OpenAICompatibleLLM(server.base_url, "m") as llm,
    ):
        investigator = Investigator(kb, tiers=("general",), rewriter=QueryRewriter(llm))
        evidence = investigator.investigate(from_text("disk iops throttled"))
    assert evidence.items[0].doc_id == "DISK"
    assert evidence.searched["rewrite"]["queries"] == []
    assert "not JSON" in evidence.searched["rewrite"]["error"]
