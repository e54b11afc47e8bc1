"""What callers need of a knowledge-base store, one port per role.

A caller types against the port of its role, or against a port joining the few roles it needs,
so none is handed more of the store than it uses. :class:`Store` is their union: what the SQLite
and PostgreSQL adapters implement and what the factory and ``KnowledgeBase.store`` hand out.
Where the adapters' SQL dialects differ, ``store.sql`` (storage/dialect.py) answers, so no caller
outside storage/ branches on the backend. docs/architecture.md lists who uses which port;
tests/storage/test_ports.py checks that both adapters satisfy every port, that the callers it
names type against theirs, and that no port carries a member no caller uses.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol, Self, runtime_checkable

import numpy as np
import numpy.typing as npt

from seenbefore.storage.base import (
    Checkpoints,
    ChunkHit,
    ChunkRows,
    CorpusChanges,
    DocumentRows,
    EmbeddedVectors,
    StoreStats,
)
from seenbefore.storage.buckets import TokenBuckets
from seenbefore.storage.outbox import OutboxRows
from seenbefore.storage.sqlport import ServiceStore
from seenbefore.storage.supersession import SearchReads, SupersedeRow
from seenbefore.types import Chunk, Postmortem, QuarantineEntry, SearchFilters, StoredDocument

__all__ = [
    "Admin",
    "AuditStore",
    "ChangeLog",
    "ContextReads",
    "Coordination",
    "CorpusReads",
    "DocumentReads",
    "DocumentWrites",
    "KeywordIndex",
    "RestoreCheck",
    "SearchReads",
    "ServiceStore",
    "SideStores",
    "Store",
    "StoredSettings",
    "TableCopy",
    "Transferable",
]


# -- reads ----------------------------------------------------------------------------------
class CorpusReads(Protocol):
    """What the in-memory search index reads to build itself and to follow the store's writes
    (retrieval/corpus.py, retrieval/updates.py): every row, or only those of changed
    documents."""

    def generation(self) -> int:
        """The corpus generation: a counter that changes on every write to documents, chunks or
        vectors; the search index compares it to know it is stale."""
        ...

    def embedder_info(self) -> tuple[str, int] | None:
        """(name, dimension) of the embedder that made the stored vectors; None without any."""
        ...

    def document_rows(self, doc_ids: Sequence[str] | None = None) -> DocumentRows:
        """Every document (or those of ``doc_ids`` that exist), ordered by id."""
        ...

    def chunk_rows(self, doc_ids: Sequence[str] | None = None) -> ChunkRows:
        """Every chunk (or the chunks of ``doc_ids``), grouped by document id, then chunk id."""
        ...

    def vectors(
        self, chunk_ids: Sequence[int] | None = None
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """(chunk ids, matrix) of every chunk with a vector, or of those among ``chunk_ids``,
        ordered by chunk id."""
        ...


class ContextReads(Protocol):
    """What a search context reads beside the index (retrieval/context.py): the embedder that
    made the vectors and the fitted weights and models in the settings."""

    def embedder_info(self) -> tuple[str, int] | None: ...

    def get_json(self, key: str) -> Any: ...


class ChangeLog(Protocol):
    """Following the corpus (the knowledge base keeps its index and supersession view in step
    by reading what changed) and erasing an id from the log (deleting a postmortem)."""

    def generations(self) -> tuple[int, int]:
        """(corpus generation, settings generation) in one read: what a search checks."""
        ...

    def changes_since(self, generation: int) -> CorpusChanges | None:
        """The documents written or deleted after corpus generation ``generation`` (read with
        the current generation, in one snapshot), so an index built at ``generation`` can apply
        them instead of rebuilding; None when the change log cannot say (see
        :func:`~seenbefore.storage.base.changes_from_log`): the caller rebuilds from every
        row."""
        ...

    def supersede_rows(self, doc_ids: Sequence[str] | None = None) -> list[SupersedeRow]:
        """Every document's declared status, tier, ``supersedes`` and date, across every tier
        (``Supersession.build`` answers per caller from them); only ``doc_ids`` when given."""
        ...

    def erase_from_change_log(self, doc_id: str) -> None:
        """Replace the change log's entries naming ``doc_id`` with 'all' markers, so the id
        leaves no trace there (deleting a postmortem everywhere); an index behind those
        generations rebuilds from every row instead of applying them."""
        ...


class DocumentReads(Protocol):
    """Documents as the doors read them (CLI, HTTP, MCP, the self-test cases), checked against
    the caller's tiers."""

    def get(self, doc_id: str, tiers: Sequence[str]) -> StoredDocument:
        """The document, if it exists and its tier is among ``tiers``; else NotFoundError. The
        id is matched regardless of case (the stored spelling preferred when several are
        stored); the document keeps its stored spelling."""
        ...

    def list_ids(self, tiers: Sequence[str] | None = None) -> list[str]: ...

    def documents_meta(self, doc_ids: Sequence[str]) -> dict[str, StoredDocument]: ...

    def stats(self, tiers: Sequence[str]) -> StoreStats: ...


