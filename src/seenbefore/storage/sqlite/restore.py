"""Restoring the SQLite store from a backup: the backup is checked on a copy, and only a copy
that passed every check is written into the live file. A refused backup leaves the live
``kb.sqlite`` byte-for-byte as it was.

1. Stage. The backup is copied, opened read-only, with SQLite's online backup API into a
   temporary directory beside the live file (``.kb.sqlite.restore-*``: same file system and
   permissions; removed afterwards; one left by a killed process holds only the copy and may be
   deleted). The backup API copies pages as they are, so damage in the backup reaches the copy.
2. Check the copy, never the live file (:func:`check_copy`, then the store's own readers):

   - integrity: ``PRAGMA integrity_check`` is "ok", ``PRAGMA foreign_key_check`` finds nothing
     and FTS5's ``integrity-check`` of ``chunks_fts`` passes;
   - whose and which version: the application_id is seenbefore's; the schema version (``PRAGMA
     user_version``) is 1..len(MIGRATIONS). A newer one is refused naming both versions; an
     older one is allowed, and migrated on the copy, as opening an older store migrates it;
   - schema: every row of ``sqlite_master`` (tables with FTS5's shadow tables, indexes,
     triggers, views), its ``sql`` whitespace-normalised, equals what this code's migrations
     build up to that version in an empty file made for the comparison. A trigger, view, table
     or index of its own, a missing one or a changed one is refused, named;
   - readable: the copy, opened as a store (so migrated), is read through the store's own
     readers (documents, sections, chunks, vectors, quarantine, settings);
   - the caller's check, ``verify``, on the copy opened as a store. Storage sits below security,
     so the audit chain is checked by the caller: ``seenbefore restore`` (cli/admin.py) passes
     security/restore_guard.py's check (the chain verifies under the live home's audit key and
     agrees with the live chain; every token is one the live store issued).
   - then the caller's ``carry`` writes into the copy what must survive from the live store
     (restore_guard.py: the live audit records after the backup's, the live tokens and their
     revocations, the web sessions).
3. Swap. Unless the live audit chain's head moved since the restore began (another process
   wrote: what was carried would be lost, so the restore is refused), the copy's generation
   is set past both its own and the live store's, then the copy is
   written into the live database with the online backup API, through the live connection.

Why the backup API into the live file and not an atomic rename of the copy over it: the store
runs in WAL mode, and other processes (``seenbefore serve``, a second CLI) hold connections to
it. A file renamed over ``kb.sqlite`` is paired with the old file's ``-wal`` and ``-shm``
(SQLite would replay the old WAL's frames onto the new pages: a corrupt store), and every
connection already open keeps reading and writing the old, unlinked inode. The backup API
instead writes the copy's pages through the live connection as one write transaction in the
WAL: other connections see the old store or the new one, never a mix, and a process killed in
the middle leaves WAL frames without a commit record, which SQLite discards on recovery, so the
live store is still the old one. The cost is writing the pages twice (stage, then swap).

The generation: every cache of the store, and the BM25 files saved beside ``kb.sqlite``
(``.bm25*.npz``, each with the generation it was built at), is trusted while the generation
matches. The restored generation is above every generation the live store had, so none of them
serves the pre-restore contents (``SQLiteStore.restore`` bumps it once more after the swap).
"""

from __future__ import annotations

import sqlite3
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from seenbefore.errors import NotFoundError, SchemaVersionError, SeenbeforeError, StoreError
from seenbefore.storage.ports import RestoreCheck, Store
from seenbefore.storage.sqlite import files as sqlite_files
from seenbefore.storage.sqlite.schema import APPLICATION_ID, MIGRATIONS

Schema = dict[tuple[str, str], tuple[str, str]]  # (type, name) -> (table, normalised sql)
REFUSED = "restore refused, the live store is unchanged"
FIX = "restore another backup written by `seenbefore backup`"
_SHOWN = 4  # schema differences named in a message
_BATCH = 500  # documents read per query when reading the copy through the store
_UNREADABLE = (sqlite3.DatabaseError, ValueError, TypeError, KeyError, IndexError)


