"""Bounded work for ``POST /v1/detect``: how many detections run at once, how much memory they
may hold together, and how many investigations one request (and one principal a minute) starts.

**Concurrency and memory.** Each detection reserves its estimated peak memory
(:func:`detect_cost`) before it starts and gives it back when it ends. A request is answered
503 with ``Retry-After`` when ``SEENBEFORE_DETECT_CONCURRENCY`` detections already run, or when
its reservation would take the running total past ``SEENBEFORE_DETECT_MEMORY_MIB``; a request
whose estimate alone is over the budget is refused 400 (sending it again cannot help). Before
this, four concurrent 1 MiB requests added 809 MiB to the server and nothing capped them.

**The estimate** is linear in the points and the cells (points x metrics), fitted above what
``tracemalloc`` measured for the whole route (pydantic parse, telemetry, ensemble, triage) on
this machine: 27 MiB for 2,000 points x 1 metric, 175 MiB for 20,000 x 1, 180 MiB for 20,000 x
3, 36 MiB for 2,000 x 40, 101 MiB for 10,000 x 8 (the ensemble's per-point state dominates;
each further metric costs little). The constants below give 202, 207, 73 and 143 MiB there.

**Investigations.** One request starts at most ``SEENBEFORE_DETECT_MAX_INVESTIGATIONS``
investigations (the first anomalies, by start), and one principal at most
``SEENBEFORE_INVESTIGATIONS_PER_MINUTE`` a minute through this route (a token bucket, shared by
replicas like the request limit); each anomaly past either is answered with the reason it was
skipped. Before this one request queued 300 pending reviews in 15 s. A repeat of an anomaly
that already has an investigation (the same anomaly id and start) costs nothing: it is found,
not started.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from seenbefore.errors import BusyError, InputError

MIB = 1 << 20
BASE_BYTES = 16 * MIB  # the route's fixed cost (the detector's tables, the report)
BYTES_PER_POINT = 9 * 1024  # the ensemble's state per point of one service
BYTES_PER_CELL = 512  # each metric's value at each point, through parse, matrix and scores


def detect_cost(points: int, metrics: int) -> int:
    """Estimated peak bytes of one ``/v1/detect`` request (module docstring)."""
    return BASE_BYTES + points * BYTES_PER_POINT + points * metrics * BYTES_PER_CELL


class WorkBudget:
    """At most ``concurrency`` reservations at once, together at most ``memory_bytes``."""

    def __init__(self, *, concurrency: int, memory_bytes: int) -> None:
        self.concurrency = concurrency
        self.memory_bytes = memory_bytes
        self.running = 0
        self.reserved = 0
        self._lock = threading.Lock()

    @contextmanager
    def reserve(self, cost: int, *, what: str) -> Iterator[None]:
        """Hold ``cost`` bytes (and one slot) while the block runs; BusyError when they are
        not free now, InputError when ``cost`` is over the whole budget."""
        if cost > self.memory_bytes:
            raise InputError(
                f"{what} needs about {cost / MIB:,.0f} MiB, over the server's budget of "
                f"{self.memory_bytes / MIB:,.0f} MiB for detections (SEENBEFORE_DETECT_MEMORY_MIB);"
                " send fewer points or metrics per request (split the series by time)"
            )
        with self._lock:
            full = self.running >= self.concurrency
            if full or self.reserved + cost > self.memory_bytes:
                held = f"{self.reserved / MIB:,.0f} of {self.memory_bytes / MIB:,.0f} MiB held"
                raise BusyError(
                    f"{self.running} detection(s) already running ({held}; at most "
                    f"{self.concurrency} at once, SEENBEFORE_DETECT_CONCURRENCY), and {what} "
                    f"needs about {cost / MIB:,.0f} MiB; retry in a few seconds",
                    retry_after_s=2.0,
                )
            self.running += 1
            self.reserved += cost
        try:
            yield
        finally:
            with self._lock:
                self.running -= 1
                self.reserved -= cost
