"""The store's ports (storage/ports.py): both adapters speak every one, the callers named here
hold the narrowest port of their role, and no port declares a member nothing above the adapters
uses; then the parts that replaced callers' backend branches: the dialect fragments
(``store.sql``), where a store lives, leases, the review checkpointer, erasing, and the audit
log's guards, each run against SQLite and PostgreSQL through ``any_store``."""

from __future__ import annotations

import inspect
import re
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Generic, Protocol, get_type_hints

import pytest

import seenbefore
from seenbefore.calibration import selftest
from seenbefore.errors import StoreError
from seenbefore.knowledge import ingest as ingest_mod
from seenbefore.retrieval import updates
from seenbefore.retrieval.context import SearchContext
from seenbefore.retrieval.corpus import CorpusIndex
from seenbefore.review.records import ReviewRecords
from seenbefore.security.audit import AuditLog
from seenbefore.security.tokens import TokenStore
from seenbefore.storage import ports
from seenbefore.storage import transfer as transfer_mod
from seenbefore.storage.dialect import POSTGRES_SQL, SQLITE_SQL
from seenbefore.storage.ports import Store
from seenbefore.storage.postgres.pool import redact
from seenbefore.storage.postgres.store import PostgresStore
from seenbefore.storage.sqlite.store import SQLiteStore
from seenbefore.storage.sqlport import ServiceStore

# three rows of a JSON-array column, as the service tables keep them (text on both backends)
ROWS = (
    "WITH t(id, arr) AS (VALUES ('a', '[\"general\"]'), ('b', '[\"general\", \"restricted\"]'),"
    " ('c', '[]'))"
)


def _ids(store: Store, where: str, params: list[object]) -> list[str]:
    return [
        str(r[0]) for r in store.query(f"{ROWS} SELECT id FROM t WHERE {where} ORDER BY id", params)
    ]


def test_the_fragments_are_the_sql_each_dialect_speaks() -> None:
    assert SQLITE_SQL.json_within("r.tiers", ["general", "restricted"]) == (
        "NOT EXISTS (SELECT 1 FROM json_each(r.tiers) j WHERE j.value NOT IN (?,?))",
        ["general", "restricted"],
    )
    assert SQLITE_SQL.json_within("r.tiers", []) == (
        "NOT EXISTS (SELECT 1 FROM json_each(r.tiers))",
        [],
    )
    assert POSTGRES_SQL.json_within("r.tiers", ["general", "restricted"]) == (
        "r.tiers::jsonb <@ ?::jsonb",
        ['["general", "restricted"]'],
    )
    assert SQLITE_SQL.json_holds("r.doc_ids") == (
        "EXISTS (SELECT 1 FROM json_each(r.doc_ids) WHERE value = ?)"
    )
    assert POSTGRES_SQL.json_holds("r.doc_ids") == "r.doc_ids::jsonb @> jsonb_build_array(?::text)"
    assert SQLITE_SQL.insertion_order("created_at, id") == "rowid"
    assert POSTGRES_SQL.insertion_order("created_at, id") == "created_at, id"
    assert (SQLITE_SQL.for_update, POSTGRES_SQL.for_update) == ("", " FOR UPDATE")


def test_json_within_selects_the_same_rows_on_both(any_store: Store) -> None:
    within = any_store.sql.json_within
    assert _ids(any_store, *within("arr", ["general"])) == ["a", "c"]
    assert _ids(any_store, *within("arr", ["general", "restricted"])) == ["a", "b", "c"]
    assert _ids(any_store, *within("arr", ["restricted"])) == ["c"]
    # no tiers held: only rows that name no tier (SQLite's `NOT IN (NULL)` would pass them all)
    assert _ids(any_store, *within("arr", [])) == ["c"]


def test_json_holds_selects_the_same_rows_on_both(any_store: Store) -> None:
    holds = any_store.sql.json_holds("arr")
    assert _ids(any_store, holds, ["restricted"]) == ["b"]
    assert _ids(any_store, holds, ["general"]) == ["a", "b"]
    assert _ids(any_store, holds, ["gen"]) == []  # whole elements, not substrings


