"""The embedding cache's store (retrieval/cache.py): vectors as little-endian float32 bytes,
keyed by SHA-256 of (model, text). A SQLite file on the embedded store
(storage/sqlite/vectorcache.py), a table in the PostgreSQL database
(storage/postgres/vectorcache.py), so replicas and evaluation runs share it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class VectorCache(Protocol):
    @property
    def location(self) -> str: ...

    def get(self, keys: Sequence[str]) -> dict[str, bytes]:
        """The vectors held for ``keys`` (missing keys are absent)."""
        ...

    def put(self, items: Sequence[tuple[str, bytes]]) -> None:
        """Keep these vectors (a key already held is replaced)."""
        ...

    def close(self) -> None: ...
