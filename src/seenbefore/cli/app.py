"""The `seenbefore` command.

Each command's module is imported only when that command runs: ``seenbefore search`` builds an
app holding ``search`` alone, so it does not import the detector, the service, the evaluation
harness and a dozen other modules it never calls (about a sixth of a second of every search on a
small machine). ``seenbefore --help``, no arguments and any name not in :data:`COMMANDS` build the
whole app, which lists and explains every command as before. ``app`` (the whole app) is built on
first access, for tests and embedding.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from typing import Any

import typer
from rich.markup import escape
from typer.core import TyperGroup

from seenbefore.cli.common import err_console
from seenbefore.errors import SeenbeforeError

# name -> (module, attribute); an attribute ending in "_app" is a command group (a Typer app)
COMMANDS: dict[str, tuple[str, str]] = {
    "ingest": ("seenbefore.cli.ingest", "ingest"),
    "reindex": ("seenbefore.cli.ingest", "reindex"),
    "quarantine": ("seenbefore.cli.ingest", "quarantine_app"),
    "search": ("seenbefore.cli.search", "search"),
    "show": ("seenbefore.cli.search", "show"),
    "delete": ("seenbefore.cli.admin", "delete"),
    "stats": ("seenbefore.cli.admin", "stats"),
    "backup": ("seenbefore.cli.admin", "backup"),
    "restore": ("seenbefore.cli.admin", "restore"),
    "calibrate": ("seenbefore.cli.calibrate", "calibrate"),
    "eval": ("seenbefore.cli.evaluate", "eval_command"),
    "detect": ("seenbefore.cli.detect", "detect_command"),
    "watch": ("seenbefore.cli.detect", "watch"),
    "nab": ("seenbefore.cli.detect", "nab"),
    "investigate": ("seenbefore.cli.investigate", "investigate"),
    "serve": ("seenbefore.cli.serve", "serve"),
    "token": ("seenbefore.cli.security", "token_app"),
    "audit": ("seenbefore.cli.security", "audit_app"),
    "review": ("seenbefore.cli.review", "review_app"),
    "migrate": ("seenbefore.cli.migrate", "migrate"),
    "database": ("seenbefore.cli.database", "database_app"),
    "notify": ("seenbefore.cli.notify", "notify_app"),
    "embedder": ("seenbefore.cli.embedder", "embedder_app"),
    "mcp": ("seenbefore.cli.mcp", "mcp"),
}


class _ErrorMappingGroup(TyperGroup):
    """Maps the error tree once: one clear line on stderr and the error's exit code."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except SeenbeforeError as exc:
            # escaped: a message's own brackets (pip install 'seenbefore[lsa]') are not markup
            err_console.print(f"[red]error:[/] {escape(str(exc))}", soft_wrap=True, markup=True)
            raise typer.Exit(exc.exit_code) from None


def build_app(only: str | None = None) -> typer.Typer:
    """The app with every command, or with command ``only`` alone (its module alone imported).
    A one-command app stays a group (the callback), so ``seenbefore search …`` parses, helps and
    fails exactly as it does in the whole app."""
    built = typer.Typer(
        cls=_ErrorMappingGroup,
        help="Have we seen this before? Search past incident postmortems.",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        add_completion=False,
    )
    built.callback()(_root)
    for name, (module, attribute) in COMMANDS.items():
        if only is not None and name != only:
            continue
        target = getattr(importlib.import_module(module), attribute)
        if attribute.endswith("_app"):
            for info in target.registered_commands:
                if info.help is None and info.callback is not None:
                    info.help, info.short_help = _help(info.callback.__doc__)
            built.add_typer(target, name=name)
        else:
            help_text, first = _help(target.__doc__)
            built.command(name, help=help_text, short_help=first)(target)
    return built


def _help(doc: str | None) -> tuple[str | None, str | None]:
    """(help, its line in a list of commands) from a command's docstring."""
    text = _paragraphs(doc)
    return text, text.split("\n\n")[0] if text else None


def _paragraphs(doc: str | None) -> str | None:
    """A command's docstring with each paragraph on one line, for rich to wrap: it keeps a
    docstring's own line breaks, mid-sentence, in the list of commands and in every paragraph
    after the first."""
    if not doc:
        return None
    return "\n\n".join(" ".join(part.split()) for part in inspect.cleandoc(doc).split("\n\n"))


def _root() -> None:
    """Have we seen this before? Search past incident postmortems."""


def __getattr__(name: str) -> Any:
    if name == "app":
        whole = build_app()
        globals()["app"] = whole
        return whole
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    first = sys.argv[1] if len(sys.argv) > 1 else None
    build_app(first if first in COMMANDS else None)()