def refusal(source: Path, what: str, rule: str, fix: str = FIX) -> StoreError:
    """The one-line refusal: what was received, the rule, the fix (SQLite's reports, such as
    integrity_check's, can span lines: they are joined)."""
    return StoreError(one_line(f"{REFUSED}: backup {source} {what}; {rule}; {fix}"))


def one_line(text: str) -> str:
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


def restore(
    conn: sqlite3.Connection,
    lock: threading.RLock,
    live: Path | None,
    source: str | Path,
    *,
    open_copy: Callable[[Path], Store],
    verify: RestoreCheck | None = None,
    carry: RestoreCheck | None = None,
) -> None:
    """Replace ``conn``'s database with the backup ``source`` once a copy of it passed every
    check; ``open_copy`` opens (and migrates) a store on the copy, ``verify`` is the caller's,
    ``carry`` writes into the checked copy what must survive from the live store."""
    source_path = Path(source)
    if not source_path.is_file():
        raise NotFoundError(f"backup {source_path} does not exist; give the file `backup` wrote")
    parent = None if live is None else live.parent
    prefix = f".{live.name if live else 'kb.sqlite'}.restore-"
    head = _audit_head(conn, lock)  # what carry reads must still be the live head at the swap
    with tempfile.TemporaryDirectory(dir=parent, prefix=prefix) as scratch:
        copy = Path(scratch) / "backup.sqlite"
        _stage(source_path, copy)
        check_copy(copy, source_path, Path(scratch))
        try:
            with open_copy(copy) as staged:  # migrates a copy of an older version
                _read_through(staged)
                if verify is not None:
                    verify(staged)
                if carry is not None:
                    carry(staged)
        except SeenbeforeError:
            raise
        except _UNREADABLE as exc:
            raise refusal(
                source_path,
                f"holds rows this seenbefore cannot read ({type(exc).__name__}: {exc})",
                "every document, chunk, vector and setting must be readable",
            ) from exc
        _swap(copy, source_path, conn, lock, head)


def _stage(source: Path, copy: Path) -> None:
    try:
        src = sqlite3.connect(source.resolve().as_uri() + "?mode=ro", uri=True)
    except sqlite3.DatabaseError as exc:
        raise refusal(source, f"cannot be opened ({exc})", "a backup is a SQLite file") from exc
    try:
        dst = sqlite3.connect(copy)
        try:
            src.backup(dst)
        finally:
            dst.close()
    except sqlite3.DatabaseError as exc:
        raise refusal(
            source, f"is not a readable SQLite file ({exc})", "a backup is a SQLite file"
        ) from exc
    finally:
        src.close()


def check_copy(copy: Path, source: Path, scratch: Path) -> int:
    """Integrity, identity, version and schema of the staged ``copy`` of ``source``; its schema
    version, or a StoreError (SchemaVersionError for a foreign or too new file)."""
    conn = sqlite3.connect(copy, isolation_level=None)
    try:
        conn.execute("PRAGMA trusted_schema = OFF")  # the schema is not trusted yet
        try:
            problems = [str(r[0]) for r in conn.execute("PRAGMA integrity_check(3)")]
        except sqlite3.DatabaseError as exc:
            problems = [str(exc)]
        if problems != ["ok"]:
            raise refusal(
                source,
                f"fails PRAGMA integrity_check ({'; '.join(problems)})",
                "a backup must be an undamaged SQLite file",
            )
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if app_id != APPLICATION_ID:
            raise SchemaVersionError(
                one_line(
                    f"{REFUSED}: backup {source} is not a seenbefore store (application_id "
                    f"{app_id:#x}, expected {APPLICATION_ID:#x}); {FIX}"
                )
            )
        if version > len(MIGRATIONS):
            raise SchemaVersionError(
                one_line(
                    f"{REFUSED}: backup {source} has schema version {version}, newer than this "
                    f"seenbefore understands ({len(MIGRATIONS)}); upgrade seenbefore, or {FIX}"
                )
            )
        if version < 1:
            raise SchemaVersionError(
                one_line(
                    f"{REFUSED}: backup {source} has schema version {version}; a seenbefore store "
                    f"has 1..{len(MIGRATIONS)}; {FIX}"
                )
            )
        differences = schema_differences(schema_of(conn), reference_schema(scratch, version))
        if differences:
            raise refusal(
                source,
                f"has a schema of its own: {differences}",
                f"its schema must be exactly what this seenbefore's migrations build for schema "
                f"version {version} (no triggers, views, tables or indexes of its own)",
            )
        if conn.execute("PRAGMA foreign_key_check").fetchone() is not None:
            raise refusal(
                source, "has rows whose foreign keys point nowhere", "every reference must resolve"
            )
        conn.execute("INSERT INTO chunks_fts (chunks_fts) VALUES ('integrity-check')")
    except sqlite3.DatabaseError as exc:
        raise refusal(
            source, f"cannot be read ({exc})", "a backup must be an undamaged SQLite file"
        ) from exc
    finally:
        conn.close()
    return version


