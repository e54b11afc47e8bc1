"""The rate limiter's shared token buckets (service/ratelimit.py): the port. One process keeps
its buckets in memory; replicas over one PostgreSQL database keep them in it
(storage/postgres/buckets.py), so N replicas together allow the limit once, not N times."""

from __future__ import annotations

from typing import Protocol


class TokenBuckets(Protocol):
    def take(self, key: str, cost: float, capacity: float, per_second: float) -> float:
        """Refill ``key``'s bucket (at most ``capacity``, ``per_second`` since its last use;
        a new bucket starts full), then take ``cost`` if it holds at least one token. Returns
        0.0 when taken, else the seconds until it holds one. One round trip."""
        ...
