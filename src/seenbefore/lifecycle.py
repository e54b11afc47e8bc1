"""A postmortem's life in the knowledge base beyond ingestion: writing one from text (the API's
``POST /v1/postmortems``) and deleting one everywhere.

Deleting removes the document and everything derived from it, in every store under the data
directory: its chunks, vectors and FTS rows (one transaction in ``kb.sqlite``); reviews, drafts,
LangGraph checkpoints and calibration labels that quote it (``ReviewWorkflow.purge_document``);
postmortems written from approved drafts that cite it; queued notifications that quote it (the
notify outbox); sampled investigation logs that quote it; and the in-memory BM25 file beside the
store (rebuilt). Then every SQLite file is compacted (FTS5 ``optimize``, ``VACUUM``, WAL
``checkpoint(TRUNCATE)``) so the deleted text is physically gone, not merely unlinked. Over the
PostgreSQL store the rows (documents, reviews, labels, checkpoint threads) are deleted in the
database and the local files of the data directory (outbox, sampled log, approved drafts) are
purged and compacted as above; the server reclaims its own pages (autovacuum). The audit
records the deletion by id and sha256 only. The CLI's ``seenbefore delete`` and the API's
``DELETE /v1/postmortems/{id}`` both call :func:`delete_postmortem`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import sqlite3
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, cast

from seenbefore.errors import (
    ConfigError,
    ConflictError,
    NotFoundError,
    PostmortemInvalid,
    StoreError,
)
from seenbefore.investigation.guard import scan
from seenbefore.kb import KnowledgeBase
from seenbefore.knowledge.chunking import chunk_postmortem
from seenbefore.knowledge.validate import postmortem_from_markdown
from seenbefore.security.audit import AuditLog
from seenbefore.security.tokens import Principal
from seenbefore.service.sampling import LOG_NAME
from seenbefore.storage.sqlport import is_postgres
from seenbefore.types import Postmortem, StoredDocument

log = logging.getLogger(__name__)

REVIEWS_FILE = "reviews.sqlite"
OUTBOX_FILE = "outbox.sqlite"
SAMPLED_LOG = Path("logs") / LOG_NAME
MIN_QUOTE_WORDS = 6  # a sentence this long found verbatim elsewhere is a quotation
PROVENANCE_KEYS = ("provenance", "review_id", "approved_from", "source_review")


class Purger(Protocol):
    """What deletion needs from the review workflow."""

    def purge_document(self, doc_id: str) -> int: ...

    def close(self) -> None: ...


def open_workflow(kb: KnowledgeBase) -> Purger | None:
    """The review workflow over ``kb`` (to purge reviews on delete); None when there is none to
    purge. ConfigError when reviews exist but the workflow's extra is not installed."""
    try:
        from seenbefore.review.workflow import ReviewWorkflow
    except ImportError as exc:
        where = data_home(kb)
        if (
            kb.store.query("SELECT 1 FROM reviews LIMIT 1")
            if is_postgres(kb.store)
            else (where / REVIEWS_FILE).exists()
        ):
            raise ConfigError(
                f"reviews exist in {where if not is_postgres(kb.store) else 'the database'} but"
                f" the review workflow cannot load ({exc}); install seenbefore[server] so"
                " deleting also purges reviews"
            ) from exc
        return None
    return ReviewWorkflow(kb, kb.settings)


def data_home(kb: KnowledgeBase) -> Path:
    """The directory of this process's files: beside kb.sqlite, or SEENBEFORE_HOME when the
    store is a database server (its store has no file)."""
    return kb.settings.home if is_postgres(kb.store) else kb.store.path.parent


@dataclass(frozen=True)
class WriteResult:
    id: str
    outcome: Literal["added", "updated", "unchanged"]
    chunks: int
    injection_flags: tuple[str, ...]
    postmortem: Postmortem


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


# -- writing -------------------------------------------------------------------------------------
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


