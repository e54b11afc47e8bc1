"""Roles and versioned forward-only migrations for the PostgreSQL store.

Roles (see :func:`bootstrap_sql`):

- ``seenbefore_owner`` (NOLOGIN) owns the ``seenbefore`` schema and everything in it.
- ``seenbefore_app`` (NOLOGIN) holds the data privileges (SELECT, INSERT, UPDATE, DELETE).
- the LOGIN role in ``SEENBEFORE_DATABASE_URL`` is a member of ``seenbefore_app`` and a member of
  ``seenbefore_owner`` WITH INHERIT FALSE, SET TRUE: it may ``SET ROLE`` to the owner to migrate,
  but does not inherit ownership, so row-level security applies to everything it reads or writes.

Row-level security is enabled on documents, sections, chunks and vectors: a row is visible only
when its ``access_tier`` is in the transaction's ``seenbefore.tiers`` (``set_config(..., true)``,
i.e. ``SET LOCAL``) or when ``seenbefore.all_tiers`` is ``on`` (ingest, reindex and other
maintenance). Unset settings match nothing.

The database holds the rows and answers reads; it does not search. Searches run on each
replica's in-memory index (retrieval/corpus.py), kept in step through the change log (migration
5). Migrations 1 to 5 also built an in-database search (a generated ``tsvector`` with a GIN
index, a per-word ``lexemes`` table, the ``keyword_hits`` function, an HNSW index, filter
columns copied onto chunks and vectors) that product search never read; migration 6 drops it
(the measurement behind that: docs/decisions.md).

A migration is applied under ``pg_advisory_lock`` by whichever process starts first; the version is
``meta.schema_version``. Never edit a released migration: append a new one.
"""

from __future__ import annotations

SCHEMA = "seenbefore"
OWNER_ROLE = "seenbefore_owner"
APP_ROLE = "seenbefore_app"
MIN_SERVER_VERSION = 160000  # GRANT ... WITH INHERIT FALSE, SET TRUE
MIGRATION_LOCK = 0x5EEB_0001  # pg_advisory_lock key while migrating
WRITE_LOCK = 0x5EEB_0002  # pg_advisory_xact_lock key: one index writer at a time

# Evaluated once per statement (scalar subqueries become InitPlans), not once per row.
VISIBLE = (
    "((SELECT current_setting('seenbefore.all_tiers', true) = 'on') IS TRUE"
    " OR access_tier = ANY ((SELECT string_to_array(current_setting('seenbefore.tiers', true),"
    " ','))::text[]))"
)
RLS_TABLES = ("documents", "sections", "chunks", "vectors")

# Migration 1's keyword text and search function (released: kept as written; migration 6 drops
# both). Keyword text as the project's tokenizer sees it: runs of letters and digits.
TSV = "to_tsvector('simple'::regconfig, regexp_replace(text, '[^[:alnum:]]+', ' ', 'g'))"

KEYWORD_FUNCTION = "keyword_hits"


def bootstrap_sql(login_role: str, database: str) -> list[str]:
    """What a DBA runs once (as a superuser, or a CREATEROLE role for all but the extension).
    Identifiers must already be quoted."""
    return [
        "CREATE EXTENSION IF NOT EXISTS vector",
        f"CREATE ROLE {OWNER_ROLE} NOLOGIN",
        f"CREATE ROLE {APP_ROLE} NOLOGIN",
        f"GRANT CREATE ON DATABASE {database} TO {OWNER_ROLE}",
        f"GRANT {APP_ROLE} TO {login_role}",
        f"GRANT {OWNER_ROLE} TO {login_role} WITH INHERIT FALSE, SET TRUE",
    ]


def _rls(table: str) -> str:
    return (
        f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY;\n"
        f"CREATE POLICY {table}_tiers ON {table} USING ({VISIBLE}) WITH CHECK ({VISIBLE});\n"
    )


# Re-run after every migration (as the owner): privileges for the app role on whatever exists.
GRANTS = f"""
GRANT USAGE ON SCHEMA {SCHEMA} TO {APP_ROLE};
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {SCHEMA} TO {APP_ROLE};
GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA {SCHEMA} TO {APP_ROLE};
REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA {SCHEMA} FROM PUBLIC;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA {SCHEMA} TO {APP_ROLE};
"""

