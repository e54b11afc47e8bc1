"""Shared CLI plumbing: settings, the store, consoles and JSON output."""

from __future__ import annotations

import json
import sys
import textwrap
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.text import Text

from seenbefore.config import Settings, load_settings
from seenbefore.errors import InputError
from seenbefore.kb import KnowledgeBase
from seenbefore.security.tokens import check_tiers

if TYPE_CHECKING:
    from seenbefore.storage.ports import Store

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


def indented(text: str, key: str = "", indent: int = 5, style: str = "") -> Text:
    """``key text`` wrapped to the terminal as a block under the line above it (a wrapped line
    starts under the first, not at column 0), ``key`` dimmed, the whole in ``style``; the words
    as written (never read as markup). Print it with ``soft_wrap=True``."""
    pad = " " * indent
    whole = f"{key} {text}" if key else text
    lines = textwrap.wrap(whole, width=max(20, console.width - indent)) or [whole]
    out = Text("\n".join(pad + line for line in lines), style=style)
    if key:
        out.stylize("dim", indent, indent + len(key))
    return out


def to_the_minute(stamp: str | None) -> str:
    """A stored UTC stamp, ``2026-12-04T16:19:18+00:00``, as ``2026-12-04 16:19``: at 80
    columns it wraps at the space, never inside a figure; "never" for none."""
    return stamp[:16].replace("T", " ") if stamp else "never"


JSON_SCHEMA_VERSION = 1


def settings() -> Settings:
    return load_settings()


def open_store(cfg: Settings | None = None) -> Store:
    """The store the settings select (SEENBEFORE_DATABASE_URL: PostgreSQL; else SQLite), with
    the maintenance login where SEENBEFORE_DATABASE_ADMIN_URL gives one: the CLI is the
    operator's door (migrations, ingest, reindex, tokens)."""
    from seenbefore.storage.factory import open_store as select

    return select(cfg or settings(), maintenance=True)


def open_kb(cfg: Settings | None = None) -> KnowledgeBase:
    cfg = cfg or settings()
    return KnowledgeBase(cfg, store=open_store(cfg))


def notify_router(cfg: Settings | None = None) -> Any:
    """The notifier router of ``[notify]`` (``detect`` and ``watch`` --notify, ``notify
    retry``), or None when nothing is configured. Its outbox follows the store: the home
    folder's file on SQLite, the database's table on PostgreSQL (shared by every process)."""
    cfg = cfg or settings()
    if not cfg.notify:
        return None
    from seenbefore.lifecycle.home import OUTBOX_FILE
    from seenbefore.notify import build_router
    from seenbefore.storage.factory import open_outbox_rows

    rows = open_outbox_rows(cfg, cfg.home / OUTBOX_FILE)
    return build_router(cfg.notify, outbox_rows=rows)


EMPTY_STORE = (
    "the knowledge base is empty: ingest postmortems first (seenbefore ingest PATH, e.g. "
    "seenbefore ingest examples/postmortems for the sample)"
)


def empty_store(store: Store) -> str | None:
    """The message for a store that holds no postmortem at all (None when it holds some): the
    terminal's user opens the store itself, so saying so tells nothing a tier hides."""
    return None if store.list_ids(None) else f"{EMPTY_STORE}; the store is {store_name(store)}"


def store_name(store: Store) -> str:
    local = store.local_file
    return str(local) if local is not None else "the configured database"


def caller_tiers(tiers: list[str] | None, cfg: Settings | None = None) -> tuple[str, ...]:
    """Tiers given with --tier, else the configured default (SEENBEFORE_TIERS). Each --tier
    takes one tier or a comma list (``--tier general,restricted``) and may be repeated; names
    follow the rule of ``token create --tiers`` (security/tokens.py ``check_tiers``: lower-cased,
    de-duplicated in order). An empty --tier, or a name outside the rule, is an InputError."""
    if not tiers:
        return (cfg or settings()).tiers
    for given in tiers:
        if not given.replace(",", "").strip():
            raise InputError(
                f"--tier is empty ({given!r}); give an access tier, e.g. --tier general or "
                "--tier general,restricted, or leave --tier out to hold SEENBEFORE_TIERS"
            )
    try:
        return check_tiers([t for given in tiers for t in given.split(",")])
    except InputError as exc:
        raise InputError(f"--tier: {exc}") from None


def counted(n: int, one: str, many: str) -> str:
    """``1 anomaly``, ``2 anomalies``: a count with its noun."""
    return f"{n} {one if n == 1 else many}"


def print_json(payload: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"version": JSON_SCHEMA_VERSION, **payload}, indent=2) + "\n")
