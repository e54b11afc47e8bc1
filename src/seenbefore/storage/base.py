"""The Store protocol: what every knowledge-base backend provides."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

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


class Store(Protocol):
    """A knowledge-base backend. ``upsert`` is the one write path for documents."""

    def upsert(self, pm: Postmortem, chunks: Sequence[Chunk]) -> str:
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

    def generation(self) -> int:
        """A counter that changes on every write; caches compare it to know they are stale."""
        ...
