"""Which other postmortems are a postmortem's precedents, from evidence a knowledge base has
without anyone filling in a ``type``: the labels self-made cases are scored by.

A precedent is a postmortem an on-call engineer would want to read for this alert: the same
incident (a duplicate or follow-up), a recurrence (same failure, same service or subsystem), or
the same failure mode elsewhere in the organisation. Three sources, strongest first:

1. **What people said**: ``cited`` in an approved draft's front matter (the reviewer approved
   those precedents for that incident). Review and feedback labels on searches join the fit as
   labelled searches of their own (calibration/people.py).
2. **Explicit links**: ``supersedes`` (both ways), a ``related:`` front-matter list, the same
   title (a recurrence filed under the same name), and another postmortem's id, or its exact
   title (four words or more), written in a body.
3. **The same failure mode**: the author's ``type``, else the inferred one when the classifier is
   confident (knowledge/failure_modes.py); two postmortems of one mode are precedents of each
   other.

:func:`mode_differs` says when two postmortems are *confidently* of different failure modes: only
then may a left-out document's query whose top result is not a known precedent count as a
negative (selfcal.py); otherwise the case stays out of the fit.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from seenbefore.knowledge.failure_modes import CONFIDENT, failure_mode
from seenbefore.types import Postmortem

TITLE_WORDS = 4  # a title shorter than this is too generic to count as a mention
LINK_FIELDS = ("related", "cited")
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9]")


@dataclass(frozen=True)
class Known:
    """One document's known precedents among the others, with why, and its failure mode
    (None when neither the author nor a confident classifier gives one)."""

    precedents: Mapping[str, str]  # other id -> reason ("link: ...", "mode: <slug>")
    mode: str | None


def _ids(value: object) -> list[str]:
    if isinstance(value, str):
        return [v.strip() for v in value.replace(",", " ").split() if v.strip()]
    if isinstance(value, Iterable):
        return [str(v).strip() for v in value if str(v).strip()]
    return []


def _norm(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def mode(pm: Postmortem) -> str | None:
    """The author's type, else the inferred failure mode when the classifier is confident."""
    found = failure_mode(pm)
    if not found.inferred or found.p >= CONFIDENT:
        return found.slug or None
    return None


def links(docs: Sequence[Postmortem]) -> dict[str, dict[str, str]]:
    """Explicit links between ``docs``, both ways: doc id -> {other id: reason}."""
    ids = {d.id for d in docs}
    titles = {_norm(d.title): d.id for d in docs if len(_norm(d.title).split()) >= TITLE_WORDS}
    out: dict[str, dict[str, str]] = {d.id: {} for d in docs}

    def link(a: str, b: str, why: str) -> None:
        if a != b and a in ids and b in ids:
            out[a].setdefault(b, why)
            out[b].setdefault(a, why)

    same_title: dict[str, list[str]] = {}
    for d in docs:
        same_title.setdefault(_norm(d.title), []).append(d.id)
    for group in same_title.values():
        for other in group[1:]:
            link(group[0], other, "link: same title")
    for d in docs:
        if d.supersedes:
            link(d.id, d.supersedes, "link: supersedes")
        for key in LINK_FIELDS:
            for other in _ids(d.extra.get(key)):
                link(d.id, other, f"link: {key}")
        for other in set(_ID.findall(d.body)) & ids:
            link(d.id, other, "link: id mentioned")
        words = _norm(d.body).split()
        heads = {" ".join(words[i : i + TITLE_WORDS]) for i in range(len(words))}
        text = " ".join(words)
        for title, other in titles.items():
            head = " ".join(title.split()[:TITLE_WORDS])
            if other != d.id and head in heads and title in text:
                link(d.id, other, "link: title mentioned")
    return out


def known(docs: Sequence[Postmortem]) -> dict[str, Known]:
    """Every document's known precedents among ``docs`` (module doc)."""
    linked = links(docs)
    modes = {d.id: mode(d) for d in docs}
    by_mode: dict[str, set[str]] = {}
    for doc_id, slug in modes.items():
        if slug:
            by_mode.setdefault(slug, set()).add(doc_id)
    out = {}
    for d in docs:
        found = dict(linked[d.id])
        slug = modes[d.id]
        for other in sorted(by_mode.get(slug or "", set()) - {d.id}):
            found.setdefault(other, f"mode: {slug}")
        out[d.id] = Known(found, slug)
    return out


def mode_differs(a: str | None, b: str | None) -> bool:
    """True only when both failure modes are known and differ."""
    return a is not None and b is not None and a != b
