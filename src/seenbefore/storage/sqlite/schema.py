"""Versioned, forward-only schema migrations for the SQLite store (``PRAGMA user_version``)."""

from __future__ import annotations

APPLICATION_ID = 0x5EEB4F4E  # marks a file as a seenbefore store
AUDIT_TRIGGERS = ("audit_log_no_update", "audit_log_no_delete")  # migration 3: append-only

MIGRATIONS: list[str] = [
    # 1: documents, sections, chunks, FTS5, quarantine, meta
    """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    INSERT INTO meta (key, value) VALUES ('generation', '0');
    CREATE TABLE documents (
        id TEXT PRIMARY KEY,
        title TEXT NOT NULL,
        date TEXT,
        severity TEXT NOT NULL DEFAULT '',
        status TEXT NOT NULL CHECK (status IN ('current', 'superseded')),
        effective_status TEXT NOT NULL CHECK (effective_status IN ('current', 'superseded')),
        supersedes TEXT,
        superseded_by TEXT,
        access_tier TEXT NOT NULL,
        type TEXT NOT NULL DEFAULT '',
        services TEXT NOT NULL DEFAULT '[]',
        tags TEXT NOT NULL DEFAULT '[]',
        signals TEXT NOT NULL DEFAULT '[]',
        extra TEXT NOT NULL DEFAULT '{}',
        body TEXT NOT NULL,
        source TEXT NOT NULL DEFAULT '',
        content_hash TEXT NOT NULL,
        ingested_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE INDEX documents_supersedes ON documents (supersedes);
    CREATE INDEX documents_filter ON documents (access_tier, effective_status);
    CREATE TABLE document_services (
        doc_id TEXT NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
        service TEXT NOT NULL,
        PRIMARY KEY (doc_id, service)
    );
    CREATE INDEX document_services_service ON document_services (service);
    CREATE TABLE sections (
        doc_id TEXT NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        key TEXT NOT NULL,
        heading TEXT NOT NULL,
        text TEXT NOT NULL,
        PRIMARY KEY (doc_id, position)
    );
    CREATE TABLE chunks (
        id INTEGER PRIMARY KEY,
        doc_id TEXT NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
        section_key TEXT NOT NULL,
        section_heading TEXT NOT NULL,
        section_position INTEGER NOT NULL,
        position INTEGER NOT NULL,
        text TEXT NOT NULL
    );
    CREATE INDEX chunks_doc ON chunks (doc_id);
    CREATE VIRTUAL TABLE chunks_fts USING fts5 (text, tokenize = 'unicode61 remove_diacritics 2');
    CREATE TABLE quarantine (
        id INTEGER PRIMARY KEY,
        source TEXT NOT NULL UNIQUE,
        reason TEXT NOT NULL,
        doc_id TEXT,
        content_hash TEXT NOT NULL,
        first_seen TEXT NOT NULL,
        last_seen TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 1
    );
    """,
]

MIGRATIONS.append(
    # 2: vectors beside their chunks (same transaction), settings and fitted models as JSON / blobs
    """
    CREATE TABLE vectors (
        chunk_id INTEGER PRIMARY KEY REFERENCES chunks (id) ON DELETE CASCADE,
        vector BLOB NOT NULL
    );
    CREATE TABLE blobs (key TEXT PRIMARY KEY, value BLOB NOT NULL, updated_at TEXT NOT NULL);
    INSERT INTO meta (key, value) VALUES ('chunks_changed', '0');
    """
)

# Migration 3 (security: API tokens and the append-only audit log) is appended below this line.
# --- migration 3 ---
MIGRATIONS.append(
    # 3: API tokens (hash only, never the token) and the append-only, hash-chained audit log.
    # The triggers make UPDATE and DELETE of audit rows fail; prev_hash UNIQUE keeps the chain
    # from forking even if two writers raced past the BEGIN IMMEDIATE that orders them.
    """
    CREATE TABLE api_tokens (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        role TEXT NOT NULL CHECK (role IN ('viewer', 'responder', 'reviewer', 'admin')),
        tiers TEXT NOT NULL,
        token_hash TEXT NOT NULL UNIQUE,
        created_at TEXT NOT NULL,
        last_used_at TEXT,
        revoked_at TEXT
    );
    CREATE TABLE audit_log (
        id INTEGER PRIMARY KEY,
        time TEXT NOT NULL,
        actor TEXT NOT NULL,
        session TEXT,
        action TEXT NOT NULL,
        query_hash TEXT,
        doc_ids TEXT NOT NULL DEFAULT '[]',
        tiers TEXT NOT NULL DEFAULT '[]',
        draft_id TEXT,
        decision TEXT,
        detail TEXT NOT NULL DEFAULT '{}',
        prev_hash TEXT NOT NULL UNIQUE,
        hash TEXT NOT NULL UNIQUE
    );
    CREATE INDEX audit_log_action ON audit_log (action, id);
    CREATE INDEX audit_log_actor ON audit_log (actor, id);
    CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
    BEGIN
        SELECT RAISE(ABORT, 'audit_log is append-only: UPDATE is not allowed');
    END;
    CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
    BEGIN
        SELECT RAISE(ABORT, 'audit_log is append-only: DELETE is not allowed');
    END;
    """
)

