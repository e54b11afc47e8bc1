"""`seenbefore notify ...`: the notification outbox (the home folder's file on SQLite, the
database's table on PostgreSQL, where any process may drain what another queued)."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from seenbefore.cli.common import console, notify_router, print_json
from seenbefore.errors import ConfigError, InputError

notify_app = typer.Typer(
    # "\\[": Rich would read [notify] as markup and print "what  could not deliver"
    help="The notification outbox: what \\[notify] could not deliver yet.",
    no_args_is_help=True,
)
MAX_ATTEMPTS = 10
STATES = ("pending", "delivered", "dead")


def _router() -> Any:
    router = notify_router()
    if router is None:
        raise ConfigError(
            "no [notify] table is configured, so there is no channel to send to; add one to the"
            " config file (docs/detection.md)"
        )
    return router


@notify_app.command("retry")
def retry(
    limit: Annotated[
        int | None, typer.Option(help="at most this many entries (default: all pending)")
    ] = None,
    attempts: Annotated[int, typer.Option(help=f"tries per entry, 1 to {MAX_ATTEMPTS}")] = 1,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Send the pending entries again, oldest first; what fails again stays pending."""
    if not 1 <= attempts <= MAX_ATTEMPTS:
        raise InputError(f"--attempts is {attempts}; give 1 to {MAX_ATTEMPTS}")
    if limit is not None and limit < 1:
        raise InputError(f"--limit is {limit}; give at least 1, or leave it out for all")
    with _router() as router:
        report = router.retry_pending(limit=limit, attempts=attempts)
        where = router.outbox.location
    counts = {
        "delivered": report.delivered,
        "pending": report.pending,
        "dead": report.dead,
        "skipped": report.skipped,
    }
    if as_json:
        print_json({"outbox": where, **counts})
        return
    console.print(
        f"outbox {where}: " + ", ".join(f"{n} {k}" for k, n in counts.items()), highlight=False
    )


@notify_app.command("list")
def list_entries(
    state: Annotated[str | None, typer.Option(help="pending, delivered or dead")] = None,
    limit: Annotated[int, typer.Option(help="at most this many, oldest first")] = 100,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Outbox entries with their channel, anomaly, attempts and last error."""
    if state is not None and state not in STATES:
        raise InputError(f"--state is {state!r}; expected one of {', '.join(STATES)}")
    if limit < 1:
        raise InputError(f"--limit is {limit}; give at least 1")
    with _router() as router:
        entries = router.outbox.entries(state, limit=limit)
    if as_json:
        print_json(
            {
                "entries": [
                    {
                        "id": e.id,
                        "channel": e.channel,
                        "anomaly": e.message.anomaly.id,
                        "action": e.message.action,
                        "state": e.state,
                        "attempts": e.attempts,
                        "last_status": e.last_status,
                        "last_error": e.last_error,
                        "created_at": e.created_at,
                        "updated_at": e.updated_at,
                    }
                    for e in entries
                ]
            }
        )
        return
    table = Table(title=f"{len(entries)} outbox entries")
    for col in ("id", "channel", "anomaly", "action", "state", "attempts", "last error"):
        table.add_column(col, overflow="fold")
    for e in entries:
        table.add_row(
            str(e.id),
            e.channel,
            e.message.anomaly.id,
            e.message.action,
            e.state,
            str(e.attempts),
            escape(e.last_error or "-"),  # a receiver's words: "[/]" is not markup
        )
    console.print(table)
