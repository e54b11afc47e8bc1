"""The ``seenbefore`` console entry point.

``seenbefore mcp`` starts here without importing the Typer app and every command module (about a
second on a small machine, which an agent's client would wait through before its first answer):
cli/mcp_stdio.py serves it, and the stdio front answers ``initialize`` and ``tools/list`` at once.
Every other command, and ``mcp`` with any option but ``--tier``, goes to the Typer app
(cli/app.py), which parses and explains them as usual.
"""

from __future__ import annotations

import sys

from seenbefore.cli.mcp_stdio import run_mcp
from seenbefore.errors import SeenbeforeError


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] == ["mcp"]:
        tiers = mcp_tiers(argv[1:])
        if tiers is not None:
            try:
                run_mcp(tiers)
            except SeenbeforeError as exc:
                print(f"error: {exc}", file=sys.stderr, flush=True)
                raise SystemExit(exc.exit_code) from None
            return
    from seenbefore.cli.app import main as typer_main

    typer_main()


def mcp_tiers(args: list[str]) -> list[str] | None:
    """The tiers of ``--tier T`` / ``--tier=T`` options, or None when ``args`` holds anything
    else (``--help``, a typo): the Typer app answers those."""
    tiers: list[str] = []
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if arg == "--tier" and rest and not rest[0].startswith("-"):
            tiers.append(rest.pop(0))
        elif arg.startswith("--tier=") and len(arg) > len("--tier="):
            tiers.append(arg.removeprefix("--tier="))
        else:
            return None
    return tiers
