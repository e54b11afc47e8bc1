"""`seenbefore watch --prometheus URL --query Q`: poll, score each new point, triage, investigate
and route what is confirmed; the state is saved after every poll (detection/live_watch.py says
what is kept and the confirmation rule)."""

from __future__ import annotations

import datetime as dt
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Group
from rich.live import Live
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from seenbefore.cli.common import console, counted, notify_router, settings
from seenbefore.cli.detect_live import parse_history
from seenbefore.detection.live_watch import (
    PollResult,
    Watcher,
    WatchSettings,
    load_state,
    prometheus_reader,
    save_state,
)
from seenbefore.detection.prometheus_live import parse_duration
from seenbefore.detection.service_ensemble import duration_text, learning_text
from seenbefore.detection.signature import render_signature
from seenbefore.detection.triage import Triage
from seenbefore.errors import InputError
from seenbefore.types import Anomaly

MAX_LEARNING = 100_000


@dataclass(frozen=True)
class LiveWatch:
    """The options of `watch --prometheus URL`."""

    url: str
    queries: tuple[str, ...]
    interval: str = "60s"
    step: str | None = None  # None: the same as --interval
    since: str = "1h"
    lag: str = "10s"
    learning: int | None = None
    state: Path | None = None
    once: bool = False
    notify: bool = False
    investigate: bool = False
    history: str | None = None  # learned from before --since (None: a day; "0": none)


def watch_prometheus(opts: LiveWatch) -> None:
    if not opts.url.startswith(("http://", "https://")):
        raise InputError(f"watch --prometheus needs a server URL (http://...), got {opts.url!r}")
    if not opts.queries or not all(q.strip() for q in opts.queries):
        raise InputError("watch --prometheus needs --query with a PromQL expression, e.g. 'up'")
    if opts.learning is not None and not 10 <= opts.learning <= MAX_LEARNING:
        raise InputError(f"--learning is {opts.learning}; give 10 to {MAX_LEARNING:,} points")
    interval = parse_duration(opts.interval, "--interval")
    step = interval if opts.step is None else parse_duration(opts.step, "--step")
    ws = WatchSettings(
        url=opts.url,
        queries=tuple(opts.queries),
        step=step,
        since=parse_duration(opts.since, "--since"),
        lag=parse_duration(opts.lag, "--lag"),
        learning=opts.learning,
        history=parse_history(opts.history),
    )
    if ws.backfill / ws.step > 100_000:
        given = f"--since {opts.since}" + (f" and --history {opts.history}" if opts.history else "")
        raise InputError(
            f"{given} at a step of {duration_text(step.total_seconds())} is "
            f"{ws.backfill / ws.step:,.0f} points per series to backfill, over 100,000; give a "
            "shorter --since or --history, or a longer --step"
        )
    path = opts.state or settings().home / "watch" / "state.json"
    reader = prometheus_reader(ws.url)
    saved = load_state(path)
    watcher = Watcher.from_state(saved, ws, reader) if saved else Watcher(ws, reader)
    step_s = step.total_seconds()
    learn_span = duration_text(ws.learning_points * step_s)
    console.print(
        f"[dim]detector: streaming ensemble per series (range, sequence likelihood, ARTime), "
        f"learning period {ws.learning_points} points ({learn_span} at a "
        f"{duration_text(step_s)} step); "
        + (
            f"state {path} (resumed, {len(watcher.series)} series)"
            if saved
            else f"the first poll backfills {duration_text(ws.backfill.total_seconds())} from "
            f"Prometheus, {ws.backfill / ws.step:,.0f} points a series scored before it reports "
            + (
                f"(the last {opts.since} and {duration_text((ws.backfill - ws.since).total_seconds())} "
                "before it, learned from: a day's cycle is learned, not reported; what it "
                f"confirms before the last {opts.since} is listed, not routed, unless it still "
                "lasts)"
                if ws.backfill > ws.since
                else f"(the last {opts.since}, no history before it)"
            )
            + f"; state {path} (new)"
        )
        + "[/]",
        highlight=False,
    )
    view = _View(watcher, path)
    with ExitStack() as stack:
        found = notify_router() if opts.notify else None
        router = stack.enter_context(found) if found is not None else None
        investigate = _investigator(stack) if opts.investigate else None
        live = None
        if console.is_terminal and not opts.once:
            live = stack.enter_context(Live(console=console, refresh_per_second=2))
        # dedupe and flapping memory survive a restart with the detectors' state
        triage = Triage.from_state((saved or {}).get("triage"))
        try:
            while True:
                polled = watcher.poll()
                kept = triage.process(polled.anomalies).kept
                # after every poll, before acting on it: a restart never reports twice
                view.saved = save_state(path, {**watcher.to_state(), "triage": triage.to_state()})
                for anomaly in polled.history:
                    view.lines.append(
                        f"in the history learned from (before the last {opts.since}; not "
                        f"routed): {anomaly.start:%Y-%m-%d %H:%M:%S} {render_signature(anomaly)}"
                    )
                if polled.history_fires:
                    n = polled.history_fires
                    view.lines.append(
                        f"{n} unconfirmed fire{'s' if n != 1 else ''} in the history learned "
                        f"from (before the last {opts.since}; not listed)"
                    )
                for anomaly in kept:
                    view.lines.append(_handle(anomaly, router, investigate))
                for fire in polled.unconfirmed:
                    view.lines.append(
                        f"unconfirmed fire {fire.start:%Y-%m-%d %H:%M:%S} {fire.series} "
                        f"(score {fire.score:.2f}): {fire.why}"
                    )
                view.add(polled)
                if live is not None:
                    live.update(view.frame())
                else:
                    view.plain(polled)
                if opts.once:
                    break
                time.sleep(interval.total_seconds())
        except KeyboardInterrupt:
            # a poll cut short is not saved: the file holds the last whole poll
            console.print(f"[dim]stopped; state as of poll {watcher.polls} is in {path}[/]")
    view.summary()


