"""`seenbefore nab`: run the streaming ensemble over NAB with progress, then the scores per
category and overall under NAB's three profiles, beside the published scoreboard."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from seenbefore.cli.common import console, print_json
from seenbefore.cli.progress import progress_bar
from seenbefore.detection.ensemble import DEFAULT_PARAMS, EVENT_PARAMS
from seenbefore.lab.nab import (
    SCOREBOARD_ALL58,
    NabReport,
    ScopeScore,
    data_files,
    nab_stream,
    read_windows,
    run_nab,
    score_scopes,
)
from seenbefore.lab.nab_scoring import PROFILES

DETECTOR = "seenbefore"
NOTE = (
    "Scores are NAB-normalised (0 = never detect, 100 = every window at its first row); each "
    "scope's threshold is optimised by NAB's optimiser on that scope's files, as NAB does, so "
    "a score is an upper bound for a fixed threshold. The published figures are on all 58 "
    "NAB files; {scope}"
)


def _note(n: int) -> str:
    scope = (
        "this run scored 58 too."
        if n == 58
        else f"this run scored {n}, so the two are not the same test."
    )
    return NOTE.format(scope=scope)


def _scopes_json(scopes: dict[str, dict[str, ScopeScore]]) -> dict[str, Any]:
    return {
        scope: {
            name: {
                "normalised": s.normalised,
                "threshold": s.threshold,
                "raw_score": s.raw_score,
                "false_positives": s.false_positives,
                "windows": s.windows,
                "windows_detected": s.windows_detected,
                "files": s.files,
            }
            for name, s in by_profile.items()
        }
        for scope, by_profile in scopes.items()
    }


def run_and_show(
    data: Path, labels: Path, out: Path, *, as_json: bool, events: bool = False
) -> None:
    """Score the shipped configuration (with ``events``: the stream events are built from,
    ``EVENT_PARAMS``) on every labelled file under ``data``."""
    params = EVENT_PARAMS if events else DEFAULT_PARAMS
    started = time.perf_counter()
    chosen = data_files(data, read_windows(labels))
    total = len(chosen)
    unlabelled = sum(1 for _ in data.rglob("*.csv")) - total
    columns = (
        TextColumn("[bold]NAB[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
    )
    with progress_bar(disable=as_json, columns=columns, transient=False) as progress:
        task = progress.add_task("reading the labels", total=total)

        def on_file(rel: str, what: str) -> None:
            if what == "start":
                progress.update(task, description=rel)
            else:
                progress.advance(task)

        report = run_nab(
            data, labels, out, nab_stream(**params), DETECTOR, repair=True, on_file=on_file
        )
        progress.update(task, description="scoring (NAB's threshold optimiser, 3 profiles)")
        scopes = score_scopes(report.scored, list(PROFILES.values()))
    seconds = time.perf_counter() - started
    points = sum(len(f.timestamps) for f in report.scored)
    if as_json:
        flag = " --events" if events else ""
        command = f"seenbefore nab --data {data} --labels {labels} --out {out}{flag} --json"
        payload = _payload(report, scopes, seconds, points, params)
        print_json({"command": command, **payload, "unlabelled_files": unlabelled})
        return
    for rel, what in report.repairs:
        console.print(f"[yellow]warning[/] {rel}: {what}", highlight=False)
    for rel, why in report.skipped:
        console.print(f"[red]skipped[/] {rel}: {why}", highlight=False)
    if unlabelled:
        console.print(
            f"[yellow]warning[/] {unlabelled} CSV files under {data} have no entry in "
            f"{labels}; not run"
        )
    table = Table(title=f"NAB, {len(report.scored)} files: {DETECTOR} streaming ensemble")
    table.add_column("scope", no_wrap=True)
    for col in ("files", "standard", "low FP", "low FN", "FP (std)"):
        table.add_column(col, justify="right")
    for scope, by_profile in scopes.items():
        cells = [_cell(by_profile[name]) for name in PROFILES]
        std = by_profile["standard"]
        style = "bold" if scope == "all" else ""
        table.add_row(
            f"[{style}]{scope}[/]" if style else scope,
            str(std.files),
            *cells,
            str(std.false_positives),
        )
    console.print(table)
    if any(by["standard"].normalised is None for by in scopes.values()):
        console.print("n/a: a scope without label windows; only its false positives count")
    board = Table(title="published NAB scoreboard, standard profile, all 58 files")
    board.add_column("detector")
    board.add_column("standard", justify="right")
    ours = scopes["all"]["standard"].normalised
    board.add_row(f"[bold]{DETECTOR} (this run, {len(report.scored)} files)[/]", _fmt(ours))
    for name, score in SCOREBOARD_ALL58.items():
        board.add_row(name, f"{score:.1f}")
    console.print(board)
    console.print(_note(len(report.scored)), style="dim")
    console.print(
        f"{points} points in {seconds:.0f} s; result files under {out}/{DETECTOR}/ "
        f"({len(report.skipped)} files skipped, {len(report.repairs)} with warnings)"
    )


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}"


def _cell(s: ScopeScore) -> str:
    return "n/a" if s.normalised is None else f"{s.normalised:.1f}"


def _payload(
    report: NabReport,
    scopes: dict[str, dict[str, ScopeScore]],
    seconds: float,
    points: int,
    params: dict[str, Any],
) -> dict[str, Any]:
    return {
        "detector": DETECTOR,
        "params": params,
        "files": len(report.scored),
        "points": points,
        "seconds": round(seconds, 1),
        "normalised_score": scopes["all"]["standard"].normalised,
        "threshold": scopes["all"]["standard"].threshold,
        "scopes": _scopes_json(scopes),
        "per_file": {f.relative_path: f.normalised for f in report.files},
        "repairs": dict(report.repairs),
        "skipped": dict(report.skipped),
        "scoreboard_all58": SCOREBOARD_ALL58,
        "note": _note(len(report.scored)),
    }
