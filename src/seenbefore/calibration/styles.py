"""Self-made queries in the styles people type, so what a knowledge base learns from itself is not
learnt from one style alone.

A query copied from a postmortem finds it by the very words it copies; what an on-call engineer
types is shorter and vaguer, written before the cause is known. Each document gives queries in
these styles (fixed a priori, never tuned on a dev set), each drawn from the text an engineer
could know at the time -- the opening section (detection, summary or timeline), never the root
cause or resolution unless the document has nothing else:

* ``alert``: a pager line, the first service name, a colon and 3-8 content words of the opening
  ("checkout-api: p99 latency 503s pool limit");
* ``update``: a vague status update, a template around 2-5 consecutive content words of the
  opening and the service ("We are investigating elevated error rates affecting checkout-api.");
* ``opening``: the opening's first 6-40 words, with 30 % of them replaced by words drawn from the
  whole collection (a known-item simulation, Azzopardi, de Rijke & Balog 2007);
* ``other``: the first 6-40 words of another section an engineer would have (impact, symptoms,
  summary), when there is one.

Off-domain text (``offdomain.txt``: cooking, sport, nature, history...) is a style of its own,
with no precedent in any knowledge base of postmortems.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from seenbefore.retrieval.tokenize import STOPWORDS, tokenize
from seenbefore.types import Postmortem, Section

STYLES: tuple[str, ...] = ("alert", "update", "opening", "other")
OFF_DOMAIN = "off-domain"
NOISE = 0.3
MIN_WORDS, MAX_WORDS = 6, 40
OPENING_KEYS = ("detection", "summary", "timeline")
OTHER_KEYS = ("impact", "summary", "detection", "timeline")  # never root cause or resolution
UPDATES = (
    "We are investigating {words} affecting {service}.",
    "We are seeing {words} for {service} and are working to identify the cause.",
    "Some customers may experience {words} with {service}. We will provide an update shortly.",
    "Investigating reports of {words} in {service}.",
    "{service}: we are aware of {words} and are looking into it.",
    "Elevated {words} on {service} since a few minutes ago; engineers are engaged.",
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


@cache
def off_domain_lines() -> tuple[str, ...]:
    path = Path(__file__).with_name("offdomain.txt")
    lines = path.read_text(encoding="utf-8").splitlines()
    return tuple(ln.strip() for ln in lines if ln.strip() and not ln.startswith("#"))


def opening_section(pm: Postmortem) -> Section | None:
    """The section a first report is written from: detection, summary or timeline (the first
    that has text), else the first section; None for a document without sections."""
    for key in OPENING_KEYS:
        section = pm.section(key)
        if section is not None and section.text.strip():
            return section
    return pm.sections[0] if pm.sections else None


def _first_words(text: str, limit: int) -> list[str]:
    words: list[str] = []
    for sentence in _SENTENCE.split(" ".join(text.split())):
        if words and len(words) + len(sentence.split()) > limit:
            break
        words.extend(sentence.split())
    return words[:limit]


def opening_text(pm: Postmortem, section: Section | None = None) -> str:
    """What an on-call engineer would know first: the opening sentences (up to 40 words) of
    ``section`` (default: the opening section; a timeline's first entry), else the title."""
    section = section or opening_section(pm)
    if section is None:
        return pm.title
    text = section.text
    if section.key == "timeline":
        text = next((ln for ln in text.splitlines() if ln.strip()), text)
    return " ".join(_first_words(text, MAX_WORDS))


def content_words(text: str) -> list[str]:
    return [w for w in tokenize(text) if w not in STOPWORDS and not w.isdigit() and len(w) > 1]


def simulate(query: str, collection: Sequence[str], rng: random.Random, noise: float) -> str:
    """``query`` with each word replaced, with probability ``noise``, by a word of a random
    chunk of the collection (the collection language model)."""
    if not collection or noise <= 0:
        return query
    out = []
    for word in query.split():
        if rng.random() < noise:
            words = rng.choice(collection).split()
            word = rng.choice(words) if words else word
        out.append(word)
    return " ".join(out)


def style_query(
    pm: Postmortem,
    style: str,
    collection: Sequence[str],
    rng: random.Random,
    *,
    noise: bool = True,
) -> str | None:
    """``pm``'s query in ``style`` (None when the document gives none in it); ``noise`` False
    keeps the ``opening`` as written."""
    section = opening_section(pm)
    opening = opening_text(pm, section)
    service = pm.services[0] if pm.services else ""
    words = content_words(opening)
    if style == "alert":
        if len(words) < 3:
            return None
        start = rng.randint(0, max(0, len(words) - 3))
        picked = words[start : start + rng.randint(3, 8)]
        return f"{service}: {' '.join(picked)}" if service else " ".join(picked)
    if style == "update":
        if len(words) < 2:
            return None
        size = rng.randint(2, 5)
        start = rng.randint(0, max(0, len(words) - size))
        phrase = " ".join(words[start : start + size])
        template = rng.choice(UPDATES)
        return template.format(words=phrase, service=service or "the service").strip()
    if style == "opening":
        cut = opening.split()[: rng.randint(MIN_WORDS, MAX_WORDS)]
        return simulate(" ".join(cut), collection, rng, NOISE if noise else 0.0) or None
    if style == "other":
        opening_key = section.key if section is not None else None
        for key in OTHER_KEYS:
            other = pm.section(key)
            if other is not None and key != opening_key and other.text.strip():
                cut = opening_text(pm, other).split()[: rng.randint(MIN_WORDS, MAX_WORDS)]
                return " ".join(cut) or None
        return None
    raise ValueError(f"style {style!r} is not one of {', '.join(STYLES)}")
