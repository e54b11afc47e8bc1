"""The SQLite store's file: opening it, checking whose and which version it is, migrating it, and
copying it whole (SQLite's online backup API, safe while the store is in use). Restoring a copy
is in sqlite/restore.py."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from seenbefore.errors import SchemaVersionError, StoreError
from seenbefore.storage.sqlite.rows import statements
from seenbefore.storage.sqlite.schema import APPLICATION_ID, MIGRATIONS


def connect(path: str | Path) -> sqlite3.Connection:
    """The store's one connection: autocommit (transactions are explicit), WAL, foreign keys."""
    if str(path) != ":memory:":
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    try:
        conn = sqlite3.connect(
            str(path), isolation_level=None, check_same_thread=False, timeout=30.0
        )
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
    except sqlite3.DatabaseError as exc:
        raise StoreError(
            f"store {path}: cannot open as SQLite ({exc}); point SEENBEFORE_HOME at a "
            "seenbefore data directory or move the file away"
        ) from exc
    return conn


def pending_migrations(conn: sqlite3.Connection, path: Path) -> range:
    """The migration numbers this file still needs; SchemaVersionError for a file that is not
    a seenbefore store or is newer than this version understands."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    has_tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
    if has_tables and app_id != APPLICATION_ID:
        raise SchemaVersionError(
            f"store {path}: this SQLite file is not a seenbefore store "
            "(application_id differs); use another SEENBEFORE_HOME"
        )
    if version > len(MIGRATIONS):
        raise SchemaVersionError(
            f"store {path}: schema version {version} is newer than this seenbefore "
            f"understands ({len(MIGRATIONS)}); upgrade seenbefore"
        )
    return range(version + 1, len(MIGRATIONS) + 1)


def migrate(
    conn: sqlite3.Connection, lock: threading.RLock, path: Path, upto: int | None = None
) -> None:
    """Apply the pending migrations (up to ``upto``, default all), each in one transaction that
    also records its number in ``user_version``."""
    with lock:
        for number in pending_migrations(conn, path):
            if upto is not None and number > upto:
                break
            conn.execute("BEGIN IMMEDIATE")
            try:
                for statement in statements(MIGRATIONS[number - 1]):
                    conn.execute(statement)
                conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                conn.execute(f"PRAGMA user_version = {number}")
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise


def backup(conn: sqlite3.Connection, lock: threading.RLock, target: str | Path) -> None:
    """A consistent copy of ``conn``'s database in the new file ``target``."""
    target_path = Path(target)
    if target_path.exists():
        raise StoreError(f"backup target {target_path} exists; choose a new path")
    target_path.parent.mkdir(parents=True, exist_ok=True)
    dest = sqlite3.connect(str(target_path))
    try:
        with lock:
            conn.backup(dest)
    finally:
        dest.close()
