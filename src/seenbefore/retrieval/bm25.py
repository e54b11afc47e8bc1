"""In-memory BM25 indexes: a CSC matrix of BM25 term weights built from the store.

Rows are chunks (best-passage evidence) or whole documents (BM25F over fields: the front matter
-- title, type, services, tags, signals -- and the body, each length-normalised on its own and
weighted; Robertson & Zaragoza 2009). Scoring a query adds up the columns of its terms, skipping
rows the caller may not see, so filtered-out rows are never scored. IDF is corpus-wide.
"""

from __future__ import annotations

import io
import itertools
import json
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np
import numpy.typing as npt

from seenbefore.retrieval.tokenize import STOPWORDS, tokenize

K1 = 1.2
B = 0.75
FORMAT = 1


@lru_cache(maxsize=1)
def _stemmer() -> object:
    import Stemmer

    return Stemmer.Stemmer("english")


def analyse(text: str, *, stem: bool, ngram: int = 1) -> list[str]:
    """Index terms of ``text``: word tokens (``ngram`` 1), or adjacent pairs of its content
    words, stop words skipped (``ngram`` 2: "error rates", "us east"), the same on both sides."""
    tokens = tokenize(text)
    if ngram == 2:
        tokens = [t for t in tokens if t not in STOPWORDS]
    if stem:
        tokens = list(_stemmer().stemWords(tokens))  # type: ignore[attr-defined]
    if ngram == 2:
        return [f"{a} {b}" for a, b in itertools.pairwise(tokens)]
    return tokens


def phrases(text: str, *, stem: bool, max_terms: int = 64) -> list[str]:
    """Distinct word pairs of a query, in first-seen order (see ``analyse``)."""
    return list(dict.fromkeys(analyse(text, stem=stem, ngram=2)))[:max_terms]


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
        ngram: int = 1,
    ) -> None:
        self.vocabulary = vocabulary
        self.idf = idf
        self.indptr = indptr
        self.rows = rows
        self.weights = weights
        self.n_rows = n_rows
        self.stem = stem
        self.ngram = ngram

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

    @classmethod
    def build_fields(
        cls,
        docs: Sequence[Sequence[str]],
        field_weights: Sequence[float],
        *,
        stem: bool = False,
        k1: float = K1,
        b: float = B,
        ngram: int = 1,
    ) -> BM25Index:
        """BM25F with one row per document: ``docs[i][f]`` is field ``f`` of document ``i``.

        pseudo-tf = sum_f w_f * tf_f / (1 - b + b * len_f / avg_len_f);
        weight = idf * pseudo-tf * (k1 + 1) / (k1 + pseudo-tf), idf over documents."""
        n_fields = len(field_weights)
        vocabulary: dict[str, int] = {}
        per_field: list[list[dict[int, int]]] = []
        lengths = np.zeros((len(docs), n_fields), dtype=np.float64)
        for row, fields in enumerate(docs):
            if len(fields) != n_fields:
                raise ValueError(f"document {row} has {len(fields)} fields, expected {n_fields}")
            counted = []
            for f, text in enumerate(fields):
                tokens = analyse(text, stem=stem, ngram=ngram)
                lengths[row, f] = len(tokens)
                counts: dict[int, int] = {}
                for token in tokens:
                    col = vocabulary.setdefault(token, len(vocabulary))
                    counts[col] = counts.get(col, 0) + 1
                counted.append(counts)
            per_field.append(counted)
        avg = lengths.mean(axis=0) if len(docs) else np.ones(n_fields)
        avg[avg == 0] = 1.0
        doc_rows: list[int] = []
        term_cols: list[int] = []
        pseudo: list[float] = []
        for row, counted in enumerate(per_field):
            merged: dict[int, float] = {}
            for f, counts in enumerate(counted):
                norm = field_weights[f] / (1.0 - b + b * lengths[row, f] / avg[f])
                for col, count in counts.items():
                    merged[col] = merged.get(col, 0.0) + count * norm
            doc_rows.extend([row] * len(merged))
            term_cols.extend(merged.keys())
            pseudo.extend(merged.values())
        n = len(docs)
        cols = np.asarray(term_cols, dtype=np.int64)
        rows = np.asarray(doc_rows, dtype=np.int32)
        tf = np.asarray(pseudo, dtype=np.float64)
        df = np.bincount(cols, minlength=len(vocabulary)).astype(np.float64)
        idf = np.log1p((n - df + 0.5) / (df + 0.5))
        weights = (idf[cols] * tf * (k1 + 1.0) / (tf + k1)).astype(np.float32)
        order = np.lexsort((rows, cols))
        indptr = np.zeros(len(vocabulary) + 1, dtype=np.int64)
        np.cumsum(df.astype(np.int64), out=indptr[1:])
        return cls(vocabulary, idf, indptr, rows[order], weights[order], n, stem=stem, ngram=ngram)

    def term_ids(self, terms: Sequence[str]) -> list[int]:
        stemmed = self.stem and self.ngram == 1  # phrases arrive analysed (``phrases``)
        analysed = analyse(" ".join(terms), stem=True) if stemmed else list(terms)
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
    def save(self, path: Path, generation: int, tag: str = "") -> None:
        meta = {
            "format": FORMAT,
            "generation": generation,
            "tag": tag,
            "stem": self.stem,
            "ngram": self.ngram,
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
    def load(cls, path: Path, tag: str = "") -> tuple[BM25Index, int] | None:
        """(index, generation), or None when the file is missing, unreadable or was saved with
        another ``tag`` (what it indexes: chunks, or documents with given field weights)."""
        try:
            with np.load(path, allow_pickle=False) as npz:
                meta = json.loads(npz["meta"].tobytes().decode())
                if meta.get("format") != FORMAT or meta.get("tag", "") != tag:
                    return None
                index = cls(
                    meta["vocabulary"],
                    npz["idf"],
                    npz["indptr"],
                    npz["rows"],
                    npz["weights"],
                    int(meta["n_rows"]),
                    stem=bool(meta["stem"]),
                    ngram=int(meta.get("ngram", 1)),
                )
                return index, int(meta["generation"])
        except (OSError, ValueError, KeyError):
            return None
