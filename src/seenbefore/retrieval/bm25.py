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
import math
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np
import numpy.typing as npt

from seenbefore.retrieval.tokenize import STOPWORDS, tokenize

K1 = 1.2
B = 0.75
FORMAT = 2  # 2: word pairs no longer span stop words


@lru_cache(maxsize=1)
def _stemmer() -> object:
    import Stemmer

    return Stemmer.Stemmer("english")


def analyse(text: str, *, stem: bool, ngram: int = 1) -> list[str]:
    """Index terms of ``text``: word tokens (``ngram`` 1), or pairs of content words that stand
    next to each other (``ngram`` 2: "error rates", "us east"), the same on both sides. A stop
    word between two words breaks the pair: "rates in the US" is not the phrase "rates us"
    (the measurement behind this rule: docs/decisions.md)."""
    words = tokenize(text)
    tokens = list(_stemmer().stemWords(words)) if stem else words  # type: ignore[attr-defined]
    if ngram == 2:
        return [
            f"{tokens[i]} {tokens[i + 1]}"
            for i, (a, b) in enumerate(itertools.pairwise(words))
            if a not in STOPWORDS and b not in STOPWORDS
        ]
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
        entries = _Entries()
        lengths = np.zeros(len(texts), dtype=np.float64)
        for row, text in enumerate(texts):
            tokens = analyse(text, stem=stem)
            lengths[row] = len(tokens)
            entries.add(row, _count(tokens, vocabulary))
        avg = float(lengths.mean()) if len(texts) else 1.0
        norm = k1 * (1.0 - b + b * lengths[entries.row_array()] / (avg or 1.0))
        idf, indptr, rows, weights = entries.pack(len(texts), len(vocabulary), k1, norm)
        return cls(vocabulary, idf, indptr, rows, weights, len(texts), stem=stem)

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
                counted.append(_count(tokens, vocabulary))
            per_field.append(counted)
        avg = lengths.mean(axis=0) if len(docs) else np.ones(n_fields)
        avg[avg == 0] = 1.0
        entries = _Entries()
        for row, counted in enumerate(per_field):
            merged: dict[int, float] = {}
            for f, counts in enumerate(counted):
                norm = field_weights[f] / (1.0 - b + b * lengths[row, f] / avg[f])
                for col, count in counts.items():
                    merged[col] = merged.get(col, 0.0) + count * norm
            entries.add(row, merged)
        idf, indptr, rows, weights = entries.pack(len(docs), len(vocabulary), k1, k1)
        return cls(vocabulary, idf, indptr, rows, weights, len(docs), stem=stem, ngram=ngram)

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
        """Share of the query's IDF mass present in ``row``. A term no row holds counts at the
        IDF it would have (df = 0): "the printer is out of toner" does not cover a postmortem
        well because one of its words, "out", is there."""
        known = self.term_ids(terms)
        analysed = analyse(" ".join(terms), stem=True) if self.stem and self.ngram == 1 else terms
        unknown = len(set(analysed)) - len(known)
        total = unknown * math.log(1.0 + (self.n_rows + 0.5) / 0.5)
        found = 0.0
        for col in known:
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


def _count(tokens: Sequence[str], vocabulary: dict[str, int]) -> dict[int, int]:
    """Term frequencies of ``tokens`` by column, growing ``vocabulary`` with new terms."""
    counts: dict[int, int] = {}
    for token in tokens:
        col = vocabulary.setdefault(token, len(vocabulary))
        counts[col] = counts.get(col, 0) + 1
    return counts


class _Entries:
    """The (row, term, tf) entries of an index being built, then packed column-major."""

    def __init__(self) -> None:
        self.rows: list[int] = []
        self.cols: list[int] = []
        self.tfs: list[float] = []

    def add(self, row: int, counts: Mapping[int, float]) -> None:
        self.rows.extend([row] * len(counts))
        self.cols.extend(counts.keys())
        self.tfs.extend(counts.values())

    def row_array(self) -> npt.NDArray[np.int32]:
        return np.asarray(self.rows, dtype=np.int32)

    def pack(
        self, n: int, n_terms: int, k1: float, norm: float | npt.NDArray[np.float64]
    ) -> tuple[
        npt.NDArray[np.float64],
        npt.NDArray[np.int64],
        npt.NDArray[np.int32],
        npt.NDArray[np.float32],
    ]:
        """idf, indptr, rows and weights (idf * tf * (k1 + 1) / (tf + norm)), column-major with
        rows ascending within a column."""
        cols = np.asarray(self.cols, dtype=np.int64)
        rows = self.row_array()
        tf = np.asarray(self.tfs, dtype=np.float64)
        df = np.bincount(cols, minlength=n_terms).astype(np.float64)
        idf = np.log1p((n - df + 0.5) / (df + 0.5))
        weights = (idf[cols] * tf * (k1 + 1.0) / (tf + norm)).astype(np.float32)
        order = np.lexsort((rows, cols))
        indptr = np.zeros(n_terms + 1, dtype=np.int64)
        np.cumsum(df.astype(np.int64), out=indptr[1:])
        return idf, indptr, rows[order], weights[order]
