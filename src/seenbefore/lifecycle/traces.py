"""Finding a postmortem's text elsewhere: the sentences long enough that finding one means it
was quoted, whether a value names or quotes the document, and purging the copies kept outside
the store (the notify outbox, the sampled investigation log)."""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from seenbefore.storage.outbox import OutboxRows
from seenbefore.types import Postmortem

MIN_QUOTE_WORDS = 6  # a sentence this long found verbatim elsewhere is a quotation


def quotations(pm: Postmortem) -> list[str]:
    """Sentences of the document long enough that finding one elsewhere means it was quoted."""
    found: list[str] = []
    if len(pm.title.split()) >= 3:
        found.append(_norm(pm.title))
    for text in [pm.body, *(s.text for s in pm.sections)]:
        for sentence in re.split(r"(?<=[.!?])\s+|\n+", text):
            clean = _norm(re.sub(r"^[-*+>#|\s]+|^\d+[.)]\s+", "", sentence))
            if len(clean.split()) >= MIN_QUOTE_WORDS:
                found.append(clean)
    return sorted(set(found), key=len, reverse=True)


def _norm(text: str) -> str:
    return " ".join(text.split())


def _id_pattern(doc_id: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w.-]){re.escape(doc_id)}(?![\w-]|\.\w)")


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield str(k)
            yield from _strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _strings(v)


def mentions(value: Any, doc_id: str, quotes: Sequence[str]) -> bool:
    """True if any string in ``value`` names ``doc_id`` or quotes one of ``quotes``."""
    pattern = _id_pattern(doc_id)
    for text in _strings(value):
        if pattern.search(text):
            return True
        flat = _norm(text)
        if any(q in flat for q in quotes):
            return True
    return False


def purge_outbox(outbox: OutboxRows, doc_id: str, quotes: Sequence[str]) -> int:
    """Delete notify outbox rows (the file's, or the database's) whose message names or quotes
    the document."""
    return outbox.purge(lambda message: mentions(_loads(message), doc_id, quotes))


def purge_jsonl(path: Path, doc_id: str, quotes: Sequence[str]) -> int:
    """Rewrite a JSONL log without the lines that name or quote the document."""
    if not path.is_file():
        return 0
    kept, dropped = [], 0
    with path.open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if mentions(_loads(line), doc_id, quotes):
                dropped += 1
            else:
                kept.append(line)
    if dropped:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.writelines(kept)
        os.replace(tmp, path)
    return dropped


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return text
