"""What a knowledge-base store speaks in, and what both adapters share: the values that cross
its ports (counts, rows, vectors, the change log's answer, where checkpoints live) and the
helpers the SQLite and PostgreSQL stores both use to build them. The ports callers type against
are in storage/ports.py."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from seenbefore.errors import ConflictError, NotFoundError
from seenbefore.types import (
    Postmortem,
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


def utc_now() -> str:
    """The timestamp every store writes: UTC, ISO 8601, seconds."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


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