_KEYWORD_HITS = f"""
CREATE FUNCTION {KEYWORD_FUNCTION}(
    p_query tsquery, p_superseded boolean, p_services text[], p_from date, p_to date,
    p_exclude text[], p_limit integer, p_normalization integer
) RETURNS TABLE (chunk_id bigint, doc_id text, score real)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = {SCHEMA}, pg_catalog, pg_temp AS $fn$
    WITH hits AS (
        SELECT c.id, c.doc_id, ts_rank_cd(c.tsv, p_query, p_normalization) AS s
        FROM chunks c
        WHERE c.tsv @@ p_query AND {VISIBLE.replace("access_tier", "c.access_tier")}
          AND (p_superseded OR c.is_current)
          AND (p_services IS NULL OR c.services && p_services)
          AND (p_from IS NULL OR c.date >= p_from)
          AND (p_to IS NULL OR c.date <= p_to)
          AND (p_exclude IS NULL OR c.doc_id <> ALL (p_exclude))
    ), best AS (
        SELECT DISTINCT ON (h.doc_id) h.id, h.doc_id, h.s FROM hits h
        ORDER BY h.doc_id, h.s DESC, h.id
    )
    SELECT b.id, b.doc_id, b.s FROM best b ORDER BY b.s DESC, b.doc_id LIMIT p_limit
$fn$;
"""

MIGRATIONS: list[str] = [
    # 1: documents, sections, chunks (full text), vectors (pgvector), quarantine, meta, blobs,
    # keyword statistics; row-level security; the keyword search function
    f"""
    CREATE TABLE meta (key text PRIMARY KEY, value text NOT NULL);
    INSERT INTO meta (key, value)
        VALUES ('generation', '0'), ('chunks_changed', '0'), ('chunk_count', '0');
    CREATE TABLE documents (
        id text PRIMARY KEY,
        title text NOT NULL,
        date date,
        severity text NOT NULL DEFAULT '',
        status text NOT NULL CHECK (status IN ('current', 'superseded')),
        effective_status text NOT NULL CHECK (effective_status IN ('current', 'superseded')),
        supersedes text,
        superseded_by text,
        access_tier text NOT NULL,
        type text NOT NULL DEFAULT '',
        services text[] NOT NULL DEFAULT '{{}}',
        tags text NOT NULL DEFAULT '[]',
        signals text NOT NULL DEFAULT '[]',
        extra text NOT NULL DEFAULT '{{}}',
        body text NOT NULL,
        source text NOT NULL DEFAULT '',
        content_hash text NOT NULL,
        ingested_at text NOT NULL,
        updated_at text NOT NULL
    );
    CREATE INDEX documents_supersedes ON documents (supersedes);
    CREATE INDEX documents_filter ON documents (access_tier, effective_status);
    CREATE TABLE sections (
        doc_id text NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
        position integer NOT NULL,
        key text NOT NULL,
        heading text NOT NULL,
        text text NOT NULL,
        access_tier text NOT NULL,
        PRIMARY KEY (doc_id, position)
    );
    CREATE TABLE chunks (
        id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        doc_id text NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
        section_key text NOT NULL,
        section_heading text NOT NULL,
        section_position integer NOT NULL,
        position integer NOT NULL,
        text text NOT NULL,
        access_tier text NOT NULL,
        is_current boolean NOT NULL,
        date date,
        services text[] NOT NULL DEFAULT '{{}}',
        tsv tsvector GENERATED ALWAYS AS ({TSV}) STORED
    );
    CREATE INDEX chunks_doc ON chunks (doc_id, id);
    CREATE INDEX chunks_tsv ON chunks USING gin (tsv);
    CREATE TABLE vectors (
        chunk_id bigint PRIMARY KEY REFERENCES chunks (id) ON DELETE CASCADE,
        doc_id text NOT NULL,
        access_tier text NOT NULL,
        is_current boolean NOT NULL,
        date date,
        services text[] NOT NULL DEFAULT '{{}}',
        embedding vector NOT NULL
    );
    CREATE INDEX vectors_doc ON vectors (doc_id);
    CREATE TABLE lexemes (word text PRIMARY KEY, ndoc integer NOT NULL);
    CREATE TABLE quarantine (
        id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        source text NOT NULL UNIQUE,
        reason text NOT NULL,
        doc_id text,
        content_hash text NOT NULL,
        first_seen text NOT NULL,
        last_seen text NOT NULL,
        attempts integer NOT NULL DEFAULT 1
    );
    CREATE TABLE blobs (key text PRIMARY KEY, value bytea NOT NULL, updated_at text NOT NULL);
    {"".join(_rls(t) for t in RLS_TABLES)}
    {_KEYWORD_HITS}
    """,
]

