"""The ONNX Runtime MiniLM path gives sentence-transformers' vectors (the reference path)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from seenbefore.errors import ConfigError
from seenbefore.retrieval import embedders
from seenbefore.retrieval.onnx_minilm import OnnxMiniLMEmbedder, onnx_path

pytest.importorskip("onnxruntime", reason="the neural extra is not installed")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "postmortems"
TEXTS = [
    "checkout p99 up 8x, db connections 100/100, 5xx at 12%",
    "",
    "x",
    "TLS handshake failures from clients right after midnight, browsers show expired certificate",
    "pods OOMKilled " * 300,  # far past the 256 word pieces the model reads: truncated alike
    "Ünïcödé: 東京リージョン latency ↑ — naïve café",
]


@pytest.fixture(scope="module")
def onnx_model() -> OnnxMiniLMEmbedder:
    return OnnxMiniLMEmbedder()


@pytest.mark.slow
def test_vectors_match_sentence_transformers(onnx_model: OnnxMiniLMEmbedder) -> None:
    reference = embedders.MiniLMEmbedder()
    texts = TEXTS + [p.read_text() for p in sorted(EXAMPLES.glob("*.md"))[:40]]
    ours = onnx_model.embed(texts)  # one padded batch of mixed lengths, then the rest
    theirs = reference.embed(texts)
    assert ours.shape == theirs.shape == (len(texts), 384)
    cosine = (ours * theirs).sum(axis=1)
    assert cosine.min() >= 0.9999
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    # a text embedded alone equals the same text embedded inside a padded batch
    alone = onnx_model.embed([texts[0]])
    assert float((alone[0] * ours[0]).sum()) >= 0.99999
    for text in TEXTS:
        assert onnx_model.count_tokens(text) == reference.count_tokens(text)


def test_count_tokens_counts_word_pieces(onnx_model: OnnxMiniLMEmbedder) -> None:
    assert onnx_model.count_tokens("") == 2  # [CLS] [SEP]
    assert onnx_model.count_tokens("pods OOMKilled " * 300) > 256  # counted before truncation


def test_progress_reports_every_row(onnx_model: OnnxMiniLMEmbedder) -> None:
    seen: list[tuple[int, int]] = []
    onnx_model.batch_size = 2
    try:
        onnx_model.embed(
            ["a", "bb", "ccc"], progress=lambda done, total: seen.append((done, total))
        )
    finally:
        onnx_model.batch_size = 32
    assert seen == [(2, 3), (3, 3)]


def test_missing_export_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="seenbefore embedder export"):
        OnnxMiniLMEmbedder(model_file=tmp_path / "absent.onnx", export_if_missing=False)


def test_cache_key_names_the_weights(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEENBEFORE_MODEL_CACHE", str(tmp_path))
    path = onnx_path()
    assert path.parent == tmp_path
    assert path.name.startswith("all-MiniLM-L6-v2-") and path.suffix == ".onnx"


def test_runtime_setting_is_validated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(embedders.RUNTIME_ENV, "cuda")
    with pytest.raises(ConfigError, match="expected one of auto, onnx, torch"):
        embedders._load_minilm()


def test_auto_prefers_onnx(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(embedders.RUNTIME_ENV, "auto")
    assert isinstance(embedders._load_minilm(), OnnxMiniLMEmbedder)
