"""Roles and versioned forward-only migrations for the PostgreSQL store.

Roles (see :func:`bootstrap_sql`):

- ``seenbefore_owner`` (NOLOGIN) owns the ``seenbefore`` schema and everything in it.
- ``seenbefore_app`` (NOLOGIN) holds the data privileges (SELECT, INSERT, UPDATE, DELETE).
- the **service login** (``SEENBEFORE_DATABASE_URL`` of ``seenbefore serve``) is a member of
  ``seenbefore_app`` only: it cannot ``SET ROLE`` to the owner, so it can neither migrate nor
  step around row-level security.
- the **maintenance login** (``SEENBEFORE_DATABASE_ADMIN_URL``: migrations, ingest, reindex, the
  admin CLI) is a member of ``seenbefore_app`` and of ``seenbefore_owner`` WITH INHERIT FALSE,
  SET TRUE: it may ``SET ROLE`` to the owner to migrate, but does not inherit ownership, so
  row-level security applies to what it reads and writes as itself. One login given both
  memberships (a single URL) works, and is no boundary: it can ``SET ROLE`` to the owner.

Row-level security is enabled on documents, sections, chunks and vectors: a row is visible only
when its ``access_tier`` is among the tiers bound to the transaction (:data:`VISIBLE`). Since
migration 5 the binding is not a setting the caller writes: ``bind_tiers(key, tiers, all)``
(``SECURITY DEFINER``, owned by the owner) returns a value for ``seenbefore.binding`` that
names the backend, the transaction's start and the tiers, sealed with a MAC under a secret only
the owner can read (``binding_secret``); the policies call ``bound_tiers()``, which accepts the
value only in the transaction it was issued for and only with a valid MAC. Who may bind what:

- with a **tier key** (``SEENBEFORE_DATABASE_TIER_KEY``; its SHA-256 in ``tier_keys``, which
  the app role cannot read or write): at most the key's tiers (``NULL``: every tier);
- with no key: only a login that could ``SET ROLE`` to the owner anyway (maintenance).

So a session of the service login binds nothing without a key, and with a key never more than
the key grants, whatever it sets, calls or inserts. Unset or empty bindings match nothing.

The database holds the rows and answers reads; it does not search. Searches run on each
replica's in-memory index (retrieval/corpus.py), kept in step through the change log (migration
7). Migrations 1 to 7 also built an in-database search (a generated ``tsvector`` with a GIN
index, a per-word ``lexemes`` table, the ``keyword_hits`` function, an HNSW index, filter
columns copied onto chunks and vectors) that product search never read; migration 8 drops it
(the measurement behind that: docs/decisions.md).

A migration is applied under ``pg_advisory_lock`` by whichever process starts first on a
maintenance login; the version is ``meta.schema_version``. A service login never migrates: it
refuses a schema older than this code with the command that migrates it. Never edit a released
migration: append a new one.
"""

from __future__ import annotations

SCHEMA = "seenbefore"
OWNER_ROLE = "seenbefore_owner"
APP_ROLE = "seenbefore_app"
MIN_SERVER_VERSION = 160000  # GRANT ... WITH INHERIT FALSE, SET TRUE
MIGRATION_LOCK = 0x5EEB_0001  # pg_advisory_lock key while migrating
WRITE_LOCK = 0x5EEB_0002  # pg_advisory_xact_lock key: one index writer at a time

# Evaluated once per statement (scalar subqueries become InitPlans), not once per row.
# Migration 1's predicate read two settings any session may write; migration 5 replaced it.
VISIBLE_V1 = (
    "((SELECT current_setting('seenbefore.all_tiers', true) = 'on') IS TRUE"
    " OR access_tier = ANY ((SELECT string_to_array(current_setting('seenbefore.tiers', true),"
    " ','))::text[]))"
)
VISIBLE = (
    "((SELECT '*' = ANY (seenbefore.bound_tiers())) IS TRUE"
    " OR access_tier = ANY ((SELECT seenbefore.bound_tiers())::text[]))"
)
RLS_TABLES = ("documents", "sections", "chunks", "vectors")
BINDING_SETTING = "seenbefore.binding"  # the value bind_tiers() issues, set with SET LOCAL
ALL_TIERS = "*"  # the bound tier list of a binding that sees every tier (no tier is named so)

