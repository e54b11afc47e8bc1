"""The Store protocol: what every knowledge-base backend provides, and what callers type
against (KnowledgeBase, review, security, lifecycle). The SQLite and PostgreSQL stores implement
all of it; where their SQL dialects differ, ``store.sql`` (storage/dialect.py) answers, so no
caller outside storage/ branches on the backend."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, Self, runtime_checkable

import numpy as np
import numpy.typing as npt

from seenbefore.errors import ConflictError, NotFoundError
from seenbefore.storage.sqlport import ServiceStore
from seenbefore.storage.supersession import SupersedeRow
from seenbefore.types import (
    Chunk,
    Postmortem,
    QuarantineEntry,
    SearchFilters,
    Section,
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


# How many corpus generations the change log keeps: a replica further behind rebuilds its index
# from everything instead of applying the changes (``Store.changes_since`` answers None).
CHANGE_LOG_GENERATIONS = 10_000
# the change log's entry kinds: a document written or deleted; a document whose supersession a
# write may have moved (its text and chunks unchanged); a corpus write that touched no document
# (a quarantine row, an unchanged re-ingest); every document (re-embedding, restore)
CHANGE_KINDS = ("document", "status", "none", "all")


@dataclass(frozen=True)
class CorpusChanges:
    """What changed in the corpus after generation ``since`` up to ``generation``: the documents
    written or deleted (their current rows, or their absence, are what an index applies), and
    those whose supersession alone may have moved (their metadata is re-read)."""

    since: int
    generation: int
    doc_ids: tuple[str, ...]
    status_ids: tuple[str, ...] = ()

    @property
    def every_id(self) -> tuple[str, ...]:
        return tuple(sorted({*self.doc_ids, *self.status_ids}))


def changes_from_log(
    since: int, generation: int, entries: Sequence[tuple[int, str, str]]
) -> CorpusChanges | None:
    """The changes ``entries`` (generation, kind, doc id) record after ``since``, or None when
    they cannot say: ``since`` is ahead of the store (another store, or a restore), a
    generation in between has no entry (pruned, restored, or written before the log existed),
    or an entry says every document changed (re-embedding)."""
    if since > generation:
        return None
    within = [(g, kind, d) for g, kind, d in entries if since < g <= generation]
    if len({g for g, _, _ in within}) != generation - since:
        return None
    if any(kind == "all" for _, kind, _ in within):
        return None
    written = {d for _, kind, d in within if kind == "document"}
    moved = {d for _, kind, d in within if kind == "status"} - written
    return CorpusChanges(since, generation, tuple(sorted(written)), tuple(sorted(moved)))


def _nothing() -> None:
    return None


@dataclass(frozen=True)
class Checkpoints:
    """Where a review workflow's LangGraph checkpoints live (``Store.checkpointer``)."""

    saver: Any  # a LangGraph checkpoint saver (SqliteSaver, PostgresSaver)
    location: str  # for messages: the file, or "the database <url>"
    restore_hint: str  # what to do when a checkpoint a review needs is missing
    compact: Callable[[], None] = _nothing  # cut deleted checkpoints out of local files


