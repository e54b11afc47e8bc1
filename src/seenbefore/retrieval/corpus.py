"""In-memory view of the store for fast filtered search, kept in step with the store's corpus
generation: built from every row once, then updated with the documents each write changed
(retrieval/updates.py: appended and tombstoned, compacted in the background).

Chunks are grouped by document, so per-document best scores are one ``np.maximum.reduceat``;
filters are document-level boolean masks, applied before any scoring (a tombstoned document is
in no mask). Beside the chunk index sits a document index (BM25F, one row per document:
front-matter field and body field), which ranks documents by all of their text; chunk scores
stay the best-passage evidence.

Nothing a search computes depends on where a document or chunk sits in the index (dense cosines
are row-by-row ``einsum``, not a BLAS product whose last bits depend on the row's position; ties
break by id), so an updated index answers exactly as a fresh build of the same rows does.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from seenbefore.retrieval.bm25 import BM25Index
from seenbefore.retrieval.identity import ServiceNames
from seenbefore.retrieval.neighbours import Layout, Neighbours, cosines, id_hashes
from seenbefore.retrieval.signals import SignalIndex
from seenbefore.storage.base import ChunkRows
from seenbefore.storage.ports import CorpusReads
from seenbefore.types import SearchFilters

log = logging.getLogger(__name__)

# BM25F field weights (front matter: title, type, services, tags, signals; body); this and the
# two weights below: how they were chosen is in docs/decisions.md.
FIELD_WEIGHTS = (2.0, 1.0)
# weight of the word-pair (phrase) BM25F score added to the word score when ranking documents
PHRASE_WEIGHT = 1.0
# weight of the best chunk's BM25 score added to the document's (passage evidence)
PASSAGE_WEIGHT = 0.0
MAX_OVERLAP_WORDS = 200
# the BM25 indexes saved beside a local store file (kb.sqlite.<kind>.npz), each with the
# generation it was built at: chunks, documents, document word pairs
SAVED_INDEX_KINDS = ("bm25", "bm25doc", "bm25doc2")

BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float32]


class DenseRows:
    """The dense matrix's rows, shared by an index and the indexes updated from it: each views
    its first rows; appending writes past every existing view (or into a larger copy), so a
    search on an older index never sees a row change under it."""

    def __init__(self, dim: int, capacity: int = 0) -> None:
        self.data = np.zeros((max(capacity, 16), dim), dtype=np.float32)
        self.size = 0  # rows written: the newest view's length

    def appended(self, used: int, rows: FloatArray) -> tuple[DenseRows, FloatArray]:
        """(buffer, view of ``used + len(rows)`` rows) with ``rows`` after the first ``used``."""
        total = used + len(rows)
        target = self
        if self.size != used or total > len(self.data):  # another index appended here already
            target = DenseRows(self.data.shape[1], max(2 * total, 1024))
            target.data[:used] = self.data[:used]
        target.data[used:total] = rows
        target.size = total
        return target, target.data[:total]


@dataclass
class CorpusIndex:
    generation: int
    doc_ids: list[str]  # per document position; a tombstoned position keeps its id
    tiers: npt.NDArray[np.str_]
    current: BoolArray
    dates: npt.NDArray[np.int64]  # proleptic ordinal, -1 when undated
    services: dict[str, BoolArray]
    chunk_ids: npt.NDArray[np.int64]
    chunk_doc: npt.NDArray[np.int64]  # document position of each chunk (grouped)
    doc_starts: npt.NDArray[np.int64]  # first chunk position of each document
    doc_counts: npt.NDArray[np.int64]  # chunks of each document
    bm25: BM25Index
    doc_bm25: BM25Index | None = None  # one row per document (BM25F over front matter + body)
    doc_phrases: BM25Index | None = None  # the same over adjacent content-word pairs
    doc_signals: list[tuple[str, ...]] = field(default_factory=list)  # per document position
    alive: BoolArray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    doc_hash: npt.NDArray[np.uint64] = field(default_factory=lambda: np.zeros(0, np.uint64))
    dense: FloatArray | None = None  # rows aligned with chunk_ids (zeros where missing)
    has_vector: BoolArray | None = None
    dense_name: str | None = None
    dense_rows: DenseRows | None = None
    neighbours: Neighbours | None = None
    _dense_cache: dict[tuple[object, ...], tuple[npt.NDArray[np.int64], FloatArray]] = field(
        default_factory=dict
    )
    _mask_cache: dict[tuple[object, ...], BoolArray] = field(default_factory=dict)

    @property
    def position(self) -> dict[str, int]:
        """Each live document's position."""
        if not hasattr(self, "_position"):
            live = self.alive
            self._position = {d: i for i, d in enumerate(self.doc_ids) if live[i]}
        return self._position

    @property
    def n_docs(self) -> int:
        """Document positions, tombstoned ones included (the length of every document array)."""
        return len(self.doc_ids)

    @property
    def tombstoned_share(self) -> float:
        """Share of chunk rows that are tombstoned (compaction drops them)."""
        return self.bm25.tombstoned / self.bm25.n_rows if self.bm25.n_rows else 0.0

    @property
    def signals(self) -> SignalIndex | None:
        """The postmortems' recorded signals (structured retrieval), built on first use."""
        if not hasattr(self, "_signals"):
            self._signals = (
                SignalIndex.build(self.doc_signals, live=self.alive) if self.alive.any() else None
            )
        return self._signals

    @property
    def service_names(self) -> ServiceNames:
        """The service names documents list, for recognising them in a query (built on first
        use)."""
        if not hasattr(self, "_service_names"):
            self._service_names = ServiceNames(self.services)
        return self._service_names

    def lists_service(self, name: str, doc_mask: BoolArray) -> bool:
        """Whether a document in ``doc_mask`` lists service ``name``."""
        mask = self.services.get(name)
        return mask is not None and bool((mask & doc_mask).any())

    # -- construction -------------------------------------------------------------------
    @classmethod
    def build(cls, store: CorpusReads, *, stem: bool, bm25_path: Path | None) -> CorpusIndex:
        started = time.perf_counter()
        generation = store.generation()
        docs = store.document_rows()
        chunks = store.chunk_rows()
        position = {d: i for i, d in enumerate(docs.ids)}
        chunk_doc = np.fromiter(
            (position[d] for d in chunks.doc_ids), dtype=np.int64, count=len(chunks.doc_ids)
        )
        starts = np.searchsorted(chunk_doc, np.arange(len(docs.ids))).astype(np.int64)
        counts = np.bincount(chunk_doc, minlength=len(docs.ids)).astype(np.int64)
        loaded = BM25Index.load(bm25_path) if bm25_path and bm25_path.exists() else None
        if (
            loaded is not None
            and loaded[1] == generation
            and loaded[0].stem == stem
            and loaded[0].n_rows == len(chunks.ids)
        ):
            bm25 = loaded[0]
        else:
            bm25 = BM25Index.build(chunks.texts, stem=stem)
            if bm25_path is not None:
                bm25.save(bm25_path, generation)
        doc_bm25, doc_phrases = (
            _document_index(chunks.texts, starts, generation, stem, bm25_path, ngram)
            for ngram in (1, 2)
        )
        index = cls(
            generation=generation,
            doc_ids=docs.ids,
            tiers=np.asarray(docs.tiers, dtype=np.str_),
            current=np.asarray(docs.current, dtype=bool),
            dates=ordinals(docs.dates),
            services=service_masks(docs.services),
            chunk_ids=chunks.ids,
            chunk_doc=chunk_doc,
            doc_starts=starts,
            doc_counts=counts,
            bm25=bm25,
            doc_bm25=doc_bm25,
            doc_phrases=doc_phrases,
            doc_signals=list(docs.signals) or [() for _ in docs.ids],
            alive=np.ones(len(docs.ids), dtype=bool),
            doc_hash=id_hashes(docs.ids),
        )
        index._load_vectors(store)
        log.info(
            "built corpus index: %d docs, %d chunks in %.2fs",
            index.n_docs,
            len(chunks.ids),
            time.perf_counter() - started,
        )
        return index

    def _load_vectors(self, store: CorpusReads) -> None:
        info = store.embedder_info()
        if info is None:
            return
        ids, matrix = store.vectors()
        if not len(ids):
            return
        dense, has = aligned(self.chunk_ids, ids, matrix)
        room = len(dense) + max(1024, len(dense) // 8)  # appends write here, not into a copy
        self.dense_rows, self.dense = DenseRows(matrix.shape[1], room).appended(0, dense)
        self.has_vector, self.dense_name = has, info[0]
        self.neighbours = Neighbours.compute(self.layout())

    def layout(self) -> Layout:
        """What the neighbour sample reads (only with vectors)."""
        if self.dense is None or self.has_vector is None:
            raise ValueError("no vectors in the index")
        return Layout(
            self.doc_ids, self.doc_hash, self.alive, self.doc_starts, self.doc_counts,
            self.chunk_doc, self.dense, self.has_vector,
        )  # fmt: skip

    # -- filters ------------------------------------------------------------------------
    def doc_mask(self, filters: SearchFilters) -> BoolArray:
        """Live documents that pass ``filters`` (cached per filter: callers repeat theirs)."""
        key = _filter_key(filters)
        cached = self._mask_cache.get(key)
        if cached is None:
            if len(self._mask_cache) > 64:
                self._mask_cache.clear()
            cached = self._mask_cache[key] = self._compute_mask(filters)
        return cached

    def _compute_mask(self, filters: SearchFilters) -> BoolArray:
        mask = (
            np.isin(self.tiers, np.asarray(filters.tiers, dtype=np.str_))
            if filters.tiers
            else np.zeros(self.n_docs, dtype=bool)
        )
        mask &= self.alive
        if not filters.include_superseded:
            mask &= self.current
        if filters.services:
            any_service = np.zeros(self.n_docs, dtype=bool)
            for name in filters.services:
                if name in self.services:
                    any_service |= self.services[name]
            mask &= any_service
        if filters.date_from is not None:
            mask &= self.dates >= filters.date_from.toordinal()
        if filters.date_to is not None:
            mask &= (self.dates >= 0) & (self.dates <= filters.date_to.toordinal())
        if filters.exclude_ids:
            excluded = set(filters.exclude_ids)
            mask &= np.fromiter(
                (d not in excluded for d in self.doc_ids), dtype=bool, count=self.n_docs
            )
        return mask

    def chunk_mask(self, doc_mask: BoolArray) -> BoolArray:
        return doc_mask[self.chunk_doc]

    # -- scoring ------------------------------------------------------------------------
    def best_per_doc(self, chunk_scores: FloatArray, empty: float) -> FloatArray:
        """Each document's best chunk score (``empty`` for a document without chunks)."""
        out = np.full(self.n_docs, empty, dtype=np.float32)
        has = self.doc_counts > 0
        if len(chunk_scores) and has.any():
            out[has] = np.maximum.reduceat(chunk_scores, self.doc_starts[has])
        return out

    def best_chunk(self, doc: int, chunk_scores: FloatArray) -> int:
        start = int(self.doc_starts[doc])
        end = start + int(self.doc_counts[doc])
        return start + int(np.argmax(chunk_scores[start:end]))

    def neighbour_cosine(self) -> float | None:
        """The median, over up to ``neighbours.SAMPLE`` documents, of the best cosine between a
        document's first chunk and any chunk of another document: how close the KB's documents
        are to each other (None without vectors or with fewer than two documents)."""
        if self.dense is None or self.has_vector is None or self.alive.sum() < 2:
            return None
        if self.neighbours is None:
            self.neighbours = Neighbours.compute(self.layout())
        return self.neighbours.median()

    def dense_scores(
        self, query: FloatArray, filters: SearchFilters, doc_mask: BoolArray
    ) -> FloatArray:
        """Cosine per chunk over rows that pass the filters (gathered first, so filtered-out rows
        are never scored); -inf elsewhere and for chunks without a vector."""
        if self.dense is None or self.has_vector is None:
            raise ValueError("no vectors in the store; run `seenbefore reindex`")
        key = _filter_key(filters)
        cached = self._dense_cache.get(key)
        if cached is None:
            rows = np.flatnonzero(self.chunk_mask(doc_mask) & self.has_vector)
            cached = (rows, np.ascontiguousarray(self.dense[rows]))
            if len(self._dense_cache) > 16:
                self._dense_cache.clear()
            self._dense_cache[key] = cached
        rows, sub = cached
        out = np.full(len(self.chunk_ids), -np.inf, dtype=np.float32)
        out[rows] = cosines(sub, None, query.astype(np.float32))
        return out


def aligned(
    chunk_ids: npt.NDArray[np.int64], ids: npt.NDArray[np.int64], matrix: FloatArray
) -> tuple[FloatArray, BoolArray]:
    """``matrix`` (rows for chunk ``ids``) as rows aligned with ``chunk_ids`` (zeros where a
    chunk has no vector), and which rows have one."""
    dense = np.zeros((len(chunk_ids), matrix.shape[1]), dtype=np.float32)
    has = np.zeros(len(chunk_ids), dtype=bool)
    if len(ids) and len(chunk_ids):
        order = np.argsort(chunk_ids)
        at = np.searchsorted(chunk_ids[order], ids)
        found = (at < len(order)) & (chunk_ids[order[np.minimum(at, len(order) - 1)]] == ids)
        positions = order[at[found]]
        dense[positions] = matrix[found]
        has[positions] = True
    return dense, has


def ordinals(dates: Sequence[str | None]) -> npt.NDArray[np.int64]:
    return np.asarray(
        [dt.date.fromisoformat(d).toordinal() if d else -1 for d in dates], dtype=np.int64
    )


def service_masks(services: Sequence[Sequence[str]]) -> dict[str, BoolArray]:
    masks: dict[str, BoolArray] = {}
    for i, names in enumerate(services):
        for name in names:
            masks.setdefault(name, np.zeros(len(services), dtype=bool))[i] = True
    return masks


def document_fields(chunks: ChunkRows | Sequence[str]) -> tuple[str, str]:
    """A document's two BM25F fields from its chunks in order: the first (its front matter)
    and the body (the rest, overlaps dropped)."""
    texts = list(chunks.texts if isinstance(chunks, ChunkRows) else chunks)
    return (texts[0], join_chunks(texts[1:])) if texts else ("", "")


def _document_index(
    texts: list[str],
    starts: npt.NDArray[np.int64],
    generation: int,
    stem: bool,
    bm25_path: Path | None,
    ngram: int,
) -> BM25Index:
    """A BM25F document index (words or word pairs), loaded from beside the chunk index when
    it is current."""
    tag = f"documents:{ngram}:" + ",".join(str(w) for w in FIELD_WEIGHTS)
    suffix = ".bm25doc" if ngram == 1 else f".bm25doc{ngram}"
    path = bm25_path.with_name(bm25_path.name.replace(".bm25", suffix)) if bm25_path else None
    if path is not None and path.exists():
        loaded = BM25Index.load(path, tag)
        if (
            loaded is not None
            and loaded[1] == generation
            and loaded[0].stem == stem
            and loaded[0].n_rows == len(starts)
        ):
            return loaded[0]
    bounds = [*starts.tolist(), len(texts)]
    docs = [document_fields(texts[bounds[d] : bounds[d + 1]]) for d in range(len(starts))]
    index = BM25Index.build_fields(docs, FIELD_WEIGHTS, stem=stem, ngram=ngram)
    if path is not None:
        index.save(path, generation, tag)
    return index


def join_chunks(texts: Sequence[str]) -> str:
    """A document's body from its chunks in order, each chunk's overlap with the one before
    dropped (chunks repeat the end of their predecessor; counting it twice would inflate tf)."""
    out: list[str] = []
    previous: list[str] = []
    for text in texts:
        words = text.split()
        cut = 0
        tail = previous[-MAX_OVERLAP_WORDS:]
        if words and tail:
            for start in (i for i, w in enumerate(tail) if w == words[0]):
                size = len(tail) - start
                if size <= len(words) and tail[start:] == words[:size]:
                    cut = size
                    break
        out.extend(words[cut:])
        previous = words
    return " ".join(out)


def _filter_key(filters: SearchFilters) -> tuple[object, ...]:
    return (
        filters.tiers,
        filters.include_superseded,
        filters.services,
        filters.date_from,
        filters.date_to,
        filters.exclude_ids,
    )
