"""Rate limits: a token bucket per key — per API token (each request takes one), and per client
address for failed authentications (each failure takes one; a client whose bucket is empty is
refused before its next token is even looked at).

A bucket holds up to ``per_minute`` requests and refills at ``per_minute / 60`` per second, so
a burst of a whole minute's allowance is allowed once, then the steady rate. A request that
finds the bucket empty raises RateLimitedError with the seconds until one request is allowed
(the Retry-After header). The clock is injectable for tests.

The buckets live in the process until :meth:`RateLimiter.share` hands them to a store's shared
buckets (storage/buckets.py; on PostgreSQL a table every replica updates in one statement per
request), so that N replicas together allow the limit once, not N times."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from seenbefore.errors import ConfigError, RateLimitedError
from seenbefore.storage.buckets import TokenBuckets

MAX_KEYS = 10_000  # buckets kept; the least recently used go first beyond this


@dataclass
class _Bucket:
    tokens: float
    updated: float


class RateLimiter:
    def __init__(
        self,
        per_minute: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        setting: str = "SEENBEFORE_RATE_LIMIT_PER_MINUTE",
        what: str = "requests per minute for this token",
    ) -> None:
        if per_minute < 1:
            raise ConfigError(f"{setting} is {per_minute}; expected at least 1")
        self.setting = setting
        self.what = what
        self.capacity = float(per_minute)
        self.rate = per_minute / 60.0
        self._clock = clock
        self._buckets: dict[str, _Bucket] = {}
        self._lock = threading.Lock()
        self._shared: TokenBuckets | None = None

    def share(self, buckets: TokenBuckets | None) -> None:
        """Keep the buckets in ``buckets`` from now on (None: in this process)."""
        self._shared = buckets

    def check(self, key: str) -> None:
        """Take one from ``key``'s bucket, or raise RateLimitedError."""
        self._take(key, 1.0)

    def peek(self, key: str) -> None:
        """RateLimitedError if ``key``'s bucket is empty; takes nothing."""
        self._take(key, 0.0)

    def _take(self, key: str, cost: float) -> None:
        shared = self._shared
        if shared is not None:
            # one table holds every limiter's buckets: each under its setting's name
            wait = shared.take(f"{self.setting}:{key}", cost, self.capacity, self.rate)
            if wait > 0:
                raise self._refused(wait)
            return
        now = self._clock()
        with self._lock:
            bucket = self._buckets.pop(key, None) or _Bucket(self.capacity, now)
            bucket.tokens = min(self.capacity, bucket.tokens + (now - bucket.updated) * self.rate)
            bucket.updated = now
            self._buckets[key] = bucket  # re-inserted: most recently used last
            if len(self._buckets) > MAX_KEYS:
                del self._buckets[next(iter(self._buckets))]
            if bucket.tokens >= 1.0:
                bucket.tokens -= cost
                return
            wait = (1.0 - bucket.tokens) / self.rate
        raise self._refused(wait)

    def _refused(self, wait: float) -> RateLimitedError:
        return RateLimitedError(
            f"more than {int(self.capacity)} {self.what}; retry in {wait:.1f} s or ask an "
            f"admin to raise {self.setting}",
            retry_after_s=wait,
        )
