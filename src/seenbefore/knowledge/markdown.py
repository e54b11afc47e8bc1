"""Parse a postmortem Markdown file: YAML front matter plus body sections split by heading."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from seenbefore.knowledge.sections import canonical_section
from seenbefore.parsing import (
    FRONT_MATTER_MAX_DEPTH,
    FRONT_MATTER_MAX_NODES,
    YAMLProblem,
    load_yaml,
)
from seenbefore.types import Section

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(?:(.*?)\r?\n)?---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_OPENING = re.compile(r"\A---[ \t]*\r?\n")
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")
_FENCE = re.compile(r"^(```|~~~)")


@dataclass(frozen=True)
class ParsedMarkdown:
    """Front matter as a plain mapping, the body text, and the body's sections."""

    front_matter: dict[str, Any]
    body: str
    sections: tuple[Section, ...]


NO_FRONT_MATTER = "no YAML front matter"


class FrontMatterError(ValueError):
    """The file has no front matter, or it is not a YAML mapping."""


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    text = text.lstrip("\ufeff")
    match = _FRONT_MATTER.match(text)
    if not match:
        if _OPENING.match(text):
            raise FrontMatterError(
                "front matter starts with '---' but has no closing '---' line; add a line "
                "with only '---' after the last field"
            )
        raise FrontMatterError(
            f"{NO_FRONT_MATTER}; the file must start with a '---' line, the fields, and '---'"
        )
    try:
        data = load_yaml(
            match.group(1) or "",
            aliases=False,
            max_nodes=FRONT_MATTER_MAX_NODES,
            max_depth=FRONT_MATTER_MAX_DEPTH,
            first_line=2,
        )
    except YAMLProblem as exc:
        raise FrontMatterError(f"front matter: {exc}") from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise FrontMatterError(
            f"front matter is a {type(data).__name__}, expected a mapping of fields "
            "('key: value' lines)"
        )
    return data, text[match.end() :]


def split_sections(body: str) -> tuple[Section, ...]:
    """Split on the shallowest heading level used in the body (ignoring the document title).

    Text before the first heading becomes a ``summary`` section. Deeper headings stay inside the
    section they belong to. Headings inside fenced code blocks are not headings.
    """
    lines = body.splitlines()
    levels = _heading_levels(lines)
    if not levels:
        text = body.strip()
        return (Section("summary", "Summary", text, 0),) if text else ()
    # A single level-1 heading at the top is the document title, not a section.
    split_level = min(levels.values())
    if split_level == 1 and sum(1 for lvl in levels.values() if lvl == 1) == 1:
        deeper = [lvl for lvl in levels.values() if lvl > 1]
        split_level = min(deeper) if deeper else 1
    sections: list[Section] = []
    heading: str | None = None
    buffer: list[str] = []

    def flush() -> None:
        text = "\n".join(buffer).strip()
        if heading is None:
            if text:
                sections.append(Section("summary", "Summary", text, len(sections)))
        elif text:
            sections.append(Section(canonical_section(heading), heading, text, len(sections)))

    for index, line in enumerate(lines):
        level = levels.get(index)
        if level is not None and level <= split_level:
            flush()
            heading = _HEADING.match(line).group(2).strip()  # type: ignore[union-attr]
            buffer = []
            if level < split_level:  # a title above the split level: keep it out of the text
                heading = None
            continue
        buffer.append(line)
    flush()
    return tuple(sections)


def first_heading(text: str) -> str | None:
    """The text of ``text``'s first Markdown heading (one inside a code fence is none)."""
    lines = text.splitlines()
    levels = _heading_levels(lines)
    if not levels:
        return None
    return _HEADING.match(lines[min(levels)]).group(2).strip()  # type: ignore[union-attr]


def _heading_levels(lines: list[str]) -> dict[int, int]:
    levels: dict[int, int] = {}
    in_fence = False
    for index, line in enumerate(lines):
        if _FENCE.match(line.strip()):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        match = _HEADING.match(line)
        if match:
            levels[index] = len(match.group(1))
    return levels


def parse_markdown(text: str) -> ParsedMarkdown:
    front, body = split_front_matter(text)
    return ParsedMarkdown(front, body.strip(), split_sections(body))
