"""In-memory BM25 indexes: term frequencies in segments of postings (retrieval/postings.py) and
the corpus statistics BM25 reads, kept exact as rows are appended and tombstoned.

Rows are chunks (best-passage evidence) or whole documents (BM25F over fields: the front matter
-- title, type, services, tags, signals -- and the body, each length-normalised on its own and
weighted; Robertson & Zaragoza 2009). Scoring a query adds up its terms' weights over the rows
holding them, skipping rows the caller may not see (never scored) and tombstoned rows. IDF is
corpus-wide.

Weights are computed when a query reads them, from the live statistics (rows N, each field's
average length, each term's document frequency), not stored: so appending a document (a new
segment) or tombstoning one (its row masked, its lengths and document frequencies taken back)
changes N, the averages and the frequencies exactly as a rebuild would, and every score after
an incremental update is the score a fresh build gives, bit for bit (tests/retrieval/
test_incremental.py). :meth:`BM25Index.compacted` drops the tombstones, reorders rows and
renumbers terms as a fresh build would.
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

from seenbefore.retrieval.postings import Segment, merge, pack, renumbered
from seenbefore.retrieval.tokenize import STOPWORDS, tokenize

K1 = 1.2
B = 0.75
FORMAT = 3  # 2: word pairs no longer span stop words; 3: term frequencies, not weights
# segments past the first (appended by incremental updates) merge as a binary counter does:
# at most about log2(appended rows) of them, each row merged about log2 times


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
    """Lucene-style BM25 (idf = ln(1 + (N - df + 0.5) / (df + 0.5))) over ``n_rows`` rows, of
    which ``n_live`` are not tombstoned. ``field_weights`` None: plain BM25 over one text per
    row; else BM25F over that many fields per row."""

    def __init__(
        self,
        vocabulary: dict[str, int],
        n_terms: int,
        df: npt.NDArray[np.int64],
        segments: tuple[Segment, ...],
        lengths: npt.NDArray[np.int64],
        alive: npt.NDArray[np.bool_],
        *,
        field_weights: tuple[float, ...] | None,
        stem: bool,
        ngram: int = 1,
        k1: float = K1,
        b: float = B,
    ) -> None:
        # the vocabulary dict is shared with the snapshots derived from this one and only
        # grows: a term numbered at or past ``n_terms`` belongs to a later snapshot
        self.vocabulary = vocabulary
        self.n_terms = n_terms
        self.df = df
        self.segments = segments
        self.lengths = lengths  # (rows, fields) token counts
        self.alive = alive
        self.field_weights = field_weights
        self.stem = stem
        self.ngram = ngram
        self.k1 = k1
        self.b = b
        self.n_rows = len(alive)
        self.n_live = int(alive.sum())
        self.totals = lengths[alive].sum(axis=0) if len(alive) else np.zeros(lengths.shape[1])
        self._idf: dict[int, float] = {}
        self._norms: list[npt.NDArray[np.float64]] | None = None

    # -- construction ---------------------------------------------------------------------
    @classmethod
    def build(
        cls, texts: Sequence[str], *, stem: bool = False, k1: float = K1, b: float = B
    ) -> BM25Index:
        """Plain BM25, one row per text."""
        empty = cls({}, 0, np.zeros(0, np.int64), (), np.zeros((0, 1), np.int64),
                    np.zeros(0, bool), field_weights=None, stem=stem, k1=k1, b=b)  # fmt: skip
        return empty.updated(np.zeros(0, dtype=np.int64), [(t,) for t in texts], full=True)

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
        weights = tuple(float(w) for w in field_weights)
        empty = cls({}, 0, np.zeros(0, np.int64), (), np.zeros((0, len(weights)), np.int64),
                    np.zeros(0, bool), field_weights=weights, stem=stem, ngram=ngram, k1=k1,
                    b=b)  # fmt: skip
        return empty.updated(np.zeros(0, dtype=np.int64), docs, full=True)

    def updated(
        self, dead: npt.NDArray[np.int64], rows: Sequence[Sequence[str]], *, full: bool = False
    ) -> BM25Index:
        """A new index: rows ``dead`` tombstoned (their lengths and document frequencies taken
        back) and ``rows`` (fields per row) appended as one segment after the last row. This
        index is unchanged (searches on it may go on)."""
        n_fields = self.lengths.shape[1]
        counted: list[list[dict[int, int]]] = []
        lengths = np.zeros((len(rows), n_fields), dtype=np.int64)
        for i, fields in enumerate(rows):
            if len(fields) != n_fields:
                raise ValueError(f"row {i} has {len(fields)} fields, expected {n_fields}")
            per_field = []
            for f, text in enumerate(fields):
                tokens = analyse(text, stem=self.stem, ngram=self.ngram)
                lengths[i, f] = len(tokens)
                per_field.append(_count(tokens, self.vocabulary))
            counted.append(per_field)
        n_terms = len(self.vocabulary)
        df = np.zeros(n_terms, dtype=np.int64)
        df[: self.n_terms] = self.df
        alive = np.concatenate([self.alive, np.ones(len(rows), dtype=bool)])
        dead = np.asarray([r for r in dead.tolist() if self.alive[r]], dtype=np.int64)
        alive[dead] = False
        for row in dead.tolist():
            df[self._segment_of(row).terms_of(row)] -= 1
        segments = self.segments
        if rows or full:
            segment = pack(
                self.n_rows, counted, n_fields=n_fields, n_terms=n_terms if full else None
            )
            df += np.bincount(segment.row_terms, minlength=n_terms)
            segments = _merged_tail((*segments, segment))
        return BM25Index(
            self.vocabulary,
            n_terms,
            df,
            segments,
            np.concatenate([self.lengths, lengths]),
            alive,
            field_weights=self.field_weights,
            stem=self.stem,
            ngram=self.ngram,
            k1=self.k1,
            b=self.b,
        )

    def compacted(self, order: npt.NDArray[np.int64]) -> BM25Index:
        """The live rows ``order`` lists, numbered 0.. in that order, in one segment, without
        tombstones or terms no live row uses (terms numbered by first use, as a fresh build of
        those rows in that order numbers them)."""
        segment, term_map = renumbered(self.segments, order, self.n_terms)
        names = [""] * len(segment.indptr[:-1])
        # a copy taken in one step: a later index's update may add terms to the shared dict
        # while a compaction thread reads it
        for term, col in list(self.vocabulary.items()):
            if col < self.n_terms and term_map[col] >= 0:
                names[int(term_map[col])] = term
        return BM25Index(
            {t: i for i, t in enumerate(names)},
            len(names),
            np.diff(segment.indptr),
            (segment,),
            self.lengths[order],
            np.ones(len(order), dtype=bool),
            field_weights=self.field_weights,
            stem=self.stem,
            ngram=self.ngram,
            k1=self.k1,
            b=self.b,
        )

    @property
    def tombstoned(self) -> int:
        return self.n_rows - self.n_live

    def _segment_of(self, row: int) -> Segment:
        at = int(np.searchsorted([s.stop for s in self.segments], row, side="right"))
        return self.segments[at]

    # -- statistics -----------------------------------------------------------------------
    def idf_of(self, col: int) -> float:
        """The term's IDF over the live rows (computed once per index, as each query needs it)."""
        idf = self._idf.get(col)
        if idf is None:
            df = float(self.df[col])
            idf = self._idf[col] = math.log1p((self.n_live - df + 0.5) / (df + 0.5))
        return idf

    @property
    def idf(self) -> _Idf:
        """``index.idf[col]``: the term's IDF (see :meth:`idf_of`)."""
        return _Idf(self)

    def _field_norms(self) -> list[npt.NDArray[np.float64]]:
        """Per field, each row's length normaliser: plain BM25 k1 * (1 - b + b * len / avg);
        BM25F w_f / (1 - b + b * len_f / avg_f) (computed once per index)."""
        if self._norms is None:
            k1, b = self.k1, self.b
            avgs = [float(t) / self.n_live if self.n_live else 0.0 for t in self.totals.tolist()]
            lengths = self.lengths.astype(np.float64)
            if self.field_weights is None:
                avg = avgs[0] or 1.0
                self._norms = [k1 * (1.0 - b + b * lengths[:, 0] / avg)]
            else:
                self._norms = [
                    w / (1.0 - b + b * lengths[:, f] / (avgs[f] or 1.0))
                    for f, w in enumerate(self.field_weights)
                ]
        return self._norms

    def term_ids(self, terms: Sequence[str]) -> list[int]:
        """Distinct ids of the query's terms that some live row holds, in query order."""
        stemmed = self.stem and self.ngram == 1  # phrases arrive analysed (``phrases``)
        analysed = analyse(" ".join(terms), stem=True) if stemmed else list(terms)
        known = (self.vocabulary.get(t) for t in analysed)
        return list(
            dict.fromkeys(c for c in known if c is not None and c < self.n_terms and self.df[c])
        )

    def postings(self, col: int) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32]]:
        """(rows, tf per field) of term ``col`` over every segment, tombstoned rows included."""
        parts = [s.postings(col) for s in self.segments]
        if len(parts) == 1:
            return parts[0]
        rows = np.concatenate([p[0] for p in parts])
        return rows, np.concatenate([p[1] for p in parts], axis=1)

    def terms_of(self, row: int) -> npt.NDArray[np.int32]:
        return self._segment_of(row).terms_of(row)

    # -- scoring --------------------------------------------------------------------------
    def term_weights(self, terms: Sequence[str], weights: Mapping[str, float]) -> dict[int, float]:
        """Each query term's weight by its column (terms ``weights`` leaves out weigh 1; two
        terms of one column, as stemming may make them, weigh the larger)."""
        out: dict[int, float] = {}
        for term in terms:
            w = float(weights.get(term, 1.0))
            for col in self.term_ids([term]):
                out[col] = max(out.get(col, 0.0), w)
        return out

    def scores(
        self,
        terms: Sequence[str],
        row_mask: npt.NDArray[np.bool_] | None,
        weights: Mapping[str, float] | None = None,
    ) -> npt.NDArray[np.float32]:
        """BM25 score of every row for OR-ed ``terms``; rows outside ``row_mask`` (and
        tombstoned rows) stay 0. ``weights``: a term's weight in the sum (absent: 1), as a
        query-term weight multiplies its contribution (retrieval/identity.py)."""
        out = np.zeros(self.n_rows, dtype=np.float32)
        allowed = self.alive if row_mask is None else (row_mask & self.alive)
        norms = self._field_norms()
        k1 = self.k1
        by_col = self.term_weights(terms, weights) if weights else {}
        for col in self.term_ids(terms):
            idf = self.idf_of(col) * by_col.get(col, 1.0)
            for segment in self.segments:
                rows, tf = segment.postings(col)
                if not len(rows):
                    continue
                keep = allowed[rows]
                rows, tf = rows[keep], tf[:, keep]
                if self.field_weights is None:
                    t = tf[0].astype(np.float64)
                    gains = idf * t * (k1 + 1.0) / (t + norms[0][rows])
                else:
                    ptf = tf[0] * norms[0][rows]
                    for f in range(1, len(norms)):
                        ptf = ptf + tf[f] * norms[f][rows]
                    gains = idf * ptf * (k1 + 1.0) / (ptf + k1)
                out[rows] += gains.astype(np.float32)
        return out

    def weighted_terms(
        self, terms: Sequence[str], weights: Mapping[str, float]
    ) -> dict[str, tuple[int | None, float]]:
        """Each distinct index term of the query with its column (None: no live row holds
        it) and its weight (the larger, where two query terms make one index term)."""
        stemmed = self.stem and self.ngram == 1
        out: dict[str, tuple[int | None, float]] = {}
        for term in terms:
            w = float(weights.get(term, 1.0))
            for token in analyse(term, stem=True) if stemmed else [term]:
                col = self.vocabulary.get(token)
                if col is not None and (col >= self.n_terms or not self.df[col]):
                    col = None
                out[token] = (col, max(w, out[token][1]) if token in out else w)
        return out

    def coverage(
        self, terms: Sequence[str], row: int, weights: Mapping[str, float] | None = None
    ) -> float:
        """Share of the query's IDF mass present in ``row``. A term no row holds counts at the
        IDF it would have (df = 0): "the printer is out of toner" does not cover a postmortem
        well because one of its words, "out", is there. ``weights``: each term's IDF counts
        times its weight (absent: 1), as in :meth:`scores`."""
        if weights:
            unseen = math.log(1.0 + (self.n_live + 0.5) / 0.5)
            held_cols = set(self.terms_of(row).tolist())
            total = found = 0.0
            for col, w in self.weighted_terms(terms, weights).values():
                mass = w * (unseen if col is None else self.idf_of(col))
                total += mass
                if col is not None and col in held_cols:
                    found += mass
            return found / total if total else 0.0
        known = self.term_ids(terms)
        analysed = analyse(" ".join(terms), stem=True) if self.stem and self.ngram == 1 else terms
        unknown = len(set(analysed)) - len(known)
        total = unknown * math.log(1.0 + (self.n_live + 0.5) / 0.5)
        found = 0.0
        held = set(self.terms_of(row).tolist())
        for col in known:
            idf = self.idf_of(col)
            total += idf
            if col in held:
                found += idf
        return found / total if total else 0.0

    # -- persistence (no pickle) ------------------------------------------------------------
    def save(self, path: Path, generation: int, tag: str = "") -> None:
        """Write the index beside the store (one segment: compacted first if need be)."""
        whole = len(self.segments) == 1 and not self.tombstoned
        index = self if whole else self.compacted(np.flatnonzero(self.alive))
        (segment,) = index.segments
        meta = {
            "format": FORMAT,
            "generation": generation,
            "tag": tag,
            "stem": index.stem,
            "ngram": index.ngram,
            "n_rows": index.n_rows,
            "field_weights": index.field_weights,
            "k1": index.k1,
            "b": index.b,
            "vocabulary": sorted(index.vocabulary, key=index.vocabulary.__getitem__),
        }
        buffer = io.BytesIO()
        np.savez(
            buffer,
            indptr=segment.indptr,
            rows=segment.rows,
            tf=segment.tf,
            row_ptr=segment.row_ptr,
            row_terms=segment.row_terms,
            lengths=index.lengths,
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
                names = list(meta["vocabulary"])
                n_rows = int(meta["n_rows"])
                segment = Segment(0, n_rows, None, npz["indptr"], npz["rows"], npz["tf"],
                                  npz["row_ptr"], npz["row_terms"])  # fmt: skip
                weights = meta["field_weights"]
                index = cls(
                    {t: i for i, t in enumerate(names)},
                    len(names),
                    np.diff(segment.indptr),
                    (segment,),
                    npz["lengths"],
                    np.ones(n_rows, dtype=bool),
                    field_weights=None if weights is None else tuple(weights),
                    stem=bool(meta["stem"]),
                    ngram=int(meta.get("ngram", 1)),
                    k1=float(meta["k1"]),
                    b=float(meta["b"]),
                )
                return index, int(meta["generation"])
        except (OSError, ValueError, KeyError, TypeError):
            return None


class _Idf:
    """``index.idf[col]`` for callers that read one term's IDF."""

    def __init__(self, index: BM25Index) -> None:
        self._index = index

    def __getitem__(self, col: int) -> float:
        return self._index.idf_of(int(col))


def _merged_tail(segments: tuple[Segment, ...]) -> tuple[Segment, ...]:
    """Appended segments merged while the newest holds at least as many rows as the one
    before it (the first segment, a full build's, is left for compaction)."""
    out = list(segments)
    while len(out) >= 3 and out[-1].stop - out[-1].start >= out[-2].stop - out[-2].start:
        out[-2:] = [merge(out[-2:])]
    return tuple(out)


def _count(tokens: Sequence[str], vocabulary: dict[str, int]) -> dict[int, int]:
    """Term frequencies of ``tokens`` by column, growing ``vocabulary`` with new terms."""
    counts: dict[int, int] = {}
    for token in tokens:
        col = vocabulary.setdefault(token, len(vocabulary))
        counts[col] = counts.get(col, 0) + 1
    return counts
