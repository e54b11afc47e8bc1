"""Recognise body sections by heading, with synonyms from the common postmortem templates
(Google SRE workbook, Atlassian, PagerDuty)."""

from __future__ import annotations

import re

CANONICAL_SECTIONS: dict[str, tuple[str, ...]] = {
    "summary": (
        "summary",
        "overview",
        "executive summary",
        "incident summary",
        "description",
        "what happened",
        "tl;dr",
        "tldr",
        "background",
    ),
    "impact": (
        "impact",
        "customer impact",
        "user impact",
        "business impact",
        "blast radius",
        "scope",
    ),
    "detection": (
        "detection",
        "symptoms",
        "how it was detected",
        "how we found out",
        "alerting",
        "trigger",
        "observations",
        "what we saw",
        "detection and response",
        "symptoms and detection",
        "how was it detected",
        "initial symptoms",
    ),
    "timeline": (
        "timeline",
        "incident timeline",
        "chronology",
        "sequence of events",
        "timeline of events",
    ),
    "root_cause": (
        "root cause",
        "root causes",
        "cause",
        "causes",
        "contributing factors",
        "root cause analysis",
        "why it happened",
        "analysis",
        "rca",
        "trigger and root cause",
    ),
    "resolution": (
        "resolution",
        "mitigation",
        "remediation",
        "recovery",
        "fix",
        "how it was fixed",
        "resolution and recovery",
        "repair",
        "mitigation and resolution",
        "resolution and mitigation",
    ),
    "action_items": (
        "action items",
        "follow-up",
        "follow up",
        "follow-ups",
        "follow ups",
        "next steps",
        "corrective actions",
        "preventive actions",
        "corrective and preventive actions",
        "todo",
    ),
    "lessons": (
        "lessons learned",
        "lessons",
        "what went well",
        "what went wrong",
        "where we got lucky",
        "takeaways",
        "learnings",
    ),
}

_SYNONYMS = {syn: key for key, syns in CANONICAL_SECTIONS.items() for syn in syns}
_NUMBERING = re.compile(r"^(?:\d+(?:\.\d+)*[.)]?|[ivx]+\.)\s+", re.IGNORECASE)


def normalise_heading(heading: str) -> str:
    """Lowercase, strip numbering, emphasis and trailing punctuation."""
    text = heading.strip().strip("*_` ").lower()
    text = _NUMBERING.sub("", text)
    text = re.sub(r"\s+", " ", text)
    return text.rstrip(" :.-—")


def canonical_section(heading: str) -> str:
    """The canonical key for a heading, or a slug of the heading itself when it is not known."""
    text = normalise_heading(heading)
    if text in _SYNONYMS:
        return _SYNONYMS[text]
    slug = re.sub(r"[^a-z0-9]+", "_", text).strip("_")
    return slug or "section"
