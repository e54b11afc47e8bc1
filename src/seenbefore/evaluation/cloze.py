"""Inverse-cloze cases for the "no precedent" verdict.

A self-made query copied from a document finds that document by the very words it copies; a
real first report finds a postmortem written later by what the rest of the write-up says. An
inverse-cloze case (Lee, Chang & Toutanova, ACL 2019) takes a document's opening as the query
and searches a shadow copy of the KB in which that document has lost its opening, so its
precedent is found, or not, by the rest. That only makes sense where the rest holds at least
``CLOZE_RATIO`` times the opening's words (fixed a priori, not tuned): a one-paragraph document
without its opening has nothing left to be found by, and there the copied case stands. The
verdict's precedent model is fitted on these cases; the confidence model stays fitted on the
copied ones (known-item retrieval, what Hit@1 measures).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from seenbefore.evaluation.cases import Case
from seenbefore.types import Postmortem, Section

if TYPE_CHECKING:
    from seenbefore.config import Settings
    from seenbefore.kb import KnowledgeBase

CLOZE_RATIO = 3.0  # the rest of a document must hold this many times the opening's words
TAG = "cloze"


def opening_section(pm: Postmortem) -> Section | None:
    """The section a self-made query opens with: detection, summary or timeline (the first
    that has text), else the first section; None for a document without sections."""
    for key in ("detection", "summary", "timeline"):
        section = pm.section(key)
        if section is not None and section.text.strip():
            return section
    return pm.sections[0] if pm.sections else None


def without_opening(pm: Postmortem, query: str) -> Postmortem | None:
    """``pm`` with ``query`` (the first words of its opening section) cut from that section;
    None when ``query`` is not such a prefix or the rest is under ``CLOZE_RATIO`` times it."""
    section = opening_section(pm)
    asked = query.split()
    if section is None or not asked:
        return None
    words = section.text.split()
    if words[: len(asked)] != asked:
        return None
    rest = sum(len(s.text.split()) for s in pm.sections) - len(asked)
    if rest < CLOZE_RATIO * len(asked):
        return None
    cut = replace(section, text=" ".join(words[len(asked) :]))
    sections = tuple(cut if s is section else s for s in pm.sections)
    return replace(pm, sections=sections, content_hash=f"{pm.content_hash}:{TAG}")


def cloze_cases(
    postmortems: Mapping[str, Postmortem], noisy: Sequence[Case], clean: Sequence[Case]
) -> tuple[list[Case], dict[str, Postmortem]]:
    """``noisy`` (selfcal.self_cases) with each document that can lose its opening turned into
    an inverse-cloze pair: the opening as written (``clean``, same ids) for its query, tagged
    ``cloze``. Also returns those documents as the shadow KB holds them (``shadow_kb``)."""
    opening = {c.id: c.query for c in clean}
    cut: dict[str, Postmortem] = {}
    for doc in sorted({document_of(c) for c in noisy}):
        query = opening.get(f"self:{doc}", "")
        shorter = without_opening(postmortems[doc], query) if doc in postmortems else None
        if shorter is not None:
            cut[doc] = shorter
    cases = [
        replace(c, query=opening[c.id], tags=(*c.tags, TAG)) if document_of(c) in cut else c
        for c in noisy
    ]
    return cases, cut


def shadow_kb(settings: Settings, documents: Mapping[str, Postmortem]) -> KnowledgeBase:
    """A sparse-only, in-memory KB of ``documents``, chunked as ``settings`` chunk; it never
    calibrates itself and writes nothing to disk."""
    from seenbefore.kb import KnowledgeBase
    from seenbefore.knowledge.chunking import chunk_postmortem
    from seenbefore.storage.sqlite import SQLiteStore

    settings = settings.model_copy(update={"embedder": "none", "database_url": None})
    shadow = KnowledgeBase(settings, store=SQLiteStore(":memory:"), self_calibration=_never)
    for doc in sorted(documents):
        pm = documents[doc]
        chunks = chunk_postmortem(
            pm, max_words=settings.chunk_words, overlap_words=settings.chunk_overlap_words
        )
        shadow.store.upsert(pm, chunks)
    return shadow


def document_of(case: Case) -> str:
    """The document a self-made case was made from (its id is ``<kind>:<document>``)."""
    return case.id.split(":", 1)[1]


def _never(kb: KnowledgeBase, *, force: bool = False) -> dict[str, Any] | None:
    return None
