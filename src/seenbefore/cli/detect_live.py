"""`seenbefore detect --prometheus`: a saved ``query_range`` JSON file, or a live server read over
``--since`` at ``--step``, its window bounded before any request is sent (at most a year back, a
step from 1 ms to the whole window, at most MAX_LIVE_POINTS points per series)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from seenbefore.detection.telemetry import Telemetry, read_prometheus
from seenbefore.errors import InputError

MAX_SINCE = dt.timedelta(days=365)  # how far back `--prometheus URL` reads
MAX_LIVE_POINTS = 100_000  # points per series a live read may bring (--since / --step)


@dataclass(frozen=True)
class LiveQuery:
    """``--prometheus URL`` with ``--query``, ``--since`` and ``--step``."""

    query: str | None = None
    since: str = "6h"
    step: str = "60s"


def read_prometheus_source(source: str, live: LiveQuery) -> Telemetry:
    """A live server when ``source`` is an http(s) URL, else a saved query_range JSON file."""
    if not source.startswith(("http://", "https://")):
        if live.query:
            raise InputError(
                f"--query needs --prometheus to be a server URL (http://...), got {source!r}"
            )
        return read_prometheus(Path(source))
    if not live.query:
        raise InputError(
            f"--prometheus {source} is a server: give --query with a PromQL expression "
            "(and optionally --since 6h --step 60s)"
        )
    from seenbefore.detection.prometheus_live import query_range

    since, step = _window(live)
    return query_range(source, live.query, since=since, step=step)


def _window(live: LiveQuery) -> tuple[dt.timedelta, dt.timedelta]:
    """``--since`` and ``--step`` as durations, bounded before any request: at most a year
    back, a step of 1 ms or more that fits in the window, at most MAX_LIVE_POINTS points."""
    since, step = _parse(live.since, "--since"), _parse(live.step, "--step")
    if since is None or since > MAX_SINCE:
        raise InputError(
            f"--since is {live.since!r}; read at most {MAX_SINCE.days}d back, e.g. --since 6h"
        )
    if step is None or step.total_seconds() < 0.001 or step > since:
        raise InputError(
            f"--step is {live.step!r}; give a step from 1ms to --since ({live.since}), e.g. 60s"
        )
    points = since / step
    if points > MAX_LIVE_POINTS:
        raise InputError(
            f"--since {live.since} at --step {live.step} is {points:,.0f} points per series, "
            f"over the limit of {MAX_LIVE_POINTS:,}; give a longer --step or a shorter --since"
        )
    return since, step


def _parse(text: str, name: str) -> dt.timedelta | None:
    """The duration, or None when it is too long for a timedelta (``99999999999999d``)."""
    from seenbefore.detection.prometheus_live import parse_duration

    try:
        return parse_duration(text, name)
    except OverflowError:
        return None