def _investigator(stack: ExitStack) -> Any:
    from seenbefore.cli.common import caller_tiers, open_kb
    from seenbefore.investigation.factory import make_reporter, make_rewriter
    from seenbefore.investigation.investigator import Investigator
    from seenbefore.investigation.query import from_anomaly

    cfg = settings()
    kb = stack.enter_context(open_kb(cfg))
    investigator = Investigator(kb, tiers=caller_tiers(None, cfg), rewriter=make_rewriter(cfg))
    reporter = make_reporter(cfg)
    return lambda a: reporter.draft(investigator.investigate(from_anomaly(a, {})))


def _handle(anomaly: Anomaly, router: Any, investigate: Any) -> str:
    signature = render_signature(anomaly)
    line = f"{anomaly.severity} {anomaly.start:%Y-%m-%d %H:%M:%S} {signature}"
    draft = investigate(anomaly) if investigate is not None else None
    if draft is not None:
        line += f"\n     hypothesis: {draft.summary}"
    if router is not None:
        results = router.notify(anomaly, signature)
        if draft is not None:
            results |= router.notify_draft(anomaly, signature, draft.model_dump(mode="json"))
        line += " -> " + (
            ", ".join(f"{c}:{'ok' if r.ok else 'queued'}" for c, r in results.items()) or "no route"
        )
    return line


class _View:
    def __init__(self, watcher: Watcher, path: Path) -> None:
        self.watcher, self.path = watcher, path
        self.lines: list[str] = []
        self.shown = 0
        self.saved = 0
        self.points = 0
        self.seconds = 0.0
        self.history_fires = 0  # unconfirmed fires in this run's backfill (the first poll's)

    def add(self, polled: PollResult) -> None:
        self.points += polled.points
        self.seconds += polled.seconds
        self.history_fires += polled.history_fires

    def per_series(self) -> int:
        return self.saved // max(1, len(self.watcher.series))

    def learning(self) -> str:
        """``learning: 12 of 25 points, 3 min left`` while a series still learns, else ''."""
        progress = self.watcher.learning()
        if progress is None:
            return ""
        step = self.watcher.settings.step.total_seconds()
        return learning_text(progress[0], progress[1], step)

    def stats(self, polled: PollResult) -> str:
        rate = polled.points / polled.seconds if polled.seconds else 0.0
        learning = self.learning()
        return (
            f"poll {self.watcher.polls}: {len(self.watcher.series)} series, {polled.points} new "
            f"points scored in {polled.seconds:.3f} s ({rate:,.0f} points/s); state "
            f"{self.saved:,} bytes ({self.per_series():,} bytes per series)"
            + (f"; {learning}" if learning else "")
        )

    def plain(self, polled: PollResult) -> None:
        console.print(self.stats(polled), highlight=False)
        for line in self.lines[self.shown :]:
            console.print(line, highlight=False, markup=False)
        self.shown = len(self.lines)

    def frame(self) -> Group:
        table = Table(title=f"watching at {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M:%S} UTC")
        # a series' name and labels are one long word: folded, never cut to "queue_depth{inst…"
        table.add_column("series", overflow="fold", min_width=20)
        for col in ("points seen", "last score", "anomalies"):
            table.add_column(col)
        for series in sorted(self.watcher.series.values(), key=lambda s: -s.last_score)[:30]:
            style = "red" if series.last_score >= 0.5 else "green"
            rest = ",".join(f"{k}={v}" for k, v in sorted(series.labels.items()) if k != "__name__")
            table.add_row(
                escape(f"{series.name}{{{rest}}}"),  # a label value may hold "[/]"
                f"{series.seen:,}",
                f"[{style}]{series.last_score:.2f}[/]",
                str(series.anomalies),
            )
        rate = self.points / self.seconds if self.seconds else 0.0
        learning = self.learning()
        footer = (
            f"poll {self.watcher.polls}; {rate:,.0f} points/s scored; state {self.saved:,} bytes "
            f"({self.per_series():,} per series) in {self.path}"
            + (f"\n{learning}" if learning else "")
        )
        shown = Panel(escape("\n".join(self.lines[-8:])) or "no anomaly yet", title="anomalies")
        return Group(table, shown, footer)

    def summary(self) -> None:
        series = self.watcher.series.values()
        rate = self.points / self.seconds if self.seconds else 0.0
        console.print(
            f"{counted(sum(s.anomalies for s in series), 'anomaly', 'anomalies')} over "
            f"{len(series)} series ({self.watcher.unconfirmed_fires()} fires unconfirmed by "
            f"|robust z| >= 4"
            + (
                f", {self.history_fires} of them in the history learned from"
                if self.history_fires
                else ""
            )
            + f", {self.watcher.merged_fires()} merged into a lasting anomaly); "
            f"{self.points:,} points scored this run ({rate:,.0f} points/s); "
            f"{self.per_series():,} bytes of state per series",
            highlight=False,
        )
