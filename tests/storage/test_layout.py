"""The tree keeps the shape issues 15 and 26 gave it: dialects stay inside storage/ (no caller
branches on the backend), each adapter is a package of its own (storage/sqlite/, storage/postgres/)
that knows nothing of the other, and callers type against storage.base.Store. The import
contracts in pyproject.toml (`lint-imports`, run by `make test`) enforce the package rules; this
file checks the contracts are there and what they cannot see (text branches on the backend).

Module size is a review rule, not a test (docs/architecture.md): a line cap made files split to
pass a number (issue 26)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "seenbefore"

# Outside storage/, nothing names the PostgreSQL adapter: callers type against storage.base.Store.
NAMES_ADAPTER_ELSEWHERE: set[str] = set()

# a branch on the backend: the old helper, a comparison of the dialect's name, an isinstance
BRANCH = re.compile(r"\bis_postgres\b|\.dialect\s*(==|!=|in\b)|\bisinstance\([^)]*Store\b")


def _modules() -> list[tuple[str, str]]:
    return sorted(
        (p.relative_to(SRC).as_posix(), p.read_text(encoding="utf-8")) for p in SRC.rglob("*.py")
    )


def _outside_storage() -> list[tuple[str, str]]:
    return [(name, text) for name, text in _modules() if not name.startswith("storage/")]


def test_the_scan_sees_the_tree() -> None:
    names = {name for name, _ in _modules()}
    assert {"kb.py", "storage/sqlite/store.py", "lifecycle/delete.py", "security/audit.py"} <= names
    assert len(names) > 100


def test_no_caller_outside_storage_branches_on_the_backend() -> None:
    found = [
        f"{name}:{n}: {line.strip()}"
        for name, text in _outside_storage()
        for n, line in enumerate(text.splitlines(), 1)
        if BRANCH.search(line)
    ]
    assert found == [], "ask store.sql (storage/dialect.py) or add a Store method instead"


def test_only_the_listed_modules_name_the_postgres_adapter_outside_storage() -> None:
    naming = {name for name, text in _outside_storage() if "PostgresStore" in text}
    assert naming == NAMES_ADAPTER_ELSEWHERE, "type against seenbefore.storage.base.Store"


def test_each_adapter_is_a_package_and_the_contracts_hold_them_apart() -> None:
    import tomllib

    top = {p.name for p in (SRC / "storage").glob("*.py")}
    strays = sorted(n for n in top if n.startswith(("pg_", "sqlite", "postgres", "schema")))
    assert strays == [], "SQLite-only and PostgreSQL-only modules live in their packages"
    assert (SRC / "storage" / "sqlite" / "store.py").is_file()
    assert (SRC / "storage" / "postgres" / "store.py").is_file()
    with (ROOT / "pyproject.toml").open("rb") as fh:
        contracts = {c["id"]: c for c in tomllib.load(fh)["tool"]["importlinter"]["contracts"]}
    assert set(contracts["backends"]["modules"]) == {
        "seenbefore.storage.sqlite",
        "seenbefore.storage.postgres",
    }
    assert contracts["backends"]["type"] == "independence"
    forbidden = contracts["adapters"]
    assert set(forbidden["forbidden_modules"]) == set(contracts["backends"]["modules"])
    assert {"seenbefore.kb", "seenbefore.service", "seenbefore.retrieval"} <= set(
        forbidden["source_modules"]
    )
    assert "seenbefore.storage.sqlite" in contracts["acyclic"]["ancestors"]


def test_the_branch_pattern_catches_what_it_is_meant_to() -> None:
    assert BRANCH.search("if is_postgres(kb.store):")
    assert BRANCH.search('sql = a if store.dialect == "postgres" else b')
    assert BRANCH.search("if isinstance(kb.store, PostgresStore):")
    assert not BRANCH.search("within, held = store.sql.json_within(col, tiers)")
