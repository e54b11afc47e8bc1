"""Token buckets in the PostgreSQL database (migration 6), shared by every replica: one
statement per request, on the database's clock (replicas' clocks never disagree about it).

Rows of keys untouched for a whole refill (a full bucket, the same as no row) are deleted now
and then, so the table holds the keys in use."""

from __future__ import annotations

import threading
import time

from seenbefore.storage.postgres.pool import Conn, Database

# Refill (written out three times: ON CONFLICT cannot name it once), then take when at least
# one token is there; RETURNING says whether it did and what is left. A statement that waited
# for another's row lock may carry an earlier clock than the row: no time passed for it.
_ELAPSED = "greatest(0, extract(epoch FROM excluded.updated - b.updated))"
_REFILL = f"least(%(capacity)s, b.tokens + {_ELAPSED} * %(rate)s)"
_TAKE = f"""
INSERT INTO rate_buckets AS b (key, tokens, updated, taken)
VALUES (%(key)s, %(capacity)s - %(cost)s, clock_timestamp(), true)
ON CONFLICT (key) DO UPDATE SET
    tokens = CASE WHEN {_REFILL} >= 1 THEN {_REFILL} - %(cost)s ELSE {_REFILL} END,
    taken = {_REFILL} >= 1,
    updated = greatest(b.updated, excluded.updated)
RETURNING tokens, taken
"""
SWEEP_EVERY_S = 60.0  # at most this often per process


class PgTokenBuckets:
    def __init__(self, db: Database) -> None:
        self._db = db
        self._lock = threading.Lock()
        self._swept = time.monotonic()

    def take(self, key: str, cost: float, capacity: float, per_second: float) -> float:
        params = {"key": key, "cost": cost, "capacity": capacity, "rate": per_second}

        def run(conn: Conn) -> tuple[float, bool]:
            row = conn.execute(_TAKE.encode(), params).fetchone()
            return (float(row[0]), bool(row[1])) if row else (0.0, False)

        left, taken = self._db.run(run, tiers=())
        self._sweep(capacity / per_second if per_second > 0 else 0.0)
        # refused: the refill (``left``) fell short of one token, and nothing was taken
        return 0.0 if taken else (1.0 - left) / per_second

    def _sweep(self, full_after_s: float) -> None:
        with self._lock:
            if time.monotonic() - self._swept < SWEEP_EVERY_S or full_after_s <= 0:
                return
            self._swept = time.monotonic()
        self._db.run(
            lambda c: c.execute(
                "DELETE FROM rate_buckets WHERE updated < clock_timestamp() - make_interval("
                "secs => %s)",
                (full_after_s,),
            ),
            tiers=(),
        )
