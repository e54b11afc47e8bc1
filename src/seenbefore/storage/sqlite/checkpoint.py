"""LangGraph checkpoints in a SQLite file beside the store (``<home>/reviews.sqlite``):
LangGraph's ``SqliteSaver`` (not its ``SqliteStore``, which needs loadable extensions). One file:
processes take turns on its lock. Deleted checkpoints leave no text (``secure_delete``), and
:attr:`Checkpoints.compact` cuts them out of the WAL."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from seenbefore.storage.base import Checkpoints

RESTORE_HINT = "restore that file from the backup taken with kb.sqlite"


@contextmanager
def sqlite_checkpointer(path: Path) -> Iterator[Checkpoints]:
    """A ``SqliteSaver`` on its own connection to ``path``, closed when the block ends."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(str(path), check_same_thread=False, timeout=30.0)
    try:
        conn.execute("PRAGMA secure_delete = ON")  # deleted checkpoints leave no text
        saver = SqliteSaver(conn)

        def compact() -> None:
            with saver.lock:
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

        yield Checkpoints(saver, str(path), RESTORE_HINT, compact)
    finally:
        conn.close()
