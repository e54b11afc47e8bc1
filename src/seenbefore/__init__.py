"""seenbefore: have we seen this incident before, and what did it turn out to be?

The public API is imported lazily, so ``import seenbefore.core`` stays light.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "Candidate": "seenbefore.types",
    "Chunk": "seenbefore.types",
    "ConfigError": "seenbefore.errors",
    "EmbedderMismatchError": "seenbefore.errors",
    "IngestReport": "seenbefore.knowledge.ingest",
    "Ingestor": "seenbefore.knowledge.ingest",
    "InputError": "seenbefore.errors",
    "MappingError": "seenbefore.errors",
    "MissingExtraError": "seenbefore.errors",
    "NotFoundError": "seenbefore.errors",
    "Postmortem": "seenbefore.types",
    "PostmortemInvalid": "seenbefore.errors",
    "QuarantineEntry": "seenbefore.types",
    "SQLiteStore": "seenbefore.storage.sqlite.store",
    "SchemaVersionError": "seenbefore.errors",
    "SearchFilters": "seenbefore.types",
    "SearchResult": "seenbefore.types",
    "Section": "seenbefore.types",
    "SeenbeforeError": "seenbefore.errors",
    "Settings": "seenbefore.config",
    "StoreError": "seenbefore.errors",
    "load_settings": "seenbefore.config",
    "sparse_search": "seenbefore.retrieval.sparse",
}

__all__ = [*sorted(_EXPORTS), "__version__"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'seenbefore' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
