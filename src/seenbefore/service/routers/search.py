"""``POST /v1/search``: hybrid search, pre-filtered by the caller's tiers."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from seenbefore.errors import InputError
from seenbefore.knowledge.failure_modes import failure_modes_json, query_mode_json
from seenbefore.retrieval.hybrid import SearchOptions
from seenbefore.retrieval.output import FailureModes, result_json
from seenbefore.service import actions
from seenbefore.service.deps import App, Ready, Viewer
from seenbefore.service.models import SearchIn, SearchOut, problems
from seenbefore.types import SearchFilters, SearchResult

router = APIRouter(prefix="/v1", tags=["search"], responses=problems(400, 401, 422, 429, 503))


def search_out(
    result: SearchResult,
    failure_modes: FailureModes | None = None,
    query_mode: dict[str, Any] | None = None,
) -> SearchOut:
    """``failure_modes``: each result's (failure_modes_json); null in the results without.
    ``query_mode``: the query's (query_mode_json); without it, no ``another_failure``."""
    payload = result_json(result, failure_modes=failure_modes, query_mode=query_mode)
    return SearchOut.model_validate(payload)


def with_failure_modes(app: Ready, result: SearchResult) -> SearchOut:
    """The search's JSON with each result's failure mode (one read of the results' documents)
    and the query's own."""
    ids = [c.doc_id for c in result.candidates]
    return search_out(result, failure_modes_json(app.kb.store, ids), query_mode_json(result.query))


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
    out = with_failure_modes(app, result)
    out.empty_because = result.empty_because  # which filter emptied it, as the CLI says
    return out
