"""The Investigator's optional LLM step: rewrite an anomaly or alert into one to three search
queries in postmortem vocabulary (``prompts/rewrite.j2``), in a context of its own that never
sees retrieved text. The rewritten queries are searched beside the original and fused with RRF;
confidence stays the original query's, the only one it is calibrated for.

Off by default (``SEENBEFORE_LLM_REWRITE_QUERIES``): it is kept only where the evaluation shows it
helps -- ``seenbefore eval`` reports retrieval with and without it when an LLM is configured.
A failing or malformed rewrite never fails an investigation: the original query is used alone
and the trace says why.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from seenbefore.investigation.llm import LLM, LLMError, unfence
from seenbefore.investigation.query import InvestigationRequest
from seenbefore.investigation.templates import render

MAX_QUERIES = 3
MAX_QUERY_CHARS = 300


@dataclass(frozen=True)
class Rewrite:
    queries: tuple[str, ...]  # empty when the rewrite failed or was refused
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    elapsed_ms: float = 0.0
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "queries": list(self.queries),
            "model": self.model,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "elapsed_ms": round(self.elapsed_ms, 3),
            "error": self.error,
        }


QUERIES_SCHEMA = {
    "type": "object",
    "properties": {"queries": {"type": "array", "items": {"type": "string"}, "minItems": 1}},
    "required": ["queries"],
}


def parse_queries(text: str) -> tuple[str, ...]:
    """``{"queries": [...]}`` -> up to MAX_QUERIES distinct, non-empty, bounded strings."""
    try:
        data = json.loads(unfence(text))
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg})") from None
    queries = data.get("queries") if isinstance(data, dict) else None
    if not isinstance(queries, list) or not queries:
        raise ValueError("expected {'queries': [non-empty list of strings]}")
    out: list[str] = []
    for q in queries:
        if not isinstance(q, str):
            raise ValueError(f"query {q!r} is not a string")
        cleaned = " ".join(q.split())[:MAX_QUERY_CHARS]
        if cleaned and cleaned.lower() not in {o.lower() for o in out}:
            out.append(cleaned)
    if not out:
        raise ValueError("every query was empty")
    return tuple(out[:MAX_QUERIES])


class QueryRewriter:
    def __init__(self, llm: LLM, *, model: str = "") -> None:
        self.llm = llm
        self.model = model or str(getattr(llm, "model", ""))

    def rewrite(self, request: InvestigationRequest) -> Rewrite:
        messages = render(
            "rewrite.j2",
            query=request.display or request.query,
            source=request.source,
            signals=list(request.signals),
            max_queries=MAX_QUERIES,
        )
        started = time.perf_counter()
        try:
            completion = self.llm.complete(messages, json_mode=True, schema=QUERIES_SCHEMA)
        except LLMError as exc:
            return Rewrite((), self.model, elapsed_ms=_ms(started), error=str(exc))
        tokens = (completion.prompt_tokens, completion.completion_tokens)
        try:
            queries = parse_queries(completion.text)
        except ValueError as exc:
            return Rewrite((), self.model, *tokens, elapsed_ms=_ms(started), error=str(exc))
        return Rewrite(queries, self.model, *tokens, elapsed_ms=_ms(started))


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000.0