def schema_of(conn: sqlite3.Connection) -> Schema:
    rows = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall()
    return {(r[0], r[1]): (r[2], " ".join((r[3] or "").split())) for r in rows}


def reference_schema(scratch: Path, version: int) -> Schema:
    """The schema this code's migrations 1..``version`` build in an empty file."""
    path = scratch / "reference.sqlite"
    conn = sqlite_files.connect(path)
    try:
        sqlite_files.migrate(conn, threading.RLock(), path, upto=version)
        return schema_of(conn)
    finally:
        conn.close()


def schema_differences(got: Schema, expected: Schema) -> str:
    """'extra trigger x, missing index y, changed table z' ('' when equal); the first few."""
    items = [f"extra {t} {n}" for t, n in sorted(got.keys() - expected.keys())]
    items += [f"missing {t} {n}" for t, n in sorted(expected.keys() - got.keys())]
    items += [
        f"changed {t} {n}"
        for t, n in sorted(got.keys() & expected.keys())
        if got[t, n] != expected[t, n]
    ]
    more = f" and {len(items) - _SHOWN} more" if len(items) > _SHOWN else ""
    return ", ".join(items[:_SHOWN]) + more


def _read_through(staged: Store) -> None:
    """Read every row the store serves through its own readers: a value this code cannot
    parse (JSON, a date, a vector) refuses the backup here, not in a later search."""
    ids = staged.list_ids()
    for start in range(0, len(ids), _BATCH):
        staged.documents_meta(ids[start : start + _BATCH])
    staged.document_rows()
    staged.chunk_rows()
    staged.supersede_rows()
    staged.vectors()
    staged.list_quarantine()
    staged.generation()
    staged.chunks_changed()


def _swap(
    copy: Path, source: Path, conn: sqlite3.Connection, lock: threading.RLock, head: str | None
) -> None:
    """Set the copy's generation past both stores', then write it into the live database in one
    transaction (the online backup API through the live connection), unless the live audit log
    moved since the restore began (another process wrote: what was carried would be lost)."""
    src = sqlite3.connect(copy, isolation_level=None)
    try:
        with lock:
            if _audit_head(conn, lock) != head:
                raise StoreError(
                    f"{REFUSED}: the live audit log grew while {source} was being checked (another"
                    " process is writing to this store); stop `seenbefore serve` and other"
                    " commands on it, then restore again"
                )
            live_generation = _generation(conn)
            restored = max(live_generation, _generation(src)) + 1
            src.execute("UPDATE meta SET value = ? WHERE key = 'generation'", (str(restored),))
            src.backup(conn)
    except sqlite3.DatabaseError as exc:
        raise StoreError(
            f"restore from {source} failed while copying it in ({exc}); the live store is "
            "unchanged (the copy is one transaction); free disk space or retry"
        ) from exc
    finally:
        src.close()


def _audit_head(conn: sqlite3.Connection, lock: threading.RLock) -> str | None:
    """The live audit chain's head (meta ``audit_head``), read fresh (not from a stale
    snapshot: the WAL is read at its newest commit)."""
    with lock:
        row = conn.execute("SELECT value FROM meta WHERE key = 'audit_head'").fetchone()
    return None if row is None else str(row[0])


def _generation(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
    return int(row[0])
