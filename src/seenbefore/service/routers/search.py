"""``POST /v1/search``: hybrid search, pre-filtered by the caller's tiers."""

from __future__ import annotations

from fastapi import APIRouter

from seenbefore.errors import InputError
from seenbefore.retrieval.hybrid import SearchOptions
from seenbefore.service import actions
from seenbefore.service.deps import App, Viewer
from seenbefore.service.models import CandidateOut, RetrieverScore, SearchIn, SearchOut, problems
from seenbefore.types import SearchFilters, SearchResult

router = APIRouter(prefix="/v1", tags=["search"], responses=problems(400, 401, 422, 429, 503))


def search_out(result: SearchResult) -> SearchOut:
    d = result.details
    return SearchOut(
        query=result.query,
        mode=result.mode,
        confidence=float(d.get("confidence", 0.0)),
        confidence_label=str(d.get("confidence_label", "")),
        novel=bool(d.get("novel")),
        dense_trusted=bool((d.get("gate") or {}).get("dense_trusted")),
        weights={k: float(v) for k, v in (d.get("weights") or {}).items()},
        results=[
            CandidateOut(
                rank=rank,
                id=c.doc_id,
                title=c.title,
                date=c.date,
                type=c.type,
                status=c.status,
                superseded_by=c.superseded_by,
                access_tier=c.access_tier,
                services=list(c.services),
                score=round(c.score, 6),
                matched_by=c.matched_by,
                retrievers={
                    k: RetrieverScore(rank=v.rank, score=round(v.score, 6))
                    for k, v in c.retrievers.items()
                },
                section=c.section_key,
                chunk_id=c.chunk_id,
                snippet=c.snippet,
            )
            for rank, c in enumerate(result.candidates, 1)
        ],
    )


@router.post("/search", response_model=SearchOut, summary="Find postmortems that resemble a text")
def search(body: SearchIn, app: App, who: Viewer) -> SearchOut:
    if not body.query.strip():
        raise InputError("query is blank; describe the symptoms or paste the alert")
    filters = SearchFilters(
        tiers=who.principal.tiers,
        include_superseded=body.include_superseded,
        services=tuple(body.services),
        date_from=body.since,
        date_to=body.until,
    )
    result = actions.search(app, who, body.query, filters, SearchOptions(k=body.k, mode=body.mode))
    return search_out(result)
