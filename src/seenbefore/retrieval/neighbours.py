"""How close a knowledge base's documents are to each other: the median, over a sample of
documents, of the best cosine between a document's first chunk and any chunk of another
document (``standing.dense_excess`` reads it: a query no closer to the KB than its documents
are to each other is not about them).

The sample is the ``SAMPLE`` live documents (with a vector on their first chunk) whose ids hash
lowest, so it does not depend on where a document sits in the index: an incremental update
keeps each sampled document's best and compares it with the appended chunks only, and computes
a document's best afresh only when it enters the sample or its best chunk was tombstoned. Every
cosine is computed row by row (``einsum``), so a chunk's cosine is the same wherever the chunk
sits (a BLAS product's last bits depend on the row's position), and an updated index's median is
a fresh build's, bit for bit.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

SAMPLE = 200  # documents whose nearest neighbour sets the KB's typical closeness

FloatArray = npt.NDArray[np.float32]
BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]


def id_hashes(doc_ids: Iterable[str]) -> npt.NDArray[np.uint64]:
    """Each document's place in the sampling order (stable across processes and builds)."""
    return np.fromiter(
        (
            int.from_bytes(hashlib.blake2b(d.encode(), digest_size=8).digest(), "big")
            for d in doc_ids
        ),
        dtype=np.uint64,
    )


def cosines(dense: FloatArray, rows: IntArray | None, vector: FloatArray) -> FloatArray:
    """``dense[rows] @ vector`` (every row when ``rows`` is None), each row's dot product
    computed the same way wherever the row sits."""
    matrix = dense if rows is None else dense[rows]
    return np.einsum("ij,j->i", matrix, vector)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Layout:
    """What the sample reads of a corpus index (retrieval/corpus.py)."""

    doc_ids: list[str]
    doc_hash: npt.NDArray[np.uint64]  # id_hashes(doc_ids)
    alive: BoolArray
    doc_starts: IntArray
    doc_counts: IntArray
    chunk_doc: IntArray
    dense: FloatArray
    has_vector: BoolArray

    @property
    def valid(self) -> BoolArray:
        """Chunks a neighbour may be: live, with a vector."""
        return self.has_vector & self.alive[self.chunk_doc]


@dataclass(frozen=True)
class Neighbours:
    """Each sampled document (by position) -> (best cosine to another document's chunk, the
    chunk position holding it; -inf and -1 when there is none)."""

    best: Mapping[int, tuple[float, int]]

    def median(self) -> float | None:
        values = [b for b, _ in self.best.values() if np.isfinite(b)]
        return float(np.median(values)) if values else None

    @classmethod
    def compute(cls, layout: Layout) -> Neighbours:
        valid = layout.valid
        return cls({d: _best(layout, valid, d) for d in sample(layout)})

    def updated(self, layout: Layout, appended: IntArray) -> Neighbours:
        """The sample of ``layout`` (this sample's index with ``appended`` chunk positions
        added and some documents tombstoned), reusing each kept document's best: it is
        compared with the appended chunks only (a dot product is the same whichever side
        the einsum runs over)."""
        valid = layout.valid
        out: dict[int, tuple[float, int]] = {}
        kept: list[int] = []
        for doc in sample(layout):
            before = self.best.get(doc)
            if before is None or (before[1] >= 0 and not valid[before[1]]):
                out[doc] = _best(layout, valid, doc)  # new to the sample, or its best is gone
            else:
                out[doc] = before
                kept.append(doc)
        fresh = appended[valid[appended]]
        if kept and len(fresh):
            docs = np.asarray(kept, dtype=np.int64)
            firsts = np.ascontiguousarray(layout.dense[layout.doc_starts[docs]])
            best = np.asarray([out[d][0] for d in kept], dtype=np.float64)
            at = np.asarray([out[d][1] for d in kept], dtype=np.int64)
            for row in fresh.tolist():
                sims = cosines(firsts, None, layout.dense[row])
                better = (sims > best) & (docs != layout.chunk_doc[row])
                best[better], at[better] = sims[better], row
            out.update(
                (d, (float(b), int(a)))
                for d, b, a in zip(kept, best.tolist(), at.tolist(), strict=True)
            )
        return Neighbours(out)

    def moved(self, doc_map: IntArray, chunk_map: IntArray) -> Neighbours:
        """The same sample after a compaction renumbered documents and chunks (old -> new)."""
        return Neighbours(
            {
                int(doc_map[d]): (best, int(chunk_map[at]) if at >= 0 else -1)
                for d, (best, at) in self.best.items()
            }
        )


def sample(layout: Layout) -> list[int]:
    """Positions of the ``SAMPLE`` live documents with a first-chunk vector whose ids hash
    lowest (ties by id)."""
    candidates = np.flatnonzero(layout.alive & (layout.doc_counts > 0))
    candidates = candidates[layout.has_vector[layout.doc_starts[candidates]]]
    if len(candidates) > SAMPLE:
        hashes = layout.doc_hash[candidates]
        cut = np.partition(hashes, SAMPLE - 1)[SAMPLE - 1]
        candidates = candidates[hashes <= cut]
    keyed = sorted((int(layout.doc_hash[d]), layout.doc_ids[d], int(d)) for d in candidates)
    return [d for _, _, d in keyed[:SAMPLE]]


def _best(layout: Layout, valid: BoolArray, doc: int) -> tuple[float, int]:
    sims = cosines(layout.dense, None, layout.dense[layout.doc_starts[doc]])
    sims[~valid] = -np.inf
    start = int(layout.doc_starts[doc])
    sims[start : start + int(layout.doc_counts[doc])] = -np.inf  # not itself
    if not len(sims):
        return -np.inf, -1
    top = int(np.argmax(sims))
    return (float(sims[top]), top) if np.isfinite(sims[top]) else (-np.inf, -1)
