"""Import postmortems from a JSONL export (one JSON object per line) with a field mapping.

A mapping is ``target=source`` pairs, comma-separated: ``--map title=summary,date=opened_at``.
``source`` is a field name, a template with ``{field}`` placeholders (``title={company}: {summary}``)
or a quoted literal (``access_tier='restricted'``). Targets are the front-matter fields (id, title,
date, services, severity, status, supersedes, access_tier, type, tags, signals), the section keys
(summary, impact, detection, timeline, root_cause, resolution, action_items, lessons), ``body``
(Markdown whose headings become sections) or any other name, which is kept as extra metadata.

A template takes plain field names in braces only, ``{{`` and ``}}`` for a literal brace. A format
spec, conversion, attribute or index (``{summary:>{w}}``, ``{a!r}``, ``{a.b}``, ``{a[0]}``) is
refused when the mapping is parsed, before a record is read, so nothing in a record can choose a
width or reach into a value; a field's value is written as it is (``str``), never formatted.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, BinaryIO

from seenbefore.errors import MappingError, PostmortemInvalid
from seenbefore.knowledge.validate import KNOWN_FIELDS, postmortem_from_fields
from seenbefore.types import Postmortem

SECTION_HEADINGS = {
    "summary": "Summary",
    "impact": "Impact",
    "detection": "Detection",
    "timeline": "Timeline",
    "root_cause": "Root cause",
    "resolution": "Resolution",
    "action_items": "Action items",
    "lessons": "Lessons learned",
}

PRESETS: dict[str, str] = {
    # github chxmq/graphrca data/real_incidents
    "graphrca": (
        "id=id,title={company}: {subcategory} incident,date=date,severity=severity,type=category,"
        "tags=subcategory,summary=postmortem,root_cause=root_cause,url=url,company=company"
    ),
    # github danluu/post-mortems README entries
    "danluu": (
        "id=id,title={company}: {summary},type=category,tags=company,summary=summary,url=url,"
        "company=company"
    ),
}


@dataclass(frozen=True)
class FieldMapping:
    """Parsed ``target=source`` pairs; every template among the sources is checked on
    construction (:func:`template_parts`), so a mapping that exists fills only plain fields."""

    pairs: tuple[tuple[str, str], ...]

    def __post_init__(self) -> None:
        for target, source in self.pairs:
            if _is_template(source):
                template_parts(source, f"{target}={source}")

    @classmethod
    def parse(cls, spec: str) -> FieldMapping:
        spec = PRESETS.get(spec.strip(), spec)
        pairs: list[tuple[str, str]] = []
        for part in re.split(r",(?=\s*[A-Za-z_][\w.]*\s*=)", spec):
            if not part.strip():
                continue
            if "=" not in part:
                raise MappingError(
                    f"mapping entry {part.strip()!r} has no '='; write target=source, e.g. "
                    f"title=summary (presets: {', '.join(PRESETS)})"
                )
            target, source = (x.strip() for x in part.split("=", 1))
            if not re.match(r"^[A-Za-z_][\w.]*$", target) or not source:
                raise MappingError(f"mapping entry {part.strip()!r}: expected target=source")
            pairs.append((target, source))
        targets = [t for t, _ in pairs]
        if len(set(targets)) != len(targets):
            raise MappingError(f"mapping {spec!r} names a target twice")
        if "id" not in targets or "title" not in targets:
            raise MappingError(f"mapping {spec!r} must map both 'id' and 'title'")
        return cls(tuple(pairs))

    def merged(self, overrides: FieldMapping | None) -> FieldMapping:
        if overrides is None:
            return self
        replaced = dict(self.pairs) | dict(overrides.pairs)
        return FieldMapping(tuple(replaced.items()))


def _is_literal(source: str) -> bool:
    return len(source) >= 2 and source[0] == source[-1] and source[0] in "'\""


def _is_template(source: str) -> bool:
    return "{" in source and not _is_literal(source)


PLAIN_RULE = (
    "templates take plain field names in braces, with no format spec (':'), conversion ('!'), "
    "attribute ('.') or index ('['), so no record can change how a value is written"
)


@lru_cache(maxsize=256)
def template_parts(source: str, entry: str = "") -> tuple[tuple[str, str | None], ...]:
    """``source`` as (literal text, field name or None) pairs; MappingError for anything but
    plain ``{field}`` placeholders and doubled braces. ``entry`` names the mapping entry."""
    where = f"mapping entry {entry or source}: "
    try:
        parsed = list(string.Formatter().parse(source))
    except ValueError as exc:
        raise MappingError(
            f"{where}template {source!r} cannot be filled (ValueError: {exc}); write plain field "
            "names in braces, e.g. {company}: {summary}, and double a literal brace ({{ or }})"
        ) from None
    parts: list[tuple[str, str | None]] = []
    for literal, name, spec, conversion in parsed:
        if name is None:  # text after the last placeholder
            parts.append((literal, None))
            continue
        problem, fix = _placeholder_problem(name, spec or "", conversion)
        if problem:
            shown = (
                f"{{{name}{'!' + conversion if conversion else ''}{':' + spec if spec else ''}}}"
            )
            raise MappingError(
                f"{where}placeholder {shown} {problem}; {PLAIN_RULE}; {fix}, and double a "
                "literal brace ({{ or }})"
            )
        parts.append((literal, name))
    return tuple(parts)


def _placeholder_problem(name: str, spec: str, conversion: str | None) -> tuple[str, str]:
    """What is wrong with one placeholder ('' when it is a plain field), and the fix."""
    field = re.split(r"[.\[]", name, maxsplit=1)[0]
    fix = f"write {{{field.strip()}}}" if field.strip() else "name a field, e.g. {summary}"
    if conversion:
        return f"has a conversion ('!{conversion}')", fix
    if spec:
        return f"has a format spec (':{spec}')", fix
    if field != name:
        kind = "an attribute" if name[len(field)] == "." else "an index"
        return f"has {kind} ('{name[len(field) :]}')", fix
    if not name.strip():
        return "has no field name", fix
    if name.isdigit():
        return "is a position, not a field name", "name a field, e.g. {summary}"
    return "", ""


def resolve(source: str, record: Mapping[str, Any]) -> Any:
    """The value a mapping source yields for one record (None when the field is absent). A
    template's fields are written as they are (``str``, None as empty), never formatted."""
    if _is_literal(source):
        return source[1:-1]
    if "{" in source:
        parts = template_parts(source)
        missing = [n for _, n in parts if n is not None and n not in record]
        if missing:
            raise MappingError(
                f"template {source!r} uses field(s) {missing} that the record does not "
                f"have; available: {sorted(record)}"
            )
        return "".join(
            text + ("" if name is None or record[name] is None else str(record[name]))
            for text, name in parts
        )
    return record.get(source)


