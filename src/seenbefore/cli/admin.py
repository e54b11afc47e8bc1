"""`seenbefore delete`, `stats`, `backup` and `restore`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from seenbefore.cli.common import (
    caller_tiers,
    console,
    open_kb,
    open_store,
    print_json,
    settings,
)
from seenbefore.cli.search import TierOption


def delete(
    doc_id: Annotated[str, typer.Argument(help="postmortem id")],
    tier: TierOption = None,
) -> None:
    """Delete a postmortem and everything derived from it, in every store under the data
    directory (chunks, vectors, keyword index, reviews and drafts quoting it, approved drafts
    citing it, queued notifications, sampled logs); the audit keeps its id and hash only."""
    from seenbefore.lifecycle import OUTBOX_FILE, delete_postmortem, open_workflow
    from seenbefore.security.audit import AuditLog
    from seenbefore.security.tokens import local_principal

    cfg = settings()
    tiers = caller_tiers(tier, cfg)
    with open_kb(cfg) as kb:
        kb.store.get(doc_id, tiers)  # not visible to the caller == not found
        workflow = open_workflow(kb)
        try:
            report = delete_postmortem(
                kb,
                doc_id,
                actor=local_principal(tiers),
                audit=AuditLog(kb.store),
                workflow=workflow,
                outbox_path=cfg.home / OUTBOX_FILE,
                tiers=tiers,
            )
        finally:
            if workflow is not None:
                workflow.close()
    console.print(f"deleted {doc_id}")
    table = Table(title=f"deleted {doc_id} everywhere (sha256 {report.sha256[:12]}…)")
    table.add_column("what")
    table.add_column("removed", justify="right")
    table.add_row("chunks", str(report.chunks))
    table.add_row("reviews and drafts quoting it", str(report.reviews_purged))
    table.add_row("approved drafts citing it", ", ".join(report.derived_deleted) or "0")
    table.add_row("queued notifications", str(report.notifications_purged))
    table.add_row("sampled log lines", str(report.log_lines_purged))
    table.add_row("files compacted", str(len(report.files_compacted)))
    console.print(table)


def stats(
    tier: TierOption = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Counts of what the knowledge base holds (documents visible to your tiers)."""
    tiers = caller_tiers(tier)
    with open_kb() as kb:
        s = kb.store.stats(tiers)
        dense = kb.status(tiers)
    payload = {
        "path": s.path,
        "tiers": list(tiers),
        "documents": s.documents,
        "current": s.current,
        "superseded": s.superseded,
        "chunks": s.chunks,
        "quarantined": s.quarantined,
        "by_type": s.by_type,
        "by_tier": s.by_tier,
        "schema_version": s.schema_version,
        "generation": s.generation,
        **dense,
    }
    if as_json:
        print_json(payload)
        return
    table = Table(title=f"knowledge base {s.path} (tiers: {', '.join(tiers)})")
    table.add_column("what")
    table.add_column("value", justify="right")
    for key in ("documents", "current", "superseded", "chunks", "quarantined", "schema_version"):
        table.add_row(key, str(payload[key]))
    table.add_row("types", str(len(s.by_type)))
    for key in (
        "active_dense_embedder_name",
        "dense_trusted",
        "weights",
        "weights_source",
        "chunks_without_vectors",
        "lsa_staleness",
        "fallback_reason",
        "confidence_model",
    ):
        if payload.get(key) is not None:  # escaped: 'seenbefore[lsa]' in a reason is not markup
            table.add_row(key, escape(str(payload[key])))
    console.print(table)


def backup(path: Annotated[Path, typer.Argument(help="new file to write the copy to")]) -> None:
    """Take a consistent copy of the store (safe while it is in use), and of the review
    workflow's checkpoints beside it (PATH.reviews) when there are any."""
    with open_store() as store:
        store.backup(path)
    console.print(f"backup written to {path}")
    checkpoints = settings().home / "reviews.sqlite"
    if checkpoints.exists():
        _sqlite_copy(checkpoints, _reviews_copy(path))
        console.print(f"review checkpoints written to {_reviews_copy(path)}")


def _reviews_copy(path: Path) -> Path:
    return path.with_name(path.name + ".reviews")


def _sqlite_copy(source: Path, target: Path) -> None:
    """SQLite's online backup: a consistent copy even while the source is being written."""
    import sqlite3

    with sqlite3.connect(source) as src, sqlite3.connect(target) as dst:
        src.backup(dst)
    dst.close()
    src.close()


def restore(
    path: Annotated[Path, typer.Argument(help="a file written by `seenbefore backup`")],
    yes: Annotated[bool, typer.Option("--yes", help="replace the current store")] = False,
) -> None:
    """Replace the store's content with a backup."""
    if not yes:
        typer.confirm("This replaces the whole knowledge base. Continue?", abort=True)
    with open_store() as store:
        store.restore(path)
        n = store.stats(["general"]).generation
    console.print(f"restored from {path} (generation {n})")
    if _reviews_copy(path).exists():
        _sqlite_copy(_reviews_copy(path), settings().home / "reviews.sqlite")
        console.print(f"review checkpoints restored from {_reviews_copy(path)}")
