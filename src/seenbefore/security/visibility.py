"""Which service-table rows a holder of some tiers may see, as SQL either store runs.

A review is visible when its postmortem tier and every tier of its evidence are among the
caller's (review/records.py lists reviews with it; security/audit.py shows an audit record that
names a review only while that review is one the caller may see)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from seenbefore.storage.sqlport import ServiceStore, marks


def review_visible_sql(
    store: ServiceStore, tiers: Sequence[str], alias: str = "r"
) -> tuple[str, list[Any]]:
    """Rows of ``reviews`` (as ``alias``) whose every evidence tier, and whose postmortem tier,
    the caller holds; with the condition's parameters."""
    within, held = store.sql.json_within(f"{alias}.tiers", tiers)
    return f"{alias}.access_tier IN ({marks(tiers)}) AND {within}", [*tiers, *held]
