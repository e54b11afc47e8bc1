"""The MCP tools peers offer beside search: ``list_postmortems`` (filtered, a page at a time),
``find_related`` (postmortems like a given one) and ``record_feedback`` (whether a result was the
precedent, recorded as a calibration label), and the resource listing.

Tier walls as everywhere: only postmortems of the caller's tiers are listed, related, or taken
as feedback, and one outside them reads exactly like an absent one (the store's ``get``).
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import hashlib
import json
from collections.abc import Sequence
from typing import Any

from seenbefore.errors import InputError
from seenbefore.investigation.evidence import Evidence, EvidenceItem
from seenbefore.investigation.query import from_text
from seenbefore.knowledge.failure_modes import has_mode
from seenbefore.limits import MAX_QUERY_CHARS
from seenbefore.mcp import outputs, shaping
from seenbefore.mcp.catalog import FindRelated, ListPostmortems, RecordFeedback
from seenbefore.retrieval.hybrid import SearchOptions
from seenbefore.review.feedback import record_feedback as record_label
from seenbefore.review.models import evidence_to_dict
from seenbefore.review.tiers import most_restrictive
from seenbefore.service import actions
from seenbefore.service.deps import Caller, Ready
from seenbefore.service.routers.search import search_out
from seenbefore.types import Candidate, SearchFilters, StoredDocument

MAX_RESOURCES = 100
FEEDBACK_K = 5  # the search a feedback's label is about (as find_similar_incidents' default)
META_BATCH = 200


# -- list_postmortems ----------------------------------------------------------------------------
def _day(value: Any) -> dt.date | None:
    if value is None or value == "":
        return None
    if isinstance(value, dt.date):
        return value
    try:
        return dt.date.fromisoformat(str(value)[:10])
    except ValueError:
        return None


def _fingerprint(args: ListPostmortems) -> str:
    filters = args.model_dump(mode="json", include={"service", "type", "since", "until"})
    return hashlib.sha256(json.dumps(filters, sort_keys=True).encode()).hexdigest()[:12]


def _cursor(offset: int, args: ListPostmortems) -> str:
    raw = json.dumps({"o": offset, "f": _fingerprint(args)}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


MAX_OFFSET = 10**9  # past any knowledge base's size; a cursor never holds more


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not in a cursor")


def _offset(args: ListPostmortems) -> int:
    if args.cursor is None:
        return 0
    mark, offset = "", -1
    try:
        padded = args.cursor + "=" * (-len(args.cursor) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode()), parse_constant=_no_constant)
    except (ValueError, binascii.Error, RecursionError):
        data = None
    if isinstance(data, dict):
        found, written = data.get("o"), data.get("f")
        # what _cursor writes: a whole number (not a float such as 1e400, not a boolean)
        if type(found) is int and 0 <= found <= MAX_OFFSET and isinstance(written, str):
            mark, offset = written, found
    if mark != _fingerprint(args) or offset < 0:
        raise InputError(
            "cursor: not a next_cursor of list_postmortems with these filters; pass it back "
            "with the same service, type, since and until, or start again without one"
        )
    return offset


def list_postmortems(app: Ready, who: Caller, args: ListPostmortems) -> outputs.PostmortemList:
    who.principal.require("viewer", "reading")
    tiers = set(who.principal.tiers)
    rows = app.kb.store.document_rows()
    service = args.service.casefold() if args.service else None
    chosen: list[tuple[dt.date | None, str]] = []
    for doc_id, tier, date, services in zip(
        rows.ids, rows.tiers, rows.dates, rows.services, strict=False
    ):
        day = _day(date)
        if tier not in tiers:
            continue
        if service is not None and service not in {s.casefold() for s in services}:
            continue
        if args.since is not None and (day is None or day < args.since):
            continue
        if args.until is not None and (day is None or day > args.until):
            continue
        chosen.append((day, doc_id))
    if args.type is not None:  # the failure mode: the author's type or a confident inferred one
        ids = [d for _, d in chosen]
        typed: set[str] = set()
        for start in range(0, len(ids), META_BATCH):
            meta = app.kb.store.documents_meta(ids[start : start + META_BATCH])
            typed |= {i for i, doc in meta.items() if has_mode(doc.postmortem, args.type)}
        chosen = [(day, d) for day, d in chosen if d in typed]
    chosen.sort(key=lambda item: item[1])
    chosen.sort(key=lambda item: item[0] or dt.date.min, reverse=True)  # newest, undated last
    offset = _offset(args)
    page = [d for _, d in chosen[offset : offset + args.limit]]
    docs = [app.kb.store.get(d, who.principal.tiers) for d in page]  # status as the caller sees
    app.audit.record(
        who.principal,
        "postmortem.list",
        session=who.session,
        doc_ids=page,
        tiers=[d.postmortem.access_tier for d in docs],
        detail={"channel": "mcp", "total": len(chosen), "offset": offset},
    )
    more = offset + args.limit < len(chosen)
    return outputs.PostmortemList(
        postmortems=[_meta(d, app.settings.public_url) for d in docs],
        total=len(chosen),
        next_cursor=_cursor(offset + args.limit, args) if more else None,
    )


def _meta(doc: StoredDocument, base: str | None) -> outputs.PostmortemMeta:
    pm = doc.postmortem
    return outputs.PostmortemMeta(
        id=pm.id,
        title=pm.title,
        date=pm.date,
        services=list(pm.services),
        severity=pm.severity,
        type=pm.type,
        failure_mode=shaping.mode_of(None, doc),
        status=doc.effective_status,
        link=shaping.link(base, "postmortems", pm.id),
    )


def resources(app: Ready, who: Caller) -> list[tuple[str, str]]:
    """(id, title) of the first ``MAX_RESOURCES`` postmortems the caller may read, by id."""
    who.principal.require("viewer", "reading")
    ids = app.kb.store.list_ids(who.principal.tiers)[:MAX_RESOURCES]
    meta = app.kb.store.documents_meta(ids)
    return [(i, meta[i].postmortem.title) for i in ids if i in meta]


# -- find_related --------------------------------------------------------------------------------
def find_related(app: Ready, who: Caller, args: FindRelated) -> outputs.Related:
    who.principal.require("viewer", "reading")
    doc = app.kb.store.get(args.doc_id, who.principal.tiers)  # hidden reads as absent
    pm = doc.postmortem
    summary = pm.section("summary") or (pm.sections[0] if pm.sections else None)
    text = f"{pm.title}. {summary.text if summary else ''}".strip()[:MAX_QUERY_CHARS]
    filters = SearchFilters(tiers=who.principal.tiers, exclude_ids=(pm.id,))
    result = actions.search(app, who, text, filters, SearchOptions(k=args.k))
    found = search_out(result)
    docs = app.kb.store.documents_meta([r.id for r in found.results])
    shaped = shaping.hits(found, args.k, docs, app.settings.public_url)
    answer = outputs.Related(
        related_to=pm.id, results=shaped, returned=len(shaped), found=len(shaped)
    )
    return shaping.cap_hits(answer)


# -- record_feedback -----------------------------------------------------------------------------
def _item(c: Candidate) -> EvidenceItem:
    """A search candidate as a review's evidence item (no sections: feedback quotes nothing)."""
    return EvidenceItem(
        doc_id=c.doc_id,
        title=c.title,
        date=c.date,
        type=c.type,
        status=c.status,
        superseded_by=c.superseded_by,
        access_tier=c.access_tier,
        matched_by=c.matched_by,
        retrievers={k: {"rank": v.rank, "score": v.score} for k, v in c.retrievers.items()},
        score=c.score,
        matched_section=c.section_key,
        sections={},
        signals_shared=(),
        signals_not_in_precedent=(),
        signals_only_in_precedent=(),
    )


