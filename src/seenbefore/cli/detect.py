"""`seenbefore detect`, `seenbefore watch` and `seenbefore nab`."""

from __future__ import annotations

import datetime as dt
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Group
from rich.live import Live
from rich.panel import Panel
from rich.table import Table

from seenbefore.cli.common import console, counted, indented, notify_router, print_json, settings
from seenbefore.cli.detect_live import LiveQuery, LiveRead, read_prometheus_source
from seenbefore.detection.pipeline import DetectionParams, DetectionReport, detect, report_json
from seenbefore.detection.rules import load_rules
from seenbefore.detection.service_ensemble import DEFAULT_LEARNING
from seenbefore.detection.telemetry import Telemetry, read_csv
from seenbefore.errors import InputError
from seenbefore.lab.simbounds import MAX_HOURS, MAX_SEED
from seenbefore.lab.simulator import SCENARIOS, simulate
from seenbefore.limits import check_range
from seenbefore.types import SEVERITIES

SPARK = "▁▂▃▄▅▆▇█"
SEVERITY_STYLE = {"SEV1": "bold red", "SEV2": "red", "SEV3": "yellow", "SEV4": "dim"}
TRAIN_HOURS = 24  # a simulated run's first hours: clean history the detector learns from
MIN_HOURS = TRAIN_HOURS + 1  # and at least one hour to score
MAX_LEARNING = 100_000  # points: --learning
MAX_SPEED = 10_000  # simulated minutes per second in `watch` (two weeks play in half a minute)


def _telemetry(
    scenario: list[str] | None,
    hours: float,
    seed: int,
    csv: Path | None,
    prometheus: str | None,
    live: LiveQuery | None = None,
) -> tuple[Telemetry, int, dt.datetime | None]:
    """The telemetry, the points the Isolation Forest trains on, and (``--prometheus URL``) the
    instant from which anomalies are reported: before it is history learned from."""
    if csv and prometheus:
        raise InputError("give --csv or --prometheus, not both")
    if not prometheus and live is not None and live.history is not None:
        raise InputError(
            f"--history {live.history} reads a Prometheus server's history: it needs "
            "--prometheus URL (a CSV is read as it is: put the day before in the file; the "
            f"simulator learns from its first {TRAIN_HOURS} hours)"
        )
    if csv or prometheus:
        read = (
            LiveRead(read_csv(csv))
            if csv
            else read_prometheus_source(prometheus or "", live or LiveQuery())
        )
        n = len(read.telemetry.timestamps)
        return read.telemetry, max(30, int(0.3 * n)), read.report_from
    check_range(
        "--hours",
        hours,
        MIN_HOURS,
        MAX_HOURS,
        what="a number of hours",
        why=f"the first {TRAIN_HOURS} train the detector and at least one more is scored; "
        f"at most {MAX_HOURS // 24} days of one-minute points",
    )
    check_range("--seed", seed, 0, MAX_SEED, what="a whole number")
    names = list(SCENARIOS) if scenario in (None, []) or scenario == ["all"] else scenario
    simulated = simulate(scenarios=names, hours=hours, seed=seed, warmup_hours=TRAIN_HOURS)
    return simulated, TRAIN_HOURS * 60, None


