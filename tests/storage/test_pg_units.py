"""The PostgreSQL store's pure pieces, offline: URLs, bootstrap SQL, migrations."""

from __future__ import annotations

from seenbefore.storage.postgres.pool import redact
from seenbefore.storage.postgres.schema import MIGRATIONS, RLS_TABLES, bootstrap_sql


def test_redact_drops_the_password() -> None:
    shown = redact("postgresql://app:hunter2@db.internal:6543/kb?sslmode=require")
    assert shown == "postgresql://app@db.internal:6543/kb"
    assert redact("not a url at all = =") == "(unparseable database URL)"


def test_row_level_security_covers_every_table_with_tiers() -> None:
    script = MIGRATIONS[0]
    for table in RLS_TABLES:
        assert f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY" in script
        assert f"CREATE POLICY {table}_tiers ON {table}" in script
    assert "FORCE ROW LEVEL SECURITY" not in script  # the owner migrates every row


def test_bootstrap_grants_the_owner_role_without_inheritance() -> None:
    sql = bootstrap_sql("svc", "kb")
    assert "GRANT seenbefore_owner TO svc WITH INHERIT FALSE, SET TRUE" in sql
    assert "GRANT seenbefore_app TO svc" in sql
    assert "CREATE ROLE seenbefore_owner NOLOGIN" in sql


def test_bootstrap_with_two_logins_keeps_the_service_login_off_the_owner() -> None:
    sql = bootstrap_sql("svc", "kb", "ops")
    assert "GRANT seenbefore_app TO svc" in sql and "GRANT seenbefore_app TO ops" in sql
    assert "GRANT seenbefore_owner TO ops WITH INHERIT FALSE, SET TRUE" in sql
    assert not [s for s in sql if "seenbefore_owner TO svc" in s]


def test_policies_read_the_bound_tiers_not_a_setting_the_caller_writes() -> None:
    from seenbefore.storage.postgres.schema import OWNER_ONLY_TABLES, VISIBLE, revokes

    assert "current_setting" not in VISIBLE and "bound_tiers()" in VISIBLE
    five = MIGRATIONS[4]  # migration 5 replaced migration 1's policies
    for table in RLS_TABLES:
        assert f"CREATE POLICY {table}_tiers ON {table} USING ({VISIBLE})" in five
    taken_back = " ".join(revokes(len(MIGRATIONS)))
    assert all(f"{t}" in taken_back for t in OWNER_ONLY_TABLES) and "audit_log" in taken_back


def test_migration_8_drops_the_in_database_search_and_keeps_what_row_security_reads() -> None:
    script = " ".join(MIGRATIONS[7].split())
    for dropped in (
        "DROP FUNCTION IF EXISTS keyword_hits(",
        "DROP TABLE IF EXISTS lexemes",
        "DROP INDEX IF EXISTS chunks_tsv",
        "DROP INDEX IF EXISTS vectors_hnsw",
        "DROP COLUMN IF EXISTS tsv",
    ):
        assert dropped in script
    assert "access_tier" not in script and "doc_id" not in script  # the policies' columns stay