# -- deleting ------------------------------------------------------------------------------------
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
    _cascade: frozenset[str] = frozenset(),
) -> DeletionReport:
    """Delete ``doc_id`` and every trace of it under the data directory (see the module doc).
    With ``tiers``, a document outside them is NotFoundError, like an absent one.
    ``compact_files=False`` skips the index rebuild and compaction (a cascade does them once)."""
    stored = _lookup(kb, doc_id, tiers)
    pm = stored.postmortem
    quotes = quotations(pm)
    if tiers is not None and _cascade_leaves(kb, pm, quotes, tiers):
        raise ConflictError(
            f"postmortem {doc_id!r} cannot be deleted by you: postmortems derived from it (approved"
            " drafts that cite or quote it) are not yours to change; an admin holding every tier"
            " deletes it with them"
        )
    home = data_home(kb)
    deleted_derived: list[str] = []
    cascaded = [0, 0, 0]  # reviews, notifications, log lines purged by the cascade
    for other in _derived_documents(kb, pm, quotes):  # first: their reviews name them
        if other in _cascade:
            continue
        with contextlib.suppress(NotFoundError):  # deleted already by an earlier cascade
            sub = delete_postmortem(
                kb,
                other,
                actor=actor,
                audit=audit,
                workflow=workflow,
                outbox_path=outbox_path,
                session=session,
                compact_files=False,
                _cascade=_cascade | {doc_id},
            )
            deleted_derived += [other, *sub.derived_deleted]
            cascaded[0] += sub.reviews_purged
            cascaded[1] += sub.notifications_purged
            cascaded[2] += sub.log_lines_purged
    kb.store.delete(doc_id)
    _unlink_source(pm.source, home)
    reviews = (workflow.purge_document(doc_id) if workflow is not None else 0) + cascaded[0]
    outbox = outbox_path if outbox_path is not None else home / OUTBOX_FILE
    notifications = purge_outbox(outbox, doc_id, quotes) + cascaded[1]
    lines = purge_jsonl(home / SAMPLED_LOG, doc_id, quotes) + cascaded[2]
    compacted: list[Path] = []
    if compact_files:
        if kb.dense_family() == "lsa":
            kb.reindex()  # the LSA vocabulary was fitted on the deleted text
        _rebuild_bm25(kb)
        local = (outbox,) if is_postgres(kb.store) else (kb.store.path, outbox)
        compacted = compact(_sqlite_files(home, *local))
    report = DeletionReport(
        id=doc_id,
        sha256=pm.content_hash,
        chunks=stored.chunk_count,
        reviews_purged=reviews,
        notifications_purged=notifications,
        log_lines_purged=lines,
        derived_deleted=tuple(deleted_derived),
        files_compacted=tuple(str(p) for p in compacted),
    )
    if audit is not None:
        audit.record(
            actor,
            "delete",
            session=session,
            doc_ids=[doc_id],
            tiers=[pm.access_tier],
            detail={
                "content_hash": pm.content_hash,  # sha256 of the text
                "chunks": stored.chunk_count,
                "reviews_purged": reviews,
                "notifications_purged": notifications,
                "log_lines_purged": lines,
                "derived_deleted": list(deleted_derived),
            },
        )
        if compact_files and not is_postgres(kb.store):
            _checkpoint(kb.store.path)  # the audit row itself went through the WAL
    return report


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


def quotations(pm: Postmortem) -> list[str]:
    """Sentences of the document long enough that finding one elsewhere means it was quoted."""
    found: list[str] = []
    if len(pm.title.split()) >= 3:
        found.append(_norm(pm.title))
    for text in [pm.body, *(s.text for s in pm.sections)]:
        for sentence in re.split(r"(?<=[.!?])\s+|\n+", text):
            clean = _norm(re.sub(r"^[-*+>#|\s]+|^\d+[.)]\s+", "", sentence))
            if len(clean.split()) >= MIN_QUOTE_WORDS:
                found.append(clean)
    return sorted(set(found), key=len, reverse=True)


def _norm(text: str) -> str:
    return " ".join(text.split())


