"""Where deletion finds this process's files, and the review workflow it purges."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from seenbefore.config import SAMPLED_LOG_NAME
from seenbefore.errors import ConfigError
from seenbefore.kb import KnowledgeBase

REVIEWS_FILE = "reviews.sqlite"
OUTBOX_FILE = "outbox.sqlite"
SAMPLED_LOG = Path("logs") / SAMPLED_LOG_NAME


class Purger(Protocol):
    """What deletion needs from the review workflow."""

    def purge_document(self, doc_id: str) -> int: ...

    def close(self) -> None: ...


def data_home(kb: KnowledgeBase) -> Path:
    """The directory of this process's files: beside kb.sqlite, or SEENBEFORE_HOME when the
    store has no local file (a database server)."""
    local = kb.store.local_file
    return kb.settings.home if local is None else local.parent


def open_workflow(kb: KnowledgeBase) -> Purger | None:
    """The review workflow over ``kb`` (to purge reviews on delete); None when there is none to
    purge. ConfigError when reviews exist but the workflow's extra is not installed."""
    try:
        from seenbefore.review.workflow import ReviewWorkflow
    except ImportError as exc:
        where = data_home(kb)
        if kb.store.local_file is None:  # the reviews live in the server database
            found, place = bool(kb.store.query("SELECT 1 FROM reviews LIMIT 1")), "the database"
        else:  # their checkpoints live beside the store
            found, place = (where / REVIEWS_FILE).exists(), str(where)
        if found:
            raise ConfigError(
                f"reviews exist in {place} but the review workflow cannot load ({exc}); install"
                " seenbefore[server] so deleting also purges reviews"
            ) from exc
        return None
    return ReviewWorkflow(kb, kb.settings)