# -- writes and settings --------------------------------------------------------------------
class DocumentWrites(Protocol):
    """The corpus's writes: ingest's write path (knowledge/ingest.py: documents, and the
    quarantine of those refused), re-embedding, and the operator's quarantine commands."""

    def upsert(
        self,
        pm: Postmortem,
        chunks: Sequence[Chunk],
        vectors: EmbeddedVectors | None = None,
        *,
        replaces: Sequence[str] = (),
    ) -> str:
        """Insert or atomically replace a document and its chunks; returns 'added' | 'updated' |
        'unchanged'. Ids are unique regardless of case: a stored document whose id differs from
        ``pm.id`` only in case is deleted in the same transaction when ``replaces`` names it
        (ingest --replace, or a file re-spelling its own id), else the write is refused with
        :func:`~seenbefore.storage.base.id_case_clash` and nothing changes."""
        ...

    def delete(self, doc_id: str) -> None: ...

    def fingerprints(self) -> dict[str, tuple[str, str]]:
        """doc id -> (content hash, source) for every document."""
        ...

    def superseded_ids(self) -> list[str]: ...

    def replace_vectors(
        self, name: str, chunk_ids: Sequence[int], matrix: npt.NDArray[np.float32]
    ) -> None: ...

    def quarantine(self, source: str, reason: str, doc_id: str | None, digest: str) -> int: ...

    def clear_quarantine(self, source: str) -> None: ...

    def list_quarantine(self) -> list[QuarantineEntry]: ...

    def drop_quarantine(self, entry_id: int) -> None: ...


class StoredSettings(Protocol):
    """Settings kept in the store: fusion weights, fitted confidence models, the self-calibration
    record, the LSA model and how stale it is (the knowledge base, evaluation, review labels)."""

    def get_json(self, key: str) -> Any: ...

    def set_json(self, key: str, value: Any) -> None: ...

    def get_blob(self, key: str) -> bytes | None: ...

    def put_blob(self, key: str, value: bytes) -> None: ...

    def chunks_changed(self) -> int:
        """Chunks written or deleted since the store was created (for LSA staleness)."""
        ...


# -- the audit log, coordination, administration ---------------------------------------------
class AuditStore(ServiceStore, Protocol):
    """The audit log's store (security/audit.py): the service tables' SQL, the chain head kept
    in the store's metadata, and the append-only guards the verification checks."""

    def get_meta(self, key: str) -> str | None: ...

    def audit_guards_missing(self) -> str:
        """What is missing of the audit log's append-only guards (triggers; on PostgreSQL also
        the app role's lack of UPDATE, DELETE, TRUNCATE); '' when all are in place."""
        ...


class Coordination(Protocol):
    """What the review workflow (review/graph.py) coordinates through: leases and the
    checkpoints of its threads."""

    def lease(self, name: str) -> AbstractContextManager[bool]:
        """True inside the block when this process may drive ``name`` (a review's workflow
        thread) now; False while another replica or thread is driving it."""
        ...

    def checkpointer(self, local: Path) -> AbstractContextManager[Checkpoints]:
        """The review workflow's checkpoint saver: in the SQLite file ``local``, or in the
        server database (where every replica sees every thread; ``local`` is unused)."""
        ...