def _id_pattern(doc_id: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w.-]){re.escape(doc_id)}(?![\w-]|\.\w)")


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield str(k)
            yield from _strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _strings(v)


def mentions(value: Any, doc_id: str, quotes: Sequence[str]) -> bool:
    """True if any string in ``value`` names ``doc_id`` or quotes one of ``quotes``."""
    pattern = _id_pattern(doc_id)
    for text in _strings(value):
        if pattern.search(text):
            return True
        flat = _norm(text)
        if any(q in flat for q in quotes):
            return True
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


def purge_outbox(path: Path, doc_id: str, quotes: Sequence[str]) -> int:
    """Delete notify outbox rows whose message names or quotes the document."""
    if not path.is_file():
        return 0
    with contextlib.closing(sqlite3.connect(path, timeout=30.0)) as conn, conn:
        try:
            rows = conn.execute("SELECT id, message FROM notify_outbox").fetchall()
        except sqlite3.OperationalError:  # not an outbox (no such table)
            return 0
        doomed = [int(r[0]) for r in rows if mentions(_loads(r[1]), doc_id, quotes)]
        conn.executemany("DELETE FROM notify_outbox WHERE id = ?", [(i,) for i in doomed])
    return len(doomed)


def purge_jsonl(path: Path, doc_id: str, quotes: Sequence[str]) -> int:
    """Rewrite a JSONL log without the lines that name or quote the document."""
    if not path.is_file():
        return 0
    kept, dropped = [], 0
    with path.open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if mentions(_loads(line), doc_id, quotes):
                dropped += 1
            else:
                kept.append(line)
    if dropped:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.writelines(kept)
        os.replace(tmp, path)
    return dropped


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return text


def _rebuild_bm25(kb: KnowledgeBase) -> None:
    """The BM25 file beside the store is rebuilt for the new generation (old terms gone)."""
    kb.index()


def _sqlite_files(home: Path, *known: Path) -> list[Path]:
    found = {p.resolve() for p in known if p.is_file()}
    if home.is_dir():
        found |= {
            p.resolve()
            for pattern in ("*.sqlite", "*.sqlite3", "*.db")
            for p in home.rglob(pattern)
            if p.is_file()
        }
    return sorted(found)


def compact(paths: Iterable[Path], *, attempts: int = 20) -> list[Path]:
    """FTS5 optimize, VACUUM and WAL checkpoint(TRUNCATE) each SQLite file, so freed pages that
    held deleted text are rewritten or cut off. Files that are not SQLite are skipped."""
    done = []
    for path in paths:
        for attempt in range(attempts):
            try:
                _compact_one(path)
                done.append(path)
                break
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise StoreError(f"{path}: compaction after delete failed ({exc})") from exc
                time.sleep(0.05 * (attempt + 1))
            except sqlite3.DatabaseError:
                log.warning("%s is not an SQLite database; not compacted", path.name)
                break
        else:
            raise StoreError(
                f"{path}: still busy after {attempts} tries to compact it after a delete; "
                "run `seenbefore delete` again when the service is idle"
            )
    return done


def _compact_one(path: Path) -> None:
    with contextlib.closing(sqlite3.connect(path, timeout=30.0, isolation_level=None)) as conn:
        conn.execute("PRAGMA secure_delete = ON")
        tables = {
            r[0]
            for r in conn.execute("SELECT name FROM sqlite_master WHERE sql LIKE '%USING fts5%'")
        }
        for table in sorted(tables):
            conn.execute(f'INSERT INTO "{table}" ("{table}") VALUES (\'optimize\')')
        conn.execute("VACUUM")
        _truncate_wal(conn, path)


def _checkpoint(path: Path) -> None:
    if path.is_file():
        with contextlib.closing(sqlite3.connect(path, timeout=30.0, isolation_level=None)) as c:
            _truncate_wal(c, path)


def _truncate_wal(conn: sqlite3.Connection, path: Path) -> None:
    busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    if busy:
        raise sqlite3.OperationalError(f"{path.name}: database is busy (a reader holds the WAL)")
