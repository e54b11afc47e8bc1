"""One retry policy (seenbefore.retry, on tenacity) behind the notifier router and the
PostgreSQL pool: hand-worked waits, the last outcome handed back, and the pool's use of it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from seenbefore.errors import ConfigError, StoreError
from seenbefore.notify.router import RetryPolicy
from seenbefore.retry import Backoff, exponential


class Flaky:
    """Returns (or raises) the scripted outcomes in order, counting the calls."""

    def __init__(self, *outcomes: Any) -> None:
        self.outcomes = list(outcomes)
        self.calls = 0

    def __call__(self) -> Any:
        self.calls += 1
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome


def test_result_retries_wait_as_the_policy_says_and_return_the_last_result() -> None:
    sleeps: list[float] = []
    policy = Backoff(attempts=3, base_delay=0.5, max_delay=30.0, jitter=0.5)
    flaky = Flaky("bad", "bad", "bad")
    retrying = policy.retrying(
        on_result=lambda r: r == "bad", sleep=sleeps.append, rand=lambda: 0.5
    )
    assert retrying(flaky) == "bad" and flaky.calls == 3  # no RetryError: the last result
    assert sleeps == [0.5 * 0.75, 1.0 * 0.75]  # cap 0.5 then 1.0, scaled by 1 - 0.5 + 0.5 * 0.5


def test_retry_after_raises_a_wait_but_never_above_max_delay() -> None:
    sleeps: list[float] = []
    policy = Backoff(attempts=3, base_delay=0.5, max_delay=4.0, jitter=0.0)
    retrying = policy.retrying(
        on_result=lambda r: r[0] == "bad", sleep=sleeps.append, retry_after=lambda r: r[1]
    )
    assert retrying(Flaky(("bad", 2.0), ("bad", 60.0), ("ok", None))) == ("ok", None)
    assert sleeps == [2.0, 4.0]


def test_exceptions_are_retried_then_the_last_one_is_raised() -> None:
    sleeps: list[float] = []
    retrying = exponential(2, 0.2).retrying(
        on_exception=lambda e: isinstance(e, ConnectionError), sleep=sleeps.append
    )
    flaky = Flaky(ConnectionError("one"), ConnectionError("two"), ConnectionError("three"))
    with pytest.raises(ConnectionError, match="three"):
        retrying(flaky)
    assert flaky.calls == 3 and sleeps == pytest.approx([0.2, 0.4])
    other = Flaky(ValueError("not retried"))
    with pytest.raises(ValueError, match="not retried"):
        exponential(2, 0.2).retrying(
            on_exception=lambda e: isinstance(e, ConnectionError), sleep=sleeps.append
        )(other)
    assert other.calls == 1


def test_the_pool_policy_is_uncapped_doubling_without_jitter() -> None:
    policy = exponential(3, 0.2)
    assert policy.attempts == 4
    assert [policy.delay(n, 0.9) for n in (1, 2, 3)] == pytest.approx([0.2, 0.4, 0.8])


def test_bad_numbers_are_config_errors_named_for_their_user() -> None:
    with pytest.raises(ConfigError, match=r"^retry policy: attempts is 0, expected 1\.\.20"):
        Backoff(attempts=0)
    with pytest.raises(ConfigError, match=r"^notify retry policy: jitter is 2"):
        RetryPolicy(jitter=2)
    assert isinstance(RetryPolicy(), Backoff)


class FakeConn:
    closed = False


class FailingPool:
    """A pool whose first ``failures`` connections fail with the given error."""

    def __init__(self, error: Exception, failures: int) -> None:
        self.error, self.failures, self.checks, self.connects = error, failures, 0, 0

    @contextlib.contextmanager
    def connection(self) -> Iterator[FakeConn]:
        self.connects += 1
        if self.connects <= self.failures:
            raise self.error
        yield FakeConn()

    def check(self) -> None:
        self.checks += 1


def _database(pool: FailingPool, retries: int) -> Any:
    pytest.importorskip("psycopg")
    from seenbefore.storage.postgres.pool import Database, PgOptions

    db = Database.__new__(Database)  # no server: only the retry path around the pool
    db.options = PgOptions(retries=retries, retry_backoff_s=0.001)
    db.display = "postgresql://app@db.test:5432/kb"
    db._pool = pool
    return db


def test_the_pool_retries_a_dropped_connection_then_succeeds() -> None:
    import psycopg

    pool = FailingPool(psycopg.OperationalError("server closed the connection"), failures=2)
    db = _database(pool, retries=3)
    assert db.run(lambda conn: "rows", tiers=()) == "rows"
    assert (pool.connects, pool.checks) == (3, 2)  # each retry first drops dead idle connections


def test_the_pool_gives_up_after_its_retries_with_a_store_error() -> None:
    from psycopg import errors as pg_errors

    pool = FailingPool(pg_errors.SerializationFailure("could not serialize"), failures=9)
    db = _database(pool, retries=2)
    with pytest.raises(StoreError, match="SerializationFailure after 3 attempts"):
        db.run(lambda conn: "rows", tiers=())
    assert pool.connects == 3


def test_a_cancelled_statement_is_not_retried() -> None:
    from psycopg import errors as pg_errors

    pool = FailingPool(pg_errors.QueryCanceled("canceling statement"), failures=9)
    db = _database(pool, retries=3)
    with pytest.raises(StoreError, match="longer than the statement timeout"):
        db.run(lambda conn: "rows", tiers=())
    assert (pool.connects, pool.checks) == (1, 0)