def record_to_postmortem(
    origin: str, record: Mapping[str, Any], mapping: FieldMapping
) -> Postmortem:
    fields: dict[str, Any] = {}
    sections: list[tuple[str, str, str]] = []
    body_markdown = ""
    for target, source in mapping.pairs:
        value = resolve(source, record)
        if target == "body":
            body_markdown = "" if value is None else str(value)
        elif target in SECTION_HEADINGS:
            if value not in (None, ""):
                sections.append((target, SECTION_HEADINGS[target], str(value)))
        elif target in KNOWN_FIELDS or value not in (None, ""):
            fields[target] = value
    parts = [body_markdown.strip()] if body_markdown.strip() else []
    parts += [f"## {heading}\n\n{text.strip()}" for _, heading, text in sections]
    return postmortem_from_fields(origin, fields, "\n\n".join(parts))


def read_jsonl(
    path: Path, mapping: FieldMapping, *, max_bytes: int | None = None
) -> Iterator[Postmortem | PostmortemInvalid]:
    """Each line as a Postmortem, or the PostmortemInvalid that explains why it is not one.
    A mapping that does not fit the file at all raises MappingError on the first record.
    A line over ``max_bytes`` (the Markdown file limit) is refused as an oversized file is."""
    with path.open("rb") as fh:
        for number, raw, size in _lines(fh, max_bytes):
            origin = f"{path}#L{number}"
            if raw is None or (max_bytes is not None and size > max_bytes):
                yield PostmortemInvalid(
                    origin,
                    f"line {number} is {size} bytes, over the limit of {max_bytes}; "
                    "shorten the record or raise SEENBEFORE_MAX_FILE_BYTES",
                )
                continue
            if not raw.strip():
                continue
            try:
                record = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                yield PostmortemInvalid(origin, f"line {number} is not valid UTF-8 JSON ({exc})")
                continue
            except RecursionError:
                yield PostmortemInvalid(origin, f"line {number} nests JSON too deeply to read")
                continue
            if not isinstance(record, dict):
                yield PostmortemInvalid(
                    origin, f"line {number} is a JSON {type(record).__name__}, expected an object"
                )
                continue
            if number == 1:
                _check_mapping_fits(path, mapping, record)
            try:
                yield record_to_postmortem(origin, record, mapping)
            except PostmortemInvalid as exc:
                yield exc


def _lines(fh: BinaryIO, limit: int | None) -> Iterator[tuple[int, bytes | None, int]]:
    """(number, line, size) for each line; a line longer than ``limit`` is skipped a chunk at a
    time (its bytes None), so one endless line never sits in memory whole."""
    number = 0
    while raw := fh.readline(-1 if limit is None else limit + 1):
        number += 1
        if limit is None or len(raw) <= limit or raw.endswith(b"\n"):
            yield number, raw, len(raw)
            continue
        size = len(raw)
        while more := fh.readline(1 << 16):
            size += len(more)
            if more.endswith(b"\n"):
                break
        yield number, None, size


def _check_mapping_fits(path: Path, mapping: FieldMapping, record: Mapping[str, Any]) -> None:
    for target, source in mapping.pairs:
        if "{" in source or source[:1] in "'\"":
            resolve(source, record)  # raises MappingError with the available fields
        elif source not in record and target in {"id", "title"}:
            raise MappingError(
                f"{path}: mapping {target}={source} names field {source!r}, which the first "
                f"record does not have; available fields: {sorted(record)}"
            )
