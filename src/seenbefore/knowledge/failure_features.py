"""What the failure-mode classifier reads: a postmortem's words as weighted features.

Features are lightly stemmed words (stopwords and most numbers dropped; HTTP status codes kept)
and the pairs of adjacent ones ("connection pool" is one feature beside "connection" and
"pool"). Pure Python, no model files: the fit script and the classifier share this, so they can
never read text differently.

From a postmortem it reads the title (twice), tags and signals, and the summary, detection and
root-cause sections (the root cause twice): where the failure mode is named. A body without a
summary or a root cause is read whole. Timelines and action items are left out: they are mostly
times, names and chores, the same in every kind of incident.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable

from seenbefore.types import Postmortem

READ_SECTIONS = ("summary", "detection", "root_cause")
TWICE = ("root_cause",)
_TOKEN = re.compile(r"[a-z0-9]+")
_HTTP_CODE = re.compile(r"^[45]\d\d$")
STOPWORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers him his how i if in into is it its itself just
    me more most my no nor not now of off on once only or other our ours out over own same she
    should so some such than that the their theirs them then there these they this those through
    to too under until up very was we were what when where which while who whom why will with
    would you your yours us via per within without across around upon onto""".split()  # noqa: SIM905
)


def stem(word: str) -> str:
    """A light suffix stripper: plurals, -ing, -ed, -ation, a final -e or -y, so that expired,
    expire and expires meet (``expir``). Words of four letters or fewer are kept whole."""
    if len(word) <= 4 or word.isdigit():
        return word
    for suffix, replacement in (
        ("sses", "ss"),
        ("ies", "y"),
        ("ied", "y"),
        ("ations", "at"),
        ("ation", "at"),
        ("ings", ""),
        ("ing", ""),
        ("ers", "er"),
        ("ed", ""),
        ("es", "e"),
        ("s", ""),
    ):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "s" and word.endswith(("ss", "us", "is")):
                break
            word = word[: -len(suffix)] + replacement
            break
    if len(word) > 4 and word[-1] in "ey":
        word = word[:-1]
    return word


def words(text: str) -> list[str]:
    """``text``'s content words, stemmed, in order (a dropped word leaves no gap)."""
    text = text.lower().replace("x.509", "x509").replace("_", " ")
    out = []
    for token in _TOKEN.findall(text):
        if token in STOPWORDS or len(token) < 2:
            continue
        if token.isdigit() and not _HTTP_CODE.match(token):
            continue
        out.append(stem(token))
    return out


Features = dict[str, float]  # feature -> weighted count


def _add(into: Features, more: Features) -> Features:
    for key, n in more.items():
        into[key] = into.get(key, 0.0) + n
    return into


def features(text: str, weight: float = 1.0) -> Features:
    """Each word and each adjacent pair of words in ``text``, counted ``weight`` times."""
    seq = words(text)
    counts: Features = {}
    for key in [*seq, *(f"{a} {b}" for a, b in itertools.pairwise(seq))]:
        counts[key] = counts.get(key, 0.0) + weight
    return counts


def phrase_features(phrases: Iterable[str], weight: float = 1.0) -> Features:
    """Features of separate phrases (no word pair across two phrases)."""
    counts: Features = {}
    for phrase in phrases:
        _add(counts, features(phrase, weight))
    return counts


def text_features(title: str, text: str) -> Features:
    """A title (counted twice) and a body of text."""
    return _add(features(title, 2.0), features(text))


def postmortem_text(pm: Postmortem) -> str:
    """The part of a postmortem the classifier reads (its title aside; see the module doc)."""
    parts = [" ".join(pm.tags), " ".join(pm.signals)]
    keys = {s.key for s in pm.sections}
    if keys & {"summary", "root_cause"}:
        for section in pm.sections:
            if section.key in READ_SECTIONS:
                parts.extend([section.text] * (2 if section.key in TWICE else 1))
    else:
        parts.append(pm.body)
    return "\n".join(p for p in parts if p)
