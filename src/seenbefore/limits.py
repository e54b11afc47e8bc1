"""Limits on what a caller may ask, and filter checks, shared by the CLI and the HTTP API.

The API's pydantic models (``service/models.py``) answer 422 past these limits; the CLI refuses
the same inputs with the same numbers. :func:`check_filters` refuses filters that no document
can satisfy (``since`` after ``until``), and :func:`empty_reason` says which filter left nothing
to search, so an empty result is never blamed on the query's words when a filter emptied it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol

import numpy as np
import numpy.typing as npt

from seenbefore.errors import InputError
from seenbefore.types import SearchFilters

MAX_QUERY_CHARS = 10_000  # characters of search text or alert text
MAX_K = 50  # results per search
MAX_SERVICES = 50  # services in one filter


class Masked(Protocol):
    """What :func:`empty_reason` needs of the corpus index (``retrieval.corpus.CorpusIndex``)."""

    def doc_mask(self, filters: SearchFilters) -> npt.NDArray[np.bool_]: ...


def check_k(k: int, *, name: str = "-k") -> None:
    if not 1 <= k <= MAX_K:
        raise InputError(f"{name} is {k}; ask for between 1 and {MAX_K} results")


def check_range(
    name: str, value: float, low: float, high: float, *, what: str = "a number", why: str = ""
) -> None:
    """InputError unless ``low <= value <= high``; NaN and the infinities never pass, and a whole
    number is compared exactly (never through a float). ``name`` is the option as the caller
    spelt it (``--hours``), ``what`` the kind of value, ``why`` what the bounds are for."""
    finite = isinstance(value, int) or math.isfinite(value)  # a huge int is no float
    if not (finite and low <= value <= high):
        raise InputError(
            f"{name} is {_number(value)}; give {what} from {_number(low)} to {_number(high)}"
            + (f" ({why})" if why else "")
        )


def _number(value: float) -> str:
    """A number as a message shows it: whole numbers in full (at most 40 digits), else ``:g``."""
    if isinstance(value, int):
        return str(value) if abs(value) < 10**40 else "a whole number of more than 40 digits"
    return f"{value:g}"


def check_query(text: str, *, name: str = "query text") -> None:
    if len(text) > MAX_QUERY_CHARS:
        raise InputError(
            f"{name} is {len(text)} characters, over the limit of {MAX_QUERY_CHARS}; "
            "keep the symptoms, the alert's summary or the error, not a whole log"
        )


def check_filters(filters: SearchFilters, *, since: str = "since", until: str = "until") -> None:
    """InputError for filters that contradict themselves (``since``/``until`` name the fields
    as the caller spelt them: ``--since`` in the CLI)."""
    if (
        filters.date_from is not None
        and filters.date_to is not None
        and filters.date_from > filters.date_to
    ):
        raise InputError(
            f"{since} {filters.date_from.isoformat()} is after {until} "
            f"{filters.date_to.isoformat()}: no incident can be on or after the first and on or "
            "before the second; swap the dates or drop one"
        )
    if len(filters.services) > MAX_SERVICES:
        raise InputError(
            f"{len(filters.services)} services given, over the limit of {MAX_SERVICES}; "
            "filter on fewer"
        )


def empty_reason(
    index: Masked,
    filters: SearchFilters,
    *,
    superseded_hint: str = "superseded versions (CLI --include-superseded, API include_superseded)",
) -> str | None:
    """Which filter left no document to search, applying them in order (tiers, status,
    services, dates); None when documents passed every filter (the query found nothing).
    Nothing is said about documents outside the caller's tiers."""
    steps: list[tuple[SearchFilters, str]] = [
        (
            SearchFilters(tiers=filters.tiers, include_superseded=True),
            "no postmortem is visible to the tiers you hold "
            f"({', '.join(filters.tiers) or 'none'})",
        ),
        (
            SearchFilters(tiers=filters.tiers, include_superseded=filters.include_superseded),
            f"every postmortem you can see is superseded; add {superseded_hint} to search them",
        ),
    ]
    if filters.services:
        steps.append(
            (
                replace(steps[-1][0], services=filters.services),
                f"no postmortem you can see names the service(s) {_names(filters.services)}",
            )
        )
    scope = f" for the service(s) {_names(filters.services)}" if filters.services else ""
    if filters.date_from is not None:
        steps.append(
            (
                replace(steps[-1][0], date_from=filters.date_from),
                f"no postmortem you can see{scope} is dated on or after "
                f"{filters.date_from.isoformat()} (undated ones never pass a date filter)",
            )
        )
    if filters.date_to is not None:
        when = (
            f"between {filters.date_from.isoformat()} and {filters.date_to.isoformat()}"
            if filters.date_from is not None
            else f"on or before {filters.date_to.isoformat()}"
        )
        steps.append(
            (
                replace(steps[-1][0], date_to=filters.date_to),
                f"no postmortem you can see{scope} is dated {when} "
                "(undated ones never pass a date filter)",
            )
        )
    for partial, reason in steps:
        if not index.doc_mask(partial).any():
            return reason
    return None


def _names(names: Sequence[str]) -> str:
    return ", ".join(names)
