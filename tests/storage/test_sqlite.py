import sqlite3
import threading
from pathlib import Path

import pytest

from seenbefore.errors import NotFoundError, SchemaVersionError, StoreError
from seenbefore.knowledge.ingest import Ingestor
from seenbefore.storage.sqlite.schema import MIGRATIONS
from seenbefore.storage.sqlite.store import SQLiteStore
from seenbefore.types import SearchFilters
from tests.conftest import postmortem_text


def test_new_store_is_migrated_and_in_wal_mode(store: SQLiteStore) -> None:
    assert store.stats(["general"]).schema_version == len(MIGRATIONS)
    assert store._read("PRAGMA journal_mode")[0][0] == "wal"


def test_refuses_newer_schema_and_foreign_files(tmp_path: Path) -> None:
    path = tmp_path / "kb.sqlite"
    SQLiteStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    conn.close()
    with pytest.raises(SchemaVersionError, match="newer than this seenbefore"):
        SQLiteStore(path)
    other = tmp_path / "other.sqlite"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE t (x)")
    conn.close()
    with pytest.raises(SchemaVersionError, match="not a seenbefore store"):
        SQLiteStore(other)
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError):
        SQLiteStore(junk)


def _fill(tmp_path: Path, store: SQLiteStore, n: int, prefix: str = "D") -> None:
    folder = tmp_path / f"docs-{prefix}"
    folder.mkdir(exist_ok=True)
    for i in range(n):
        (folder / f"{i}.md").write_text(postmortem_text(f"{prefix}{i}", title=f"incident {i}"))
    Ingestor(store).ingest([folder])


def test_backup_while_writing_then_restore(tmp_path: Path, store: SQLiteStore) -> None:
    _fill(tmp_path, store, 20)
    writer_store = SQLiteStore(store.path)  # a second connection keeps writing during the backup
    stop = threading.Event()

    def keep_writing() -> None:
        i = 0
        while not stop.is_set() and i < 200:
            writer_store.quarantine(f"src-{i}", "reason", None, "h")
            i += 1

    thread = threading.Thread(target=keep_writing)
    thread.start()
    try:
        store.backup(tmp_path / "backup.sqlite")
    finally:
        stop.set()
        thread.join()
        writer_store.close()
    with SQLiteStore(tmp_path / "backup.sqlite") as copy:
        assert copy.stats(["general"]).documents == 20
        assert copy._read("PRAGMA integrity_check")[0][0] == "ok"
    _fill(tmp_path, store, 5, prefix="LATE")
    assert store.stats(["general"]).documents == 25
    generation = store.generation()
    store.restore(tmp_path / "backup.sqlite")
    assert store.stats(["general"]).documents == 20
    assert store.generation() != generation
    assert [h.doc_id for h in store.sparse_search(["incident"], SearchFilters(), 50)].count(
        "D3"
    ) == 1
    with pytest.raises(StoreError, match="exists"):
        store.backup(tmp_path / "backup.sqlite")


def test_restore_refuses_non_seenbefore_files(tmp_path: Path, store: SQLiteStore) -> None:
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).close()
    with pytest.raises(SchemaVersionError):
        store.restore(other)
    with pytest.raises(NotFoundError):
        store.restore(tmp_path / "missing.sqlite")


def test_delete_removes_chunks_and_keyword_index(tmp_path: Path, store: SQLiteStore) -> None:
    _fill(tmp_path, store, 2)
    store.delete("D0")
    assert store.list_ids() == ["D1"]
    assert store._read("SELECT count(*) FROM chunks WHERE doc_id = 'D0'")[0][0] == 0
    fts_rows = store._read("SELECT count(*) FROM chunks_fts")[0][0]
    assert fts_rows == store._read("SELECT count(*) FROM chunks")[0][0]
    with pytest.raises(NotFoundError):
        store.delete("D0")
