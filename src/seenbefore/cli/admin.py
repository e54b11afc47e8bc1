"""`seenbefore delete`, `stats`, `backup` and `restore`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

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
from seenbefore.errors import StoreError
from seenbefore.knowledge.failure_taxonomy import NO_TYPE
from seenbefore.storage.ports import AuditStore
from seenbefore.storage.sqlite.restore import REFUSED, one_line


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
        reviewed = _reviewed(kb)
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
        "on_reviewed_queries": reviewed,
    }
    if as_json:
        print_json(payload)
        return
    table = Table(title=f"knowledge base {s.path} (tiers: {', '.join(tiers)})")
    table.add_column("what")
    table.add_column("value", justify="right")
    for key in ("documents", "current", "superseded", "chunks", "quarantined", "schema_version"):
        table.add_row(key, str(payload[key]))
    # the authors' types; documents without one ("(none)" in by_type) get an inferred failure
    # mode, which show and search mark (an untyped KB read "types 1")
    types, untyped = type_counts(s.by_type)
    table.add_row("types", str(types))
    if untyped:
        table.add_row("without a type", f"{untyped} (failure mode inferred from the text)")
    for key in (
        "active_dense_embedder_name",
        "dense_trusted",
        "weights",
        "weights_source",
        "chunks_without_vectors",
        "lsa_staleness",
        "fallback_reason",
        "confidence_model",
        "on_reviewed_queries",
        "calibration_changes",
    ):
        value = payload.get(key)
        if isinstance(value, list):
            value = "; ".join(map(str, value)) or None
        if value is not None:  # escaped: 'seenbefore[lsa]' in a reason is not markup
            table.add_row(key, escape(str(value)))
    console.print(table)


def _reviewed(kb: Any) -> str | None:
    """The live model's figures on reviewed queries, one line per mode (None before reviews)."""
    from seenbefore.calibration.people import reviewed_figures

    figures = reviewed_figures(kb)
    if not figures:
        return None
    return "; ".join(
        f"{key}: {f.get('cases')} reviewed, {f.get('right_first')} confirmed; false 'no "
        f"precedent' {f.get('false_no_precedent_when_first')}, 'found' when dismissed "
        f"{f.get('found_when_wrong')}, ECE {f.get('ece')}"
        for key, f in figures.items()
    )


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
    """Replace the store's knowledge with a backup's, after checking a copy of it; a refused
    backup changes nothing.

    It checks the copy's integrity, a schema exactly as this version's migrations build it, a
    schema version this version reads, rows it can read (storage/sqlite/restore.py), an audit
    chain that verifies under this home's audit key and agrees with the live one, and tokens
    this store issued (security/restore_guard.py). The live audit log, token revocations and
    web sessions are kept, and the restore itself is audited. A refused backup leaves the
    store, and the review checkpoints beside it, as they were."""
    from seenbefore.security import restore_guard
    from seenbefore.security.tokens import local_principal

    if not yes:
        typer.confirm("This replaces the whole knowledge base. Continue?", abort=True)
    reviews = _reviews_copy(path)
    if reviews.exists():
        _check_checkpoints(reviews)
    carried: dict[str, int] = {}
    digest = _file_sha256(path)
    with open_store() as store:

        def check(copy: AuditStore) -> None:
            restore_guard.check(store, copy, path)

        def carry(copy: AuditStore) -> None:
            carried.update(restore_guard.carry(store, copy))

        store.restore(path, verify=check, carry=carry)  # PostgreSQL refuses
        n = store.stats(["general"]).generation
        from seenbefore.security.audit import AuditLog

        AuditLog(store).record(
            local_principal(settings().tiers),
            "store.restore",
            detail={
                "backup_sha256": digest,
                "backup_name": path.name[:200],
                "generation": n,
                "kept_audit_records": carried.get("audit_records", 0),
                "tokens": carried.get("tokens", 0),
                "revoked": carried.get("revoked", 0),
                "review_checkpoints": reviews.exists(),
            },
        )
    console.print(
        f"restored from {path} (generation {n}); kept the live audit log "
        f"({carried.get('audit_records', 0)} records newer than the backup's), "
        f"{carried.get('tokens', 0)} tokens ({carried.get('revoked', 0)} revoked) and web sessions"
    )
    if reviews.exists():
        _sqlite_copy(reviews, settings().home / "reviews.sqlite")
        console.print(f"review checkpoints restored from {reviews}")


def _check_checkpoints(reviews: Path) -> None:
    """The review checkpoints copied beside a backup: an undamaged SQLite file with tables
    only (LangGraph's saver makes no triggers or views), checked before anything is replaced."""
    import sqlite3

    try:
        conn = sqlite3.connect(reviews.resolve().as_uri() + "?mode=ro", uri=True)
        try:
            conn.execute("PRAGMA trusted_schema = OFF")
            check = [str(r[0]) for r in conn.execute("PRAGMA integrity_check(3)")]
            extra = [
                f"{r[0]} {r[1]}"
                for r in conn.execute(
                    "SELECT type, name FROM sqlite_master WHERE type IN ('trigger', 'view')"
                )
            ]
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        check, extra = [f"unreadable: {exc}"], []
    if check != ["ok"] or extra:
        what = f"fails PRAGMA integrity_check ({'; '.join(check)})" if check != ["ok"] else ""
        raise StoreError(
            one_line(
                f"{REFUSED}: review checkpoints {reviews} {what or 'hold ' + ', '.join(extra)};"
                " they must be an undamaged SQLite file with tables only; move"
                f" {reviews.name} away to restore the store without them, or restore another"
                " backup"
            )
        )


def _file_sha256(path: Path) -> str:
    """The backup file's SHA-256 (read in blocks), or '' when there is no such file (restore
    then says so)."""
    import hashlib

    try:
        with path.open("rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError:
        return ""


def type_counts(by_type: Mapping[str, int]) -> tuple[int, int]:
    """(distinct authors' types, documents without one) from the store's count per stored type:
    "(none)", and a catch-all stored before the validator set it aside ("uncategorized"), are
    no type (their failure mode is inferred from the text)."""
    none = {t for t in by_type if t == "(none)" or t in NO_TYPE}
    return len(set(by_type) - none), sum(by_type[t] for t in none)
