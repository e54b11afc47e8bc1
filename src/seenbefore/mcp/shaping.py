"""Agent-sized answers: search results and postmortems shaped into the models of
``mcp/outputs.py``, held under a byte cap, and rendered as a few lines of text.

- A hit's ``similarity`` is its fused score over the top result's (0-1); ``matched_by`` names only
  the retrievers that ranked it within the k returned; its snippet comes from the matched
  section, or from detection (then root cause, then summary) when the match was the metadata
  chunk (title and tags), and its root-cause and resolution excerpts are the openings of those
  sections, at most ``EXCERPT_CHARS`` each.
- ``MAX_RESPONSE_BYTES`` caps a whole tool result, its JSON and its text reading together:
  excerpts are shortened, then dropped, then trailing hits (or sections) go, and ``truncated``
  says what was cut.
- :func:`render` is the text content beside it: a line per hit (three, with cause and fix, for
  the first ``TEXT_DETAIL_HITS``), never the JSON again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from seenbefore.knowledge.failure_modes import FailureMode, failure_mode
from seenbefore.mcp import outputs as out
from seenbefore.service.models import CandidateOut, FailureModeOut, PostmortemOut, SearchOut
from seenbefore.types import StoredDocument

MAX_RESPONSE_BYTES = 12_000
EXCERPT_CHARS = 300
SNIPPET_CHARS = 200
ENOUGH_CHARS = 80  # an excerpt ends at the first sentence end past this many characters
SHORT_CHARS = 120  # excerpts once an answer is over the cap
TEXT_CHARS = 90  # root cause and fix in the text reading
TEXT_DETAIL_HITS = 5  # hits the text reading gives a cause and a fix (the JSON: every hit)
SNIPPET_FALLBACK = ("detection", "root_cause", "summary", "impact")
RESOLUTION_KEYS = ("resolution", "action_items")
RETRIEVERS = ("sparse", "dense", "signals")

Hits = TypeVar("Hits", out.SimilarIncidents, out.Related)


def size(model: BaseModel) -> int:
    """The bytes of a model's JSON as the SDK sends it (compact, UTF-8, not ASCII-escaped)."""
    data = model.model_dump(mode="json")
    return len(json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def response_size(model: BaseModel) -> int:
    """The bytes of a whole tool result as the SDK sends it: the structured JSON and its text
    reading (:func:`render`) with their envelope."""
    whole = {
        "content": [{"type": "text", "text": render(model)}],
        "structuredContent": model.model_dump(mode="json"),
        "isError": False,
    }
    return len(json.dumps(whole, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def excerpt(text: str | None, limit: int = EXCERPT_CHARS, enough: int = 0) -> str | None:
    """The opening of a section as plain prose: bullets, tables and emphasis removed, cut at a
    sentence (else a word) boundary to at most ``limit`` characters — with ``enough``, at the
    first sentence end past that many characters."""
    if not text:
        return None
    lines = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("|") or line.startswith("#"):
            continue
        lines.append(re.sub(r"^(?:[-*+]|\d+[.)])\s+", "", line))
    # emphasis and code marks go; an underscore inside a word (sv_active, p99_latency) stays
    marks = re.sub(r"`+|\*\*|(?<!\w)[*_]+|[*_]+(?!\w)", "", " ".join(lines))
    plain = re.sub(r"\s+", " ", marks).strip()
    if not plain:
        return None
    if len(plain) <= limit:
        return plain
    if enough:  # the opening sentences, once they say enough (at least ``enough`` characters)
        ends = [m.end() for m in re.finditer(r"[.!?](?=\s)", plain)]
        stop = next((e for e in ends if e >= enough), None)
        if stop is not None and stop <= limit:
            return plain[:stop]
    window = plain[: limit - 1]
    stop = max(window.rfind(". "), window.rfind("; "))
    if stop >= limit // 2:
        return window[: stop + 1]
    return window.rsplit(" ", 1)[0].rstrip(",;:") + "…"


def link(base: str | None, kind: str, ident: str) -> str | None:
    return f"{base}/v1/{kind}/{ident}" if base else None


def _section(doc: StoredDocument | None, keys: Iterable[str]) -> tuple[str, str] | None:
    if doc is None:
        return None
    for key in keys:
        found = doc.postmortem.section(key)
        if found is not None and found.text.strip():
            return key, found.text
    return None


def mode_of(
    given: FailureModeOut | None, doc: StoredDocument | None = None
) -> out.FailureMode | None:
    """A result's inferred failure mode (from its search, else read from its document); None
    where the author wrote a type, which ``type`` already says."""
    if given is None and doc is not None:
        mode = failure_mode(doc.postmortem)
        given = FailureModeOut(**mode.as_dict())
    if given is None or not given.inferred:
        return None
    return out.FailureMode(**given.model_dump())


def hit(
    c: CandidateOut, top_score: float, k: int, doc: StoredDocument | None, base: str | None
) -> out.Hit:
    ranks = {name: r.rank for name, r in c.retrievers.items() if name in RETRIEVERS}
    snippet, where = c.snippet, c.section
    if c.section == "metadata":
        fallback = _section(doc, SNIPPET_FALLBACK)
        if fallback is not None:
            where, snippet = fallback
    root = _section(doc, ("root_cause",))
    fix = _section(doc, RESOLUTION_KEYS)
    return out.Hit(
        rank=c.rank,
        id=c.id,
        title=c.title,
        date=c.date,
        services=c.services,
        type=c.type,
        failure_mode=mode_of(c.failure_mode, doc),
        status=c.status,
        superseded_by=c.superseded_by,
        link=link(base, "postmortems", c.id),
        similarity=round(min(1.0, c.score / top_score), 3) if top_score > 0 else 0.0,
        matched_by=[n for n in RETRIEVERS if n in ranks and ranks[n] <= k],  # type: ignore[misc]
        ranks=ranks,
        snippet=excerpt(snippet, SNIPPET_CHARS, ENOUGH_CHARS) or "",
        snippet_section=where,
        root_cause=excerpt(root[1], EXCERPT_CHARS, ENOUGH_CHARS) if root else None,
        resolution=excerpt(fix[1], EXCERPT_CHARS, ENOUGH_CHARS) if fix else None,
    )


def hits(
    found: SearchOut, k: int, docs: Mapping[str, StoredDocument], base: str | None
) -> list[out.Hit]:
    top = found.results[0].score if found.results else 0.0
    return [hit(c, top, k, docs.get(c.id), base) for c in found.results]


def similar(
    found: SearchOut,
    k: int,
    docs: Mapping[str, StoredDocument],
    base: str | None,
    advisory: str,
) -> out.SimilarIncidents:
    shaped = hits(found, k, docs, base)
    thresholds = found.thresholds or {}
    answer = out.SimilarIncidents(
        verdict=found.verdict,
        p_precedent=found.p_precedent,
        thresholds=out.Thresholds(lo=thresholds["lo"], hi=thresholds["hi"])
        if "lo" in thresholds and "hi" in thresholds
        else None,
        another_failure=found.another_failure,
        results=shaped,
        returned=len(shaped),
        found=len(shaped),
        empty_because=found.empty_because,
        advisory=advisory,
    )
    return cap_hits(answer)


def cap_hits(answer: Hits, limit: int = MAX_RESPONSE_BYTES) -> Hits:
    """``answer`` (with ``results``: hits) under ``limit`` bytes, the ``truncated`` note
    included: excerpts shortened to ``SHORT_CHARS``, then root cause and resolution dropped,
    then the trailing hits."""
    if response_size(answer) <= limit:
        return answer
    total = len(answer.results)
    short = [
        h.model_copy(
            update={
                "snippet": excerpt(h.snippet, SHORT_CHARS) or "",
                "root_cause": excerpt(h.root_cause, SHORT_CHARS),
                "resolution": excerpt(h.resolution, SHORT_CHARS),
            }
        )
        for h in answer.results
    ]
    step = f"excerpts shortened to {SHORT_CHARS} characters"

    def cut(hits: list[out.Hit], what: str) -> Hits:
        dropped = total - len(hits)
        steps = [what] + (
            [f"{dropped} trailing results left out (ask for a lower k)"] * (dropped > 0)
        )
        note = f"over the {limit:,}-byte response cap: " + "; ".join(steps)
        return answer.model_copy(update={"results": hits, "returned": len(hits), "truncated": note})

    shaped = cut(short, step)
    if response_size(shaped) > limit:
        short = [h.model_copy(update={"root_cause": None, "resolution": None}) for h in short]
        step = "root-cause and resolution excerpts dropped (get_postmortem has them)"
        shaped = cut(short, step)
    while len(short) > 1 and response_size(shaped) > limit:
        short.pop()
        shaped = cut(short, step)
    return shaped


def sections_of(
    pm: PostmortemOut, wanted: Sequence[str] | None, base: str | None
) -> out.Postmortem:
    """A postmortem's metadata and the sections asked for (every one when ``wanted`` is empty
    or None), without the raw body, under the byte cap (trailing sections first)."""
    keys = [s.key for s in pm.sections]
    chosen = [s for s in pm.sections if not wanted or s.key in wanted]
    answer = out.Postmortem(
        id=pm.id,
        title=pm.title,
        date=pm.date,
        services=list(pm.services),
        severity=pm.severity,
        type=pm.type,
        failure_mode=mode_of(pm.failure_mode),
        status=pm.effective_status,
        link=link(base, "postmortems", pm.id),
        supersedes=pm.supersedes,
        superseded_by=pm.superseded_by,
        access_tier=pm.access_tier,
        tags=list(pm.tags),
        signals=list(pm.signals),
        section_keys=keys,
        sections=[out.Section(key=s.key, heading=s.heading, text=s.text) for s in chosen],
        absent_sections=[k for k in wanted or () if k not in keys],
    )
    if response_size(answer) <= MAX_RESPONSE_BYTES:
        return answer
    kept = list(answer.sections)
    dropped: list[str] = []
    while len(kept) > 1 and response_size(answer) > MAX_RESPONSE_BYTES:
        dropped.insert(0, kept.pop().key)
        answer = answer.model_copy(update={"sections": kept})
    if response_size(answer) > MAX_RESPONSE_BYTES:  # one section alone is over: cut its text
        over = response_size(answer) - MAX_RESPONSE_BYTES
        first = kept[0]
        cut = first.text.encode("utf-8")[: max(0, len(first.text.encode()) - over - 16)]
        text = cut.decode("utf-8", "ignore").rsplit(" ", 1)[0] + " …"
        answer = answer.model_copy(update={"sections": [first.model_copy(update={"text": text})]})
        dropped.insert(0, f"the end of {first.key}")
    note = (
        f"over the {MAX_RESPONSE_BYTES:,}-byte response cap: left out {', '.join(dropped)}; "
        "ask for them with sections=[...]"
    )
    return answer.model_copy(update={"truncated": note})


# -- text ----------------------------------------------------------------------------------------
def _hit_lines(h: out.Hit, detail: bool = True) -> list[str]:
    when = h.date.isoformat() if h.date else "undated"
    by = ", ".join(f"{n} #{h.ranks[n]}" for n in h.matched_by) or "fusion only"
    lines = [
        f"{h.rank}. {h.id} ({when}{_type_note(h.failure_mode)}) {h.title} "
        f"[similarity {h.similarity:.2f}; {by}]"
        + (f" [superseded by {h.superseded_by}]" if h.superseded_by else "")
    ]
    if detail and h.root_cause:
        lines.append(f"   cause: {excerpt(h.root_cause, TEXT_CHARS)}")
    if detail and h.resolution:
        lines.append(f"   fix: {excerpt(h.resolution, TEXT_CHARS)}")
    return lines


def _verdict_line(verdict: str | None, p: float | None, t: out.Thresholds | None) -> str:
    if verdict is None or p is None:
        return "verdict: none (this search is not scored)"
    where = f"; no precedent <= {t.lo:.2f}, found >= {t.hi:.2f}" if t else ""
    return f"verdict: {verdict} (p_precedent {p:.2f}{where})"


def render(result: BaseModel) -> str:
    """The text content of a tool result: a short reading of ``result``, for people and
    for clients that show only text (the structured content is the whole answer)."""
    lines: list[str] = []
    if isinstance(result, out.SimilarIncidents):
        lines.append(_verdict_line(result.verdict, result.p_precedent, result.thresholds))
        if result.another_failure:
            lines.append(result.another_failure)
        for h in result.results:
            lines.extend(_hit_lines(h, detail=h.rank <= TEXT_DETAIL_HITS))
        if not result.results:
            lines.append(f"no results: {result.empty_because or 'the words matched nothing'}")
        lines.append(result.advisory)
    elif isinstance(result, out.Related):
        lines.append(f"postmortems related to {result.related_to}:")
        for h in result.results:
            lines.extend(_hit_lines(h, detail=h.rank <= TEXT_DETAIL_HITS))
        if not result.results:
            lines.append("none")
    elif isinstance(result, out.Postmortem):
        lines.append(_meta_line(result))
        for s in result.sections:
            lines.append(f"## {s.heading}\n{s.text.strip()}")
    elif isinstance(result, out.PostmortemList):
        lines.extend(_meta_line(p) for p in result.postmortems)
        lines.append(
            f"{len(result.postmortems)} of {result.total}"
            + (f"; next page: cursor={result.next_cursor}" if result.next_cursor else "")
        )
    else:
        lines.extend(_plain(result.model_dump(mode="json")))
    truncated = getattr(result, "truncated", None)
    if truncated:
        lines.append(f"(truncated: {truncated})")
    return "\n".join(lines)


def _type_note(mode: out.FailureMode | None) -> str:
    """``, type X (inferred, p 0.62)`` for a confidently inferred type; nothing otherwise (the
    author's type is in the JSON, and the text stays as short as it was)."""
    if mode is not None and mode.known and mode.inferred:
        return f", type {FailureMode(mode.slug, mode.inferred, mode.p).label()}"
    return ""


def _meta_line(p: out.PostmortemMeta) -> str:
    when = p.date.isoformat() if p.date else "undated"
    services = ", ".join(p.services) or "no services"
    kind = _type_note(p.failure_mode)
    return f"{p.id} ({when}, {p.severity or 'unrated'}, {p.status}{kind}) {p.title} — {services}"


def _plain(data: dict[str, Any]) -> list[str]:
    """Any other result as ``key: value`` lines (lists joined, long text shortened)."""
    lines = []
    for key, value in data.items():
        if value in (None, [], {}, ""):
            continue
        if isinstance(value, dict):
            value = ", ".join(f"{k}={v}" for k, v in value.items() if not isinstance(v, dict))
        elif isinstance(value, list):
            value = "; ".join(str(v) if not isinstance(v, dict) else _brief(v) for v in value)
        lines.append(f"{key}: {excerpt(str(value), 400) or value}")
    return lines


def _brief(item: dict[str, Any]) -> str:
    return " ".join(str(v) for v in item.values() if isinstance(v, str | int) and v != "")
