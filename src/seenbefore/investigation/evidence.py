"""What the Investigator produces: the evidence for the top candidates, a structured record that
can be inspected (and stored by the review workflow) before anything is drafted from it.

Plain frozen dataclasses with no retrieval imports, so reporters, the review models and the HTTP
models can name them without pulling in the search stack.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from seenbefore.investigation.query import InvestigationRequest

__all__ = ["EVIDENCE_SECTIONS", "Evidence", "EvidenceItem"]

EVIDENCE_SECTIONS = ("detection", "root_cause", "resolution")


@dataclass(frozen=True)
class EvidenceItem:
    doc_id: str
    title: str
    date: dt.date | None
    type: str
    status: str
    superseded_by: str | None
    access_tier: str
    matched_by: str
    retrievers: dict[str, dict[str, float]]
    score: float
    matched_section: str
    sections: dict[str, str]  # whole sections (detection, root cause, resolution)
    signals_shared: tuple[str, ...]
    signals_not_in_precedent: tuple[str, ...]
    signals_only_in_precedent: tuple[str, ...]
    injection_flags: tuple[str, ...] = ()  # kinds of prompt-injection patterns found in sections
    # where the author wrote no type: the failure mode inferred from the text, for people
    # (knowledge.failure_modes.FailureMode.label: "cpu-saturation (inferred, p 0.91)")
    inferred_type: str = ""
    # its slug when the inference is confident (FailureMode.known), else empty: what an approved
    # recurrence of this postmortem is typed as (review/postmortem.py)
    inferred_slug: str = ""


@dataclass(frozen=True)
class Evidence:
    request: InvestigationRequest
    items: tuple[EvidenceItem, ...]
    confidence: float
    confidence_label: str
    novel: bool
    searched: dict[str, Any]
    gate: dict[str, Any]
    timings: dict[str, float] = field(default_factory=dict)
    novel_reason: str = ""  # why novel, when it is
    signals: dict[str, float] = field(default_factory=dict)  # confidence inputs (top result)
    verdict: str = ""  # core.confidence.VERDICTS: "no precedent" exactly when novel
    confidence_model_key: str = ""  # which confidence model scored them (calibration labels)

    @property
    def compared_nothing(self) -> bool:
        """No postmortem was visible to the caller's tiers: nothing was compared, so a "no
        precedent" here says nothing about whether it happened before."""
        return not self.items and self.searched.get("documents_visible") == 0
