"""The small stores beside the knowledge base (issue 26, part 4), on both backends: the outbox's
rows, the rate limiter's buckets and the embedding cache. What SQLite did, PostgreSQL does the
same; what only a shared database can (claims two processes do not both get, a lease that
runs out, one limit across limiters), PostgreSQL does here."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from seenbefore.errors import RateLimitedError
from seenbefore.retrieval.cache import CachingEmbedder
from seenbefore.retrieval.embedders import HashingEmbedder
from seenbefore.service.ratelimit import RateLimiter
from seenbefore.storage.outbox import NewRow, OutboxRows
from seenbefore.storage.postgres.buckets import PgTokenBuckets
from seenbefore.storage.postgres.outbox import PgOutboxRows
from seenbefore.storage.postgres.pool import Database
from seenbefore.storage.postgres.store import PostgresStore
from seenbefore.storage.postgres.vectorcache import PgVectorCache
from seenbefore.storage.sqlite.outbox import SqliteOutboxRows
from seenbefore.storage.sqlite.vectorcache import SqliteVectorCache
from seenbefore.storage.vectorcache import VectorCache

BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.integration)]
NOW = "2024-03-14T10:00:00+00:00"


def new_row(channel: str = "slack", fingerprint: str = "f1", action: str = "trigger") -> NewRow:
    return NewRow(channel, "A-1", fingerprint, action, '{"m": 1}', "pending", 4, 500, "boom")


@pytest.fixture
def database(pg_url: str) -> Iterator[Database]:
    PostgresStore(pg_url).close()  # migrated
    db = Database(pg_url)
    yield db
    db.close()


@pytest.fixture(params=BACKENDS)
def rows(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[OutboxRows]:
    if request.param == "sqlite":
        yield SqliteOutboxRows(tmp_path / "outbox.sqlite")
        return
    found = PgOutboxRows(request.getfixturevalue("database"))
    yield found
    found.close()


def test_outbox_rows_keep_what_the_file_kept(rows: OutboxRows) -> None:
    first = rows.add(new_row(), NOW)
    second = rows.add(new_row(fingerprint="f2"), NOW)
    dead = rows.add(new_row(channel="pagerduty"), NOW)
    assert rows.record(dead, "dead", 1, 400, "invalid", NOW)
    assert not rows.record(99_999, "dead", 1, 400, "x", NOW)
    assert rows.count_pending("slack", "f1") == 1 and rows.count_pending("pagerduty", "f1") == 0
    assert [r.id for r in rows.entries("pending", None)] == [first, second]
    assert [r.id for r in rows.entries(None, 2)] == [first, second]
    [row] = rows.entries("dead", None)
    assert (row.attempts, row.last_status, row.last_error) == (5, 400, "invalid")
    assert not rows.requeue(first, NOW) and rows.requeue(dead, NOW)
    rows.note(first, "channel gone", NOW)
    rows.bury(second, "undecodable", NOW)
    states = {r.id: (r.state, r.last_error) for r in rows.entries(None, None)}
    assert states == {
        first: ("pending", "channel gone"),
        second: ("dead", "undecodable"),
        dead: ("pending", "invalid"),
    }
    assert [r.id for r in rows.claim(None, 60.0, exclude=[first])] == [dead]
    assert rows.purge(lambda message: True) == 3 and rows.entries(None, None) == []


def test_outbox_rows_copy_with_their_times_once(rows: OutboxRows, tmp_path: Path) -> None:
    """What `seenbefore migrate` does to the outbox, both ways: every row with its state and
    times, in order, and a second copy adds nothing."""
    source = SqliteOutboxRows(tmp_path / "elsewhere" / "outbox.sqlite")
    first = source.add(new_row(), NOW)
    source.add(new_row(fingerprint="f2"), "2024-03-14T11:00:00+00:00")
    dead = source.add(new_row(channel="pagerduty"), "2024-03-14T12:00:00+00:00")
    assert source.record(first, "delivered", 1, 200, "", "2024-03-14T10:05:00+00:00")
    source.bury(dead, "410 gone", "2024-03-14T12:01:00+00:00")
    exported = source.export_rows()
    assert [(c.row.state, c.created_at, c.updated_at) for c in exported] == [
        ("delivered", NOW, "2024-03-14T10:05:00+00:00"),
        ("pending", "2024-03-14T11:00:00+00:00", "2024-03-14T11:00:00+00:00"),
        ("dead", "2024-03-14T12:00:00+00:00", "2024-03-14T12:01:00+00:00"),
    ]
    held = rows.add(new_row(channel="teams"), NOW)  # a row the target had: kept, not copied over
    assert rows.import_rows(exported) == 3
    assert rows.import_rows(exported) == 0  # the same notifications: nothing added
    assert rows.export_rows()[0].row.channel == "teams"
    assert rows.export_rows()[1:] == exported
    pending = [r for r in rows.claim(None, 60.0) if r.id != held]
    assert [(r.channel, r.created_at) for r in pending] == [("slack", "2024-03-14T11:00:00+00:00")]
    assert [r.last_error for r in rows.entries("dead", None)] == ["410 gone"]
    assert SqliteOutboxRows(tmp_path / "none.sqlite", create=False).export_rows() == []


def test_a_database_claim_is_one_claimers_until_its_lease_runs_out(database: Database) -> None:
    a, b = PgOutboxRows(database), PgOutboxRows(database)
    trigger = a.add(new_row(), NOW)
    resolve = a.add(new_row(action="resolve"), NOW)  # same channel and fingerprint: one group
    other = a.add(new_row(fingerprint="f2"), NOW)
    first = a.claim(1, 2.0)  # one group: the trigger with the resolve behind it
    assert [r.id for r in first] == [trigger, resolve]
    assert [r.id for r in b.claim(None, 2.0)] == [other]  # B never gets A's group
    assert b.claim(None, 2.0) == []
    b.release([other])
    assert [r.id for r in b.claim(None, 2.0)] == [other]
    time.sleep(2.2)  # A died holding its claim: the lease runs out on the database's clock
    assert [r.id for r in b.claim(None, 60.0)] == [trigger, resolve, other]
    assert b.record(trigger, "delivered", 1, 200, "", NOW)  # recording gives the row back
    assert a.claim(None, 60.0) == []  # B still holds the resolve and the other group


def test_concurrent_claimers_never_share_a_row(database: Database) -> None:
    writer = PgOutboxRows(database)
    for n in range(60):
        writer.add(new_row(fingerprint=f"f{n}"), NOW)
    got: list[list[int]] = [[], [], []]

    def drain(slot: int) -> None:
        mine = PgOutboxRows(database)
        while batch := mine.claim(3, 60.0):
            got[slot] += [r.id for r in batch]

    threads = [threading.Thread(target=drain, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    claimed = [i for part in got for i in part]
    assert len(claimed) == 60 == len(set(claimed))


# -- rate limits ---------------------------------------------------------------------------


@pytest.mark.integration
def test_two_limiters_over_one_database_allow_the_limit_once(database: Database) -> None:
    """Two replicas' limiters (each its own pool) hammering one key from four threads: together
    they allow the bucket's capacity plus what refilled while they ran, never twice that."""
    other = Database(database.url)
    limiters = [RateLimiter(30), RateLimiter(30)]
    limiters[0].share(PgTokenBuckets(database))
    limiters[1].share(PgTokenBuckets(other))
    allowed, refused = [0], [0]
    lock = threading.Lock()
    started = time.monotonic()

    def hammer(limiter: RateLimiter) -> None:
        for _ in range(25):
            try:
                limiter.check("tok_shared")
                with lock:
                    allowed[0] += 1
            except RateLimitedError as exc:
                assert 0 < exc.retry_after_s <= 2.0  # one token refills in 2 s at 30/min
                with lock:
                    refused[0] += 1

    threads = [threading.Thread(target=hammer, args=(limiters[i % 2],)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - started
    other.close()
    assert allowed[0] + refused[0] == 100
    assert 30 <= allowed[0] <= 30 + int(elapsed * 0.5) + 1, (allowed, elapsed)
    limiters[0].check("tok_other")  # another key has its own bucket
    peeked = RateLimiter(30)
    peeked.share(PgTokenBuckets(database))
    with pytest.raises(RateLimitedError):  # peek sees the shared bucket empty, takes nothing
        peeked.peek("tok_shared")


@pytest.mark.integration
def test_the_buckets_refill_at_the_rate(database: Database) -> None:
    buckets = PgTokenBuckets(database)
    assert buckets.take("k", 1.0, 2.0, 10.0) == 0.0  # a new bucket starts full: 2 - 1
    assert buckets.take("k", 1.0, 2.0, 10.0) == 0.0
    wait = buckets.take("k", 1.0, 2.0, 10.0)
    assert 0.0 < wait <= 0.1  # ten a second: less than 0.1 s to the next token
    time.sleep(0.25)
    assert buckets.take("k", 1.0, 2.0, 10.0) == 0.0


# -- the embedding cache -------------------------------------------------------------------


@pytest.fixture(params=BACKENDS)
def cache(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VectorCache]:
    if request.param == "sqlite":
        found: VectorCache = SqliteVectorCache(tmp_path / "embedding-cache.sqlite")
    else:
        found = PgVectorCache(request.getfixturevalue("database"))
    yield found
    found.close()


class Counting(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__(dim=16)
        self.seen: list[str] = []

    def embed(self, texts):  # type: ignore[no-untyped-def]
        self.seen += list(texts)
        return super().embed(texts)


def test_the_cache_embeds_each_text_once(cache: VectorCache) -> None:
    inner = Counting()
    cached = CachingEmbedder(inner, cache)
    first = cached.embed(["disk full", "pool exhausted", "disk full"])
    again = CachingEmbedder(Counting(), cache).embed(["pool exhausted", "disk full"])
    assert inner.seen == ["disk full", "pool exhausted", "disk full"]  # one call, both misses
    np.testing.assert_allclose(again, first[[1, 0]], atol=1e-6)
    assert cached.embed([]).shape == (0, 16)
    assert len(cache.get([cached._key("disk full"), "absent"])) == 1
