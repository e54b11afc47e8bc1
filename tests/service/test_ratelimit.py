from __future__ import annotations

import pytest

from seenbefore.errors import ConfigError, RateLimitedError
from seenbefore.service.ratelimit import RateLimiter


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_token_bucket_allows_a_minute_then_refills_at_the_rate() -> None:
    clock = Clock()
    limiter = RateLimiter(60, clock=clock)  # one per second
    for _ in range(60):
        limiter.check("t1")
    with pytest.raises(RateLimitedError) as info:
        limiter.check("t1")
    assert info.value.retry_after_s == pytest.approx(1.0)
    limiter.check("t2")  # another token has its own bucket
    clock.now += 0.5
    with pytest.raises(RateLimitedError) as info:
        limiter.check("t1")
    assert info.value.retry_after_s == pytest.approx(0.5)
    clock.now += 0.5
    limiter.check("t1")
    clock.now += 3600
    for _ in range(60):  # refilled to capacity, never beyond
        limiter.check("t1")
    with pytest.raises(RateLimitedError):
        limiter.check("t1")


def test_limit_must_be_positive() -> None:
    with pytest.raises(ConfigError, match="RATE_LIMIT_PER_MINUTE"):
        RateLimiter(0)