def _label(top: str, doc_id: str, helpful: bool) -> tuple[int | None, str]:
    if top == doc_id:
        if helpful:
            return 1, f"recorded label 1 for {top}, the query's top result: it was the precedent"
        return 0, f"recorded label 0 for {top}, the query's top result: it was not the precedent"
    if helpful:
        return 0, (
            f"{doc_id} is not the query's top result ({top} is): recorded label 0 for {top}, "
            f"since {doc_id} was the precedent"
        )
    return None, (
        f"{doc_id} is not the query's top result ({top} is), and feedback that it did not help "
        f"says nothing about {top}: nothing recorded"
    )


def record_feedback(app: Ready, who: Caller, args: RecordFeedback) -> outputs.Feedback:
    who.principal.require("responder", "recording feedback")
    if not args.query.strip():
        raise InputError("query is blank; give the text that was searched")
    tiers: Sequence[str] = who.principal.tiers
    target = app.kb.store.get(args.doc_id, tiers)  # hidden reads as absent
    doc_id = target.postmortem.id
    filters = SearchFilters(tiers=tuple(tiers))
    result = actions.search(app, who, args.query, filters, SearchOptions(k=FEEDBACK_K))
    if not result.candidates or not result.scored:
        return outputs.Feedback(
            recorded=False,
            label=None,
            top=None,
            doc_id=doc_id,
            review_id=None,
            note="the query finds nothing to label now (or is not scored): nothing recorded",
        )
    top = result.candidates[0]
    label, note = _label(top.doc_id, doc_id, args.helpful)
    named = [top.doc_id] if top.doc_id == doc_id else [top.doc_id, doc_id]
    named_tiers = sorted({top.access_tier, target.postmortem.access_tier})
    review_id = None
    if label is not None:
        items = [_item(top)]
        other = next((c for c in result.candidates if c.doc_id == doc_id), None)
        if doc_id != top.doc_id and other is not None:
            items.append(_item(other))
        evidence = evidence_to_dict(  # the record every review keeps (review/models.py)
            Evidence(
                request=from_text(args.query),
                items=tuple(items),
                confidence=result.confidence,
                confidence_label=result.confidence_label,
                novel=result.novel,
                verdict=result.verdict,
                searched={"query": args.query, "mode": result.mode, "k": FEEDBACK_K},
                gate={},
                signals=dict(result.signals),
                confidence_model_key=result.confidence_model_key or "",
            )
        )
        reason = "feedback:" + ("helpful" if args.helpful else "not_helpful")
        review_id = record_label(
            app.workflow.records,
            requested_by=who.principal.name,
            query=args.query,
            evidence=evidence,
            label=label,
            reason=reason,
            access_tier=most_restrictive(named_tiers, app.settings.tiers),
            tiers=named_tiers,
            doc_ids=named,
            detail={
                "doc_id": doc_id,
                "helpful": args.helpful,
                "channel": "mcp",
                "role": who.principal.role,  # whose label may move the shared model
            },
        )
        app.workflow.refit_if_due()  # feedback labels refit calibration as decisions do
    app.audit.record(
        who.principal,
        "feedback",
        session=who.session,
        query=args.query,
        doc_ids=named,
        tiers=named_tiers,
        draft_id=review_id,
        decision="no_label" if label is None else f"label:{label}",
        detail={"channel": "mcp", "helpful": args.helpful, "top_is_doc": top.doc_id == doc_id},
    )
    return outputs.Feedback(
        recorded=label is not None,
        label=label,  # type: ignore[arg-type]
        top=top.doc_id,
        doc_id=doc_id,
        review_id=review_id,
        note=note,
    )
