"""SQL for SearchFilters, shared by every query that must filter before scoring."""

from __future__ import annotations

from typing import Any

from seenbefore.types import SearchFilters


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
        clauses.append(f"{alias}.effective_status = 'current'")
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
