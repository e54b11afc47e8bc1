"""`seenbefore migrate`: move a knowledge base between the SQLite file and PostgreSQL."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from seenbefore.cli.common import console, print_json, settings
from seenbefore.cli.progress import progress_bar
from seenbefore.errors import InputError, StoreError
from seenbefore.lifecycle.home import OUTBOX_FILE
from seenbefore.storage.factory import open_url, outbox_file
from seenbefore.storage.outbox import OutboxRows
from seenbefore.storage.sqlite.store import SQLiteStore

if TYPE_CHECKING:  # the PostgreSQL driver is an extra: imported when the command runs
    from seenbefore.storage.ports import Store
    from seenbefore.storage.transfer import TransferReport


def migrate(
    to: Annotated[
        str | None, typer.Option("--to", help="postgresql://... to copy the SQLite store into")
    ] = None,
    from_: Annotated[
        str | None,
        typer.Option("--from", help="postgresql://... to copy into the SQLite store"),
    ] = None,
    sqlite: Annotated[
        Path | None,
        typer.Option("--sqlite", help="the SQLite file (default: $SEENBEFORE_HOME/kb.sqlite)"),
    ] = None,
    prune: Annotated[
        bool, typer.Option("--prune", help="delete target documents the source does not have")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Copy documents, chunks, vectors, quarantine, settings, audit log, reviews and the
    notification outbox to or from PostgreSQL, then verify counts and checksums. Safe to run
    again: it copies what changed."""
    if (to is None) == (from_ is None):
        raise InputError(
            "give exactly one of --to postgresql://... (SQLite -> PostgreSQL) or"
            " --from postgresql://... (PostgreSQL -> SQLite)"
        )
    from seenbefore.storage.transfer import transfer

    path = sqlite or settings().db_path
    url = to or from_ or ""
    if from_ is None and not path.exists():
        raise InputError(f"no SQLite store at {path}; pass --sqlite PATH or set SEENBEFORE_HOME")
    with SQLiteStore(path) as local, open_url(url) as server, progress_bar(disable=as_json) as bar:
        source, target = (local, server) if to else (server, local)
        task = bar.add_task(f"copy to {server.url if to else path}", total=None)
        report = transfer(
            source,
            target,
            prune=prune,
            progress=lambda done, total: bar.update(task, completed=done, total=total),
        )
        outbox = _copy_outbox(local, server, path.parent / OUTBOX_FILE, to_server=to is not None)
        names = (str(path), server.url) if to else (server.url, str(path))
    if as_json:
        print_json({**_payload(report, *names), "outbox": outbox})
        return
    _show(report, *names)
    console.print(
        f"notification outbox: {outbox['source']} row(s) in {outbox['from']},"
        f" {outbox['copied']} copied (the rest were already there)"
    )


def _copy_outbox(local: Store, server: Store, where: Path, *, to_server: bool) -> dict[str, Any]:
    """Move the notification outbox with the store: the file ``where`` beside the SQLite store
    holds it there, the database's table on PostgreSQL. Queued and dead notifications go along,
    each once however often migrate runs; the source keeps its rows."""
    source: OutboxRows = local.outbox_rows(where) if to_server else server.outbox_rows(where)
    rows = source.export_rows()
    copied = 0
    if rows:  # the file is made only when there is something to put in it
        target = server.outbox_rows(where) if to_server else outbox_file(where)
        copied = target.import_rows(rows)
        missing = {r.key for r in rows} - {r.key for r in target.export_rows()}
        if missing:
            raise StoreError(
                f"the notification outbox was not copied whole: {len(missing)} of {len(rows)}"
                f" row(s) from {source.location} are missing in {target.location}; run migrate"
                " again, and report it if it persists"
            )
    return {"from": source.location, "source": len(rows), "copied": copied}


def _payload(report: TransferReport, source: str, target: str) -> dict[str, object]:
    return {
        "source": source,
        "target": target,
        "verified": report.verified,
        "documents": report.documents,
        "vectors_written": report.vectors_written,
        "rows": report.rows,
        "skipped": report.skipped,
        "counts": {
            k: {"source": v.count, "target": report.target[k].count}
            for k, v in report.source.items()
        },
    }


def _show(report: TransferReport, source: str, target: str) -> None:
    table = Table(title=f"migrate {source} -> {target}")
    for column in ("what", "source", "target", "checksum"):
        table.add_column(column, justify="right" if column != "what" else "left")
    for what, tally in report.source.items():
        other = report.target[what]
        same = "[green]match[/]" if other.digest == tally.digest else "[red]differs[/]"
        table.add_row(what, str(tally.count), str(other.count), same)
    console.print(table)
    written = ", ".join(f"{k} {v}" for k, v in sorted(report.documents.items()) if v)
    console.print(f"documents: {written or 'none'}; vectors written: {report.vectors_written}")
    for table_name, why in report.skipped.items():
        console.print(f"[yellow]not copied:[/] {table_name}: {why}")
    console.print("[green]verified[/]: counts and checksums match")