MIGRATIONS.append(
    # 2: the service's tables, as SQLite migrations 3 (API tokens, the append-only hash-chained
    # audit log) and 4 (reviews, review events, calibration labels), so `seenbefore migrate`
    # moves them. Ids the SQLite store numbers are identity columns here.
    """
    CREATE TABLE api_tokens (
        id text PRIMARY KEY,
        name text NOT NULL,
        role text NOT NULL CHECK (role IN ('viewer', 'responder', 'reviewer', 'admin')),
        tiers text NOT NULL,
        token_hash text NOT NULL UNIQUE,
        created_at text NOT NULL,
        last_used_at text,
        revoked_at text
    );
    CREATE TABLE audit_log (
        id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        time text NOT NULL,
        actor text NOT NULL,
        session text,
        action text NOT NULL,
        query_hash text,
        doc_ids text NOT NULL DEFAULT '[]',
        tiers text NOT NULL DEFAULT '[]',
        draft_id text,
        decision text,
        detail text NOT NULL DEFAULT '{}',
        prev_hash text NOT NULL UNIQUE,
        hash text NOT NULL UNIQUE
    );
    CREATE INDEX audit_log_action ON audit_log (action, id);
    CREATE INDEX audit_log_actor ON audit_log (actor, id);
    CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
        RAISE EXCEPTION 'audit_log is append-only: % is not allowed', TG_OP;
    END
    $fn$;
    CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
        FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
    CREATE TABLE reviews (
        id text PRIMARY KEY,
        status text NOT NULL CHECK (status IN ('pending', 'approved', 'closed')),
        outcome text,
        awaiting integer NOT NULL DEFAULT 0,
        round integer NOT NULL DEFAULT 1,
        severity text,
        severity_rank integer NOT NULL DEFAULT 9,
        access_tier text NOT NULL,
        tiers text NOT NULL DEFAULT '[]',
        source_key text UNIQUE,
        source text,
        requested_by text NOT NULL,
        request text NOT NULL,
        draft text NOT NULL DEFAULT '{}',
        evidence text NOT NULL DEFAULT '{}',
        excluded_doc_ids text NOT NULL DEFAULT '[]',
        doc_ids text NOT NULL DEFAULT '[]',
        postmortem_id text,
        created_at text NOT NULL,
        updated_at text NOT NULL
    );
    CREATE INDEX reviews_queue ON reviews (status, severity_rank, created_at);
    CREATE TABLE review_events (
        id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        review_id text NOT NULL REFERENCES reviews (id) ON DELETE CASCADE,
        at text NOT NULL,
        actor text NOT NULL,
        action text NOT NULL,
        round integer NOT NULL,
        reason text,
        note text,
        detail text NOT NULL DEFAULT '{}'
    );
    CREATE INDEX review_events_review ON review_events (review_id, id);
    CREATE TABLE calibration_labels (
        id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        review_id text NOT NULL REFERENCES reviews (id) ON DELETE CASCADE,
        round integer NOT NULL,
        doc_id text NOT NULL,
        model_key text NOT NULL,
        signals text NOT NULL,
        label integer NOT NULL CHECK (label IN (0, 1)),
        reason text,
        note text,
        created_at text NOT NULL
    );
    CREATE INDEX calibration_labels_doc ON calibration_labels (doc_id);
    CREATE INDEX calibration_labels_key ON calibration_labels (model_key);
    """
)
# --- migration 3 ---
AUDIT_TRIGGERS = ("audit_log_append_only", "audit_log_no_truncate")  # migrations 2 and 3
AUDIT_FORBIDDEN = ("UPDATE", "DELETE", "TRUNCATE")  # privileges the app role must not hold
APPEND_ONLY_SINCE = 3  # the migration from which REVOKE_APPEND_ONLY applies
# GRANTS gives the app role UPDATE and DELETE on every table and is re-run after each migration
# and by the checkpoint setup; this takes them back from the append-only audit log each time.
REVOKE_APPEND_ONLY = f"REVOKE UPDATE, DELETE, TRUNCATE ON audit_log FROM {APP_ROLE}"
MIGRATIONS.append(
    # 3: the audit log is append-only below the application too: the app role may only SELECT
    # and INSERT (REVOKE_APPEND_ONLY), the row trigger of migration 2 rejects UPDATE and DELETE
    # by anyone (the owner included), and a statement trigger rejects TRUNCATE, which row
    # triggers do not see. Appends are ordered by AUDIT_LOCK (storage/dialect.py), so replicas
    # extend one chain; prev_hash UNIQUE would reject a fork anyway.
    f"""
    {REVOKE_APPEND_ONLY};
    CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
        FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();
    CREATE INDEX reviews_postmortem ON reviews (postmortem_id);
    CREATE INDEX calibration_labels_review ON calibration_labels (review_id);
    """
)
# --- migration 4 ---
MIGRATIONS.append(
    # 4: ids are unique regardless of case (as SQLite migration 5): checked on every write under
    # WRITE_LOCK, looked up regardless of case through this index; not UNIQUE, so a database
    # that already holds two spellings of one id still migrates (ingest reports the pair).
    """
    CREATE INDEX documents_id_folded ON documents (lower(id));
    """
)
# --- migration 5 ---
MIGRATIONS.append(
    # 5: the change log (as SQLite migration 6): every corpus write records the documents it wrote
    # or deleted under its generation, so a replica's index applies them instead of rebuilding
    # (Store.changes_since). Document ids are tier-walled like the rows they name: only a
    # maintenance transaction (every tier) reads the log; any write may append to it and prune it.
    """
    CREATE TABLE changes (
        generation bigint NOT NULL,
        kind text NOT NULL CHECK (kind IN ('document', 'status', 'none', 'all')),
        doc_id text NOT NULL DEFAULT '',
        PRIMARY KEY (generation, kind, doc_id)
    );
    ALTER TABLE changes ENABLE ROW LEVEL SECURITY;
    CREATE POLICY changes_read ON changes FOR SELECT
        USING ((SELECT current_setting('seenbefore.all_tiers', true) = 'on') IS TRUE);
    CREATE POLICY changes_append ON changes FOR INSERT WITH CHECK (true);
    CREATE POLICY changes_prune ON changes FOR DELETE USING (true);
    """
)
# --- migration 6 ---
MIGRATIONS.append(
    # 6: one search path (issue 26.1). Product search reads each replica's in-memory index;
    # nothing read the in-database search, yet every write paid for it: the generated tsvector
    # and its GIN index, an upsert per distinct word into lexemes, HNSW, and the tier, status,
    # date and service columns copied onto chunks and vectors for its filters (and rewritten on
    # every supersession change). Dropped here; row-level security keeps its columns (doc_id,
    # access_tier) on every table it guards.
    f"""
    DROP FUNCTION IF EXISTS {KEYWORD_FUNCTION}(
        tsquery, boolean, text[], date, date, text[], integer, integer);
    DROP TABLE IF EXISTS lexemes;
    DROP INDEX IF EXISTS chunks_tsv;
    DROP INDEX IF EXISTS vectors_hnsw;
    ALTER TABLE chunks DROP COLUMN IF EXISTS tsv, DROP COLUMN IF EXISTS is_current,
        DROP COLUMN IF EXISTS date, DROP COLUMN IF EXISTS services;
    ALTER TABLE vectors DROP COLUMN IF EXISTS is_current, DROP COLUMN IF EXISTS date,
        DROP COLUMN IF EXISTS services;
    DELETE FROM meta WHERE key = 'chunk_count';
    """
)
