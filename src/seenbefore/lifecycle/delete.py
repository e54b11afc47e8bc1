"""Deleting a postmortem everywhere (see the package docstring): the document, then what was
derived from it or quotes it, then compaction, then one audit record per deleted document."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from seenbefore.errors import ConflictError, NotFoundError
from seenbefore.kb import KnowledgeBase
from seenbefore.lifecycle.compaction import checkpoint, compact, sqlite_files
from seenbefore.lifecycle.home import OUTBOX_FILE, SAMPLED_LOG, Purger, data_home
from seenbefore.lifecycle.traces import mentions, purge_jsonl, purge_outbox, quotations
from seenbefore.security.audit import AuditLog
from seenbefore.security.tokens import Principal
from seenbefore.storage.outbox import OutboxRows
from seenbefore.types import Postmortem, StoredDocument

PROVENANCE_KEYS = ("provenance", "review_id", "approved_from", "source_review")


@dataclass(frozen=True)
class DeletionReport:
    id: str
    sha256: str
    chunks: int
    reviews_purged: int
    notifications_purged: int
    log_lines_purged: int
    derived_deleted: tuple[str, ...]
    files_compacted: tuple[str, ...]


def delete_postmortem(
    kb: KnowledgeBase,
    doc_id: str,
    *,
    actor: Principal | str,
    audit: AuditLog | None,
    workflow: Purger | None,
    outbox_path: Path | None,
    tiers: Sequence[str] | None = None,
    session: str | None = None,
    compact_files: bool = True,
) -> DeletionReport:
    """Delete ``doc_id`` and every trace of it under the data directory (see the package doc).
    With ``tiers``, a document outside them is NotFoundError, like an absent one.
    ``compact_files=False`` skips the index rebuild and compaction (a cascade does them once).
    The outbox purged is the store's: the file at ``outbox_path`` (default: beside the store)
    on SQLite, the database's table on PostgreSQL."""
    path = outbox_path if outbox_path is not None else data_home(kb) / OUTBOX_FILE
    deletion = _Deletion(kb, actor, audit, workflow, kb.store.outbox_rows(path), session)
    return deletion.delete(doc_id, tiers, compact_files=compact_files, cascade=frozenset())


@dataclass
class _Purged:
    """What went with a document besides its own rows (its cascade's included)."""

    derived: list[str] = field(default_factory=list)
    reviews: int = 0
    notifications: int = 0
    log_lines: int = 0


