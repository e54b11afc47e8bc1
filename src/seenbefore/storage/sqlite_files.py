"""The SQLite store's file: opening it, checking whose and which version it is, and copying it
whole (SQLite's online backup API, safe while the store is in use)."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from seenbefore.errors import NotFoundError, SchemaVersionError, StoreError
from seenbefore.storage.schema import APPLICATION_ID, MIGRATIONS


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


def copy_in(conn: sqlite3.Connection, lock: threading.RLock, source: str | Path) -> None:
    """Replace ``conn``'s database with the backup ``source`` (checked to be a seenbefore store
    this version can read)."""
    source_path = Path(source)
    if not source_path.is_file():
        raise NotFoundError(f"backup {source_path} does not exist")
    src = sqlite3.connect(f"file:{source_path}?mode=ro", uri=True)
    try:
        app_id = src.execute("PRAGMA application_id").fetchone()[0]
        version = src.execute("PRAGMA user_version").fetchone()[0]
        if app_id != APPLICATION_ID or not 1 <= version <= len(MIGRATIONS):
            raise SchemaVersionError(
                f"backup {source_path} is not a seenbefore store this version can read "
                f"(application_id {app_id:#x}, schema {version})"
            )
        with lock:
            src.backup(conn)
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"backup {source_path}: not a readable SQLite file ({exc})") from exc
    finally:
        src.close()