# Migration 1's keyword text and search function (released: kept as written; migration 8 drops
# both). Keyword text as the project's tokenizer sees it: runs of letters and digits.
TSV = "to_tsvector('simple'::regconfig, regexp_replace(text, '[^[:alnum:]]+', ' ', 'g'))"

KEYWORD_FUNCTION = "keyword_hits"


def bootstrap_sql(
    login_role: str, database: str, maintenance_login: str | None = None
) -> list[str]:
    """What a DBA runs once (as a superuser, or a CREATEROLE role for all but the extension).
    Identifiers must already be quoted. With ``maintenance_login``, ``login_role`` is the
    service login (a member of the app role only); without, the one login gets both
    memberships, which is no boundary (it may SET ROLE to the owner)."""
    admin = maintenance_login or login_role
    grants = [f"GRANT {APP_ROLE} TO {login_role}"]
    if maintenance_login is not None:
        grants.append(f"GRANT {APP_ROLE} TO {maintenance_login}")
    return [
        "CREATE EXTENSION IF NOT EXISTS vector",
        f"CREATE ROLE {OWNER_ROLE} NOLOGIN",
        f"CREATE ROLE {APP_ROLE} NOLOGIN",
        f"GRANT CREATE ON DATABASE {database} TO {OWNER_ROLE}",
        *grants,
        f"GRANT {OWNER_ROLE} TO {admin} WITH INHERIT FALSE, SET TRUE",
    ]


def _rls(table: str, visible: str = VISIBLE_V1) -> str:
    return (
        f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY;\n"
        f"CREATE POLICY {table}_tiers ON {table} USING ({visible}) WITH CHECK ({visible});\n"
    )


# Re-run after every migration (as the owner): privileges for the app role on whatever exists.
GRANTS = f"""
GRANT USAGE ON SCHEMA {SCHEMA} TO {APP_ROLE};
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {SCHEMA} TO {APP_ROLE};
GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA {SCHEMA} TO {APP_ROLE};
REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA {SCHEMA} FROM PUBLIC;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA {SCHEMA} TO {APP_ROLE};
"""

