"""The Reporter: turns evidence into a draft with a fixed contract. This module holds the contract
and the offline reporter (deterministic, extractive, no language model). Retrieved text that the
injection scanner flags is never quoted: ``Draft.withheld`` names it (see ``withhold``)."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from pydantic import BaseModel, Field, model_validator

from seenbefore.core.confidence import FOUND, NONE, POSSIBLE, label
from seenbefore.investigation.evidence import Evidence, EvidenceItem
from seenbefore.investigation.withhold import Flagged, Withheld, describe, flagged_sections
from seenbefore.textlinks import inert_links

OFFLINE_LABEL = "drafted without a language model (extractive, offline reporter)"
STALE_AFTER_DAYS = 2 * 365


class Draft(BaseModel):
    """The output contract every reporter fills."""

    summary: str
    hypothesis: str
    cited_incidents: list[str] = Field(default_factory=list)
    suggested_checks: list[str] = Field(default_factory=list)
    mitigations: list[str] = Field(default_factory=list)
    confidence: float = Field(ge=0.0, le=1.0, description="p_precedent of the top result")
    confidence_label: str
    novel: bool = Field(description="true exactly when the verdict is 'no precedent'")
    verdict: str = Field(
        default="",
        description="precedent found / possible precedent — check / no precedent: from "
        "p_precedent alone, the same words as search",
    )
    missing_information: list[str] = Field(default_factory=list)
    staleness_note: str | None = None
    withheld: list[Withheld] = Field(
        default_factory=list,
        description="retrieved (or model-written) text kept out of this draft because the "
        "prompt-injection scanner flagged it; each entry says which incident, section and why",
    )
    drafted_by: str = OFFLINE_LABEL
    advisory: str = "Advisory only: a person decides; nothing here acts on infrastructure."
    retrieval_trace: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _links_are_data(self) -> Draft:
        """Every link in the text people read is plain data (textlinks.inert_links): a draft
        quotes postmortems and model output, and goes on to chat channels that link URLs."""
        for name in ("summary", "hypothesis", "staleness_note"):
            value = getattr(self, name)
            if value:
                object.__setattr__(self, name, inert_links(value))
        for name in ("suggested_checks", "mitigations", "missing_information"):
            object.__setattr__(self, name, [inert_links(v) for v in getattr(self, name)])
        return self


_MATCHED_BY = {
    "sparse": "by keywords (BM25)",
    "dense": "by meaning (embeddings)",
    "both": "by keywords and by meaning",
    "signals": "by its recorded signals alone",
}


_MARKDOWN = (
    (re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)"), r"\1 (\2)"),  # [text](url)
    (re.compile(r"(\*\*|__)(.+?)\1"), r"\2"),  # bold
    (re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])"), r"\1"),  # italic
    (re.compile(r"`+([^`]*)`+"), r"\1"),  # code
    (re.compile(r"^\s{0,3}#{1,6}\s+"), ""),  # a heading's hashes
    (re.compile(r"^\s*>\s?"), ""),  # a quote's marker
)


def plain(text: str) -> str:
    """``text`` without Markdown markup: a draft's fields are plain text (the web renders its
    own); link targets stay, as data."""
    for pattern, repl in _MARKDOWN:
        text = pattern.sub(repl, text)
    return text


def _sentences(text: str, limit: int) -> list[str]:
    """Up to ``limit`` whole sentences of ``text``: list markers, table rows and Markdown
    dropped, and no fragment that only introduces what follows (ends with a colon)."""
    items = [
        plain(re.sub(r"^[-*+]\s+|^\d+[.)]\s+", "", line).strip())
        for line in text.splitlines()
        if line.strip() and not line.strip().startswith("|")
    ]
    out: list[str] = []
    for item in items:
        for sentence in re.split(r"(?<=[.!?])\s+", item):
            sentence = sentence.strip()
            if len(sentence) > 3 and not sentence.endswith(":"):
                out.append(sentence)
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
        """Flagged sections (:mod:`~seenbefore.investigation.withhold`) are never quoted: the
        draft says what was withheld and why, and uses the incident's other sections."""
        flagged = flagged_sections(evidence)
        if evidence.novel or not evidence.items:
            return self._novel(evidence, flagged)
        top = evidence.items[0]
        hidden = {f.section: f for f in flagged if f.doc_id == top.doc_id}

        def section(key: str) -> str:
            return "" if key in hidden else top.sections.get(key, "")

        if "root_cause" in hidden:
            cause = (
                f"In that incident the root cause was withheld: it contains "
                f"{describe(hidden['root_cause'].kinds)}; read {top.doc_id} itself."
            )
        elif quoted := " ".join(_sentences(section("root_cause"), 2)):
            cause = f"In that incident the root cause was: {quoted}"
        else:  # a collection of one-paragraph summaries (danluu's) records no root cause
            summary = " ".join(_sentences(section("summary"), 2))
            told = summary and summary[:60] in _title(top, flagged)  # the title holds it
            cause = (
                f"It records no root cause section; its summary: {summary}"
                if summary and not told
                else f"It records no root cause section; read {top.doc_id} itself."
            )
        shared, unshared = list(top.signals_shared), list(top.signals_only_in_precedent)
        if shared:
            signals = f" Signals shared with it: {', '.join(shared)}."
        elif unshared:
            signals = f" It recorded {', '.join(unshared[:5])}; the alert names none of them."
        else:
            signals = ""
        how = _MATCHED_BY.get(top.matched_by, top.matched_by)
        if "signals" in top.retrievers and top.matched_by != "signals":
            how += " and by its recorded signals"
        verdict = evidence.verdict or POSSIBLE
        where = f"{top.doc_id} ({_title(top, flagged)}, {top.date or 'undated'})"
        if verdict == FOUND:
            hypothesis = f"This resembles {where}, matched {how}. {cause}{signals}"
        else:
            hypothesis = (
                f"{where} may be a precedent (matched {how}); check before trusting it. "
                f"{cause}{signals}"
            )
        if top.signals_not_in_precedent:
            hypothesis += (
                f" Observed now but not recorded then: {', '.join(top.signals_not_in_precedent)}."
            )
        done = _sentences(section("resolution"), 4)
        mitigations = (
            done
            if verdict == FOUND
            else [f"What was done in {top.doc_id} (may not apply): {m}" for m in done]
        )
        checks = [
            f"Compare with how {top.doc_id} showed itself: {x}"
            for x in _sentences(section("detection"), 2)
        ]
        checks += [f"Check {x} (it moved in {top.doc_id})" for x in unshared[:3]]
        # what would confirm it beyond the checks above: no item in both lists
        missing = [
            f"whether {x} also deviates now (recorded in {top.doc_id})" for x in unshared[3:6]
        ]
        if not evidence.request.signals and not shared:
            missing.append("the metrics that deviated (the query carried no structured signals)")
        caveat = _caveat(evidence)
        lead = "Precedent found" if verdict == FOUND else "Possible precedent — check"
        return Draft(
            summary=f"{lead}: {top.doc_id}{_mode(top)}; "
            f"p_precedent {evidence.confidence:.2f}{caveat}.",
            hypothesis=hypothesis,
            cited_incidents=[i.doc_id for i in evidence.items],
            suggested_checks=checks,
            mitigations=mitigations,
            confidence=evidence.confidence,
            confidence_label=evidence.confidence_label or label(evidence.confidence),
            novel=False,
            verdict=verdict,
            missing_information=missing,
            staleness_note=_staleness(top, today),
            withheld=[f.entry for f in flagged],
            retrieval_trace=trace(evidence),
        )

    def _novel(self, evidence: Evidence, flagged: list[Flagged]) -> Draft:
        searched = evidence.searched
        nearest = evidence.items[:3]
        tiers = ", ".join(searched.get("tiers", []))
        query = searched.get("query", "")
        if evidence.compared_nothing:
            # an empty knowledge base (for these tiers) is no evidence that this is new, and
            # no p says anything about it
            summary = "Nothing to compare with: the knowledge base holds no postmortem these "
            summary += "tiers can see."
            hypothesis = (
                f"The knowledge base holds no postmortem visible to tiers {tiers}, so nothing "
                f'was compared with: "{query}". This says nothing about whether it happened '
                "before. Ingest postmortems (seenbefore ingest DIR) or ask with a tier that sees "
                "them, and investigate again."
            )
            missing = "postmortems to compare with (none is visible to these tiers)"
        else:
            summary = f"No precedent found in the knowledge base{_caveat(evidence)}."
            near = (
                " The nearest postmortems, listed for reference and not scored as matching: "
                + "; ".join(f"{i.doc_id} ({_title(i, flagged)})" for i in nearest)
                + f" (p_precedent {evidence.confidence:.2f})."
                if nearest
                else ""
            )
            hypothesis = (
                f"No postmortem among the {searched.get('documents_visible', '?')} visible to "
                f'tiers {tiers} is a credible precedent for: "{query}" (searched with '
                f"{searched.get('mode')} retrieval)."
                + near
                + (f" Why: {evidence.novel_reason}." if evidence.novel_reason else "")
                + (
                    " Unless one of the nearest turns out to be the same failure when read, "
                    "treat this as a new kind of incident."
                    if nearest
                    else " Treat this as a new kind of incident."
                )
            )
            missing = (
                "an earlier incident of this kind (none of the nearest scored as one; a glance "
                "at them confirms it)"
                if nearest
                else "an earlier incident of this kind (none is recorded)"
            )
        return Draft(
            summary=summary,
            hypothesis=hypothesis,
            cited_incidents=[],
            confidence=evidence.confidence,
            confidence_label=evidence.confidence_label or label(evidence.confidence),
            novel=True,
            verdict=NONE,
            missing_information=[missing],
            withheld=[f.entry for f in flagged],
            retrieval_trace=trace(evidence),
        )


