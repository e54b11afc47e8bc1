"""Sampled full-context logging: ``fraction`` of investigations written whole to a JSONL file
(``<home>/logs/investigations.jsonl``): the query, the retrieved documents and chunk ids, the
prompt when a language model was used, and the draft.

Secrets are masked (``seenbefore.notify.redact``). Text from restricted tiers (any tier but the
default one) is replaced by ``RESTRICTED``: the draft's prose when it cites a restricted
document, and the query when the caller holds a restricted tier (a restricted user's raw query
is never logged). Ids, scores and timings are kept."""

from __future__ import annotations

import datetime as dt
import json
import random
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from seenbefore.config import SAMPLED_LOG_NAME
from seenbefore.notify.redact import redact
from seenbefore.types import DEFAULT_TIER

RESTRICTED = "[restricted text withheld]"
DRAFT_TEXT_FIELDS = (
    "summary",
    "hypothesis",
    "suggested_checks",
    "mitigations",
    "missing_information",
    "staleness_note",
)
LOG_NAME = SAMPLED_LOG_NAME


def restricted(tiers: Sequence[str]) -> bool:
    return any(t != DEFAULT_TIER for t in tiers)


def _clean(value: Any) -> Any:
    """Secrets masked in every string of a JSON-like value."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def _withheld(value: Any) -> Any:
    if isinstance(value, list):
        return [RESTRICTED for _ in value]
    return None if value is None else RESTRICTED


def retrieved(draft: Mapping[str, Any], evidence: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Retrieved documents in rank order with their chunk ids (when the evidence has them)."""
    chunks: dict[str, Any] = {}
    for item in evidence.get("candidates") or evidence.get("items") or []:
        if isinstance(item, Mapping):
            doc = str(item.get("doc_id") or item.get("id") or "")
            chunk = item.get("chunk_id", item.get("chunk_ids"))
            if doc and chunk is not None:
                chunks[doc] = chunk
    out = []
    for c in (draft.get("retrieval_trace") or {}).get("candidates") or []:
        doc = str(c.get("id", ""))
        out.append(
            {
                "doc_id": doc,
                "chunk_id": chunks.get(doc),
                "matched_by": c.get("matched_by"),
                "matched_section": c.get("matched_section"),
                "score": c.get("score"),
            }
        )
    return out


class InvestigationSampler:
    def __init__(self, path: Path, fraction: float, *, rng: random.Random | None = None) -> None:
        self.path = path
        self.fraction = fraction
        self._rng = rng or random.Random()
        self._lock = threading.Lock()

    def record(
        self,
        *,
        investigation_id: str,
        source: str,
        principal: str,
        principal_tiers: Sequence[str],
        query: str,
        draft: Mapping[str, Any],
        evidence: Mapping[str, Any],
        cited_tiers: Sequence[str],
        prompt: str | None = None,
    ) -> bool:
        """Write one record if this investigation is sampled; True when written."""
        with self._lock:
            if self.fraction <= 0 or self._rng.random() >= self.fraction:
                return False
        draft_out = dict(draft)
        trace = dict(draft_out.get("retrieval_trace") or {})
        searched = dict(trace.get("searched") or {})
        hide_query = restricted(principal_tiers)
        if hide_query and "query" in searched:
            searched["query"] = RESTRICTED
        trace["searched"] = searched
        draft_out["retrieval_trace"] = trace
        hide_text = restricted(cited_tiers)
        if hide_text:
            for name in DRAFT_TEXT_FIELDS:
                if name in draft_out:
                    draft_out[name] = _withheld(draft_out[name])
        record = {
            "time": dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds"),
            "investigation_id": investigation_id,
            "source": source,
            "principal": principal,
            "query": RESTRICTED if hide_query else query,
            "retrieved": retrieved(draft, evidence),
            "cited_tiers": sorted(set(cited_tiers)),
            "prompt": (RESTRICTED if hide_text or hide_query else prompt) if prompt else None,
            "draft": draft_out,
        }
        line = json.dumps(_clean(record), sort_keys=True, ensure_ascii=False)
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(line + "\n")
        return True
