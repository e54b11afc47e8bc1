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


def _outputs(session: object, onnx_model: OnnxMiniLMEmbedder) -> np.ndarray:
    enc = onnx_model._tokenizer.encode(TEXTS[0])
    ids = np.asarray([enc.ids], dtype=np.int64)
    feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": 0 * ids}
    (hidden,) = session.run(["last_hidden_state"], feeds)  # type: ignore[attr-defined]
    return np.asarray(hidden)


def test_optimised_graph_is_kept_reused_and_rebuilt(
    onnx_model: OnnxMiniLMEmbedder, tmp_path: Path
) -> None:
    import shutil

    import onnxruntime

    from seenbefore.retrieval.onnx_minilm import optimised_path, optimised_session

    model = tmp_path / "minilm.onnx"
    shutil.copyfile(onnx_model.model_file, model)
    kept = optimised_path(model, onnxruntime.__version__)
    assert not kept.exists()
    plain = onnxruntime.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    reference = _outputs(plain, onnx_model)

    first = optimised_session(onnxruntime, model)
    assert kept.exists() and kept.stat().st_size > 0
    assert np.allclose(_outputs(first, onnx_model), reference, atol=1e-4)
    stamp = kept.stat().st_mtime_ns
    second = optimised_session(onnxruntime, model)  # reused, not written again
    assert kept.stat().st_mtime_ns == stamp
    assert np.allclose(_outputs(second, onnx_model), reference, atol=1e-4)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".optimise-")] == []

    kept.write_bytes(b"torn write")  # a bad file is removed and rebuilt, not fatal
    third = optimised_session(onnxruntime, model)
    assert np.allclose(_outputs(third, onnx_model), reference, atol=1e-4)
    assert kept.stat().st_size > 1000

    # an export replaced behind its back (copied in, touched): optimised again, the old one gone
    import os

    os.utime(model, ns=(model.stat().st_atime_ns, model.stat().st_mtime_ns + 10**9))
    renewed = optimised_path(model, onnxruntime.__version__)
    assert renewed != kept and not renewed.exists()
    optimised_session(onnxruntime, model)
    assert renewed.exists() and not kept.exists()


def test_unwritable_cache_falls_back_to_the_export(
    onnx_model: OnnxMiniLMEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil
    import tempfile

    import onnxruntime

    from seenbefore.retrieval.onnx_minilm import optimised_path, optimised_session

    model = tmp_path / "minilm.onnx"
    shutil.copyfile(onnx_model.model_file, model)

    def refuse(*args: object, **kwargs: object) -> tuple[int, str]:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)  # a read-only folder (root ignores chmod)
    session = optimised_session(onnxruntime, model)
    assert not optimised_path(model, onnxruntime.__version__).exists()
    assert _outputs(session, onnx_model).shape[-1] == 384


@pytest.mark.slow
def test_a_new_export_drops_graphs_optimised_from_the_old_one(
    onnx_model: OnnxMiniLMEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    torch = pytest.importorskip("torch")
    from seenbefore.retrieval.onnx_minilm import export_onnx

    def copy_instead(model: object, args: object, path: str, **kwargs: object) -> None:
        shutil.copyfile(onnx_model.model_file, path)  # the real tracer takes a minute

    monkeypatch.setattr(torch.onnx, "export", copy_instead)
    target = tmp_path / "minilm.onnx"
    stale = tmp_path / "minilm.ort-0.0.1.optimised.onnx"
    other = tmp_path / "other.ort-0.0.1.optimised.onnx"
    stale.write_bytes(b"optimised from the old export")
    other.write_bytes(b"another model's")
    assert export_onnx(target) == target
    assert target.stat().st_size == onnx_model.model_file.stat().st_size
    assert not stale.exists() and other.exists()


def test_a_preloaded_session_is_taken_once_and_only_for_its_file(
    onnx_model: OnnxMiniLMEmbedder, tmp_path: Path
) -> None:
    import shutil

    from seenbefore.retrieval import onnx_minilm

    onnx_minilm.preload()
    held = onnx_minilm._preload
    assert held is not None
    embedder = OnnxMiniLMEmbedder(model_file=onnx_model.model_file)
    assert embedder._session is held.session is not None  # the background one, not a second
    assert onnx_minilm._preload is None
    assert np.allclose(embedder.embed(TEXTS[:1]), onnx_model.embed(TEXTS[:1]), atol=1e-5)

    onnx_minilm.preload()  # another file (a copy of the export): it builds its own session
    again = onnx_minilm._preload
    assert again is not None
    copy = tmp_path / "copy.onnx"
    shutil.copyfile(onnx_model.model_file, copy)
    other = OnnxMiniLMEmbedder(model_file=copy)
    assert again.session is not None and other._session is not again.session
    assert onnx_minilm._preload is None
    assert np.allclose(other.embed(TEXTS[:1]), onnx_model.embed(TEXTS[:1]), atol=1e-5)


@pytest.mark.slow
def test_a_command_that_ends_during_the_preload_exits_with_its_own_status() -> None:
    # `seenbefore investigate --alert bad.json` refused its input (status 2) while the preload
    # thread was inside ONNX Runtime, and the interpreter's teardown then aborted the process
    # (status 134, "terminate called without an active exception") about one run in four
    import os
    import subprocess
    import sys

    if not onnx_path().exists():
        pytest.skip("no ONNX export of MiniLM (seenbefore embedder export)")
    script = (
        "import sys, time\n"
        "from seenbefore.retrieval.onnx_minilm import preload\n"
        "preload(); time.sleep(float(sys.argv[1])); raise SystemExit(2)\n"
    )
    codes = [
        subprocess.run(
            [sys.executable, "-c", script, str(delay)], env=dict(os.environ), timeout=120
        ).returncode
        for delay in (0.0, 0.05, 0.1, 0.1, 0.15, 0.2)  # before, during and after the build
    ]
    assert codes == [2] * len(codes)
