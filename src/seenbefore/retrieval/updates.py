"""Keeping a corpus index in step with the store without rebuilding it.

:func:`apply` takes the documents a run of writes changed (``ChangeLog.changes_since``,
storage/ports.py) and reads only their rows: a document whose chunks are unchanged (only its
supersession moved) has its metadata replaced in place; any other changed document is tombstoned at
its old position (if it had one) and appended at the end with its new chunks and vectors (if it
still exists). The BM25 statistics follow exactly (retrieval/bm25.py), as do the neighbour sample
and the signal index, so the updated index answers every search exactly as a fresh build would.

:func:`compacted` drops the tombstones and puts documents back in id order, chunks by document
then id: the layout a fresh build has, array for array. The knowledge base runs it in the
background once tombstones pass :data:`COMPACT_SHARE` of the chunk rows.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from seenbefore.retrieval.corpus import (
    CorpusIndex,
    DenseRows,
    aligned,
    document_fields,
    ordinals,
)
from seenbefore.retrieval.neighbours import id_hashes
from seenbefore.storage.base import ChunkRows, CorpusChanges, DocumentRows
from seenbefore.storage.ports import CorpusReads

log = logging.getLogger(__name__)

# compact once this share of the chunk rows is tombstoned (searches skip tombstoned rows, but
# still step over their postings and hold their memory)
COMPACT_SHARE = 0.2
# past this share of the documents changed at once, reading every row is as cheap: rebuild
REBUILD_SHARE = 0.5


@dataclass(frozen=True)
class _Plan:
    """What one update does: positions to tombstone, documents to append (in id order) and
    documents whose metadata alone changed (position -> row in the read document rows)."""

    dead: list[int]
    appended: list[str]
    in_place: dict[int, int]


def apply(index: CorpusIndex, store: CorpusReads, changes: CorpusChanges) -> CorpusIndex | None:
    """``index`` with ``changes`` applied, at ``changes.generation``; None when it cannot be
    (the store's embedder is not the index's, or so much changed that a rebuild is as cheap)."""
    started = time.perf_counter()
    live = len(index.position)
    every = list(changes.every_id)
    if len(every) > max(16, REBUILD_SHARE * live):
        log.info("%d of %d documents changed: rebuilding", len(every), live)
        return None
    info = store.embedder_info()
    if index.dense_name is not None and (info is None or info[0] != index.dense_name):
        return None  # re-embedding logs 'all'; this is a store that changed under us
    docs = store.document_rows(every)
    chunks = store.chunk_rows(list(changes.doc_ids))  # the status-only ones keep theirs
    plan = _plan(index, docs, changes)
    new_chunks = _chunks_of(chunks, plan.appended)
    updated = _updated(index, plan, docs, new_chunks, changes.generation)
    if info is not None:
        ids, matrix = store.vectors(new_chunks.ids.tolist())
        if len(ids) and matrix.shape[1] != info[1]:
            return None
        if index.dense is not None or len(ids):
            _append_vectors(index, updated, new_chunks, ids, matrix, info)
    log.debug(
        "applied %d changed documents (%d appended, %d tombstoned, %d in place) in %.3fs",
        len(every),
        len(plan.appended),
        len(plan.dead),
        len(plan.in_place),
        time.perf_counter() - started,
    )
    return updated


def _plan(index: CorpusIndex, docs: DocumentRows, changes: CorpusChanges) -> _Plan:
    """Tombstone and append each written or deleted document; re-read the metadata of each
    document whose supersession alone moved."""
    stored = {d: i for i, d in enumerate(docs.ids)}
    dead, appended, in_place = [], [], {}
    for doc_id in changes.status_ids:
        at, row = index.position.get(doc_id), stored.get(doc_id)
        if at is not None and row is not None:
            in_place[at] = row
    for doc_id in changes.doc_ids:
        at, row = index.position.get(doc_id), stored.get(doc_id)
        if at is not None:
            dead.append(at)
        if row is not None:
            appended.append(doc_id)
    return _Plan(dead, sorted(appended), in_place)


def _chunks_of(chunks: ChunkRows, doc_ids: list[str]) -> ChunkRows:
    """The chunks of ``doc_ids`` (in that order; each document's chunks by id)."""
    wanted = set(doc_ids)
    picked = [
        (d, c, t)
        for d, c, t in zip(chunks.doc_ids, chunks.ids.tolist(), chunks.texts, strict=True)
        if d in wanted
    ]
    order = {d: i for i, d in enumerate(doc_ids)}
    picked.sort(key=lambda r: (order[r[0]], r[1]))
    return ChunkRows(
        np.asarray([c for _, c, _ in picked], dtype=np.int64),
        [d for d, _, _ in picked],
        [t for _, _, t in picked],
    )


def _updated(
    index: CorpusIndex, plan: _Plan, docs: DocumentRows, new: ChunkRows, generation: int
) -> CorpusIndex:
    """Every array of ``index`` with ``plan`` applied (vectors are added by the caller)."""
    rows = {d: i for i, d in enumerate(docs.ids)}
    added = [rows[d] for d in plan.appended]
    n_docs, n_chunks = index.n_docs, len(index.chunk_ids)
    dead = np.asarray(plan.dead, dtype=np.int64)
    # document arrays: copied (a search on the old index may be reading them), then changed
    tiers = widened(index.tiers, [docs.tiers[i] for i in added], docs.tiers)
    current = np.concatenate([index.current, np.asarray([docs.current[i] for i in added], bool)])
    dates = np.concatenate([index.dates, ordinals([docs.dates[i] for i in added])])
    signals = [*index.doc_signals, *(tuple(docs.signals[i]) for i in added)]
    services = {
        k: np.concatenate([v, np.zeros(len(added), bool)]) for k, v in index.services.items()
    }
    for at, row in plan.in_place.items():
        tiers[at], current[at] = docs.tiers[row], docs.current[row]
        dates[at] = ordinals([docs.dates[row]])[0]
        signals[at] = tuple(docs.signals[row])
        for mask in services.values():
            mask[at] = False
        for name in docs.services[row]:
            services.setdefault(name, np.zeros(n_docs + len(added), bool))[at] = True
    for k, doc in enumerate(added):
        for name in docs.services[doc]:
            services.setdefault(name, np.zeros(n_docs + len(added), bool))[n_docs + k] = True
    alive = np.concatenate([index.alive, np.ones(len(added), dtype=bool)])
    alive[dead] = False
    # chunk arrays: the appended documents' chunks after the last chunk
    position = {d: n_docs + k for k, d in enumerate(plan.appended)}
    new_doc = np.asarray([position[d] for d in new.doc_ids], dtype=np.int64)
    counts = np.bincount(new_doc - n_docs, minlength=len(added)).astype(np.int64)
    starts = (n_chunks + np.cumsum(counts) - counts).astype(np.int64)
    dead_chunks = ranges(index.doc_starts[dead], index.doc_counts[dead])
    per_doc = [
        document_fields(new.texts[s - n_chunks : s - n_chunks + c])
        for s, c in zip(starts.tolist(), counts.tolist(), strict=True)
    ]
    position = dict(index.position)  # the new index's, without a pass over every id
    for at in plan.dead:
        del position[index.doc_ids[at]]
    position.update((d, n_docs + k) for k, d in enumerate(plan.appended))
    updated = CorpusIndex(
        generation=generation,
        doc_ids=[*index.doc_ids, *plan.appended],
        tiers=tiers,
        current=current,
        dates=dates,
        services=services,
        chunk_ids=np.concatenate([index.chunk_ids, new.ids]),
        chunk_doc=np.concatenate([index.chunk_doc, new_doc]),
        doc_starts=np.concatenate([index.doc_starts, starts]),
        doc_counts=np.concatenate([index.doc_counts, counts]),
        bm25=index.bm25.updated(dead_chunks, [(t,) for t in new.texts]),
        doc_bm25=index.doc_bm25.updated(dead, per_doc) if index.doc_bm25 else None,
        doc_phrases=index.doc_phrases.updated(dead, per_doc) if index.doc_phrases else None,
        doc_signals=signals,
        alive=alive,
        doc_hash=np.concatenate([index.doc_hash, id_hashes(plan.appended)]),
        dense_name=index.dense_name,
    )
    updated._position = position
    return updated


def _append_vectors(
    old: CorpusIndex,
    new: CorpusIndex,
    chunks: ChunkRows,
    ids: npt.NDArray[np.int64],
    matrix: npt.NDArray[np.float32],
    info: tuple[str, int],
) -> None:
    """The appended chunks' vectors after ``old``'s rows (a first vector in the store gives the
    index its dense rows, zeros for the chunks before it); the neighbour sample follows."""
    rows, has = aligned(chunks.ids, ids, matrix.reshape(len(ids), info[1]))
    used = len(old.chunk_ids)
    buffer = old.dense_rows or DenseRows(info[1], used + len(rows))
    before = old.has_vector if old.has_vector is not None else np.zeros(used, dtype=bool)
    if old.dense_rows is None:
        buffer.size = used  # zeros: the chunks before the first vector have none
    new.dense_rows, new.dense = buffer.appended(used, rows)
    new.has_vector = np.concatenate([before, has])
    new.dense_name = info[0]
    appended = np.arange(used, used + len(rows), dtype=np.int64)
    if old.neighbours is not None:
        new.neighbours = old.neighbours.updated(new.layout(), appended)


def widened(values: npt.NDArray[np.str_], more: list[str], fits: list[str]) -> npt.NDArray[np.str_]:
    """``values`` then ``more``, in a copy wide enough for every string of ``fits`` too (one
    changed in place must not be cut to the old width)."""
    width = max([values.dtype.itemsize // 4, 1, *(len(s) for s in (*more, *fits))])
    return np.concatenate([values.astype(f"<U{width}"), np.asarray(more, dtype=f"<U{width}")])


def ranges(starts: npt.NDArray[np.int64], counts: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """``starts[i] .. starts[i] + counts[i] - 1`` for each i, concatenated."""
    total = int(counts.sum())
    if not total:
        return np.zeros(0, dtype=np.int64)
    offsets = np.repeat(starts - np.concatenate([[0], np.cumsum(counts)[:-1]]), counts)
    out: npt.NDArray[np.int64] = np.arange(total, dtype=np.int64) + offsets.astype(np.int64)
    return out


def compacted(index: CorpusIndex) -> CorpusIndex:
    """``index`` without its tombstones, documents in id order and each document's chunks in
    id order: what a fresh build of the same rows holds (the neighbour sample is carried)."""
    live = np.flatnonzero(index.alive)
    doc_order = live[np.argsort(np.asarray([index.doc_ids[d] for d in live], dtype=object))]
    counts = index.doc_counts[doc_order]
    chunk_order = ranges(index.doc_starts[doc_order], counts)
    doc_map = np.full(index.n_docs, -1, dtype=np.int64)
    doc_map[doc_order] = np.arange(len(doc_order))
    chunk_map = np.full(len(index.chunk_ids), -1, dtype=np.int64)
    chunk_map[chunk_order] = np.arange(len(chunk_order))
    out = CorpusIndex(
        generation=index.generation,
        doc_ids=[index.doc_ids[d] for d in doc_order.tolist()],
        tiers=index.tiers[doc_order],
        current=index.current[doc_order],
        dates=index.dates[doc_order],
        services={k: v[doc_order] for k, v in index.services.items() if v[doc_order].any()},
        chunk_ids=index.chunk_ids[chunk_order],
        chunk_doc=doc_map[index.chunk_doc[chunk_order]],
        doc_starts=np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        if len(counts)
        else np.zeros(0, dtype=np.int64),
        doc_counts=counts,
        bm25=index.bm25.compacted(chunk_order),
        doc_bm25=index.doc_bm25.compacted(doc_order) if index.doc_bm25 else None,
        doc_phrases=index.doc_phrases.compacted(doc_order) if index.doc_phrases else None,
        doc_signals=[index.doc_signals[d] for d in doc_order.tolist()],
        alive=np.ones(len(doc_order), dtype=bool),
        doc_hash=index.doc_hash[doc_order],
        dense_name=index.dense_name,
    )
    if index.dense is not None and index.has_vector is not None:
        rows = index.dense[chunk_order]
        out.dense_rows, out.dense = DenseRows(rows.shape[1], len(rows)).appended(0, rows)
        out.has_vector = index.has_vector[chunk_order]
        if index.neighbours is not None:
            out.neighbours = index.neighbours.moved(doc_map, chunk_map)
    return out
