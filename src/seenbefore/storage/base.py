"""The Store protocol: what every knowledge-base backend provides."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from seenbefore.types import (
    Chunk,
    Postmortem,
    QuarantineEntry,
    SearchFilters,
    StoredDocument,
)


@dataclass(frozen=True)
class StoreStats:
    """Counts visible to the caller's tiers."""

    documents: int
    current: int
    superseded: int
    chunks: int
    by_type: dict[str, int] = field(default_factory=dict)
    by_tier: dict[str, int] = field(default_factory=dict)
    quarantined: int = 0
    schema_version: int = 0
    generation: int = 0
    path: str = ""


@dataclass(frozen=True)
class ChunkHit:
    """A chunk returned by sparse search: its id, document id and BM25 score (higher is better)."""

    chunk_id: int
    doc_id: str
    score: float


@dataclass(frozen=True)
class EmbeddedVectors:
    """Vectors for a document's chunks, in chunk order, and the embedder that made them."""

    name: str
    matrix: npt.NDArray[np.float32]


@dataclass(frozen=True)
class ChunkRows:
    ids: npt.NDArray[np.int64]
    doc_ids: list[str]
    texts: list[str]


@dataclass(frozen=True)
class DocumentRows:
    ids: list[str]
    tiers: list[str]
    current: list[bool]
    dates: list[str | None]
    services: list[tuple[str, ...]]
    # each document's recorded signals (metric names), most telling first; empty when none
    signals: list[tuple[str, ...]] = field(default_factory=list)


class Store(Protocol):
    """A knowledge-base backend. ``upsert`` is the one write path for documents."""

    def upsert(
        self, pm: Postmortem, chunks: Sequence[Chunk], vectors: EmbeddedVectors | None = None
    ) -> str:
        """Insert or atomically replace a document and its chunks; returns 'added' | 'updated' |
        'unchanged'."""
        ...

    def get(self, doc_id: str, tiers: Sequence[str]) -> StoredDocument:
        """The document, if it exists and its tier is among ``tiers``; else NotFoundError."""
        ...

    def delete(self, doc_id: str) -> None: ...

    def fingerprints(self) -> dict[str, tuple[str, str]]:
        """doc id -> (content hash, source) for every document."""
        ...

    def superseded_ids(self) -> list[str]: ...

    def list_ids(self, tiers: Sequence[str] | None = None) -> list[str]: ...

    def chunks_by_id(self, chunk_ids: Sequence[int]) -> dict[int, Chunk]: ...

    def sparse_search(
        self, terms: Sequence[str], filters: SearchFilters, limit: int
    ) -> list[ChunkHit]:
        """Best chunk per document for OR-joined ``terms``, pre-filtered, best first."""
        ...

    def documents_meta(self, doc_ids: Sequence[str]) -> dict[str, StoredDocument]: ...

    def quarantine(self, source: str, reason: str, doc_id: str | None, digest: str) -> int: ...

    def list_quarantine(self) -> list[QuarantineEntry]: ...

    def get_quarantine(self, entry_id: int) -> QuarantineEntry: ...

    def drop_quarantine(self, entry_id: int) -> None: ...

    def clear_quarantine(self, source: str) -> None: ...

    def stats(self, tiers: Sequence[str]) -> StoreStats: ...

    def embedder_info(self) -> tuple[str, int] | None: ...

    def replace_vectors(
        self, name: str, chunk_ids: Sequence[int], matrix: npt.NDArray[np.float32]
    ) -> None: ...

    def vectors(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]: ...

    def chunk_rows(self) -> ChunkRows: ...

    def document_rows(self) -> DocumentRows: ...

    def get_json(self, key: str) -> Any: ...

    def set_json(self, key: str, value: Any) -> None: ...

    def get_blob(self, key: str) -> bytes | None: ...

    def put_blob(self, key: str, value: bytes) -> None: ...

    def chunks_changed(self) -> int: ...

    def generation(self) -> int:
        """A counter that changes on every write; caches compare it to know they are stale."""
        ...
