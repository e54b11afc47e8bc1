"""Tokenising user text for keyword search. User text is never passed on as query syntax."""

from __future__ import annotations

import re

_WORD = re.compile(r"[^\W_]+", re.UNICODE)

# Short English stop list: words that match nearly every chunk and carry no incident meaning.
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "been",
        "but",
        "by",
        "for",
        "from",
        "had",
        "has",
        "have",
        "he",
        "her",
        "his",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "our",
        "she",
        "so",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "will",
        "with",
        "you",
        "your",
        "not",
        "no",
    ]
)

MAX_QUERY_TERMS = 64


def tokenize(text: str) -> list[str]:
    """Lowercased word tokens, splitting on punctuation and underscores (as FTS5 unicode61 does)."""
    return _WORD.findall(text.lower())


def query_terms(text: str, *, max_terms: int = MAX_QUERY_TERMS) -> list[str]:
    """Distinct content terms of a query, in first-seen order, at most ``max_terms``."""
    terms = [t for t in tokenize(text) if t not in STOPWORDS]
    return list(dict.fromkeys(terms))[:max_terms]