@dataclass(frozen=True)
class _Deletion:
    """What every document of one deletion's cascade shares."""

    kb: KnowledgeBase
    actor: Principal | str
    audit: AuditLog | None
    workflow: Purger | None
    outbox: OutboxRows
    session: str | None

    def delete(
        self,
        doc_id: str,
        tiers: Sequence[str] | None,
        *,
        compact_files: bool,
        cascade: frozenset[str],
    ) -> DeletionReport:
        stored = _lookup(self.kb, doc_id, tiers)
        pm = stored.postmortem
        doc_id = pm.id  # the stored spelling: ids are found regardless of case
        quotes = quotations(pm)
        if tiers is not None and _cascade_leaves(self.kb, pm, quotes, tiers):
            raise ConflictError(
                f"postmortem {doc_id!r} cannot be deleted by you: postmortems derived from it"
                " (approved drafts that cite or quote it) are not yours to change; an admin"
                " holding every tier deletes it with them"
            )
        home = data_home(self.kb)
        purged = self._delete_derived(pm, quotes, cascade)  # first: their reviews name them
        self.kb.store.delete(doc_id)
        self.kb.store.erase_from_change_log(doc_id)  # replicas rebuild rather than learn the id
        _unlink_source(pm.source, home)
        purged.reviews += self.workflow.purge_document(doc_id) if self.workflow is not None else 0
        purged.notifications += purge_outbox(self.outbox, doc_id, quotes)
        purged.log_lines += purge_jsonl(home / SAMPLED_LOG, doc_id, quotes)
        compacted = self._compact(home) if compact_files else []
        report = DeletionReport(
            id=doc_id,
            sha256=pm.content_hash,
            chunks=stored.chunk_count,
            reviews_purged=purged.reviews,
            notifications_purged=purged.notifications,
            log_lines_purged=purged.log_lines,
            derived_deleted=tuple(purged.derived),
            files_compacted=tuple(str(p) for p in compacted),
        )
        self._record(report, pm, compact_files=compact_files)
        return report

    def _delete_derived(
        self, pm: Postmortem, quotes: Sequence[str], cascade: frozenset[str]
    ) -> _Purged:
        """Delete the postmortems derived from ``pm`` (each with its own cascade, uncompacted);
        what they took with them."""
        purged = _Purged()
        for other in _derived_documents(self.kb, pm, quotes):
            if other in cascade:
                continue
            with contextlib.suppress(NotFoundError):  # deleted already by an earlier cascade
                sub = self.delete(other, None, compact_files=False, cascade=cascade | {pm.id})
                purged.derived += [other, *sub.derived_deleted]
                purged.reviews += sub.reviews_purged
                purged.notifications += sub.notifications_purged
                purged.log_lines += sub.log_lines_purged
        return purged

    def _compact(self, home: Path) -> list[Path]:
        """Rebuild what was fitted or indexed on the deleted text, then compact the files."""
        if self.kb.dense_family() == "lsa":
            self.kb.reindex()  # the LSA vocabulary was fitted on the deleted text
        # rebuilt from every row, not updated: no index, in memory or beside the store, keeps
        # the deleted text's words or statistics
        self.kb.rebuild_index()
        known = [p for p in (self.kb.store.local_file, self.outbox.local_file) if p is not None]
        return compact(sqlite_files(home, *known))

    def _record(self, report: DeletionReport, pm: Postmortem, *, compact_files: bool) -> None:
        if self.audit is None:
            return
        self.audit.record(
            self.actor,
            "delete",
            session=self.session,
            doc_ids=[report.id],
            tiers=[pm.access_tier],
            detail={
                "content_hash": pm.content_hash,  # sha256 of the text
                "chunks": report.chunks,
                "reviews_purged": report.reviews_purged,
                "notifications_purged": report.notifications_purged,
                "log_lines_purged": report.log_lines_purged,
                "derived_deleted": list(report.derived_deleted),
            },
        )
        local = self.kb.store.local_file
        if compact_files and local is not None:
            checkpoint(local)  # the audit row itself went through the WAL


def _cascade_leaves(
    kb: KnowledgeBase, pm: Postmortem, quotes: Sequence[str], tiers: Sequence[str]
) -> bool:
    """True when deleting ``pm`` would cascade into a derived postmortem outside ``tiers``: a
    delete must not act on (or name) documents its caller may not see."""
    seen, frontier = {pm.id}, [(pm, list(quotes))]
    while frontier:
        current, said = frontier.pop()
        for other in _derived_documents(kb, current, said):
            if other in seen:
                continue
            seen.add(other)
            doc = kb.store.documents_meta([other]).get(other)
            if doc is None:
                continue
            if doc.postmortem.access_tier not in tiers:
                return True
            frontier.append((doc.postmortem, quotations(doc.postmortem)))
    return False


def _derived_documents(kb: KnowledgeBase, pm: Postmortem, quotes: Sequence[str]) -> list[str]:
    """Postmortems written from approved drafts (their metadata records a review) that cite or
    quote ``pm``. Documents people wrote that merely mention it are left alone."""
    out = []
    metas = kb.store.documents_meta(kb.store.list_ids())
    for other_id, doc in sorted(metas.items()):
        extra = doc.postmortem.extra
        if other_id == pm.id or not any(k in extra for k in PROVENANCE_KEYS):
            continue
        if mentions(extra, pm.id, ()) or mentions(doc.postmortem.body, pm.id, quotes):
            out.append(other_id)
    return out


def _lookup(kb: KnowledgeBase, doc_id: str, tiers: Sequence[str] | None) -> StoredDocument:
    if tiers is not None:
        return kb.store.get(doc_id, tiers)
    found = kb.store.documents_meta([doc_id]).get(doc_id)
    if found is None:
        raise NotFoundError(f"no postmortem with id '{doc_id}'")
    return found


def _unlink_source(source: str, home: Path) -> None:
    """A document whose source file lies in the data directory (an approved draft written by
    the review workflow) loses that file too; files elsewhere are the user's and stay."""
    if not source or source.startswith("api:"):
        return
    path = Path(source.split("#L", 1)[0])
    with contextlib.suppress(OSError, ValueError):
        if path.resolve().is_relative_to(home.resolve()) and path.is_file():
            path.unlink()