class Admin(Protocol):
    """Where the store lives, backup and restore (the CLI), and erasing (deleting everywhere)."""

    @property
    def local_file(self) -> Path | None:
        """The local file holding the store; None when it lives elsewhere (a database server,
        or SQLite ``:memory:``)."""
        ...

    def erasing(self) -> AbstractContextManager[None]:
        """Rows deleted inside the block leave no text in the store's local files (SQLite:
        secure_delete on, then the WAL truncated; a server reclaims its own pages)."""
        ...

    def backup(self, target: str | Path) -> None: ...

    def restore(
        self,
        source: str | Path,
        verify: RestoreCheck | None = None,
        carry: RestoreCheck | None = None,
    ) -> None:
        """Replace the content with a backup; ``verify`` runs on the checked copy, opened as a
        store, before anything is replaced, and refuses the backup by raising (the CLI checks
        the audit chain there: security sits above storage); ``carry`` then writes into the
        copy what must survive from the live store (the CLI: its audit log, tokens and
        sessions, security/restore_guard.py)."""
        ...


class SideStores(Protocol):
    """The small stores that go with this one: on PostgreSQL its database's tables, on the
    pool the store holds; beside SQLite a file, or the process's memory."""

    def outbox_rows(self, path: Path) -> OutboxRows:
        """The notification outbox that goes with this store: its database's table, or the
        SQLite file at ``path`` (not created when missing: deleting purges it)."""
        ...

    def shared_buckets(self) -> TokenBuckets | None:
        """Rate-limit buckets every replica over this store's database shares; None where one
        process serves the store (SQLite: its buckets stay in memory)."""
        ...


class TableCopy(Protocol):
    """Rows table by table, for ``seenbefore migrate`` (storage/transfer.py): what it copies
    beside the documents (quarantine, settings, blobs, the service tables)."""

    def table_names(self) -> list[str]: ...

    def table_rows(self, table: str) -> list[dict[str, Any]]:
        """Every row of ``table``, as column -> value."""
        ...

    def write_table_rows(
        self, table: str, key: str, rows: Sequence[dict[str, Any]], *, skip: str | None = None
    ) -> int:
        """Insert ``rows`` (the columns both stores have, less ``skip``: a column each store
        numbers for itself), updating rows with the same ``key``; the append-only audit log
        only gains rows. Returns how many rows were given."""
        ...

    def set_document_times(self, doc_id: str, ingested_at: str, updated_at: str) -> None:
        """Give a copied document the timestamps it had in the source."""
        ...


# -- the union, and the joins of a few ---------------------------------------------------------
class Store(
    AuditStore,
    Admin,
    Coordination,
    CorpusReads,
    ChangeLog,
    DocumentReads,
    SearchReads,
    DocumentWrites,
    StoredSettings,
    SideStores,
    TableCopy,
    Protocol,
):
    """A knowledge-base backend: every role's port. ``upsert`` is the one write path for
    documents; the service tables (tokens, audit, reviews) use ``transaction`` / ``query`` in
    portable SQL (storage/sqlport.py). Hold it where a caller needs most roles (the knowledge
    base, the factory, the CLI's store); hand a caller the port of its role."""

    def close(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc: object) -> None: ...


RestoreCheck = Callable[[Store], None]  # raises a SeenbeforeError to refuse a backup


class Transferable(DocumentReads, SearchReads, CorpusReads, DocumentWrites, TableCopy, Protocol):
    """What ``seenbefore migrate`` reads from a source and writes into a target
    (storage/transfer.py): documents through each store's own write path, then rows."""


@runtime_checkable
class KeywordIndex(Protocol):
    """A store that keeps a keyword index of its own (SQLite's FTS5, the transactional record
    of the text): not part of :class:`Store`, since product search ranks with the knowledge
    base's in-memory index on every backend and PostgreSQL keeps none
    (``seenbefore.sparse_search`` uses it; benchmarks time it)."""

    def sparse_search(
        self, terms: Sequence[str], filters: SearchFilters, limit: int
    ) -> list[ChunkHit]:
        """Best chunk per document for OR-joined ``terms``, pre-filtered, best first."""
        ...

    def documents_meta(self, doc_ids: Sequence[str]) -> dict[str, StoredDocument]: ...

    def chunks_by_id(self, chunk_ids: Sequence[int]) -> dict[int, Chunk]: ...
