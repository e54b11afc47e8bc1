"""The postings of a BM25 index, in segments: each segment holds the rows appended together (a
full build is one segment; each incremental write adds one), by term (CSC: which rows hold a
term, with its frequency per field) and by row (CSR: which terms a row holds, in the order the
row first used them, so a tombstoned row's document frequencies can be taken back and a
compaction can number terms exactly as a fresh build would).

Nothing here knows about BM25's formula: retrieval/bm25.py scores with the statistics it keeps.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
RowArray = npt.NDArray[np.int32]
TfArray = npt.NDArray[np.int32]
_NO_ROWS = np.zeros(0, dtype=np.int32)


@dataclass(frozen=True)
class Segment:
    """Postings of rows ``start`` .. ``stop - 1``. ``cols`` lists the terms present (sorted);
    None when the segment spans term ids ``0 .. len(indptr) - 2`` directly (a full build)."""

    start: int
    stop: int
    cols: IntArray | None
    indptr: IntArray
    rows: RowArray  # row ids, ascending within a term
    tf: TfArray  # (fields, postings): the term's count in each field of the row
    row_ptr: IntArray  # CSR: row r's terms are row_terms[row_ptr[r - start] : row_ptr[...+1]]
    row_terms: RowArray

    @property
    def n_postings(self) -> int:
        return len(self.rows)

    def postings(self, col: int) -> tuple[RowArray, TfArray]:
        """(rows, tf per field) of term ``col`` in this segment (empty when absent)."""
        if self.cols is None:
            if col + 1 >= len(self.indptr):
                return _NO_ROWS, self.tf[:, :0]
            at = col
        else:
            at = int(np.searchsorted(self.cols, col))
            if at >= len(self.cols) or self.cols[at] != col:
                return _NO_ROWS, self.tf[:, :0]
        begin, end = int(self.indptr[at]), int(self.indptr[at + 1])
        return self.rows[begin:end], self.tf[:, begin:end]

    def terms_of(self, row: int) -> RowArray:
        """The distinct terms row ``row`` holds, in the order it first used them."""
        at = row - self.start
        return self.row_terms[int(self.row_ptr[at]) : int(self.row_ptr[at + 1])]

    def entries(self) -> tuple[RowArray, IntArray, TfArray]:
        """Every posting as (row, term, tf per field), term-major."""
        if self.cols is None:
            counts = np.diff(self.indptr)
            cols = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
        else:
            cols = np.repeat(self.cols, np.diff(self.indptr))
        return self.rows, cols, self.tf


def pack(
    start: int,
    counted: Sequence[Sequence[Mapping[int, int]]],
    *,
    n_fields: int,
    n_terms: int | None = None,
) -> Segment:
    """A segment of rows ``start`` onwards: ``counted[i][f]`` maps term -> count for field ``f``
    of row ``start + i``. With ``n_terms`` the segment spans every term id directly."""
    rows: list[int] = []
    cols: list[int] = []
    tfs: list[list[int]] = [[] for _ in range(n_fields)]
    lengths = np.zeros(len(counted) + 1, dtype=np.int64)
    for i, fields in enumerate(counted):
        if n_fields == 1:  # plain BM25: the one field's counts are the row's
            (counts,) = fields
            lengths[i + 1] = len(counts)
            rows.extend([start + i] * len(counts))
            cols.extend(counts)
            tfs[0].extend(counts.values())
            continue
        merged: dict[int, list[int]] = {}
        for f, counts in enumerate(fields):
            for col, count in counts.items():
                merged.setdefault(col, [0] * n_fields)[f] = count
        lengths[i + 1] = len(merged)
        rows.extend([start + i] * len(merged))
        cols.extend(merged)
        for per_field in merged.values():
            for f in range(n_fields):
                tfs[f].append(per_field[f])
    row_array = np.asarray(rows, dtype=np.int32)
    col_array = np.asarray(cols, dtype=np.int64)
    tf = np.asarray(tfs, dtype=np.int32).reshape(n_fields, len(rows))
    return from_entries(
        start,
        start + len(counted),
        row_array,
        col_array,
        tf,
        row_ptr=np.cumsum(lengths),
        row_terms=col_array.astype(np.int32),
        n_terms=n_terms,
    )


def from_entries(
    start: int,
    stop: int,
    rows: RowArray,
    cols: IntArray,
    tf: TfArray,
    *,
    row_ptr: IntArray,
    row_terms: RowArray,
    n_terms: int | None,
) -> Segment:
    """A segment from postings in any order (sorted here term-major, rows ascending), with its
    CSR given row-major."""
    order = np.lexsort((rows, cols))
    sorted_cols = cols[order]
    if n_terms is not None:
        indptr = np.zeros(n_terms + 1, dtype=np.int64)
        np.cumsum(np.bincount(sorted_cols, minlength=n_terms), out=indptr[1:])
        present: IntArray | None = None
    else:
        present, counts = np.unique(sorted_cols, return_counts=True)
        indptr = np.zeros(len(present) + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
    return Segment(
        start,
        stop,
        present,
        indptr,
        np.ascontiguousarray(rows[order], dtype=np.int32),
        np.ascontiguousarray(tf[:, order]),
        row_ptr.astype(np.int64),
        row_terms,
    )


def merge(segments: Sequence[Segment]) -> Segment:
    """One segment holding the postings of ``segments`` (consecutive row ranges), rows kept."""
    rows = np.concatenate([s.entries()[0] for s in segments])
    cols = np.concatenate([s.entries()[1] for s in segments])
    tf = np.concatenate([s.entries()[2] for s in segments], axis=1)
    offsets = np.cumsum([0] + [len(s.row_terms) for s in segments[:-1]])
    row_ptr = np.concatenate(
        [[0]] + [s.row_ptr[1:] + off for s, off in zip(segments, offsets, strict=True)]
    )
    row_terms = np.concatenate([s.row_terms for s in segments])
    return from_entries(
        segments[0].start,
        segments[-1].stop,
        rows,
        cols,
        tf,
        row_ptr=row_ptr.astype(np.int64),
        row_terms=row_terms,
        n_terms=None,
    )


def renumbered(
    segments: Sequence[Segment], order: IntArray, n_terms: int
) -> tuple[Segment, IntArray]:
    """One full segment of the rows ``order`` lists (old row ids, in their new order; rows left
    out are dropped), rows numbered 0.. in that order and terms numbered by first use in it (a
    fresh build's numbering). Returns it with the new id of each old term (-1: no longer used)."""
    new_row = np.full(max((s.stop for s in segments), default=0), -1, dtype=np.int64)
    new_row[order] = np.arange(len(order), dtype=np.int64)
    # the CSR of the kept rows in their new order gives the terms' first use
    owner = np.searchsorted([s.stop for s in segments], order, side="right")
    pieces = [segments[int(o)].terms_of(int(r)) for o, r in zip(owner, order, strict=True)]
    row_ptr = np.zeros(len(order) + 1, dtype=np.int64)
    np.cumsum([len(t) for t in pieces], out=row_ptr[1:])
    row_terms_old = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int32)
    values, first = np.unique(row_terms_old, return_index=True)
    by_first_use = values[np.argsort(first, kind="stable")]
    term_map = np.full(n_terms, -1, dtype=np.int64)
    term_map[by_first_use] = np.arange(len(by_first_use), dtype=np.int64)
    kept_rows, kept_cols, kept_tf = [], [], []
    for segment in segments:
        rows, cols, tf = segment.entries()
        mapped = new_row[rows]
        keep = mapped >= 0
        kept_rows.append(mapped[keep].astype(np.int32))
        kept_cols.append(term_map[cols[keep]])
        kept_tf.append(tf[:, keep])
    n_fields = segments[0].tf.shape[0] if segments else 1
    rows_all = np.concatenate(kept_rows) if kept_rows else np.zeros(0, dtype=np.int32)
    cols_all = np.concatenate(kept_cols) if kept_cols else np.zeros(0, dtype=np.int64)
    tf_all = np.concatenate(kept_tf, axis=1) if kept_tf else np.zeros((n_fields, 0), dtype=np.int32)
    segment = from_entries(
        0,
        len(order),
        rows_all,
        cols_all,
        tf_all,
        row_ptr=row_ptr,
        row_terms=term_map[row_terms_old].astype(np.int32),
        n_terms=len(by_first_use),
    )
    return segment, term_map