def _mode(item: EvidenceItem) -> str:
    """`` (bad-deploy)`` for an author's type, ``, bad-deploy (inferred, p 0.91)`` for an
    inferred one (no brackets within brackets), `` (untyped)`` for neither."""
    if item.type:
        return f" ({item.type})"
    return f", {item.inferred_type}" if item.inferred_type else " (untyped)"


def _caveat(evidence: Evidence) -> str:
    needs = evidence.searched.get("found_needs")
    if needs:  # a high p, held at "possible" (investigator.uncorroborated)
        return f", held at 'possible': {needs}"
    rewrite = evidence.searched.get("rewrite") or {}
    if not rewrite.get("top_changed"):
        return ""
    return " — scored before an LLM rewrite re-ranked the list, so not calibrated for this one"


def _title(item: EvidenceItem, flagged: list[Flagged]) -> str:
    hidden = any(f.doc_id == item.doc_id and f.section == "title" for f in flagged)
    # a title that is a sentence ("... at their primary datacenter.") loses its full stop
    # before the ", undated)" that follows it
    return "title withheld" if hidden else item.title.rstrip(" .") or item.title


def _staleness(item: EvidenceItem, today: dt.date | None) -> str | None:
    if item.status != "current":
        return f"{item.doc_id} was superseded by {item.superseded_by}; read that version too."
    if item.date is not None:
        age = ((today or dt.date.today()) - item.date).days
        if age > STALE_AFTER_DAYS:
            return f"{item.doc_id} is {age // 365} years old; systems may have changed since."
    return None
