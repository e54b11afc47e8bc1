"""The embedding cache in a small SQLite file (the embedded default)."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

BATCH = 500  # keys per SELECT ... IN (...), well under SQLite's parameter limit


class SqliteVectorCache:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.location = str(path)
        self._conn = sqlite3.connect(str(path), check_same_thread=False)
        self._lock = threading.Lock()
        self._conn.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, v BLOB)")

    def get(self, keys: Sequence[str]) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        with self._lock:
            for start in range(0, len(keys), BATCH):
                part = list(keys[start : start + BATCH])
                rows = self._conn.execute(
                    f"SELECT key, v FROM vectors WHERE key IN ({','.join('?' * len(part))})", part
                ).fetchall()
                found.update((str(k), bytes(v)) for k, v in rows)
        return found

    def put(self, items: Sequence[tuple[str, bytes]]) -> None:
        with self._lock, self._conn:
            self._conn.executemany("INSERT OR REPLACE INTO vectors (key, v) VALUES (?, ?)", items)

    def close(self) -> None:
        self._conn.close()