def detect_command(
    scenario: Annotated[
        list[str] | None, typer.Option(help=f"all or any of: {', '.join(SCENARIOS)}")
    ] = None,
    hours: Annotated[
        float,
        typer.Option(help=f"hours to simulate, {MIN_HOURS} to {MAX_HOURS} (the first 24 train)"),
    ] = 48.0,
    seed: Annotated[int, typer.Option(help=f"simulation seed, 0 to {MAX_SEED}")] = 0,
    csv: Annotated[Path | None, typer.Option(help="read metrics from a CSV instead")] = None,
    prometheus: Annotated[
        str | None,
        typer.Option(help="a saved query_range JSON file, or a live server URL (with --query)"),
    ] = None,
    query: Annotated[
        str | None, typer.Option(help="PromQL for --prometheus URL, e.g. 'up'")
    ] = None,
    since: Annotated[
        str, typer.Option(help="how far back to read from --prometheus URL (30m, 6h, 2d)")
    ] = "6h",
    step: Annotated[str, typer.Option(help="resolution for --prometheus URL (15s, 60s)")] = "60s",
    history: Annotated[
        str | None,
        typer.Option(
            help="--prometheus URL: also read this far before --since and learn from it, so a "
            "daily cycle has been seen (default 1d; 0: none); what it confirms there is listed, "
            "not reported, unless it still lasts"
        ),
    ] = None,
    rules: Annotated[
        Path | None, typer.Option(help="rules YAML (default: the packaged rules)")
    ] = None,
    notify: Annotated[
        bool, typer.Option(help="route anomalies by severity (the \\[notify] config)")
    ] = False,
    investigate: Annotated[
        bool, typer.Option(help="draft a hypothesis for each anomaly from the knowledge base")
    ] = False,
    detector: Annotated[
        str | None,
        typer.Option(
            help="ensemble (the NAB-scored streaming ensemble, the default) or iforest "
            "(the multivariate Isolation Forest)"
        ),
    ] = None,
    learning: Annotated[
        int | None,
        typer.Option(
            help=f"--csv/--prometheus: learning period, points (default {DEFAULT_LEARNING})"
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Detect anomalies in simulated telemetry or your own (--csv, --prometheus) and triage
    them; the simulator's are checked against the incidents it injected."""
    if learning is not None and not 10 <= learning <= MAX_LEARNING:
        raise InputError(f"--learning is {learning}; give 10 to {MAX_LEARNING:,} points")
    if detector not in (None, "ensemble", "iforest"):
        raise InputError(f"--detector is {detector!r}; use ensemble or iforest")
    live = LiveQuery(query=query, since=since, step=step, history=history, learning=learning)
    telemetry, train, report_from = _telemetry(scenario, hours, seed, csv, prometheus, live)
    chosen = detector or "ensemble"
    simulated = not (csv or prometheus)  # the simulator's first hours are clean history
    with console.status("fitting and scoring", spinner="dots") if not as_json else nullcontext():
        report = detect(
            telemetry,
            params=DetectionParams(
                train_minutes=train,
                detector=chosen,
                probation=train if simulated else learning,
                report_from=report_from,
            ),
            rules=load_rules(rules),
        )
    drafts = _investigate(report, telemetry) if investigate else {}
    routed = _route(report, drafts) if notify else {}
    if as_json:
        print_json(
            {
                **report_json(report),
                "routed": routed,
                "drafts": {k: d.model_dump(mode="json") for k, d in drafts.items()},
            }
        )
        return
    dups, flapping = report.merged, len(report.triage.suppressed)
    console.print(
        f"[bold]{counted(len(report.anomalies), 'anomaly', 'anomalies')}[/] "
        f"({counted(dups, 'duplicate', 'duplicates')} merged, {flapping} suppressed as flapping)"
    )
    _say_detector(report.detector)
    _say_history(report, since)
    for a in sorted(report.anomalies, key=lambda a: (a.severity or "SEV5", a.start)):
        # user data has no truth to check against: the line only for simulated incidents
        truth = f"  truth: {report.matches.get(a.id) or '[red]false alarm[/]'}" if simulated else ""
        console.print(
            f"[{SEVERITY_STYLE.get(a.severity or '', '')}]{a.severity}[/] {a.start:%m-%d %H:%M} "
            f"score {a.score:.2f}{truth}  rules: {', '.join(a.rules) or '-'}"
        )
        console.print(indented(report.signatures[a.id]), soft_wrap=True)
        if not simulated and not report.day_checked(a):
            console.print(
                indented(
                    "(no day of this series before it: not compared with the same time a day "
                    "earlier, so a daily cycle's swing can look like this; a series a day "
                    "longer lets the rule check)",
                    style="dim",
                ),
                soft_wrap=True,
            )
        if a.id in drafts:
            from seenbefore.cli.investigate import render_draft

            render_draft(drafts[a.id])
    _say_unconfirmed(report.detector.get("unconfirmed", []))
    precision, recall = report.precision_recall()
    if precision is not None:
        console.print(
            f"event-level precision {precision:.2f}, recall {recall:.2f} over "
            f"{len(report.truth)} injected incidents"
        )
    if notify:
        nothing = "nothing (no \\[notify] configuration)"  # escaped: not Rich markup
        console.print(f"routed: {routed or nothing}")


SHOWN_FIRES = 10  # unconfirmed fires printed in full; --json lists them all


def _say_unconfirmed(fires: list[dict[str, Any]]) -> None:
    """Each fire that did not become an anomaly, with why (the first ``SHOWN_FIRES``)."""
    if not fires:
        return
    console.print(
        f"{counted(len(fires), 'fire', 'fires')} of the detector not confirmed as anomalies:",
        highlight=False,
    )
    for fire in fires[:SHOWN_FIRES]:
        start = dt.datetime.fromisoformat(fire["start"])
        console.print(
            indented(
                f"{start:%m-%d %H:%M:%S} {fire['service']} score {fire['score']:.2f}: {fire['why']}"
            ),
            soft_wrap=True,
        )
    if len(fires) > SHOWN_FIRES:
        console.print(f"     ... and {len(fires) - SHOWN_FIRES} more (--json lists them all)")


def _say_history(report: DetectionReport, since: str) -> None:
    """``--prometheus URL``: the history read before ``--since``, and what it held."""
    told = report.detector.get("history")
    if not told:
        return
    read_from = dt.datetime.fromisoformat(told["read_from"]) if told["read_from"] else None
    console.print(
        f"[dim]history: {told['points']:,} points a series learned from before the last {since}"
        + (f" (from {read_from:%m-%d %H:%M})" if read_from else "")
        + f"; reported: what is confirmed in the last {since}, or still lasts[/]",
        highlight=False,
    )
    for a in report.history:
        console.print(
            indented(
                f"in the history learned from (before the last {since}; not routed): "
                f"{a.start:%m-%d %H:%M} {report.signatures[a.id]}"
            ),
            soft_wrap=True,
        )


def _say_detector(ran: dict[str, Any]) -> None:
    from seenbefore.detection.service_ensemble import duration_text, learning_text

    name = {"ensemble": "streaming ensemble (per metric: range, sequence likelihood, ARTime; max)"}
    learn = ran.get("learning_period", {})
    points = int(learn.get("points", 0))
    learned = int(learn.get("learned", points))
    step = learn.get("seconds", 0) / points if points else 0
    progress = (
        f"; {learning_text(learned, points, step or None)}: nothing can open yet"
        if learned < points
        else ""
    )
    until = learn.get("until")
    ends = f", until {dt.datetime.fromisoformat(until):%m-%d %H:%M:%S}" if until else ""
    console.print(
        f"[dim]detector: {name.get(ran.get('name', ''), 'Isolation Forest')}; learning period "
        f"{points} points ({duration_text(learn.get('seconds', 0))}{ends}): "
        f"{learn.get('note', '')}{progress}[/]",
        highlight=False,
    )


def _route(report: DetectionReport, drafts: dict[str, Any]) -> dict[str, list[str]]:
    """Route each anomaly by severity; its draft, when there is one, follows it."""
    router = notify_router()
    if router is None:
        return {}
    routed: dict[str, list[str]] = {}
    with router:
        for a in report.anomalies:
            results = router.notify(a, report.signatures[a.id])
            routed[a.id] = [f"{ch}:{'ok' if r.ok else 'queued'}" for ch, r in results.items()]
            if a.id in drafts:
                follow = router.notify_draft(
                    a, report.signatures[a.id], drafts[a.id].model_dump(mode="json")
                )
                routed[a.id] += [
                    f"{ch} draft:{'ok' if r.ok else 'queued'}" for ch, r in follow.items()
                ]
    return routed


def _investigate(report: DetectionReport, telemetry: Telemetry) -> dict[str, Any]:
    from seenbefore.cli.common import caller_tiers, open_kb
    from seenbefore.detection.pipeline import capacity_of
    from seenbefore.investigation.factory import make_reporter, make_rewriter
    from seenbefore.investigation.investigator import Investigator
    from seenbefore.investigation.query import from_anomaly

    cfg = settings()
    drafts: dict[str, Any] = {}
    with open_kb(cfg) as kb:
        investigator = Investigator(kb, tiers=caller_tiers(None, cfg), rewriter=make_rewriter(cfg))
        reporter = make_reporter(cfg)
        for a in report.anomalies:
            request = from_anomaly(a, capacity_of(telemetry, a.service))
            drafts[a.id] = reporter.draft(investigator.investigate(request))
    return drafts


def _spark(values: Any) -> str:
    lo, hi = float(min(values)), float(max(values))
    span = (hi - lo) or 1.0
    return "".join(SPARK[min(7, int((v - lo) / span * 7.999))] for v in values)


def watch(
    scenario: Annotated[list[str] | None, typer.Option(help="scenario(s) to inject")] = None,
    speed: Annotated[
        float, typer.Option(help=f"simulated minutes per second, 1 to {MAX_SPEED:,}")
    ] = 60.0,
    hours: Annotated[
        float,
        typer.Option(help=f"hours to simulate, {MIN_HOURS} to {MAX_HOURS} (the first 24: history)"),
    ] = 30.0,
    seed: Annotated[int, typer.Option(help=f"simulation seed, 0 to {MAX_SEED}")] = 0,
    notify: Annotated[bool, typer.Option(help="route anomalies as they open")] = False,
    prometheus: Annotated[
        str | None, typer.Option(help="watch a live server (URL) instead of the simulator")
    ] = None,
    query: Annotated[list[str] | None, typer.Option(help="PromQL for --prometheus")] = None,
    interval: Annotated[str, typer.Option(help="--prometheus: time between polls")] = "60s",
    step: Annotated[
        str | None,
        typer.Option(help="--prometheus: resolution of the series (default: --interval)"),
    ] = None,
    since: Annotated[
        str,
        typer.Option(help="--prometheus: what the first poll reports (it learns --history before)"),
    ] = "1h",
    history: Annotated[
        str | None,
        typer.Option(
            help="--prometheus: what the first poll learns from before --since (default 1d; "
            "0: none)"
        ),
    ] = None,
    lag: Annotated[str, typer.Option(help="--prometheus: stay this far behind now")] = "10s",
    learning: Annotated[
        int | None,
        typer.Option(help=f"--prometheus: learning period, points (default {DEFAULT_LEARNING})"),
    ] = None,
    state: Annotated[
        Path | None,
        typer.Option(
            help="--prometheus: state file, gzip-compressed JSON (<home>/watch/state.json)"
        ),
    ] = None,
    once: Annotated[bool, typer.Option(help="--prometheus: poll once and exit")] = False,
    investigate: Annotated[bool, typer.Option(help="--prometheus: draft a hypothesis")] = False,
) -> None:
    """A live terminal view: services, key metrics, anomalies by severity, what was routed
    (the simulator; with --prometheus URL --query Q, a live server through the streaming ensemble)."""
    if prometheus:
        from seenbefore.cli.watch_live import LiveWatch, watch_prometheus

        given = (interval, step, since, lag, learning, state, once, notify, investigate)
        return watch_prometheus(LiveWatch(prometheus, tuple(query or ()), *given, history))
    if history is not None:
        raise InputError(
            f"--history {history} reads a Prometheus server's history: it needs --prometheus "
            "URL; the simulator learns from its first 24 hours"
        )
    check_range("--speed", speed, 1, MAX_SPEED, what="a number of simulated minutes per second")
    telemetry, train, _ = _telemetry(scenario or ["memory_leak"], hours, seed, None, None)
    with console.status("learning the first 24 hours of telemetry"):
        report = detect(telemetry, params=DetectionParams(train_minutes=train, probation=train))
    router = notify_router() if notify else None
    routed: list[str] = []
    opened: set[str] = set()
    minute, last = train, len(telemetry.timestamps) - 1
    stride = max(1, int(speed / 4))
    try:
        with Live(console=console, refresh_per_second=4, transient=False) as live:
            while minute <= last:
                now = telemetry.timestamps[minute]
                for a in report.anomalies:
                    if a.start <= now and a.id not in opened:
                        opened.add(a.id)
                        target = "not routed (use --notify)"
                        if router is not None:
                            results = router.notify(a, report.signatures[a.id])
                            target = (
                                ", ".join(
                                    f"{c}:{'ok' if r.ok else 'queued'}" for c, r in results.items()
                                )
                                or "no route"
                            )
                        routed.append(f"{now:%H:%M} {a.severity} {a.service} -> {target}")
                live.update(_frame(telemetry, report, minute, opened, routed))
                if minute == last:
                    break
                # a stride past the end still shows the last minute: at --speed 2000 a 30-hour
                # run stepped from 24:00 past its end and opened none of its anomalies
                minute = min(last, minute + stride)
                time.sleep(0.25)
    except KeyboardInterrupt:
        console.print("[dim]stopped[/]")
    finally:
        if router is not None:
            router.close()
    if not console.is_terminal:
        console.line()  # off a terminal Live's last frame ends without a line break
    console.print(
        f"{counted(len(opened), 'anomaly', 'anomalies')} opened; {len(routed)} routing decisions"
    )


WIDE_FRAME = 110  # columns from which the watch frame shows where and the last hour's p99


def _frame(
    t: Telemetry, report: DetectionReport, minute: int, opened: set[str], routed: list[str]
) -> Group:
    now = t.timestamps[minute]
    # the service's name whole; where it runs and the last hour's p99 only where the terminal
    # has room for them (at 80 columns every name was cut: "notificat…", "payments-…")
    wide = console.width >= WIDE_FRAME
    named = max(map(len, t.series), default=7)
    places = max((len(f"{v.cloud}/{v.region}") for v in t.services.values()), default=5)
    # the last hour's p99, a character a minute, in what the other columns leave
    spark = max(10, min(61, console.width - named - places - 4 * 6 - 5 - 3 * 8 - 1))
    services = Table(title=f"services at {now:%Y-%m-%d %H:%M} UTC", expand=True)
    services.add_column("service", no_wrap=True, min_width=named)
    if wide:
        services.add_column("where", no_wrap=True, min_width=places)
    for col in ("cpu %", "mem %", "err %", "p99 ms"):
        services.add_column(col, no_wrap=True)
    if wide:
        services.add_column("p99, last hour" if spark >= 61 else f"p99, last {spark} min")
    services.add_column("score", no_wrap=True)
    for name in sorted(t.series):
        s, spec = t.series[name], t.services[name]
        start = max(0, minute + 1 - spark)
        score = float(report.scores[name][minute])
        figures = [
            f"{s['cpu_utilization'][minute]:.0f}",
            f"{s['memory_utilization'][minute]:.0f}",
            f"{s['error_rate'][minute]:.1f}",
            f"{s['p99_latency'][minute]:.0f}",
        ]
        services.add_row(
            name,
            *([f"{spec.cloud}/{spec.region}"] if wide else []),
            *figures,
            *([_spark(s["p99_latency"][start : minute + 1])] if wide else []),
            f"[{'red' if score >= 0.5 else 'green'}]{score:.2f}[/]",
        )
    active = Table(title="anomalies by severity", expand=True)
    for col in ("sev", "since", "signature"):
        active.add_column(col, overflow="fold")
    shown = [a for a in report.anomalies if a.id in opened]
    for a in sorted(
        shown, key=lambda a: (SEVERITIES.index(a.severity) if a.severity else 9, a.start)
    ):
        live_now = a.end >= now - dt.timedelta(minutes=1)
        active.add_row(
            f"[{SEVERITY_STYLE.get(a.severity or '', '')}]{a.severity}[/]",
            f"{a.start:%H:%M}{'' if live_now else ' (over)'}",
            report.signatures[a.id],
        )
    return Group(
        services, active, Panel("\n".join(routed[-6:]) or "nothing routed yet", title="routing")
    )


def nab(
    data: Annotated[Path, typer.Option(help="NAB data directory (…/nab/data)")],
    labels: Annotated[Path, typer.Option(help="combined_windows.json")],
    out: Annotated[
        Path, typer.Option(help="where NAB-format result files go (for NAB's own scorer)")
    ] = Path("nab-results"),
    events: Annotated[
        bool,
        typer.Option(
            "--events",
            help="score the stream detect and watch build events from (no rest after a fire)",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Stream every labelled NAB file under --data through the detector ensemble and score
    it per category and overall with NAB's three profiles."""
    from seenbefore.cli.nab_view import run_and_show

    run_and_show(data, labels, out, as_json=as_json, events=events)
