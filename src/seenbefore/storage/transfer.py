"""Moving a knowledge base between stores (SQLite <-> PostgreSQL), then proving the copy.

The copy goes through each store's own write path, so the target keeps its invariants (keyword
index, supersession, vector index): documents with their sections and chunks by ``upsert``
(unchanged ones are skipped, so a second run writes nothing), vectors in one ``replace_vectors``
when they differ, then quarantine entries, settings, blobs and the service tables (audit log,
tokens, reviews) row by row where both stores have them. Timestamps travel with the rows.

Verification computes, on both sides and independently of row ids, a count and a SHA-256 over
every document, chunk, vector, quarantine entry, setting, blob and service row; any difference
is a StoreError. Documents the target holds and the source does not stop the copy unless
``prune`` deletes them.

Both stores speak :class:`~seenbefore.storage.ports.Transferable`: their documents through the
ports every caller uses, the other tables through ``TableCopy`` (each adapter's own SQL), so this
module names neither adapter.

Extension point: :data:`SERVICE_TABLES` lists the service tables and the column that identifies
a row; a new table is copied once both stores have it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from seenbefore.errors import ConflictError, StoreError
from seenbefore.storage.ports import Transferable

Progress = Callable[[int, int], None]
BATCH = 200

# Counters each store keeps for itself; ``chunks_changed`` is copied (LSA staleness compares it).
INTERNAL_META = frozenset(
    {
        "generation",
        "settings_generation",
        "chunk_count",
        "schema_version",
        "embedder_name",
        "embedder_dim",
    }
)
# service table -> the column that identifies a row across stores (ids may differ)
SERVICE_TABLES: dict[str, str] = {
    "api_tokens": "id",
    "audit_log": "hash",
    "reviews": "id",
    "review_events": "id",
    "calibration_labels": "id",
}


@dataclass(frozen=True)
class Tally:
    count: int
    digest: str


@dataclass
class TransferReport:
    documents: dict[str, int] = field(default_factory=dict)  # added/updated/unchanged/pruned
    vectors_written: int = 0
    rows: dict[str, int] = field(default_factory=dict)  # table -> rows written
    skipped: dict[str, str] = field(default_factory=dict)  # table -> why it was not copied
    source: dict[str, Tally] = field(default_factory=dict)
    target: dict[str, Tally] = field(default_factory=dict)

    @property
    def verified(self) -> bool:
        return bool(self.source) and self.source == self.target


def transfer(
    source: Transferable,
    target: Transferable,
    *,
    prune: bool = False,
    progress: Progress | None = None,
) -> TransferReport:
    """Copy everything from ``source`` into ``target`` and verify; safe to run again."""
    report = TransferReport()
    ids = source.list_ids()
    extra = sorted(set(target.list_ids()) - set(ids))
    if extra and not prune:
        raise ConflictError(
            f"the target holds {len(extra)} documents the source does not (e.g."
            f" {', '.join(extra[:3])}); re-run with --prune to delete them from the target, or"
            " copy into an empty store"
        )
    for doc_id in extra:
        target.delete(doc_id)
    report.documents["pruned"] = len(extra)
    rows = source.chunk_rows()
    by_doc: dict[str, list[int]] = {}
    for chunk_id, doc_id in zip(rows.ids.tolist(), rows.doc_ids, strict=True):
        by_doc.setdefault(doc_id, []).append(chunk_id)
    for start in range(0, len(ids), BATCH):
        batch = ids[start : start + BATCH]
        metas = source.documents_meta(batch)
        chunks = source.chunks_by_id([c for d in batch for c in by_doc.get(d, [])])
        for doc_id in batch:
            stored = metas[doc_id]
            outcome = target.upsert(stored.postmortem, [chunks[c] for c in by_doc.get(doc_id, [])])
            report.documents[outcome] = report.documents.get(outcome, 0) + 1
            if outcome != "unchanged":
                target.set_document_times(doc_id, stored.ingested_at, stored.updated_at)
        if progress:
            progress(min(start + BATCH, len(ids)), len(ids))
    report.vectors_written = _copy_vectors(source, target)
    for table, key in _tables(source, target, report).items():
        report.rows[table] = target.write_table_rows(
            table, key, _rows(source, table), skip=_auto(table)
        )
    report.source, report.target = inventory(source), inventory(target)
    if not report.verified:
        differ = [k for k in report.source if report.source[k] != report.target.get(k)]
        raise StoreError(
            f"copy verification failed for {', '.join(differ)}: counts or checksums differ"
            " between source and target; run the command again (it resumes) and report it if"
            " it persists"
        )
    return report


def _copy_vectors(source: Transferable, target: Transferable) -> int:
    info = source.embedder_info()
    if info is None or _vector_tally(source) == _vector_tally(target):
        return 0
    ids, matrix = source.vectors()
    position = _ordinals(source)
    wanted = {position[int(c)]: i for i, c in enumerate(ids.tolist())}
    target_ids: list[int] = []
    rows: list[int] = []
    for chunk_id, key in _ordinals(target).items():
        if key in wanted:
            target_ids.append(chunk_id)
            rows.append(wanted[key])
    target.replace_vectors(info[0], target_ids, matrix[rows] if rows else matrix[:0])
    return len(rows)


def _ordinals(store: Transferable) -> dict[int, tuple[str, int]]:
    """chunk id -> (document id, position among that document's chunks)."""
    out: dict[int, tuple[str, int]] = {}
    seen: dict[str, int] = {}
    rows = store.chunk_rows()
    for chunk_id, doc_id in zip(rows.ids.tolist(), rows.doc_ids, strict=True):
        out[chunk_id] = (doc_id, seen.get(doc_id, 0))
        seen[doc_id] = seen.get(doc_id, 0) + 1
    return out


def _tables(source: Transferable, target: Transferable, report: TransferReport) -> dict[str, str]:
    have_source, have_target = set(source.table_names()), set(target.table_names())
    out = {"quarantine": "source", "blobs": "key", "meta": "key"}
    for table, key in SERVICE_TABLES.items():
        if table in have_source and table in have_target:
            out[table] = key
        elif table in have_source:
            report.skipped[table] = "the target store has no such table (schema not migrated)"
    return out


# -- verification ---------------------------------------------------------------------------
def _digest(items: Iterable[Any]) -> Tally:
    h = hashlib.sha256()
    n = 0
    for item in items:
        h.update(json.dumps(item, sort_keys=True, default=_plain).encode())
        h.update(b"\n")
        n += 1
    return Tally(n, h.hexdigest())


def _plain(value: Any) -> Any:
    if isinstance(value, bytes | memoryview):
        return hashlib.sha256(bytes(value)).hexdigest()
    return str(value)


def _vector_tally(store: Transferable) -> Tally:
    info = store.embedder_info()
    ids, matrix = store.vectors()
    position = _ordinals(store)
    keyed = sorted(
        (position[int(c)], hashlib.sha256(np.asarray(v, "<f4").tobytes()).hexdigest())
        for c, v in zip(ids.tolist(), matrix, strict=True)
    )
    return _digest([[info[0] if info else None, k, v] for k, v in keyed])


def inventory(store: Transferable) -> dict[str, Tally]:
    """A count and checksum per kind of content, independent of row ids and storage."""
    ids = store.list_ids()
    docs: list[Any] = []
    for start in range(0, len(ids), BATCH):
        metas = store.documents_meta(ids[start : start + BATCH])
        for doc_id in ids[start : start + BATCH]:
            d = metas[doc_id]
            pm = d.postmortem
            docs.append(
                [pm.id, pm.content_hash, pm.source, pm.access_tier, d.effective_status,
                 d.superseded_by, d.ingested_at, d.updated_at, [list(s) for s in
                 ((x.key, x.heading, x.text, x.position) for x in pm.sections)]]
            )  # fmt: skip
    rows = store.chunk_rows()
    chunks = store.chunks_by_id(rows.ids.tolist())
    position = _ordinals(store)
    chunk_items = sorted(
        [*position[c], chunks[c].section_key, chunks[c].section_position, chunks[c].position,
         chunks[c].text]
        for c in rows.ids.tolist()
    )  # fmt: skip
    tables = set(store.table_names())
    out = {
        "documents": _digest(docs),
        "chunks": _digest(chunk_items),
        "vectors": _vector_tally(store),
        "quarantine": _digest(
            [e.source, e.reason, e.doc_id, e.content_hash, e.first_seen, e.last_seen, e.attempts]
            for e in store.list_quarantine()
        ),
        "settings": _digest(sorted(_rows(store, "meta"), key=lambda r: str(r["key"]))),
        "blobs": _digest(sorted(_rows(store, "blobs"), key=lambda r: str(r["key"]))),
    }
    for table, key in SERVICE_TABLES.items():
        if table in tables:
            out[table] = _digest(sorted(_rows(store, table), key=lambda r: str(r[key])))
    return out


# -- rows of the other tables ------------------------------------------------------------------
def _rows(store: Transferable, table: str) -> list[dict[str, Any]]:
    return _clean(table, store.table_rows(table))


def _auto(table: str) -> str | None:
    """A column each store numbers for itself (never copied)."""
    return "id" if table == "quarantine" else None


def _clean(table: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows as both stores can compare them: bytes for blobs, no store-internal columns or
    counters."""
    out = []
    for row in rows:
        if table == "meta" and row["key"] in INTERNAL_META:
            continue
        clean = {k: (bytes(v) if isinstance(v, memoryview) else v) for k, v in row.items()}
        if (auto := _auto(table)) is not None:
            clean.pop(auto, None)
        out.append(clean)
    return out
