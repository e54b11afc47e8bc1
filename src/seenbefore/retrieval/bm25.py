"""An in-memory BM25 index over chunks: a CSC matrix of BM25 term weights built from the store.

Scoring a query adds up the columns of its terms, skipping rows the caller may not see, so
filtered-out chunks are never scored. IDF statistics are corpus-wide (as in SQLite FTS5).
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np
import numpy.typing as npt

from seenbefore.retrieval.tokenize import tokenize

K1 = 1.2
B = 0.75
FORMAT = 1


@lru_cache(maxsize=1)
def _stemmer() -> object:
    import Stemmer

    return Stemmer.Stemmer("english")


def analyse(text: str, *, stem: bool) -> list[str]:
    tokens = tokenize(text)
    if stem:
        return list(_stemmer().stemWords(tokens))  # type: ignore[attr-defined]
    return tokens


class BM25Index:
    """Lucene-style BM25 (idf = ln(1 + (N - df + 0.5) / (df + 0.5))) over ``n_rows`` chunks."""

    def __init__(
        self,
        vocabulary: dict[str, int],
        idf: npt.NDArray[np.float64],
        indptr: npt.NDArray[np.int64],
        rows: npt.NDArray[np.int32],
        weights: npt.NDArray[np.float32],
        n_rows: int,
        *,
        stem: bool,
    ) -> None:
        self.vocabulary = vocabulary
        self.idf = idf
        self.indptr = indptr
        self.rows = rows
        self.weights = weights
        self.n_rows = n_rows
        self.stem = stem

    @classmethod
    def build(
        cls, texts: Sequence[str], *, stem: bool = False, k1: float = K1, b: float = B
    ) -> BM25Index:
        vocabulary: dict[str, int] = {}
        doc_rows: list[int] = []
        term_cols: list[int] = []
        tfs: list[int] = []
        lengths = np.zeros(len(texts), dtype=np.float64)
        for row, text in enumerate(texts):
            tokens = analyse(text, stem=stem)
            lengths[row] = len(tokens)
            counts: dict[int, int] = {}
            for token in tokens:
                col = vocabulary.setdefault(token, len(vocabulary))
                counts[col] = counts.get(col, 0) + 1
            doc_rows.extend([row] * len(counts))
            term_cols.extend(counts.keys())
            tfs.extend(counts.values())
        n = len(texts)
        cols = np.asarray(term_cols, dtype=np.int64)
        rows = np.asarray(doc_rows, dtype=np.int32)
        tf = np.asarray(tfs, dtype=np.float64)
        df = np.bincount(cols, minlength=len(vocabulary)).astype(np.float64)
        idf = np.log1p((n - df + 0.5) / (df + 0.5))
        avg = float(lengths.mean()) if n else 1.0
        norm = k1 * (1.0 - b + b * lengths[rows] / (avg or 1.0))
        weights = (idf[cols] * tf * (k1 + 1.0) / (tf + norm)).astype(np.float32)
        order = np.lexsort((rows, cols))  # column-major, rows ascending within a column
        indptr = np.zeros(len(vocabulary) + 1, dtype=np.int64)
        np.cumsum(df.astype(np.int64), out=indptr[1:])
        return cls(vocabulary, idf, indptr, rows[order], weights[order], n, stem=stem)

    def term_ids(self, terms: Sequence[str]) -> list[int]:
        analysed = analyse(" ".join(terms), stem=self.stem) if self.stem else list(terms)
        return list(dict.fromkeys(self.vocabulary[t] for t in analysed if t in self.vocabulary))

    def scores(
        self, terms: Sequence[str], row_mask: npt.NDArray[np.bool_] | None
    ) -> npt.NDArray[np.float32]:
        """BM25 score of every row for OR-ed ``terms``; rows outside ``row_mask`` stay 0."""
        out = np.zeros(self.n_rows, dtype=np.float32)
        for col in self.term_ids(terms):
            start, end = self.indptr[col], self.indptr[col + 1]
            rows = self.rows[start:end]
            weights = self.weights[start:end]
            if row_mask is not None:
                keep = row_mask[rows]
                rows, weights = rows[keep], weights[keep]
            out[rows] += weights
        return out

    def coverage(self, terms: Sequence[str], row: int) -> float:
        """Share of the query's IDF mass (terms known to the index) present in ``row``."""
        total = found = 0.0
        for col in self.term_ids(terms):
            idf = float(self.idf[col])
            total += idf
            start, end = self.indptr[col], self.indptr[col + 1]
            pos = int(np.searchsorted(self.rows[start:end], row))
            if pos < end - start and self.rows[start + pos] == row:
                found += idf
        return found / total if total else 0.0

    # -- persistence (no pickle) ------------------------------------------------------------
    def save(self, path: Path, generation: int) -> None:
        meta = {
            "format": FORMAT,
            "generation": generation,
            "stem": self.stem,
            "n_rows": self.n_rows,
            "vocabulary": self.vocabulary,
        }
        buffer = io.BytesIO()
        np.savez(
            buffer,
            idf=self.idf,
            indptr=self.indptr,
            rows=self.rows,
            weights=self.weights,
            meta=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8),
        )
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(buffer.getvalue())
        tmp.replace(path)  # atomic: a reader sees the old file or the new one

    @classmethod
    def load(cls, path: Path) -> tuple[BM25Index, int] | None:
        """(index, generation), or None when the file is missing or unreadable."""
        try:
            with np.load(path, allow_pickle=False) as npz:
                meta = json.loads(npz["meta"].tobytes().decode())
                if meta.get("format") != FORMAT:
                    return None
                index = cls(
                    meta["vocabulary"],
                    npz["idf"],
                    npz["indptr"],
                    npz["rows"],
                    npz["weights"],
                    int(meta["n_rows"]),
                    stem=bool(meta["stem"]),
                )
                return index, int(meta["generation"])
        except (OSError, ValueError, KeyError):
            return None
