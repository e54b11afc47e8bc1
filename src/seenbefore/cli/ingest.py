"""`seenbefore ingest` and `seenbefore quarantine`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.progress import Progress
from rich.table import Table

from seenbefore.cli.common import (
    console,
    err_console,
    open_kb,
    open_store,
    print_json,
    to_the_minute,
)
from seenbefore.cli.progress import LineProgress, progress_bar
from seenbefore.cli.security import record_write, tiers_by_id
from seenbefore.errors import InputError, NotFoundError
from seenbefore.knowledge.ingest import IngestReport
from seenbefore.knowledge.jsonl import PRESETS, FieldMapping
from seenbefore.types import QuarantineEntry

quarantine_app = typer.Typer(help="List, retry or drop documents that failed validation.")


def _progress_callback(progress: Progress | LineProgress | None, label: str) -> Any:
    if progress is None:
        return None
    task = progress.add_task(label, total=None)

    def update(done: int, total: int, path: str = "") -> None:
        progress.update(
            task,
            completed=done,
            total=total,
            description=f"{label} {Path(path).name[:40]}" if path else label,
        )

    return update


def _when_called(progress: Progress | LineProgress | None, label: str) -> Any:
    """A progress callback whose task appears on its first call: a step that may not run
    (self-calibration after a small change) leaves no idle row behind."""
    if progress is None:
        return None
    update: list[Any] = []

    def first(done: int, total: int) -> None:
        if not update:
            update.append(_progress_callback(progress, label))
        update[0](done, total)

    return first


def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Markdown files, JSONL files or directories")],
    map_: Annotated[
        str | None,
        typer.Option(
            "--map", help=f"JSONL field mapping target=field,... or a preset ({', '.join(PRESETS)})"
        ),
    ] = None,
    prune: Annotated[bool, typer.Option(help="delete documents whose files are gone")] = False,
    strict: Annotated[bool, typer.Option(help="exit 1 if anything was quarantined")] = False,
    replace: Annotated[
        bool,
        typer.Option(
            help="let a file take over an id that another file (or the API) holds; without it "
            "such a file is quarantined, naming both paths"
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable summary")] = False,
) -> None:
    """Ingest postmortems: validate, chunk and store; bad documents go to quarantine.

    Exits 1 when anything was quarantined and nothing was ingested (or with --strict, when
    anything was quarantined)."""
    with (
        progress_bar(disable=as_json) as progress,
        open_kb() as kb,
    ):
        before = tiers_by_id(kb.store)
        report = kb.ingest(
            paths,
            prune=prune,
            mapping=FieldMapping.parse(map_) if map_ else None,
            progress=_progress_callback(progress, "ingesting"),
            embed_progress=_progress_callback(progress, "embedding"),
            replace=replace,
            calibrate_progress=_when_called(progress, "self-calibrating (searches)"),
        )
        _audit(kb.store, "ingest", report, before, replace=replace, prune=prune)
    _print_report(report, as_json)
    ingested = report.added or report.updated or report.unchanged
    if report.quarantined and (strict or not ingested):
        raise typer.Exit(1)


def _audit(
    store: Any, action: str, report: IngestReport, before: dict[str, str], **flags: Any
) -> None:
    """One audit record for what an ingest wrote (nothing when it changed nothing)."""
    changed = {
        "added": report.added,
        "updated": report.updated,
        "superseded": report.superseded,
        "pruned": report.pruned,
        "replaced": [i for i, _ in report.replaced],
    }
    if not any(changed.values()) and not report.quarantined:
        return
    tiers = {**before, **tiers_by_id(store)}
    record_write(store, action, changed, tiers, quarantined=len(report.quarantined), **flags)


def _print_report(report: IngestReport, as_json: bool) -> None:
    if as_json:
        print_json(
            {
                "counts": report.counts(),
                "added": report.added,
                "updated": report.updated,
                "superseded": report.superseded,
                "pruned": report.pruned,
                "flagged": [{"id": i, "kinds": k} for i, k in report.flagged],
                "replaced": [{"id": i, "previous_source": s} for i, s in report.replaced],
                "chunks_written": report.chunks_written,
                "quarantined": [{"source": s, "reason": r} for s, r in report.quarantined],
            }
        )
        return
    table = Table(title="ingest summary")
    for name in report.counts():
        table.add_column(name, justify="right")
    table.add_row(*(str(v) for v in report.counts().values()))
    console.print(table)
    for doc_id, kinds in report.flagged:
        console.print(
            f"[yellow]flagged[/] {doc_id}: text that reads like instructions to a "
            f"language model ({', '.join(kinds)}); it is fenced as data in prompts"
        )
    for doc_id, previous in report.replaced:
        console.print(
            f"[yellow]replaced[/] {doc_id}: it came from {escape(previous or '?')} before"
        )
    for source, reason in report.quarantined:
        console.print(
            f"[yellow]quarantined[/] {escape(str(source))}: {escape(reason)}", soft_wrap=True
        )
    if report.quarantined:
        console.print(
            "see `seenbefore quarantine`; fix the files and `seenbefore quarantine retry ENTRY` "
            "(the entry number, the document id or the file)"
        )
    if report.quarantined and not (report.added or report.updated or report.unchanged):
        n = len(report.quarantined)
        err_console.print(
            f"[red]nothing ingested[/]: {'it was' if n == 1 else f'all {n} were'} quarantined"
        )


@quarantine_app.callback(invoke_without_command=True)
def quarantine_list(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """List quarantined documents with their reasons."""
    if ctx.invoked_subcommand is not None:
        return
    entries = open_store().list_quarantine()
    if as_json:
        print_json({"entries": [e.__dict__ for e in entries]})
        return
    if not entries:
        console.print("quarantine is empty")
        return
    table = Table(title=f"quarantine ({len(entries)})")
    for col in ("id", "source", "reason", "attempts"):
        table.add_column(col, overflow="fold")
    table.add_column("last seen (UTC)", no_wrap=True)  # a timestamp cut mid-number misleads
    for e in entries:
        table.add_row(
            str(e.id),
            escape(e.source),
            escape(e.reason),
            str(e.attempts),
            to_the_minute(e.last_seen),
        )
    console.print(table)


EntryArgument = Annotated[
    str,
    typer.Argument(
        help="entry number from `seenbefore quarantine`, or the document id or file it names"
    ),
]


def find_entry(entries: Sequence[QuarantineEntry], given: str) -> QuarantineEntry:
    """The quarantine entry ``given`` names: its number, its document id, or its source file."""
    text = given.strip()
    if text.isdigit():
        for entry in entries:
            if entry.id == int(text):
                return entry
    matches = [e for e in entries if e.doc_id == text]
    if not matches:
        path = str(Path(text).resolve()) if text else ""
        matches = [e for e in entries if e.source in (text, path)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        numbers = ", ".join(str(e.id) for e in matches)
        raise InputError(
            f"{len(matches)} quarantine entries name {text!r} (entries {numbers}); "
            "give the entry number"
        )
    raise NotFoundError(
        f"no quarantine entry {text!r} (by number, document id or file); "
        "`seenbefore quarantine` lists the entries"
    )


@quarantine_app.command("retry")
def quarantine_retry(
    entry: EntryArgument,
    map_: Annotated[str | None, typer.Option("--map", help="mapping, for a JSONL source")] = None,
    replace: Annotated[
        bool, typer.Option(help="let it take over an id another source holds")
    ] = False,
) -> None:
    """Re-validate a quarantined document after fixing it."""
    with open_kb() as kb:
        found = find_entry(kb.store.list_quarantine(), entry)
        entry_id = found.id
        if "#L" in found.source and map_ is None:
            raise InputError(f"entry {entry_id} came from a JSONL file: give its --map again")
        mapping = FieldMapping.parse(map_) if map_ else None
        before = tiers_by_id(kb.store)
        report = kb.ingestor(mapping=mapping).retry(found.source, replace=replace)
        _audit(kb.store, "quarantine.retry", report, before, entry=entry_id, replace=replace)
    if report.quarantined:
        console.print(f"[red]still invalid[/]: {escape(report.quarantined[-1][1])}")
        raise typer.Exit(1)
    console.print(
        f"entry {entry_id} ingested: "
        + ", ".join(f"{k} {v}" for k, v in report.counts().items() if v)
    )


def reindex(
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Re-embed every chunk with the active embedder (refits LSA when LSA is active)."""
    with (
        progress_bar(disable=as_json) as progress,
        open_kb() as kb,
    ):
        result = kb.reindex(
            _progress_callback(progress, "embedding"),
            _when_called(progress, "self-calibrating (searches)"),
        )
        status = kb.status()
        record_write(
            kb.store,
            "reindex",
            {},
            {},
            chunks=int(result["chunks"]),
            embedder=str(result["embedder"])[:200],
        )
    if as_json:
        print_json({**result, **status})
        return
    console.print(f"re-embedded {result['chunks']} chunks with {result['embedder']}")
    console.print(f"gate: {status['gate_reason']}")


@quarantine_app.command("drop")
def quarantine_drop(entry: EntryArgument) -> None:
    """Discard a quarantine entry (the file itself is not touched)."""
    with open_store() as store:
        found = find_entry(store.list_quarantine(), entry)
        store.drop_quarantine(found.id)
        record_write(store, "quarantine.drop", {}, {}, entry=found.id)
    console.print(f"dropped quarantine entry {found.id} ({found.source})")
