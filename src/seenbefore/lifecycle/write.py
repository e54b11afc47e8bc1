"""Writing one postmortem from text (the API's ``POST /v1/postmortems``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, cast

from seenbefore.errors import PostmortemInvalid
from seenbefore.kb import KnowledgeBase
from seenbefore.knowledge.chunking import chunk_postmortem
from seenbefore.knowledge.validate import postmortem_from_markdown
from seenbefore.textguard import scan
from seenbefore.types import Postmortem


@dataclass(frozen=True)
class WriteResult:
    id: str
    outcome: Literal["added", "updated", "unchanged"]
    chunks: int
    injection_flags: tuple[str, ...]
    postmortem: Postmortem


def parse_postmortem(kb: KnowledgeBase, markdown: str, *, source: str) -> Postmortem:
    """Validate one Markdown postmortem (PostmortemInvalid says what to fix)."""
    size = len(markdown.encode("utf-8"))
    if size > kb.settings.max_file_bytes:
        raise PostmortemInvalid(
            source,
            f"postmortem is {size} bytes, over the limit of {kb.settings.max_file_bytes}; "
            "split it or raise SEENBEFORE_MAX_FILE_BYTES",
        )
    try:
        return postmortem_from_markdown(source, markdown)
    except ValueError as exc:  # YAML builds dates itself: `date: 2024-13-01` raises here
        raise PostmortemInvalid(
            source, f"front matter holds a value YAML cannot read ({exc}); fix the field"
        ) from exc


def write_postmortem(kb: KnowledgeBase, pm: Postmortem) -> WriteResult:
    """Chunk, embed and store one validated postmortem in one transaction (as ingest does)."""
    ingestor = kb.ingestor()
    chunks = chunk_postmortem(
        pm, max_words=ingestor.policy.max_words, overlap_words=ingestor.policy.overlap_words
    )
    vectors = ingestor.vectorize(pm, chunks) if ingestor.vectorize else None
    outcome = cast(Literal["added", "updated", "unchanged"], kb.store.upsert(pm, chunks, vectors))
    kb.maybe_refit_lsa()
    flags = tuple(sorted({f.kind for f in scan(pm.body)}))
    return WriteResult(pm.id, outcome, len(chunks) if outcome != "unchanged" else 0, flags, pm)