_KEYWORD_HITS = """
CREATE {replace}FUNCTION {function}(
    p_query tsquery, p_superseded boolean, p_services text[], p_from date, p_to date,
    p_exclude text[], p_limit integer, p_normalization integer
) RETURNS TABLE (chunk_id bigint, doc_id text, score real)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = {schema}, pg_catalog, pg_temp AS $fn$
    WITH hits AS (
        SELECT c.id, c.doc_id, ts_rank_cd(c.tsv, p_query, p_normalization) AS s
        FROM chunks c
        WHERE c.tsv @@ p_query AND {visible}
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


def _keyword_hits(visible: str, *, replace: bool = False) -> str:
    return _KEYWORD_HITS.format(
        replace="OR REPLACE " if replace else "",
        function=KEYWORD_FUNCTION,
        schema=SCHEMA,
        visible=visible.replace("access_tier", "c.access_tier"),
    )


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
    {_keyword_hits(VISIBLE_V1)}
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
TIER_KEYS = "tier_keys"
OWNER_ONLY_TABLES = (TIER_KEYS, "binding_secret")  # the app role may not read or write these
OWNER_ONLY_SINCE = 5
# GRANTS gives the app role every table; the binding's secret and the tier keys' hashes are
# taken back each time, in the same transaction.
REVOKE_OWNER_ONLY = f"REVOKE ALL ON {', '.join(OWNER_ONLY_TABLES)} FROM {APP_ROLE}"
BIND_FUNCTION = "bind_tiers"
TYPE_VECTORS_FUNCTION = "type_vectors"
# 64 bytes from four v4 UUIDs (gen_random_uuid draws on pg_strong_random): 488 random bits
_RANDOM_64 = "decode(replace(" + " || ".join(["gen_random_uuid()::text"] * 4) + ", '-', ''), 'hex')"
# The binding's MAC: SHA-256(outer || SHA-256(inner || message)) with two independent random
# keys (the nested construction HMAC is built on); the message names the backend, the
# transaction's start and the tiers, so a value is good in its own transaction only.
_MAC = "encode(sha256(s.outer_key || sha256(s.inner_key || convert_to({message}, 'UTF8'))), 'hex')"
_MESSAGE = "concat_ws('|', pg_backend_pid(), extract(epoch FROM now()), {tiers})"


def _policy(table: str, visible: str, *, replace: bool = False) -> str:
    drop = f"DROP POLICY {table}_tiers ON {table};\n" if replace else ""
    return (
        f"{drop}CREATE POLICY {table}_tiers ON {table} USING ({visible}) WITH CHECK ({visible});\n"
    )


def revokes(version: int) -> list[str]:
    """What to take back from the app role after GRANTS, once the schema is at ``version``."""
    out = []
    if version >= APPEND_ONLY_SINCE:
        out.append(REVOKE_APPEND_ONLY)
    if version >= OWNER_ONLY_SINCE:
        out.append(REVOKE_OWNER_ONLY)
    return out


MIGRATIONS.append(
    # 5: tiers are bound by the database, not set by the caller (see the module docstring):
    # tier keys, the binding secret, bind_tiers() and bound_tiers(); the policies and the
    # keyword function read bound_tiers() instead of the settings of migration 1.
    f"""
    CREATE TABLE {TIER_KEYS} (
        id text PRIMARY KEY,
        name text NOT NULL,
        key_hash text NOT NULL UNIQUE,
        tiers text[],
        created_at text NOT NULL,
        revoked_at text
    );
    CREATE TABLE binding_secret (
        id integer PRIMARY KEY CHECK (id = 1),
        inner_key bytea NOT NULL,
        outer_key bytea NOT NULL
    );
    INSERT INTO binding_secret (id, inner_key, outer_key) VALUES (1, {_RANDOM_64}, {_RANDOM_64});
    {REVOKE_OWNER_ONLY};

    CREATE FUNCTION {BIND_FUNCTION}(p_key text, p_tiers text[], p_all boolean) RETURNS text
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = {SCHEMA}, pg_catalog, pg_temp
    AS $fn$
    DECLARE
        allowed text[];
        bound text[];
        message text;
        mac text;
    BEGIN
        IF p_key IS NULL THEN
            IF NOT pg_has_role(session_user, '{OWNER_ROLE}', 'SET') THEN
                RAISE EXCEPTION USING ERRCODE = 'insufficient_privilege',
                    MESSAGE = format('login %s gave no tier key, and only a maintenance login'
                        ' (one that may SET ROLE {OWNER_ROLE}) binds tiers without one',
                        session_user),
                    HINT = 'set SEENBEFORE_DATABASE_TIER_KEY to a key from'
                        ' `seenbefore database key` (run with the maintenance login)';
            END IF;
            allowed := NULL;
        ELSE
            SELECT k.tiers INTO allowed FROM {TIER_KEYS} k
             WHERE k.key_hash = encode(sha256(convert_to(p_key, 'UTF8')), 'hex')
               AND k.revoked_at IS NULL;
            IF NOT FOUND THEN
                RAISE EXCEPTION USING ERRCODE = 'insufficient_privilege',
                    MESSAGE = 'the tier key given is unknown or revoked',
                    HINT = 'check SEENBEFORE_DATABASE_TIER_KEY; `seenbefore database keys` lists'
                        ' the registered keys (maintenance login)';
            END IF;
        END IF;
        IF p_all THEN
            IF allowed IS NOT NULL THEN
                RAISE EXCEPTION USING ERRCODE = 'insufficient_privilege',
                    MESSAGE = format('the tier key grants only the tiers %s, and this operation'
                        ' reads or writes every tier', allowed),
                    HINT = 'give this process a key for every tier, or run it with the'
                        ' maintenance login';
            END IF;
            bound := ARRAY['{ALL_TIERS}'];
        ELSE
            bound := ARRAY(
                SELECT u.t FROM unnest(coalesce(p_tiers, '{{}}'::text[])) WITH ORDINALITY u (t, n)
                 WHERE u.t <> '{ALL_TIERS}' AND u.t !~ '[,|]'
                   AND (allowed IS NULL OR u.t = ANY (allowed))
                 ORDER BY u.n);
        END IF;
        message := {_MESSAGE.format(tiers="array_to_string(bound, ',')")};
        SELECT {_MAC.format(message="message")} INTO mac FROM binding_secret s WHERE s.id = 1;
        RETURN message || '|' || mac;
    END
    $fn$;

    CREATE FUNCTION bound_tiers() RETURNS text[]
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = {SCHEMA}, pg_catalog, pg_temp
    AS $fn$
    DECLARE
        given text := current_setting('{BINDING_SETTING}', true);
        parts text[];
        expected text;
    BEGIN
        IF given IS NULL OR given = '' THEN
            RETURN '{{}}'::text[];
        END IF;
        parts := string_to_array(given, '|');
        IF coalesce(array_length(parts, 1), 0) <> 4
           OR parts[1] <> pg_backend_pid()::text
           OR parts[2] <> extract(epoch FROM now())::text THEN
            RAISE EXCEPTION USING ERRCODE = 'insufficient_privilege',
                MESSAGE = '{BINDING_SETTING} was not issued by {BIND_FUNCTION}() for this'
                    ' transaction';
        END IF;
        SELECT {_MAC.format(message="concat_ws('|', parts[1], parts[2], parts[3])")}
          INTO expected FROM binding_secret s WHERE s.id = 1;
        -- compared as digests, so the time taken says nothing about a forged MAC's prefix
        IF sha256(convert_to(expected, 'UTF8')) <> sha256(convert_to(parts[4], 'UTF8')) THEN
            RAISE EXCEPTION USING ERRCODE = 'insufficient_privilege',
                MESSAGE = '{BINDING_SETTING} does not carry a MAC {BIND_FUNCTION}() issued';
        END IF;
        RETURN string_to_array(parts[3], ',');
    END
    $fn$;

    -- The first embedder's claim types the vector column and builds its index (DDL, as the
    -- owner), so a service login's first ingest or approval works; it never retypes a column.
    CREATE FUNCTION {TYPE_VECTORS_FUNCTION}(p_dim integer) RETURNS void
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = {SCHEMA}, pg_catalog, pg_temp
    AS $fn$
    DECLARE
        typed integer;
        home text;
    BEGIN
        SELECT a.atttypmod INTO typed FROM pg_attribute a
         WHERE a.attrelid = '{SCHEMA}.vectors'::regclass AND a.attname = 'embedding';
        IF p_dim IS NULL OR p_dim < 1 OR (typed <> -1 AND typed <> p_dim) THEN
            RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
                MESSAGE = format('vectors cannot be typed for dimension %s (typed: %s)', p_dim,
                    typed),
                HINT = 'run `seenbefore reindex` with the maintenance login to change embedders';
        END IF;
        SELECT quote_ident(e.extnamespace::regnamespace::text) INTO home
          FROM pg_extension e WHERE e.extname = 'vector';
        EXECUTE format('ALTER TABLE vectors ALTER COLUMN embedding TYPE %s.vector(%s)', home,
            p_dim);
        EXECUTE format('CREATE INDEX IF NOT EXISTS vectors_hnsw ON vectors USING hnsw'
            ' (embedding %s.vector_cosine_ops)', home);
    END
    $fn$;

    {"".join(_policy(t, VISIBLE, replace=True) for t in RLS_TABLES)}
    {_keyword_hits(VISIBLE, replace=True)}
    """
)
# --- migration 6 ---
MIGRATIONS.append(
    # 6: what lived in files beside each process, shared by replicas here (issue 26): the
    # notification outbox (as the SQLite outbox file, plus a lease: claimed_until), the rate
    # limiter's token buckets, and the embedding cache (keyed as its SQLite file).
    """
    CREATE TABLE notify_outbox (
        id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        channel text NOT NULL,
        anomaly_id text NOT NULL,
        fingerprint text NOT NULL,
        action text NOT NULL,
        message text NOT NULL,
        state text NOT NULL CHECK (state IN ('pending', 'delivered', 'dead')),
        attempts integer NOT NULL DEFAULT 0,
        last_status integer,
        last_error text NOT NULL DEFAULT '',
        created_at text NOT NULL,
        updated_at text NOT NULL,
        claimed_until timestamptz
    );
    CREATE INDEX notify_outbox_open ON notify_outbox (state, channel, fingerprint, id);
    CREATE TABLE rate_buckets (
        key text PRIMARY KEY,
        tokens double precision NOT NULL,
        updated timestamptz NOT NULL,
        taken boolean NOT NULL
    );
    CREATE INDEX rate_buckets_updated ON rate_buckets (updated);
    CREATE TABLE embedding_cache (key text PRIMARY KEY, v bytea NOT NULL);
    """
)
# --- migration 7 ---
MIGRATIONS.append(
    # 7: the change log (as SQLite migration 6): every corpus write records the documents it wrote
    # or deleted under its generation, so a replica's index applies them instead of rebuilding
    # (Store.changes_since). Document ids are tier-walled like the rows they name: only a
    # transaction bound to every tier (migration 5's binding) reads the log; any write may
    # append to it and prune it.
    f"""
    CREATE TABLE changes (
        generation bigint NOT NULL,
        kind text NOT NULL CHECK (kind IN ('document', 'status', 'none', 'all')),
        doc_id text NOT NULL DEFAULT '',
        PRIMARY KEY (generation, kind, doc_id)
    );
    ALTER TABLE changes ENABLE ROW LEVEL SECURITY;
    CREATE POLICY changes_read ON changes FOR SELECT
        USING ((SELECT '{ALL_TIERS}' = ANY (seenbefore.bound_tiers())) IS TRUE);
    CREATE POLICY changes_append ON changes FOR INSERT WITH CHECK (true);
    CREATE POLICY changes_prune ON changes FOR DELETE USING (true);
    """
)
# --- migration 8 ---
MIGRATIONS.append(
    # 8: one search path (issue 26.1). Product search reads each replica's in-memory index;
    # nothing read the in-database search, yet every write paid for it: the generated tsvector
    # and its GIN index, an upsert per distinct word into lexemes, HNSW, and the tier, status,
    # date and service columns copied onto chunks and vectors for its filters (and rewritten on
    # every supersession change). Dropped here; row-level security keeps its columns (doc_id,
    # access_tier) on every table it guards. The vector column's typing (migration 5) no longer
    # builds an HNSW index.
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

    CREATE OR REPLACE FUNCTION {TYPE_VECTORS_FUNCTION}(p_dim integer) RETURNS void
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = {SCHEMA}, pg_catalog, pg_temp
    AS $fn$
    DECLARE
        typed integer;
        home text;
    BEGIN
        SELECT a.atttypmod INTO typed FROM pg_attribute a
         WHERE a.attrelid = '{SCHEMA}.vectors'::regclass AND a.attname = 'embedding';
        IF p_dim IS NULL OR p_dim < 1 OR (typed <> -1 AND typed <> p_dim) THEN
            RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
                MESSAGE = format('vectors cannot be typed for dimension %s (typed: %s)', p_dim,
                    typed),
                HINT = 'run `seenbefore reindex` with the maintenance login to change embedders';
        END IF;
        SELECT quote_ident(e.extnamespace::regnamespace::text) INTO home
          FROM pg_extension e WHERE e.extname = 'vector';
        EXECUTE format('ALTER TABLE vectors ALTER COLUMN embedding TYPE %s.vector(%s)', home,
            p_dim);
    END
    $fn$;
    """
)
