"""Per-token rate limit: a token bucket per key (API token id, or web session's token).

A bucket holds up to ``per_minute`` requests and refills at ``per_minute / 60`` per second, so
a burst of a whole minute's allowance is allowed once, then the steady rate. A request that
finds the bucket empty raises RateLimitedError with the seconds until one request is allowed
(the Retry-After header). The clock is injectable for tests."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from seenbefore.errors import ConfigError, RateLimitedError

MAX_KEYS = 10_000  # buckets kept; the least recently used go first beyond this


@dataclass
class _Bucket:
    tokens: float
    updated: float


class RateLimiter:
    def __init__(self, per_minute: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        if per_minute < 1:
            raise ConfigError(
                f"rate limit is {per_minute} requests per minute; expected at least 1 "
                "(SEENBEFORE_RATE_LIMIT_PER_MINUTE)"
            )
        self.capacity = float(per_minute)
        self.rate = per_minute / 60.0
        self._clock = clock
        self._buckets: dict[str, _Bucket] = {}
        self._lock = threading.Lock()

    def check(self, key: str) -> None:
        """Take one request from ``key``'s bucket, or raise RateLimitedError."""
        now = self._clock()
        with self._lock:
            bucket = self._buckets.pop(key, None) or _Bucket(self.capacity, now)
            bucket.tokens = min(self.capacity, bucket.tokens + (now - bucket.updated) * self.rate)
            bucket.updated = now
            self._buckets[key] = bucket  # re-inserted: most recently used last
            if len(self._buckets) > MAX_KEYS:
                del self._buckets[next(iter(self._buckets))]
            if bucket.tokens >= 1.0:
                bucket.tokens -= 1.0
                return
            wait = (1.0 - bucket.tokens) / self.rate
        raise RateLimitedError(
            f"more than {int(self.capacity)} requests per minute for this token; retry in "
            f"{wait:.1f} s or ask an admin to raise SEENBEFORE_RATE_LIMIT_PER_MINUTE",
            retry_after_s=wait,
        )