def test_for_update_and_serialize_run_inside_a_write_transaction(any_store: Store) -> None:
    with any_store.transaction() as conn:
        any_store.sql.serialize(conn, "audit_log")
        row = conn.execute(
            f"SELECT value FROM meta WHERE key = ?{any_store.sql.for_update}", ("generation",)
        ).fetchone()
    assert int(row[0]) >= 0
    with (
        pytest.raises(StoreError, match=r"'reviews'.*only audit_log"),
        any_store.transaction() as c,
    ):
        any_store.sql.serialize(c, "reviews")


def test_where_the_store_lives(
    any_store: Store, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if any_store.dialect == "sqlite":
        assert any_store.local_file == tmp_path / "home" / "kb.sqlite"
        assert any_store.location == str(tmp_path / "home" / "kb.sqlite")
    else:
        assert any_store.local_file is None
        url = request.getfixturevalue("pg_url")  # the same database any_store opened
        assert any_store.location == redact(url)  # never the password
    with SQLiteStore(":memory:") as memory:
        assert memory.local_file is None and memory.location == ":memory:"


def test_a_lease_is_exclusive_only_where_processes_share_a_server(any_store: Store) -> None:
    seen: list[bool] = []
    with any_store.lease("review-1") as mine:
        other = threading.Thread(target=lambda: seen.append(_try(any_store, "review-1")))
        other.start()
        other.join(30)
        assert mine is True
    # SQLite: one file, processes take turns on its lock, so nothing is leased away
    assert seen == ([True] if any_store.dialect == "sqlite" else [False])
    assert _try(any_store, "review-1") is True  # released with the block


def _try(store: Store, name: str) -> bool:
    with store.lease(name) as got:
        return got


def test_the_checkpointer_says_where_checkpoints_live(any_store: Store, tmp_path: Path) -> None:
    local = tmp_path / "reviews.sqlite"
    with any_store.checkpointer(local) as checkpoints:
        assert checkpoints.saver is not None
        checkpoints.compact()
        if any_store.dialect == "sqlite":
            assert checkpoints.location == str(local) and local.is_file()
            assert "kb.sqlite" in checkpoints.restore_hint
        else:
            assert checkpoints.location == f"the database {any_store.location}"
            assert not local.exists()
            assert "database backup" in checkpoints.restore_hint


def test_erasing_leaves_no_copy_of_deleted_rows_in_the_sqlite_files(tmp_path: Path) -> None:
    marker = b"erase-me-7f3a91c2" * 8

    def delete_blob(store: SQLiteStore) -> None:
        with store.transaction() as conn:
            conn.execute("DELETE FROM blobs WHERE key = 'k'")

    def on_disk(path: Path) -> bytes:
        return b"".join(p.read_bytes() for p in path.parent.iterdir() if p.is_file())

    with SQLiteStore(tmp_path / "plain" / "kb.sqlite") as plain:  # the control
        plain.put_blob("k", marker)
        delete_blob(plain)
        assert marker in on_disk(plain.path)  # a plain delete leaves the text behind
    with SQLiteStore(tmp_path / "erased" / "kb.sqlite") as erased:
        erased.put_blob("k", marker)
        with erased.erasing():
            delete_blob(erased)
        assert erased.get_blob("k") is None
        assert marker not in on_disk(erased.path)


def test_erasing_runs_its_block_on_both(any_store: Store) -> None:
    any_store.put_blob("k", b"x")
    with any_store.erasing(), any_store.transaction() as conn:
        conn.execute("DELETE FROM blobs WHERE key = ?", ("k",))
    assert any_store.get_blob("k") is None


def test_audit_guards(any_store: Store) -> None:
    assert any_store.audit_guards_missing() == ""


def test_a_dropped_sqlite_audit_trigger_is_named(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "kb.sqlite") as store:
        with sqlite3.connect(store.path) as raw:
            raw.execute("DROP TRIGGER audit_log_no_delete")
        assert store.audit_guards_missing() == (
            "the append-only trigger(s) audit_log_no_delete are missing"
        )


# -- the roles: both adapters speak every port, callers hold the narrowest, none is wider ----
def _members(port: type) -> set[str]:
    """The names a Protocol declares, its bases' included (typing's own machinery left out)."""
    names: set[str] = set()
    for cls in port.__mro__:
        if cls in (object, Protocol, Generic) or not getattr(cls, "_is_protocol", False):
            continue
        names |= {n for n in vars(cls) if not n.startswith("_") or n in ("__enter__", "__exit__")}
        names |= set(getattr(cls, "__annotations__", {}))
    return names


PORTS: list[type] = [
    getattr(ports, name)
    for name in ports.__all__
    if isinstance(getattr(ports, name), type) and getattr(getattr(ports, name), "_is_protocol", 0)
]


@pytest.mark.parametrize("port", PORTS, ids=lambda p: p.__name__)
def test_both_adapters_speak_every_port(any_store: Store, port: type) -> None:
    adapter = type(any_store)
    if port is ports.KeywordIndex and adapter is PostgresStore:
        pytest.skip("the keyword index is SQLite's own (FTS5); PostgreSQL keeps none")
    missing = sorted(n for n in _members(port) if not hasattr(any_store, n))
    assert missing == [], f"{adapter.__name__} lacks {port.__name__}.{missing}"
    for name in _members(port):
        declared = getattr(port, name, None)
        if not inspect.isfunction(declared):
            continue
        want = list(inspect.signature(declared).parameters)
        have = list(inspect.signature(getattr(adapter, name)).parameters)
        assert have[: len(want)] == want, f"{adapter.__name__}.{name}{have} vs port {want}"


# (a caller, its store parameter, the port it must hold): none takes the whole Store
CALLERS: list[tuple[Callable[..., object], str, object]] = [
    (CorpusIndex.build, "store", ports.CorpusReads),
    (updates.apply, "store", ports.CorpusReads),
    (SearchContext.build, "store", ports.ContextReads),
    (ingest_mod.Ingestor.__init__, "store", ports.DocumentWrites),
    (selftest.self_test_cases, "store", ports.DocumentReads),
    (AuditLog.__init__, "store", ports.AuditStore),
    (TokenStore.__init__, "store", ServiceStore),
    (ReviewRecords.__init__, "store", ServiceStore),
    (transfer_mod.transfer, "source", ports.Transferable),
    (transfer_mod.transfer, "target", ports.Transferable),
    (transfer_mod.inventory, "store", ports.Transferable),
]


@pytest.mark.parametrize(
    ("caller", "param", "port"), CALLERS, ids=lambda v: getattr(v, "__qualname__", str(v))
)
def test_callers_hold_the_port_of_their_role(
    caller: Callable[..., object], param: str, port: object
) -> None:
    assert get_type_hints(caller)[param] is port
    assert port is not ports.Store


@pytest.mark.slow  # parses every module: over 4 s
def test_no_port_declares_a_member_no_caller_outside_the_adapters_uses() -> None:
    """A member belongs on a port only if something above the adapters calls it on a store: the
    source outside the adapters and the ports must hold ``<a store>.name`` somewhere, a store
    being what its callers name it (``store``, ``kb.store``, ``self._store``, ``source``,
    ``target``, ``src``, ``dst``)."""
    root = Path(seenbefore.__file__).parent
    skip = {root / "storage" / "ports.py", root / "storage" / "base.py"}
    text = "\n".join(
        p.read_text(encoding="utf-8")
        for p in sorted(root.rglob("*.py"))
        if p not in skip and not {"sqlite", "postgres"} & set(p.relative_to(root).parts[:-1])
    )
    unused = sorted(
        f"{port.__name__}.{name}"
        for port in PORTS
        for name in _members(port) - {"__enter__", "__exit__"}
        if not re.search(rf"\w*(store|source|target|src|dst)(\(\))?\s*\.\s*{name}\b", text)
    )
    assert unused == []


def test_transfer_names_no_adapter() -> None:
    source = Path(transfer_mod.__file__).read_text(encoding="utf-8")
    assert not re.search(r"storage\.(sqlite|postgres)|SQLiteStore|PostgresStore", source)
