"""`seenbefore detect --prometheus`: a saved ``query_range`` JSON file, or a live server read over
``--since`` at ``--step``, its window bounded before any request is sent (at most a year back, a
step from 1 ms to the whole window, at most MAX_LIVE_POINTS points per series).

A live server is also read ``--history`` before ``--since`` (a day by default, at most
``live_watch.MAX_HISTORY_POINTS`` steps, or the learning period if longer; ``--history 0``: none,
``--since`` alone as before): the detector learns from it, so a daily cycle has been seen a whole day
before the first point reported and its rise in the afternoon is no anomaly. What is confirmed
in the history is listed apart (:attr:`DetectionReport.history`), unless it still lasts at the
last point, as ``watch``'s first poll splits its backfill."""

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
    history: str | None = None  # learned from before --since (None: a day; "0": none)
    learning: int | None = None  # points (None: the detector's default)


@dataclass(frozen=True)
class LiveRead:
    """What a ``--prometheus`` source gave: the telemetry, and for a live server the instant
    from which anomalies are reported (None: all of it, a saved file)."""

    telemetry: Telemetry
    report_from: dt.datetime | None = None


def read_prometheus_source(source: str, live: LiveQuery) -> LiveRead:
    """A live server when ``source`` is an http(s) URL (read ``--history`` before ``--since``),
    else a saved query_range JSON file."""
    if not source.startswith(("http://", "https://")):
        if live.history is not None:
            raise InputError(
                f"--history {live.history} reads a server's history: it needs --prometheus to be "
                f"a server URL (http://...), got {source!r}; a saved file is read as it is"
            )
        if live.query:
            raise InputError(
                f"--query needs --prometheus to be a server URL (http://...), got {source!r}"
            )
        return LiveRead(read_prometheus(Path(source)))
    if not live.query:
        raise InputError(
            f"--prometheus {source} is a server: give --query with a PromQL expression "
            "(and optionally --since 6h --step 60s)"
        )
    from seenbefore.detection.live_watch import history_read
    from seenbefore.detection.prometheus_live import query_range
    from seenbefore.detection.service_ensemble import DEFAULT_LEARNING

    since, step = _window(live)
    learning = live.learning if live.learning is not None else DEFAULT_LEARNING
    end = dt.datetime.now(dt.UTC)
    # a day (at most MAX_HISTORY_POINTS steps), or the learning period if longer; 0: none; all
    # of it within MAX_LIVE_POINTS a series
    before = history_read(parse_history(live.history), step, learning)
    read = since + max(dt.timedelta(0), min(before, step * MAX_LIVE_POINTS - since))
    telemetry = query_range(source, live.query, since=read, step=step, end=end)
    return LiveRead(telemetry, end - since if read > since else None)


def parse_history(history: str | None) -> dt.timedelta:
    """``--history`` (``detect --prometheus URL``, ``watch --prometheus URL``): a duration up to
    a year, or 0 for none (not given: a day)."""
    given = "1d" if history is None else history
    text = given.strip()
    if text in ("0", "0s", "0m", "0h", "0d"):
        return dt.timedelta(0)
    hint = f"learn from at most {MAX_SINCE.days}d before --since, e.g. --history 1d (0: none)"
    try:
        found = _parse(text, "--history")
    except InputError:
        raise InputError(f"--history is {given!r}; give a duration: {hint}") from None
    if found is None or found > MAX_SINCE:
        raise InputError(f"--history is {given!r}; {hint}")
    return found


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
