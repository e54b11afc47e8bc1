"""Split a postmortem into chunks that fit the dense model's input window.

all-MiniLM-L6-v2 reads 256 word pieces (about 180 English words). Chunks follow sections; long
sections split at sentence boundaries with overlap; Markdown tables split by row with the header
repeated in every chunk. A front-matter chunk (title, type, services, tags, signals) comes first.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from seenbefore.types import Chunk, Postmortem, Section

_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
_TABLE_SEPARATOR = re.compile(r"^\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")


def chunk_postmortem(
    pm: Postmortem, *, max_words: int = 160, overlap_words: int = 30
) -> list[Chunk]:
    """All chunks of a postmortem, in order. Every chunk has at most ``max_words`` words
    (a table header longer than that is the only exception, kept whole with one row)."""
    if max_words < 10:
        raise ValueError(f"max_words is {max_words}, expected at least 10")
    chunks: list[Chunk] = []
    header = metadata_text(pm)
    chunks.append(Chunk(pm.id, "metadata", "Metadata", -1, 0, header))
    for section in pm.sections:
        for text in split_section(section, max_words=max_words, overlap_words=overlap_words):
            chunks.append(
                Chunk(pm.id, section.key, section.heading, section.position, len(chunks), text)
            )
    return chunks


def metadata_text(pm: Postmortem) -> str:
    parts = [pm.title]
    if pm.type:
        parts.append(f"Incident type: {pm.type.replace('-', ' ')}.")
    if pm.services:
        parts.append("Services: " + ", ".join(pm.services) + ".")
    if pm.tags:
        parts.append("Tags: " + ", ".join(pm.tags) + ".")
    if pm.signals:
        parts.append("Signals: " + ", ".join(s.replace("_", " ") for s in pm.signals) + ".")
    words = " ".join(parts).split()
    return " ".join(words[:400])


def split_section(section: Section, *, max_words: int, overlap_words: int) -> list[str]:
    out: list[str] = []
    for kind, block in _blocks(section.text):
        if kind == "table":
            out.extend(_table_chunks(block, max_words))
        else:
            out.extend(_prose_chunks(block, max_words, overlap_words))
    return out


def _blocks(text: str) -> Iterator[tuple[str, list[str]]]:
    """Yield ('table', lines) and ('prose', lines) blocks in order."""
    current: list[str] = []
    kind = "prose"
    for line in text.splitlines():
        line_kind = "table" if line.strip().startswith("|") else "prose"
        if line_kind != kind and current:
            yield kind, current
            current = []
        kind = line_kind
        current.append(line)
    if current:
        yield kind, current


def _table_chunks(lines: list[str], max_words: int) -> list[str]:
    rows = [ln.strip() for ln in lines if ln.strip()]
    header: list[str] = []
    if len(rows) >= 2 and _TABLE_SEPARATOR.match(rows[1]):
        header, rows = rows[:2], rows[2:]
    header_words = sum(len(r.split()) for r in header)
    chunks: list[str] = []
    current: list[str] = []
    words = header_words
    for row in rows:
        row_words = len(row.split())
        if current and words + row_words > max_words:
            chunks.append("\n".join(header + current))
            current, words = [], header_words
        if header_words + row_words > max_words:  # one enormous row: split its words
            for piece in _word_windows(row.split(), max(1, max_words - header_words), 0):
                chunks.append("\n".join([*header, piece]))
            continue
        current.append(row)
        words += row_words
    if current or (header and not chunks):
        chunks.append("\n".join(header + current))
    return chunks


def _units(lines: list[str]) -> list[str]:
    """Sentences, with each list item or line break starting a new unit."""
    units: list[str] = []
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph:
            joined = " ".join(paragraph)
            units.extend(s.strip() for s in _SENTENCE_END.split(joined) if s.strip())
            paragraph.clear()

    for line in lines:
        stripped = line.strip()
        if not stripped:
            flush()
        elif re.match(r"^([-*+]|\d+[.)])\s+", stripped):
            flush()
            paragraph.append(stripped)
        else:
            paragraph.append(stripped)
    flush()
    return units


def _prose_chunks(lines: list[str], max_words: int, overlap_words: int) -> list[str]:
    chunks: list[list[str]] = []
    current: list[str] = []
    count = 0
    for unit in _units(lines):
        n = len(unit.split())
        if n > max_words:  # a run-on sentence: hard split by words
            if current:
                chunks.append(current)
            for piece in _word_windows(unit.split(), max_words, overlap_words):
                chunks.append([piece])
            current, count = [], 0
            continue
        if current and count + n > max_words:
            chunks.append(current)
            current = _overlap_tail(current, overlap_words, max_words - n)
            count = sum(len(u.split()) for u in current)
        current.append(unit)
        count += n
    if current:
        chunks.append(current)
    return [" ".join(c) for c in chunks]


def _overlap_tail(units: list[str], overlap_words: int, room: int) -> list[str]:
    """The last whole sentences of ``units`` totalling at most ``min(overlap_words, room)`` words."""
    budget = min(overlap_words, room)
    tail: list[str] = []
    words = 0
    for unit in reversed(units):
        n = len(unit.split())
        if words + n > budget:
            break
        tail.insert(0, unit)
        words += n
    return tail


def _word_windows(words: list[str], size: int, overlap: int) -> Iterator[str]:
    step = max(1, size - min(overlap, size - 1))
    for start in range(0, len(words), step):
        yield " ".join(words[start : start + size])
        if start + size >= len(words):
            break
