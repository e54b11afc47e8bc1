"""A postmortem's life in the knowledge base beyond ingestion: writing one from text (the API's
``POST /v1/postmortems``, write.py) and deleting one everywhere (delete.py).

Deleting removes the document and everything derived from it, in every store under the data
directory: its chunks, vectors and FTS rows (one transaction in ``kb.sqlite``); reviews, drafts,
LangGraph checkpoints and calibration labels that quote it (``ReviewWorkflow.purge_document``);
postmortems written from approved drafts that cite it; queued notifications that quote it (the
notify outbox); sampled investigation logs that quote it (traces.py finds the quotations); and
the in-memory BM25 file beside the store (rebuilt). Then every SQLite file is compacted (FTS5
``optimize``, ``VACUUM``, WAL ``checkpoint(TRUNCATE)``; compaction.py) so the deleted text is
physically gone, not merely unlinked. Over the PostgreSQL store the rows (documents, reviews,
labels, checkpoint threads, queued notifications) are deleted in the database and the local
files of the data directory (sampled log, approved drafts) are purged and compacted as above;
the server reclaims its own pages (autovacuum). The audit records the deletion by id and sha256 only. The
CLI's ``seenbefore delete`` and the API's ``DELETE /v1/postmortems/{id}`` both call
:func:`delete_postmortem`.
"""

from __future__ import annotations

from seenbefore.lifecycle.compaction import compact
from seenbefore.lifecycle.delete import PROVENANCE_KEYS, DeletionReport, delete_postmortem
from seenbefore.lifecycle.home import (
    OUTBOX_FILE,
    REVIEWS_FILE,
    SAMPLED_LOG,
    Purger,
    data_home,
    open_workflow,
)
from seenbefore.lifecycle.traces import (
    MIN_QUOTE_WORDS,
    mentions,
    purge_jsonl,
    purge_outbox,
    quotations,
)
from seenbefore.lifecycle.write import WriteResult, parse_postmortem, write_postmortem

__all__ = [
    "MIN_QUOTE_WORDS",
    "OUTBOX_FILE",
    "PROVENANCE_KEYS",
    "REVIEWS_FILE",
    "SAMPLED_LOG",
    "DeletionReport",
    "Purger",
    "WriteResult",
    "compact",
    "data_home",
    "delete_postmortem",
    "mentions",
    "open_workflow",
    "parse_postmortem",
    "purge_jsonl",
    "purge_outbox",
    "quotations",
    "write_postmortem",
]