class Store(ServiceStore, Protocol):
    """A knowledge-base backend. ``upsert`` is the one write path for documents; the service
    tables (tokens, audit, reviews) use ``transaction`` / ``query`` in portable SQL
    (storage/sqlport.py)."""

    # -- where it lives, opening and closing ----------------------------------------------------
    @property
    def location(self) -> str:
        """The store for messages: its file, or its database URL without the password."""
        ...

    @property
    def local_file(self) -> Path | None:
        """The local file holding the store; None when it lives elsewhere (a database server,
        or SQLite ``:memory:``)."""
        ...

    def close(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc: object) -> None: ...

    def set_meta(self, key: str, value: str) -> None: ...

    # -- coordination and the review workflow ---------------------------------------------------
    def lease(self, name: str) -> AbstractContextManager[bool]:
        """True inside the block when this process may drive ``name`` (a review's workflow
        thread) now; False while another replica or thread is driving it."""
        ...

    def checkpointer(self, local: Path) -> AbstractContextManager[Checkpoints]:
        """The review workflow's checkpoint saver: in the SQLite file ``local``, or in the
        server database (where every replica sees every thread; ``local`` is unused)."""
        ...

    def erasing(self) -> AbstractContextManager[None]:
        """Rows deleted inside the block leave no text in the store's local files (SQLite:
        secure_delete on, then the WAL truncated; a server reclaims its own pages)."""
        ...

    def audit_guards_missing(self) -> str:
        """What is missing of the audit log's append-only guards (triggers; on PostgreSQL also
        the app role's lack of UPDATE, DELETE, TRUNCATE); '' when all are in place."""
        ...

    def backup(self, target: str | Path) -> None: ...

    def restore(self, source: str | Path, verify: RestoreCheck | None = None) -> None:
        """Replace the content with a backup; ``verify`` runs on the checked copy, opened as a
        store, before anything is replaced, and refuses the backup by raising (the CLI checks
        the audit chain there: security sits above storage)."""
        ...

    # -- documents ------------------------------------------------------------------------------
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
        :func:`id_case_clash` and nothing changes."""
        ...

    def get(self, doc_id: str, tiers: Sequence[str]) -> StoredDocument:
        """The document, if it exists and its tier is among ``tiers``; else NotFoundError. The
        id is matched regardless of case (the stored spelling preferred when several are
        stored); the document keeps its stored spelling."""
        ...

    def delete(self, doc_id: str) -> None: ...

    def fingerprints(self) -> dict[str, tuple[str, str]]:
        """doc id -> (content hash, source) for every document."""
        ...

    def superseded_ids(self) -> list[str]: ...

    def list_ids(self, tiers: Sequence[str] | None = None) -> list[str]: ...

    def chunks_by_id(self, chunk_ids: Sequence[int]) -> dict[int, Chunk]: ...

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

    def vectors(
        self, chunk_ids: Sequence[int] | None = None
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """(chunk ids, matrix) of every chunk with a vector, or of those among ``chunk_ids``,
        ordered by chunk id."""
        ...

    def chunk_rows(self, doc_ids: Sequence[str] | None = None) -> ChunkRows:
        """Every chunk (or the chunks of ``doc_ids``), grouped by document id, then chunk id."""
        ...

    def document_rows(self, doc_ids: Sequence[str] | None = None) -> DocumentRows:
        """Every document (or those of ``doc_ids`` that exist), ordered by id."""
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

    def changes_since(self, generation: int) -> CorpusChanges | None:
        """The documents written or deleted after corpus generation ``generation`` (read with
        the current generation, in one snapshot), so an index built at ``generation`` can apply
        them instead of rebuilding; None when the change log cannot say (see
        :func:`changes_from_log`): the caller rebuilds from every row."""
        ...

    def get_json(self, key: str) -> Any: ...

    def set_json(self, key: str, value: Any) -> None: ...

    def get_blob(self, key: str) -> bytes | None: ...

    def put_blob(self, key: str, value: bytes) -> None: ...

    def chunks_changed(self) -> int: ...

    def generation(self) -> int:
        """The corpus generation: a counter that changes on every write to documents, chunks or
        vectors; the search index compares it to know it is stale."""
        ...

    def settings_generation(self) -> int:
        """A counter that changes on every settings write (``set_json``, ``put_blob``: weights,
        fitted models, the LSA model): what a search context reads beside the index."""
        ...

    def generations(self) -> tuple[int, int]:
        """(corpus generation, settings generation) in one read: what a search checks."""
        ...


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


def utc_now() -> str:
    """The timestamp every store writes: UTC, ISO 8601, seconds."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


RestoreCheck = Callable[[Store], None]  # raises a SeenbeforeError to refuse a backup


class RowLike(Protocol):
    """A database row read by column name (sqlite3.Row, a psycopg dict row)."""

    def __getitem__(self, key: str, /) -> Any: ...


def stored_document(
    row: RowLike,
    sections: tuple[Section, ...],
    *,
    date: dt.date | None,
    services: Sequence[str],
) -> StoredDocument:
    """A documents row (either backend's) as a StoredDocument. The backends differ only in how
    they hold the date and the services list, so the caller decodes those two."""
    pm = Postmortem(
        id=row["id"],
        title=row["title"],
        date=date,
        body=row["body"],
        sections=sections,
        services=tuple(services),
        severity=row["severity"],
        status=row["status"],
        supersedes=row["supersedes"],
        access_tier=row["access_tier"],
        type=row["type"],
        tags=tuple(json.loads(row["tags"])),
        signals=tuple(json.loads(row["signals"])),
        extra=json.loads(row["extra"]),
        source=row["source"],
        content_hash=row["content_hash"],
    )
    return StoredDocument(
        postmortem=pm,
        effective_status=row["effective_status"],
        superseded_by=row["superseded_by"],
        chunk_count=int(row["n_chunks"]),
        ingested_at=row["ingested_at"],
        updated_at=row["updated_at"],
    )


class JsonSettings:
    """``get_json`` / ``set_json`` over a store's ``get_meta`` / ``set_meta``: one encoding for
    every backend, so settings copied between stores (``seenbefore migrate``) compare equal."""

    def get_meta(self, key: str) -> str | None:
        raise NotImplementedError

    def set_meta(self, key: str, value: str) -> None:
        raise NotImplementedError

    def get_json(self, key: str) -> Any:
        raw = self.get_meta(key)
        return None if raw is None else json.loads(raw)

    def set_json(self, key: str, value: Any) -> None:
        self.set_meta(key, json.dumps(value, sort_keys=True))


def id_case_clash(doc_id: str) -> ConflictError:
    """The error a write meets when a stored id differs from ``doc_id`` only in case. The stored
    id is not named: it may be in a tier the writer cannot see (ingest names both sources)."""
    return ConflictError(
        f"postmortem id {doc_id!r} is taken: a stored postmortem's id differs from it only in "
        "case, and ids are unique regardless of case; choose a new id (`seenbefore ingest "
        "--replace` lets a file take the stored one over)"
    )


def visible_document(
    docs: Mapping[str, StoredDocument], doc_id: str, tiers: Sequence[str]
) -> StoredDocument:
    """The document if the caller's tiers hold it; otherwise NotFoundError, worded exactly as for
    an id that does not exist, so a hidden postmortem is indistinguishable from an absent one."""
    doc = docs.get(doc_id)
    if doc is None or doc.postmortem.access_tier not in tiers:
        raise NotFoundError(f"no postmortem with id '{doc_id}'")
    return doc
