"""Making deleted text physically gone from the SQLite files of the data directory: FTS5
``optimize``, ``VACUUM`` and a WAL ``checkpoint(TRUNCATE)`` on each, retried while the file is
busy."""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import time
from collections.abc import Iterable
from pathlib import Path

from seenbefore.errors import StoreError

log = logging.getLogger(__name__)


def sqlite_files(home: Path, *known: Path) -> list[Path]:
    """``known`` files that exist and every SQLite-looking file under ``home``, resolved."""
    found = {p.resolve() for p in known if p.is_file()}
    if home.is_dir():
        found |= {
            p.resolve()
            for pattern in ("*.sqlite", "*.sqlite3", "*.db")
            for p in home.rglob(pattern)
            if p.is_file()
        }
    return sorted(found)


def compact(paths: Iterable[Path], *, attempts: int = 20) -> list[Path]:
    """FTS5 optimize, VACUUM and WAL checkpoint(TRUNCATE) each SQLite file, so freed pages that
    held deleted text are rewritten or cut off. Files that are not SQLite are skipped."""
    done = []
    for path in paths:
        for attempt in range(attempts):
            try:
                _compact_one(path)
                done.append(path)
                break
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise StoreError(f"{path}: compaction after delete failed ({exc})") from exc
                time.sleep(0.05 * (attempt + 1))
            except sqlite3.DatabaseError:
                log.warning("%s is not an SQLite database; not compacted", path.name)
                break
        else:
            raise StoreError(
                f"{path}: still busy after {attempts} tries to compact it after a delete; "
                "run `seenbefore delete` again when the service is idle"
            )
    return done


def _compact_one(path: Path) -> None:
    with contextlib.closing(sqlite3.connect(path, timeout=30.0, isolation_level=None)) as conn:
        conn.execute("PRAGMA secure_delete = ON")
        tables = {
            r[0]
            for r in conn.execute("SELECT name FROM sqlite_master WHERE sql LIKE '%USING fts5%'")
        }
        for table in sorted(tables):
            conn.execute(f'INSERT INTO "{table}" ("{table}") VALUES (\'optimize\')')
        conn.execute("VACUUM")
        _truncate_wal(conn, path)


def checkpoint(path: Path) -> None:
    """Truncate ``path``'s WAL (what was written since the last compaction leaves it)."""
    if path.is_file():
        with contextlib.closing(sqlite3.connect(path, timeout=30.0, isolation_level=None)) as c:
            _truncate_wal(c, path)


def _truncate_wal(conn: sqlite3.Connection, path: Path) -> None:
    busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    if busy:
        raise sqlite3.OperationalError(f"{path.name}: database is busy (a reader holds the WAL)")
