"""`seenbefore delete`, `stats`, `backup` and `restore`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from seenbefore.cli.common import caller_tiers, console, open_kb, open_store, print_json
from seenbefore.cli.search import TierOption


def delete(
    doc_id: Annotated[str, typer.Argument(help="postmortem id")],
    tier: TierOption = None,
) -> None:
    """Delete a postmortem and everything derived from it (chunks, keyword index)."""
    with open_store() as store:
        store.get(doc_id, caller_tiers(tier))  # not visible to the caller == not found
        store.delete(doc_id)
    console.print(f"deleted {doc_id}")


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
    ):
        if payload.get(key) is not None:
            table.add_row(key, str(payload[key]))
    console.print(table)


def backup(path: Annotated[Path, typer.Argument(help="new file to write the copy to")]) -> None:
    """Take a consistent copy of the store (safe while it is in use)."""
    with open_store() as store:
        store.backup(path)
    console.print(f"backup written to {path}")


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
