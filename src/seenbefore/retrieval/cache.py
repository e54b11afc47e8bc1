"""An embedding cache: vectors keyed by (model, text) in a small SQLite file, so repeated
evaluation runs and benchmarks embed each distinct text once."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from seenbefore.retrieval.embedders import Embedder, Matrix, normalise


class CachingEmbedder:
    def __init__(self, inner: Embedder, path: Path) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(str(path), check_same_thread=False)
        self._conn.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, v BLOB)")

    def _key(self, text: str) -> str:
        return hashlib.sha256(f"{self.name}\x00{text}".encode()).hexdigest()

    def embed(self, texts: Sequence[str]) -> Matrix:
        keys = [self._key(t) for t in texts]
        found: dict[str, bytes] = {}
        for start in range(0, len(keys), 500):
            part = keys[start : start + 500]
            rows = self._conn.execute(
                f"SELECT key, v FROM vectors WHERE key IN ({','.join('?' * len(part))})", part
            ).fetchall()
            found.update(rows)
        missing = [i for i, k in enumerate(keys) if k not in found]
        if missing:
            fresh = self.inner.embed([texts[i] for i in missing])
            with self._conn:
                self._conn.executemany(
                    "INSERT OR REPLACE INTO vectors (key, v) VALUES (?, ?)",
                    [(keys[i], fresh[j].astype("<f4").tobytes()) for j, i in enumerate(missing)],
                )
            for j, i in enumerate(missing):
                found[keys[i]] = fresh[j].astype("<f4").tobytes()
        matrix = (
            np.stack([np.frombuffer(found[k], dtype="<f4") for k in keys])
            if keys
            else np.zeros((0, self.dim), dtype=np.float32)
        )
        return normalise(matrix)
