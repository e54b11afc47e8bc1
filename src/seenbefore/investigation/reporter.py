"""The Reporter: turns evidence into a draft with a fixed contract. This module holds the contract
and the offline reporter (deterministic, extractive, no language model)."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from pydantic import BaseModel, Field

from seenbefore.core.confidence import label
from seenbefore.investigation.evidence import Evidence, EvidenceItem

OFFLINE_LABEL = "drafted without a language model (extractive, offline reporter)"
STALE_AFTER_DAYS = 2 * 365


class Draft(BaseModel):
    """The output contract every reporter fills."""

    summary: str
    hypothesis: str
    cited_incidents: list[str] = Field(default_factory=list)
    suggested_checks: list[str] = Field(default_factory=list)
    mitigations: list[str] = Field(default_factory=list)
    confidence: float = Field(ge=0.0, le=1.0)
    confidence_label: str
    novel: bool
    missing_information: list[str] = Field(default_factory=list)
    staleness_note: str | None = None
    drafted_by: str = OFFLINE_LABEL
    advisory: str = "Advisory only: a person decides; nothing here acts on infrastructure."
    retrieval_trace: dict[str, Any] = Field(default_factory=dict)


_MATCHED_BY = {
    "sparse": "by keywords (BM25)",
    "dense": "by meaning (embeddings)",
    "both": "by keywords and by meaning",
    "signals": "by its recorded signals alone",
}


def _sentences(text: str, limit: int) -> list[str]:
    items = [
        re.sub(r"^[-*+]\s+|^\d+[.)]\s+", "", line).strip()
        for line in text.splitlines()
        if line.strip() and not line.strip().startswith("|")
    ]
    out: list[str] = []
    for item in items:
        out += [s.strip() for s in re.split(r"(?<=[.!?])\s+", item) if len(s.strip()) > 3]
    return out[:limit]


def trace(evidence: Evidence) -> dict[str, Any]:
    return {
        "searched": evidence.searched,
        "gate": evidence.gate,
        "timings_ms": evidence.timings,
        "candidates": [
            {
                "id": i.doc_id,
                "matched_by": i.matched_by,
                "retrievers": i.retrievers,
                "score": round(i.score, 6),
                "matched_section": i.matched_section,
            }
            for i in evidence.items
        ],
    }


class OfflineReporter:
    name = "offline"

    def draft(self, evidence: Evidence, *, today: dt.date | None = None) -> Draft:
        if evidence.novel or not evidence.items:
            return self._novel(evidence)
        top = evidence.items[0]
        cause = (
            " ".join(_sentences(top.sections.get("root_cause", ""), 2))
            or "(the precedent records no root cause section)"
        )
        shared = ", ".join(top.signals_shared) or "none of the observed signals by name"
        how = _MATCHED_BY.get(top.matched_by, top.matched_by)
        if "signals" in top.retrievers and top.matched_by != "signals":
            how += " and by its recorded signals"
        hypothesis = (
            f"This resembles {top.doc_id} ({top.title}, {top.date or 'undated'}), matched "
            f"{how}. In that incident the root cause was: {cause} Signals shared with "
            f"it: {shared}."
        )
        if top.signals_not_in_precedent:
            hypothesis += (
                f" Observed now but not recorded then: {', '.join(top.signals_not_in_precedent)}."
            )
        mitigations = _sentences(top.sections.get("resolution", ""), 4)
        checks = [
            f"Compare with {top.doc_id}'s symptoms: " + s
            for s in _sentences(top.sections.get("detection", ""), 2)
        ]
        checks += [
            f"Check {s} (it moved in {top.doc_id})" for s in top.signals_only_in_precedent[:3]
        ]
        missing = [
            f"whether {s} also deviates now (recorded in {top.doc_id})"
            for s in top.signals_only_in_precedent[:5]
        ]
        if not evidence.request.signals:
            missing.append("the metrics that deviated (the query carried no structured signals)")
        rewrite = evidence.searched.get("rewrite") or {}
        uncalibrated = (
            " — scored before an LLM rewrite re-ranked the list, so not calibrated for this one"
            if rewrite.get("top_changed")
            else ""
        )
        return Draft(
            summary=f"Possible precedent: {top.doc_id} ({top.type or 'untyped'}); "
            f"confidence {evidence.confidence:.2f} ({evidence.confidence_label}){uncalibrated}.",
            hypothesis=hypothesis,
            cited_incidents=[i.doc_id for i in evidence.items],
            suggested_checks=checks,
            mitigations=mitigations,
            confidence=evidence.confidence,
            confidence_label=label(evidence.confidence),
            novel=False,
            missing_information=missing,
            staleness_note=_staleness(top, today),
            retrieval_trace=trace(evidence),
        )

    def _novel(self, evidence: Evidence) -> Draft:
        searched = evidence.searched
        nearest = evidence.items[0] if evidence.items else None
        near = (
            (
                f" The nearest candidate, {nearest.doc_id} ({nearest.title}), was not a credible "
                f"match (confidence {evidence.confidence:.2f})."
            )
            if nearest
            else ""
        )
        return Draft(
            summary="No precedent found in the knowledge base.",
            hypothesis=(
                f"No postmortem among the {searched.get('documents_visible', '?')} visible to tiers "
                f"{', '.join(searched.get('tiers', []))} is a credible precedent for: "
                f'"{searched.get("query", "")}" (searched with {searched.get("mode")} retrieval).'
                + near
                + (f" Why: {evidence.novel_reason}." if evidence.novel_reason else "")
                + " Treat this as a new kind of incident."
            ),
            cited_incidents=[],
            confidence=evidence.confidence,
            confidence_label=label(evidence.confidence),
            novel=True,
            missing_information=["any earlier incident of this kind (none is recorded)"],
            retrieval_trace=trace(evidence),
        )


def _staleness(item: EvidenceItem, today: dt.date | None) -> str | None:
    if item.status != "current":
        return f"{item.doc_id} was superseded by {item.superseded_by}; read that version too."
    if item.date is not None:
        age = ((today or dt.date.today()) - item.date).days
        if age > STALE_AFTER_DAYS:
            return f"{item.doc_id} is {age // 365} years old; systems may have changed since."
    return None