# Migration 4 (review workflow: reviews, review events, calibration labels) is appended below.
# --- migration 4 ---
MIGRATIONS.append(
    # 4: the review workflow's rows (the LangGraph checkpoints live in reviews.sqlite beside this
    # file). doc_ids: every document a review has quoted, excluded or produced, for purging.
    # calibration_labels: a decision about the top result of one round, with its signals.
    """
    CREATE TABLE reviews (
        id TEXT PRIMARY KEY,
        status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'closed')),
        outcome TEXT,
        awaiting INTEGER NOT NULL DEFAULT 0,
        round INTEGER NOT NULL DEFAULT 1,
        severity TEXT,
        severity_rank INTEGER NOT NULL DEFAULT 9,
        access_tier TEXT NOT NULL,
        tiers TEXT NOT NULL DEFAULT '[]',
        source_key TEXT UNIQUE,
        source TEXT,
        requested_by TEXT NOT NULL,
        request TEXT NOT NULL,
        draft TEXT NOT NULL DEFAULT '{}',
        evidence TEXT NOT NULL DEFAULT '{}',
        excluded_doc_ids TEXT NOT NULL DEFAULT '[]',
        doc_ids TEXT NOT NULL DEFAULT '[]',
        postmortem_id TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE INDEX reviews_queue ON reviews (status, severity_rank, created_at);
    CREATE TABLE review_events (
        id INTEGER PRIMARY KEY,
        review_id TEXT NOT NULL REFERENCES reviews (id) ON DELETE CASCADE,
        at TEXT NOT NULL,
        actor TEXT NOT NULL,
        action TEXT NOT NULL,
        round INTEGER NOT NULL,
        reason TEXT,
        note TEXT,
        detail TEXT NOT NULL DEFAULT '{}'
    );
    CREATE INDEX review_events_review ON review_events (review_id, id);
    CREATE TABLE calibration_labels (
        id INTEGER PRIMARY KEY,
        review_id TEXT NOT NULL REFERENCES reviews (id) ON DELETE CASCADE,
        round INTEGER NOT NULL,
        doc_id TEXT NOT NULL,
        model_key TEXT NOT NULL,
        signals TEXT NOT NULL,
        label INTEGER NOT NULL CHECK (label IN (0, 1)),
        reason TEXT,
        note TEXT,
        created_at TEXT NOT NULL
    );
    CREATE INDEX calibration_labels_doc ON calibration_labels (doc_id);
    CREATE INDEX calibration_labels_key ON calibration_labels (model_key);
    """
)

# --- migration 5 ---
MIGRATIONS.append(
    # 5: ids are unique regardless of case; the stores check it on every write and look ids up
    # regardless of case through this index. Not UNIQUE: a store written before may hold two
    # spellings of one id, which ingest then reports (and --replace resolves) instead of the
    # migration failing.
    """
    CREATE INDEX documents_id_folded ON documents (lower(id));
    """
)
# --- migration 6 ---
MIGRATIONS.append(
    # 6: the change log. Every corpus write (one generation) records the documents it wrote or
    # deleted, so a search index at an older generation applies those instead of rebuilding from
    # every row (Store.changes_since); 'status' marks a document whose supersession the write may
    # have moved, 'none' a corpus write that touched no document, 'all' one that touched every
    # document (re-embedding, restore). The store keeps the last
    # CHANGE_LOG_GENERATIONS generations (storage/base.py). A store migrated here has no entries
    # for its earlier generations, so an index older than this migration rebuilds once.
    """
    CREATE TABLE changes (
        generation INTEGER NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('document', 'status', 'none', 'all')),
        doc_id TEXT NOT NULL DEFAULT '',
        PRIMARY KEY (generation, kind, doc_id)
    ) WITHOUT ROWID;
    """
)
