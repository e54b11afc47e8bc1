"""SQL for SearchFilters, shared by every query that must filter before scoring."""

from __future__ import annotations

from typing import Any

from seenbefore.types import SearchFilters


def current_sql(tiers: tuple[str, ...], *, alias: str = "d") -> tuple[str, list[Any]]:
    """True for a document that is current *for a caller holding* ``tiers``: not declared
    superseded, and no current document in those tiers supersedes it (storage/supersession.py).
    The stored ``effective_status`` counts superseders of every tier, so it is not used.
    The unary ``+`` keeps SQLite off the ``documents_filter`` (access_tier) index for ``sup``:
    with one tier it chose that index and scanned every document of the tier per row (107 s
    for one FTS query at 100k chunks), where ``documents_supersedes`` finds the few rows."""
    marks = ",".join("?" * len(tiers)) or "NULL"
    return (
        f"({alias}.status = 'current' AND NOT EXISTS (SELECT 1 FROM documents sup"
        f" WHERE sup.supersedes = {alias}.id AND sup.status = 'current'"
        f" AND +sup.access_tier IN ({marks})))",
        list(tiers),
    )


def filter_sql(filters: SearchFilters, *, alias: str = "d") -> tuple[str, list[Any]]:
    """A WHERE clause over the documents table (aliased ``alias``) and its parameters.

    An empty tier list matches nothing: a caller with no tiers sees no documents.
    """
    clauses: list[str] = []
    params: list[Any] = []
    if filters.tiers:
        clauses.append(f"{alias}.access_tier IN ({','.join('?' * len(filters.tiers))})")
        params.extend(filters.tiers)
    else:
        clauses.append("0")
    if not filters.include_superseded:
        current, tier_params = current_sql(filters.tiers, alias=alias)
        clauses.append(current)
        params.extend(tier_params)
    if filters.services:
        clauses.append(
            f"EXISTS (SELECT 1 FROM document_services ds WHERE ds.doc_id = {alias}.id"
            f" AND ds.service IN ({','.join('?' * len(filters.services))}))"
        )
        params.extend(filters.services)
    if filters.date_from is not None:
        clauses.append(f"{alias}.date >= ?")
        params.append(filters.date_from.isoformat())
    if filters.date_to is not None:
        clauses.append(f"{alias}.date <= ?")
        params.append(filters.date_to.isoformat())
    if filters.exclude_ids:
        clauses.append(f"{alias}.id NOT IN ({','.join('?' * len(filters.exclude_ids))})")
        params.extend(filters.exclude_ids)
    return " AND ".join(clauses), params
