"""An embedding cache: vectors keyed by (model, text), so repeated evaluation runs and benchmarks
embed each distinct text once. Where the vectors are kept is the store's business
(storage/vectorcache.py): a small SQLite file, or a table of the PostgreSQL database when
``SEENBEFORE_DATABASE_URL`` selects one (storage.factory.open_vector_cache)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from seenbefore.retrieval.embedders import Embedder, Matrix, normalise
from seenbefore.storage.factory import vector_cache_file
from seenbefore.storage.vectorcache import VectorCache


class CachingEmbedder:
    """``inner`` behind ``cache``: a VectorCache, or the path of a SQLite file."""

    def __init__(self, inner: Embedder, cache: VectorCache | Path) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.cache: VectorCache = vector_cache_file(cache) if isinstance(cache, Path) else cache

    def _key(self, text: str) -> str:
        return hashlib.sha256(f"{self.name}\x00{text}".encode()).hexdigest()

    def embed(self, texts: Sequence[str]) -> Matrix:
        keys = [self._key(t) for t in texts]
        found = self.cache.get(keys)
        missing = [i for i, k in enumerate(keys) if k not in found]
        if missing:
            fresh = self.inner.embed([texts[i] for i in missing])
            kept = [(keys[i], fresh[j].astype("<f4").tobytes()) for j, i in enumerate(missing)]
            self.cache.put(kept)
            found.update(kept)
        matrix = (
            np.stack([np.frombuffer(found[k], dtype="<f4") for k in keys])
            if keys
            else np.zeros((0, self.dim), dtype=np.float32)
        )
        return normalise(matrix)

    def close(self) -> None:
        self.cache.close()
