"""Normalise and validate postmortems. Every rule raises PostmortemInvalid with a reason that
says what was received, the rule, and the fix; the reason is what quarantine records."""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from seenbefore.errors import PostmortemInvalid
from seenbefore.knowledge.failure_taxonomy import NO_TYPE
from seenbefore.knowledge.markdown import (
    NO_FRONT_MATTER,
    FrontMatterError,
    first_heading,
    parse_markdown,
    split_sections,
)
from seenbefore.types import DEFAULT_TIER, Postmortem, Section, Status

ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
SLUG_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
KNOWN_FIELDS = {
    "id",
    "title",
    "date",
    "services",
    "severity",
    "status",
    "supersedes",
    "access_tier",
    "type",
    "tags",
    "signals",
}
STATUSES: tuple[Status, ...] = ("current", "superseded")
MAX_TITLE_CHARS = 200


def content_hash(text: str) -> str:
    """Hash of the document text with line endings normalised."""
    normalised = text.replace("\r\n", "\n").replace("\r", "\n").strip()
    return hashlib.sha256(normalised.encode("utf-8")).hexdigest()


def decode(source: str, raw: bytes, *, max_bytes: int, size: int | None = None) -> str:
    """``size``: the file's size when ``raw`` is only its first bytes (a reader stops early)."""
    if len(raw) > max_bytes:
        raise PostmortemInvalid(
            source,
            f"file is {max(size or 0, len(raw))} bytes, over the limit of {max_bytes}; split it "
            "or raise SEENBEFORE_MAX_FILE_BYTES",
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PostmortemInvalid(
            source,
            f"bytes at offset {exc.start} are not valid UTF-8; re-save the file as UTF-8",
        ) from exc


def postmortem_from_markdown(source: str, text: str) -> Postmortem:
    try:
        parsed = parse_markdown(text)
    except FrontMatterError as exc:
        reason = str(exc)
        if reason.startswith(NO_FRONT_MATTER):
            reason += f"; e.g. start it with {_suggested_front_matter(source, text)}"
        raise PostmortemInvalid(source, reason) from exc
    return build_postmortem(
        source, parsed.front_matter, parsed.body, parsed.sections, content_hash(text)
    )


def _suggested_front_matter(source: str, text: str) -> str:
    """The least front matter ``text`` needs, on one line ('/' between its lines): an id from
    the file's name, the title from its first heading, the date to fill in."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(source).stem).strip("-.")
    title = " ".join((first_heading(text) or "what happened, in a line").split())[:120]
    return (
        f"'--- / id: {stem or 'INC-1'} / title: {title} / date: YYYY-MM-DD / ---' (one per "
        "line; docs/postmortem-format.md lists the optional fields)"
    )


def postmortem_from_fields(source: str, fields: Mapping[str, Any], body: str) -> Postmortem:
    """Build from already-mapped fields and a Markdown body, as the JSONL importer does."""
    digest = content_hash(repr(sorted((k, str(v)) for k, v in fields.items())) + body)
    return build_postmortem(source, dict(fields), body, split_sections(body), digest)


def build_postmortem(
    source: str,
    front: dict[str, Any],
    body: str,
    sections: tuple[Section, ...],
    digest: str,
) -> Postmortem:
    doc_id = _required_text(source, front, "id")
    if not ID_PATTERN.match(doc_id) or ".." in doc_id:
        raise PostmortemInvalid(
            source,
            f"front matter field 'id' is {doc_id!r}: ids may use letters, digits, '.', '_' and '-' "
            "only (no '/', '\\', spaces or '..'), at most 128 characters; rename the id",
        )
    title = " ".join(_required_text(source, front, "title").split())
    if len(title) > MAX_TITLE_CHARS:
        title = title[: MAX_TITLE_CHARS - 1].rsplit(" ", 1)[0] + "…"
    if not body.strip() or not any(s.text.strip() for s in sections):
        raise PostmortemInvalid(
            source, "body is empty: write at least a summary below the front matter"
        )
    status = str(front.get("status") or "current").strip().lower()
    if status not in STATUSES:
        raise PostmortemInvalid(
            source,
            f"front matter field 'status' is {front.get('status')!r}, expected one of "
            f"{', '.join(STATUSES)}",
        )
    tier = str(front.get("access_tier") or DEFAULT_TIER).strip().lower()
    if not SLUG_PATTERN.match(tier):
        raise PostmortemInvalid(
            source,
            f"front matter field 'access_tier' is {front.get('access_tier')!r}, expected a "
            "lowercase slug such as general or restricted",
        )
    supersedes = front.get("supersedes")
    supersedes_id = str(supersedes).strip() if supersedes not in (None, "") else None
    if supersedes_id is not None and not ID_PATTERN.match(supersedes_id):
        raise PostmortemInvalid(
            source, f"front matter field 'supersedes' is {supersedes!r}, which is not a valid id"
        )
    if supersedes_id == doc_id:
        raise PostmortemInvalid(source, f"document {doc_id} says it supersedes itself")
    extra = {str(k): _plain(source, str(k), v) for k, v in front.items() if k not in KNOWN_FIELDS}
    kind = _slug(str(front.get("type") or ""))
    if kind in NO_TYPE:  # "Uncategorized" names no failure mode: keep the words, infer the mode
        extra["type_as_written"] = str(front["type"])
        kind = ""
    return Postmortem(
        id=doc_id,
        title=title,
        date=_date(source, front.get("date")),
        body=body.strip(),
        sections=sections,
        services=_str_list(source, front, "services"),
        severity=str(front.get("severity") or "").strip(),
        status=status,  # checked against STATUSES above
        supersedes=supersedes_id,
        access_tier=tier,
        type=kind,
        tags=_str_list(source, front, "tags"),
        signals=_str_list(source, front, "signals"),
        extra=extra,
        source=source,
        content_hash=digest,
    )


def _required_text(source: str, front: Mapping[str, Any], name: str) -> str:
    value = front.get(name)
    if value is None or not str(value).strip():
        raise PostmortemInvalid(
            source, f"front matter field '{name}' is missing or empty; add '{name}: ...'"
        )
    return str(value).strip()


UNKNOWN_DATES = {"", "unknown", "n/a", "na", "none", "null", "tbd", "?"}


def _date(source: str, value: Any) -> dt.date | None:
    """A date, or None when absent or explicitly unknown ('Unknown', 'n/a', ...)."""
    if value is None or (isinstance(value, str) and value.strip().lower() in UNKNOWN_DATES):
        return None
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    text = str(value).strip()
    if re.match(r"^\d{4}-\d{2}-\d{2}(?:$|[T ])", text):
        try:
            return dt.date.fromisoformat(text[:10])
        except ValueError:
            pass
    raise PostmortemInvalid(
        source, f"front matter field 'date' is {text!r}, expected YYYY-MM-DD (e.g. 2024-03-14)"
    ) from None


def _str_list(source: str, front: Mapping[str, Any], name: str) -> tuple[str, ...]:
    value = front.get(name)
    if value is None:
        return ()
    if isinstance(value, str):
        items = [v.strip() for v in value.split(",")]
    elif isinstance(value, list | tuple):
        items = [str(v).strip() for v in value if v is not None]
    else:
        raise PostmortemInvalid(
            source,
            f"front matter field '{name}' is {value!r}, expected a list such as [a, b]",
        )
    return tuple(dict.fromkeys(i for i in items if i))


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.strip().lower()).strip("-")


def _plain(source: str, name: str, value: Any) -> Any:
    """Make YAML values JSON-friendly (dates become ISO strings, keys text); a NaN or infinity,
    which JSON (and so the API and PostgreSQL) cannot carry, is refused."""
    if isinstance(value, dt.date | dt.datetime):
        return value.isoformat()
    if isinstance(value, float) and not math.isfinite(value):
        raise PostmortemInvalid(
            source,
            f"front matter field '{name}' holds {value!r}, which JSON cannot carry; quote it "
            "('.nan') or write a number",
        )
    if isinstance(value, list | tuple):
        return [_plain(source, name, v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(source, name, v) for k, v in value.items()}
    return value
