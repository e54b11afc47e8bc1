"""Shared CLI plumbing: settings, the store, consoles and JSON output."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

from rich.console import Console

from seenbefore.config import Settings, load_settings
from seenbefore.kb import KnowledgeBase

if TYPE_CHECKING:
    from seenbefore.storage.base import Store

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)
LOG_WIDTH = 200  # tables written to a log or a pipe: wide enough that no figure is cut


def print_wide(renderable: Any) -> None:
    """Print a table whole: at the terminal's width on a terminal, else LOG_WIDTH columns (Rich
    would cut cells to 80 columns and print "Bri…" or "182…" in a log)."""
    if console.is_terminal:
        console.print(renderable)
        return
    Console(file=console.file, width=LOG_WIDTH, highlight=False).print(renderable)


JSON_SCHEMA_VERSION = 1


def settings() -> Settings:
    return load_settings()


def open_store(cfg: Settings | None = None) -> Store:
    """The store the settings select (SEENBEFORE_DATABASE_URL: PostgreSQL; else SQLite)."""
    from seenbefore.storage.factory import open_store as select

    return select(cfg or settings())


def open_kb(cfg: Settings | None = None) -> KnowledgeBase:
    return KnowledgeBase(cfg or settings())


def caller_tiers(tiers: list[str] | None, cfg: Settings | None = None) -> tuple[str, ...]:
    """Tiers given with --tier, else the configured default (SEENBEFORE_TIERS)."""
    if tiers:
        return tuple(dict.fromkeys(t.strip().lower() for t in tiers if t.strip()))
    return (cfg or settings()).tiers


def print_json(payload: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"version": JSON_SCHEMA_VERSION, **payload}, indent=2) + "\n")
