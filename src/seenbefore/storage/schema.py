"""Versioned, forward-only schema migrations for the SQLite store (``PRAGMA user_version``)."""

from __future__ import annotations

APPLICATION_ID = 0x5EEB4F4E  # marks a file as a seenbefore store

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

# Migration 4 (review workflow: reviews, review events, calibration labels) is appended below.
# --- migration 4 ---
