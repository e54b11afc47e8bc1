"""In-memory view of the store for fast filtered search, rebuilt when the store's generation moves.

Chunks are grouped by document, so per-document best scores are one ``np.maximum.reduceat``;
filters are document-level boolean masks, applied before any scoring. Beside the chunk index
sits a document index (BM25F, one row per document: front-matter field and body field), which
ranks documents by all of their text; chunk scores stay the best-passage evidence.
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
from seenbefore.retrieval.signals import SignalIndex
from seenbefore.storage.base import Store
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

BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float32]


NEIGHBOUR_SAMPLE = 200  # documents whose nearest neighbour sets the KB's typical closeness


@dataclass
class CorpusIndex:
    generation: int
    doc_ids: list[str]
    tiers: npt.NDArray[np.str_]
    current: BoolArray
    dates: npt.NDArray[np.int64]  # proleptic ordinal, -1 when undated
    services: dict[str, BoolArray]
    chunk_ids: npt.NDArray[np.int64]
    chunk_doc: npt.NDArray[np.int64]  # document position of each chunk (grouped)
    doc_starts: npt.NDArray[np.int64]  # first chunk position of each document
    bm25: BM25Index
    doc_bm25: BM25Index | None = None  # one row per document (BM25F over front matter + body)
    doc_phrases: BM25Index | None = None  # the same over adjacent content-word pairs
    signals: SignalIndex | None = None  # the postmortems' recorded signals (structured retrieval)
    dense: FloatArray | None = None  # rows aligned with chunk_ids (zeros where missing)
    has_vector: BoolArray | None = None
    dense_name: str | None = None
    _dense_cache: dict[tuple[object, ...], tuple[npt.NDArray[np.int64], FloatArray]] = field(
        default_factory=dict
    )
    _mask_cache: dict[tuple[object, ...], BoolArray] = field(default_factory=dict)

    @property
    def position(self) -> dict[str, int]:
        if not hasattr(self, "_position"):
            self._position = {d: i for i, d in enumerate(self.doc_ids)}
        return self._position

    @property
    def n_docs(self) -> int:
        return len(self.doc_ids)

    # -- construction -------------------------------------------------------------------
    @classmethod
    def build(cls, store: Store, *, stem: bool, bm25_path: Path | None) -> CorpusIndex:
        started = time.perf_counter()
        generation = store.generation()
        docs = store.document_rows()
        chunks = store.chunk_rows()
        position = {d: i for i, d in enumerate(docs.ids)}
        chunk_doc = np.fromiter(
            (position[d] for d in chunks.doc_ids), dtype=np.int64, count=len(chunks.doc_ids)
        )
        starts = np.searchsorted(chunk_doc, np.arange(len(docs.ids)))
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
        services: dict[str, BoolArray] = {}
        for i, names in enumerate(docs.services):
            for name in names:
                services.setdefault(name, np.zeros(len(docs.ids), dtype=bool))[i] = True
        index = cls(
            generation=generation,
            doc_ids=docs.ids,
            tiers=np.asarray(docs.tiers, dtype=np.str_),
            current=np.asarray(docs.current, dtype=bool),
            dates=np.asarray(
                [dt.date.fromisoformat(d).toordinal() if d else -1 for d in docs.dates],
                dtype=np.int64,
            ),
            services=services,
            chunk_ids=chunks.ids,
            chunk_doc=chunk_doc,
            doc_starts=starts.astype(np.int64),
            bm25=bm25,
            doc_bm25=doc_bm25,
            doc_phrases=doc_phrases,
            signals=SignalIndex.build(docs.signals) if docs.signals else None,
        )
        index._load_vectors(store)
        log.info(
            "built corpus index: %d docs, %d chunks in %.2fs",
            index.n_docs,
            len(chunks.ids),
            time.perf_counter() - started,
        )
        return index

    def _load_vectors(self, store: Store) -> None:
        info = store.embedder_info()
        if info is None:
            return
        ids, matrix = store.vectors()
        if not len(ids):
            return
        rows = np.searchsorted(np.sort(self.chunk_ids), ids)
        order = np.argsort(self.chunk_ids)
        positions = order[rows]
        dense = np.zeros((len(self.chunk_ids), matrix.shape[1]), dtype=np.float32)
        dense[positions] = matrix
        has = np.zeros(len(self.chunk_ids), dtype=bool)
        has[positions] = True
        self.dense, self.has_vector, self.dense_name = dense, has, info[0]

    # -- filters ------------------------------------------------------------------------
    def doc_mask(self, filters: SearchFilters) -> BoolArray:
        """Documents that pass ``filters`` (cached per filter: callers repeat theirs)."""
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
        if not len(chunk_scores):
            return np.zeros(0, dtype=np.float32)
        best = np.maximum.reduceat(chunk_scores, self.doc_starts)
        return np.where(self.doc_starts < len(chunk_scores), best, empty).astype(np.float32)

    def best_chunk(self, doc: int, chunk_scores: FloatArray) -> int:
        start = int(self.doc_starts[doc])
        end = int(self.doc_starts[doc + 1]) if doc + 1 < self.n_docs else len(chunk_scores)
        return start + int(np.argmax(chunk_scores[start:end]))

    def neighbour_cosine(self, sample: int = NEIGHBOUR_SAMPLE) -> float | None:
        """The median, over up to ``sample`` documents (a fixed spread over the index), of the
        best cosine between a document's first chunk and any chunk of another document: how
        close the KB's documents are to each other (once per index; None without vectors)."""
        if self.dense is None or self.has_vector is None or self.n_docs < 2:
            return None
        if not hasattr(self, "_neighbour"):
            picks = np.unique(np.linspace(0, self.n_docs - 1, min(sample, self.n_docs)).astype(int))
            rows = self.doc_starts[picks]
            rows = rows[self.has_vector[rows]]
            best: list[float] = []
            if len(rows):
                sims = self.dense[rows] @ self.dense.T  # sampled first chunks x every chunk
                sims[:, ~self.has_vector] = -np.inf
                for i, row in enumerate(rows):
                    sims[i, self.chunk_doc == self.chunk_doc[row]] = -np.inf  # not itself
                best = [float(v) for v in sims.max(axis=1) if np.isfinite(v)]
            self._neighbour = float(np.median(best)) if best else None
        return self._neighbour

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
        out[rows] = sub @ query.astype(np.float32)
        return out


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
    docs = []
    for d in range(len(starts)):
        parts = texts[bounds[d] : bounds[d + 1]]
        docs.append((parts[0], join_chunks(parts[1:])) if parts else ("", ""))
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
