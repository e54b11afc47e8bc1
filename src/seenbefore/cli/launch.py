"""The ``seenbefore`` console entry point.

``seenbefore mcp`` starts here without importing the Typer app and every command module (about a
second on a small machine, which an agent's client would wait through before its first answer):
cli/mcp_stdio.py serves it, and the stdio front answers ``initialize`` and ``tools/list`` at once.
Every other command, and ``mcp`` with any option but ``--tier``, goes to the Typer app
(cli/app.py), which parses and explains them as usual.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import NoReturn

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
    if wants_minilm(argv):
        from seenbefore.retrieval.onnx_minilm import preload

        preload()
    from seenbefore.cli.app import main as typer_main

    if argv[:1] and argv[0] in QUICK_EXIT_COMMANDS:
        try:
            typer_main()
        except SystemExit as done:
            _exit_now(done.code)
        _exit_now(0)
    typer_main()


# Commands that only read: once the answer is written and flushed, the process ends without
# tearing the interpreter down (freeing the ONNX session and every module took about 0.1 s of a
# 0.55 s search). Nothing they do waits on a finaliser or an atexit handler.
QUICK_EXIT_COMMANDS = ("search", "show")


def _exit_now(code: object) -> NoReturn:
    """Exit as ``sys.exit(code)`` would, after flushing output and logs, skipping teardown."""
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # sys.exit("message"): the message on stderr, status 1
        print(code, file=sys.stderr)
        status = 1
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`| head`): nothing more can be said
            status = status or 1
    os._exit(status)


# commands that embed a query with the knowledge base's embedder on nearly every run
EMBEDDING_COMMANDS = ("search", "investigate")


def wants_minilm(argv: list[str]) -> bool:
    """Whether this run will most likely load MiniLM on ONNX Runtime: a search or investigation
    that is not sparse-only, with no environment setting that picks another embedder or runtime.
    (A config file can still pick one; the preloaded session is then dropped unused.)"""
    if not argv or argv[0] not in EMBEDDING_COMMANDS:
        return False
    if "--help" in argv or any(a in ("sparse", "--mode=sparse") for a in argv):
        return False
    embedder = os.environ.get("SEENBEFORE_EMBEDDER", "auto").strip().lower()
    runtime = os.environ.get("SEENBEFORE_EMBEDDER_RUNTIME", "auto").strip().lower()
    return embedder in ("auto", "minilm") and runtime in ("auto", "onnx")


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
