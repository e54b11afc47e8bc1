"""The PostgreSQL store's pure pieces, offline: query quoting, filters, URLs, bootstrap SQL."""

from __future__ import annotations

import datetime as dt

from seenbefore.storage.postgres.pool import redact
from seenbefore.storage.postgres.rows import filter_sql
from seenbefore.storage.postgres.schema import MIGRATIONS, RLS_TABLES, bootstrap_sql
from seenbefore.storage.postgres.search import ts_query
from seenbefore.types import SearchFilters


def test_terms_become_quoted_lexemes_or_joined() -> None:
    assert ts_query(["disk", "full"]) == "'disk' | 'full'"
    assert ts_query(["it's", "a\\b"]) == "'it''s' | 'a\\\\b'"


def test_filters_become_parameters_never_sql_text() -> None:
    where, params = filter_sql(
        SearchFilters(
            tiers=("general", "x' OR 1=1 --"),
            services=("api",),
            date_from=dt.date(2024, 1, 1),
            date_to=dt.date(2024, 12, 31),
            exclude_ids=("A",),
        ),
        alias="v",
    )
    assert where == (
        "v.access_tier = ANY (%s) AND v.is_current AND v.services && %s::text[]"
        " AND v.date >= %s AND v.date <= %s AND v.doc_id <> ALL (%s)"
    )
    assert params == [
        ["general", "x' OR 1=1 --"],
        ["api"],
        dt.date(2024, 1, 1),
        dt.date(2024, 12, 31),
        ["A"],
    ]
    where, params = filter_sql(SearchFilters(include_superseded=True), alias="c")
    assert (where, params) == ("c.access_tier = ANY (%s)", [["general"]])


def test_redact_drops_the_password() -> None:
    shown = redact("postgresql://app:hunter2@db.internal:6543/kb?sslmode=require")
    assert shown == "postgresql://app@db.internal:6543/kb"
    assert redact("not a url at all = =") == "(unparseable database URL)"


def test_row_level_security_covers_every_table_with_tiers() -> None:
    script = MIGRATIONS[0]
    for table in RLS_TABLES:
        assert f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY" in script
        assert f"CREATE POLICY {table}_tiers ON {table}" in script
    assert "FORCE ROW LEVEL SECURITY" not in script  # the owner's search function needs GIN


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
