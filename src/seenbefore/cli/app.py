"""The `seenbefore` command."""

from __future__ import annotations

from typing import Any

import typer
from rich.markup import escape
from typer.core import TyperGroup

from seenbefore.cli import (
    admin,
    calibrate,
    detect,
    evaluate,
    ingest,
    investigate,
    migrate,
    search,
    serve,
)
from seenbefore.cli.common import err_console
from seenbefore.cli.database import database_app
from seenbefore.cli.embedder import embedder_app
from seenbefore.cli.mcp import mcp
from seenbefore.cli.notify import notify_app
from seenbefore.cli.review import review_app
from seenbefore.cli.security import audit_app, token_app
from seenbefore.errors import SeenbeforeError


class _ErrorMappingGroup(TyperGroup):
    """Maps the error tree once: one clear line on stderr and the error's exit code."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except SeenbeforeError as exc:
            # escaped: a message's own brackets (pip install 'seenbefore[lsa]') are not markup
            err_console.print(f"[red]error:[/] {escape(str(exc))}", soft_wrap=True, markup=True)
            raise typer.Exit(exc.exit_code) from None


app = typer.Typer(
    cls=_ErrorMappingGroup,
    help="Have we seen this before? Search past incident postmortems.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.command()(ingest.ingest)
app.command()(ingest.reindex)
app.add_typer(ingest.quarantine_app, name="quarantine")
app.command()(search.search)
app.command()(search.show)
app.command()(admin.delete)
app.command()(admin.stats)
app.command()(admin.backup)
app.command()(admin.restore)
app.command()(calibrate.calibrate)
app.command("eval")(evaluate.eval_command)
app.command("detect")(detect.detect_command)
app.command()(detect.watch)
app.command()(detect.nab)
app.command()(investigate.investigate)
app.command()(serve.serve)
app.add_typer(token_app, name="token")
app.add_typer(audit_app, name="audit")
app.add_typer(review_app, name="review")
app.command()(migrate.migrate)
app.add_typer(database_app, name="database")
app.add_typer(notify_app, name="notify")
app.add_typer(embedder_app, name="embedder")
app.command()(mcp)


def main() -> None:
    app()
