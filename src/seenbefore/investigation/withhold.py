"""Retrieved text that the injection scanner flags never becomes a statement in a draft.

Flags are found per section (a postmortem's title, detection, root cause and resolution are
scanned one by one), so a flagged root cause is withheld while the same incident's detection and
resolution are still used. Reporters record what they withheld as :class:`Withheld` entries on
the draft (machine-readable, with a ``note`` a person reads), quote none of it, and never send it
to a language model; :func:`sweep` checks what a model wrote for text that reads as an injection
or repeats a flagged span, and withholds those sentences too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from seenbefore.investigation.evidence import EVIDENCE_SECTIONS, Evidence, EvidenceItem
from seenbefore.textguard import Finding, scan

__all__ = [
    "SECTION_NAMES",
    "Flagged",
    "Swept",
    "Withheld",
    "describe",
    "findings",
    "flagged_sections",
    "placeholder",
    "sweep",
]

SECTION_NAMES = {
    "title": "title",
    "detection": "detection",
    "root_cause": "root cause",
    "resolution": "resolution",
}
_INSTRUCTIONS = ("instruction_override", "tool_call", "secret_request", "encoded_instruction")
_HIDDEN = ("hidden_markup", "zero_width", "bidi_override")
_LINKS = ("exfiltration_link", "javascript_link")
_SHINGLE = 6  # words in a row that a model's sentence must share with a flagged span to repeat it
_SENTENCE = re.compile(r"[^.!?\n]+(?:[.!?]+|$)", re.MULTILINE)
_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"\w+")


class Withheld(BaseModel):
    """Text kept out of a draft because the prompt-injection scanner flagged it."""

    model_config = ConfigDict(frozen=True)

    doc_id: str | None = Field(
        description="the postmortem whose text was withheld; null when the model wrote it alone"
    )
    section: str = Field(
        description="evidence: title, detection, root_cause or resolution; model: the draft "
        "field the text was in"
    )
    kinds: list[str] = Field(description="the scanner's finding kinds")
    origin: Literal["evidence", "model"] = "evidence"
    note: str = Field(description="one line for people: what was withheld and why")


@dataclass(frozen=True)
class Flagged:
    """One flagged section of one candidate; ``spans`` are its sentences that hold a finding."""

    doc_id: str
    section: str
    kinds: tuple[str, ...]
    spans: tuple[str, ...]

    @property
    def entry(self) -> Withheld:
        return Withheld(
            doc_id=self.doc_id,
            section=self.section,
            kinds=list(self.kinds),
            note=f"Withheld from {self.doc_id} ({SECTION_NAMES.get(self.section, self.section)}): "
            f"it contains {describe(self.kinds)}; read the postmortem itself.",
        )


def describe(kinds: Sequence[str]) -> str:
    """What the kinds of findings mean, for people: ``text that reads as instructions to a
    language model (flags: tool_call)``."""
    parts = []
    if any(k in _INSTRUCTIONS for k in kinds):
        parts.append("text that reads as instructions to a language model")
    if any(k in _HIDDEN for k in kinds):
        parts.append("hidden markup or invisible characters")
    if any(k in _LINKS for k in kinds):
        parts.append("a link that could leak data or run script")
    return (
        f"{' and '.join(parts) or 'text the injection scanner flagged'} (flags: {', '.join(kinds)})"
    )


def placeholder(kinds: Sequence[str], repeats: Sequence[str] = ()) -> str:
    """What stands in a model-written field where a sentence was withheld."""
    if repeats and not kinds:
        return f"[withheld: it repeats text withheld from {', '.join(repeats)}]"
    return f"[withheld: {describe(kinds)}]"


def _spans(text: str, found: Sequence[Finding]) -> tuple[str, ...]:
    spans = []
    for m in _SENTENCE.finditer(text):
        if any(m.start() < f.start + max(len(f.excerpt), 1) and f.start < m.end() for f in found):
            spans.append(m[0].strip())
    return tuple(spans) or (text.strip(),)


@lru_cache(maxsize=512)
def findings(text: str) -> tuple[Finding, ...]:
    """``scan(text)``, remembered: the Investigator flags each section and the reporter then
    withholds it, so a section is scanned once per process."""
    return tuple(scan(text))


def flag_item(item: EvidenceItem) -> list[Flagged]:
    """The flagged parts of one candidate: its title and each evidence section, scanned apart."""
    out = []
    parts = {"title": item.title} | {k: item.sections.get(k, "") for k in EVIDENCE_SECTIONS}
    for section, text in parts.items():
        found = findings(text) if text else ()
        if found:
            kinds = tuple(sorted({f.kind for f in found}))
            out.append(Flagged(item.doc_id, section, kinds, _spans(text, found)))
    return out


def flagged_sections(evidence: Evidence) -> list[Flagged]:
    """Every flagged section of every candidate, in rank then section order."""
    return [f for item in evidence.items for f in flag_item(item)]


# -- a model's answer ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Swept:
    """A model-written field after the sweep, and what was withheld from it (None: nothing)."""

    value: str | list[str] | None
    entry: Withheld | None


def _shingles(text: str) -> set[tuple[str, ...]]:
    words = [w.lower() for w in _WORD.findall(text)]
    return {tuple(words[i : i + _SHINGLE]) for i in range(max(len(words) - _SHINGLE + 1, 0))}


class _Checker:
    def __init__(self, flagged: Iterable[Flagged]) -> None:
        self.spans = [(f.doc_id, f.kinds, _shingles(s)) for f in flagged for s in f.spans]

    def check(self, text: str) -> tuple[set[str], list[str]]:
        """(kinds found in ``text``, doc ids whose flagged spans it repeats)."""
        kinds: set[str] = {f.kind for f in scan(text)}
        mine = _shingles(text)
        repeats = []
        for doc_id, flagged_kinds, shingles in self.spans:
            if mine & shingles:
                repeats.append(doc_id)
                kinds |= set(flagged_kinds)
        return kinds, list(dict.fromkeys(repeats))


def _entry(field: str, kinds: set[str], repeats: list[str]) -> Withheld:
    why = describe(sorted(kinds))
    if repeats:
        why = f"it repeats text withheld from {', '.join(repeats)}: {why}"
    return Withheld(
        doc_id=repeats[0] if repeats else None,
        section=field,
        kinds=sorted(kinds),
        origin="model",
        note=f"Withheld from the model's {field.replace('_', ' ')}: {why}.",
    )


def _sweep_text(text: str, checker: _Checker) -> tuple[str, set[str], list[str]]:
    kinds: set[str] = set()
    repeats: list[str] = []
    kept: list[str] = []
    run: tuple[set[str], list[str]] | None = None  # consecutive withheld sentences: one mark
    for sentence in [s for s in _SPLIT.split(text) if s.strip()] + [""]:
        found, again = checker.check(sentence) if sentence else (set(), [])
        if found or again:
            kinds |= found
            repeats += again
            run = (run[0] | found, run[1] + again) if run else (set(found), list(again))
            continue
        if run is not None:
            kept.append(placeholder(sorted(run[0]), list(dict.fromkeys(run[1]))))
            run = None
        if sentence:
            kept.append(sentence.strip())
    out = " ".join(kept) if kinds or repeats else text
    leftover, again = checker.check(out)  # a pattern that spans sentences: withhold it all
    if leftover or again:
        kinds |= leftover
        repeats = list(dict.fromkeys(repeats + again))
        out = placeholder(sorted(kinds), repeats)
    return out, kinds, list(dict.fromkeys(repeats))


def sweep(field: str, value: str | list[str] | None, flagged: Iterable[Flagged]) -> Swept:
    """``value`` (a draft field the model wrote) with flagged sentences withheld: a sentence of a
    text field is replaced by a placeholder, a flagged item of a list field is dropped."""
    if value is None:
        return Swept(None, None)
    checker = _Checker(flagged)
    if isinstance(value, str):
        out, kinds, repeats = _sweep_text(value, checker)
        return Swept(out, _entry(field, kinds, repeats) if kinds or repeats else None)
    kept: list[str] = []
    all_kinds: set[str] = set()
    all_repeats: list[str] = []
    for item in value:
        found, again = checker.check(item)
        if found or again:
            all_kinds |= found
            all_repeats += again
        else:
            kept.append(item)
    if not all_kinds and not all_repeats:
        return Swept(list(value), None)
    return Swept(kept, _entry(field, all_kinds, list(dict.fromkeys(all_repeats))))
