"""`seenbefore restore` against hostile and damaged backups: a backup is checked on a copy
(integrity, schema equal to what this code's migrations build, schema version, audit chain, rows
this code can read) before the live store is touched; a bad one is refused with one line and a
non-zero exit, the live ``kb.sqlite`` byte-for-byte as it was. A good backup still round-trips,
and nothing derived from the old contents (the BM25 files beside the store) is served after."""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner, Result

from seenbefore.cli.app import app
from seenbefore.errors import StoreError
from seenbefore.knowledge.ingest import Ingestor
from seenbefore.storage.sqlite.schema import MIGRATIONS
from seenbefore.storage.sqlite.store import SQLiteStore
from tests.conftest import postmortem_text

runner = CliRunner()
ALL_TIERS = ("--tier", "general", "--tier", "restricted", "--tier", "security")
REASONS = ("integrity_check", "schema", "audit chain", "cannot read", "cannot be", "readable")
RETIER = (
    "CREATE TRIGGER retier AFTER INSERT ON documents BEGIN"
    " UPDATE documents SET access_tier = 'general' WHERE id = NEW.id; END"
)


def _env(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    monkeypatch.setenv("SEENBEFORE_HOME", str(home))
    monkeypatch.delenv("SEENBEFORE_TIERS", raising=False)
    monkeypatch.delenv("SEENBEFORE_DATABASE_URL", raising=False)
    monkeypatch.setenv("SEENBEFORE_EMBEDDER", "none")
    monkeypatch.setenv("COLUMNS", "200")


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    _env(monkeypatch, tmp_path / "home")
    return tmp_path / "home"


def invoke(*args: str) -> Result:
    return runner.invoke(app, list(args))


def run(*args: str) -> dict[str, Any]:
    result = invoke(*args, "--json")
    assert result.exit_code == 0, (result.output, result.exception)
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def refused(result: Result, *words: str) -> str:
    """A clean refusal: non-zero exit, one line on stderr naming ``words``, no traceback."""
    assert result.exit_code != 0, result.output
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def fill(folder: Path, n: int = 6) -> None:
    """``n`` general postmortems and one restricted one, ingested; a search and a token, so the
    audit log holds records."""
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (folder / f"{i}.md").write_text(
            postmortem_text(f"D{i}", title=f"incident {i} pool exhausted", services="[checkout]")
        )
    (folder / "secret.md").write_text(postmortem_text("R1", access_tier="restricted"))
    assert invoke("ingest", str(folder)).exit_code == 0
    run("search", "pool exhausted")
    token = invoke("token", "create", "--name", "ci", "--role", "viewer", "--tiers", "general")
    assert token.exit_code == 0, token.output
    assert invoke("audit", "verify").exit_code == 0


def live_sha(home: Path) -> str:
    """SHA-256 of the live kb.sqlite after its WAL is checkpointed into it."""
    conn = sqlite3.connect(home / "kb.sqlite")
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return hashlib.sha256((home / "kb.sqlite").read_bytes()).hexdigest()


def integrity(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    except sqlite3.DatabaseError as exc:
        return f"error: {exc}"
    finally:
        conn.close()


def answers(home: Path) -> tuple[int, list[str], list[str]]:
    """What the live store answers: stats, a search, and its ids in every tier."""
    stats = run("stats", *ALL_TIERS)
    found = [r["id"] for r in run("search", "pool exhausted", "-k", "10")["results"]]
    with SQLiteStore(home / "kb.sqlite") as store:
        ids = store.list_ids()
    return int(stats["documents"]), found, ids


def snapshot(home: Path) -> tuple[str, tuple[int, list[str], list[str]]]:
    """The live store's answers, then its bytes (a search appends an audit record)."""
    said = answers(home)
    return live_sha(home), said


def edit(path: Path, *statements: str) -> None:
    conn = sqlite3.connect(path)
    try:
        for statement in statements:
            conn.execute(statement)
        conn.commit()
    finally:
        conn.close()


@pytest.fixture
def backup(tmp_path: Path, home: Path) -> Path:
    fill(tmp_path / "docs")
    path = tmp_path / "b.sqlite"
    assert invoke("backup", str(path)).exit_code == 0
    return path


def variant(backup: Path, name: str) -> Path:
    path = backup.with_name(name)
    shutil.copyfile(backup, path)
    return path


def assert_untouched(home: Path, before: tuple[str, tuple[int, list[str], list[str]]]) -> None:
    """The live file byte-for-byte as it was, sound, answering as before; no copy left."""
    assert live_sha(home) == before[0]
    assert integrity(home / "kb.sqlite") == "ok"
    assert answers(home) == before[1]
    assert not [p.name for p in home.iterdir() if "restore" in p.name]
    assert invoke("audit", "verify").exit_code == 0


# -- damaged and hostile backups -----------------------------------------------------------------
def test_corrupted_pages_are_refused_and_the_live_store_keeps_working(
    backup: Path, home: Path
) -> None:
    bad = variant(backup, "corrupt.sqlite")
    data = bytearray(bad.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 8192] = random.Random(7).randbytes(8192)
    bad.write_bytes(bytes(data))
    assert integrity(bad) != "ok"  # the damage is real
    before = snapshot(home)
    line = refused(invoke("restore", str(bad), "--yes"), str(bad), "integrity")
    assert "restore" in line
    assert_untouched(home, before)


def test_a_retiering_trigger_is_refused_and_restricted_stays_restricted(
    backup: Path, home: Path, tmp_path: Path
) -> None:
    bad = variant(backup, "trigger.sqlite")
    edit(bad, RETIER)
    assert integrity(bad) == "ok"  # a well-formed file: only the schema gives it away
    before = snapshot(home)
    refused(invoke("restore", str(bad), "--yes"), "trigger retier", "schema")
    assert_untouched(home, before)
    folder = tmp_path / "later"
    folder.mkdir()
    (folder / "sec.md").write_text(postmortem_text("R2", access_tier="restricted"))
    assert invoke("ingest", str(folder)).exit_code == 0
    assert run("show", "R2", "--tier", "restricted")["access_tier"] == "restricted"
    assert invoke("show", "R2").exit_code == 3  # the default caller (general) cannot see it


@pytest.mark.parametrize(
    ("statement", "named"),
    [
        ("CREATE TABLE loot (x TEXT)", "table loot"),
        ("CREATE VIEW everything AS SELECT id, body FROM documents", "view everything"),
        ("CREATE INDEX documents_body ON documents (body)", "index documents_body"),
        ("DROP TRIGGER audit_log_no_update", "trigger audit_log_no_update"),
        ("DROP INDEX chunks_doc", "index chunks_doc"),
    ],
    ids=["extra-table", "extra-view", "extra-index", "missing-trigger", "missing-index"],
)
def test_a_schema_that_differs_from_the_migrations_is_refused(
    backup: Path, home: Path, statement: str, named: str
) -> None:
    bad = variant(backup, "schema.sqlite")
    edit(bad, statement)
    before = snapshot(home)
    refused(invoke("restore", str(bad), "--yes"), named, "schema")
    assert_untouched(home, before)


def test_the_store_api_refuses_them_too(backup: Path, home: Path) -> None:
    bad = variant(backup, "trigger.sqlite")
    edit(bad, RETIER)
    sha = live_sha(home)
    with SQLiteStore(home / "kb.sqlite") as store, pytest.raises(StoreError, match="retier"):
        store.restore(bad)
    assert live_sha(home) == sha


def _tamper_audit(path: Path) -> None:
    """Edit one audit record's detail, going around the append-only triggers and putting them
    back exactly as they were: only the tampering differs from a genuine backup."""
    conn = sqlite3.connect(path)
    try:
        triggers = conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'audit_log'"
        ).fetchall()
        assert len(triggers) == 2
        row = conn.execute(
            "SELECT id, detail FROM audit_log WHERE action = 'token.create'"
        ).fetchone()
        detail = json.loads(row[1])
        detail["token_role"] = "admin"  # the log now says an admin token was made
        for name, _ in triggers:
            conn.execute(f"DROP TRIGGER {name}")
        conn.execute(
            "UPDATE audit_log SET detail = ? WHERE id = ?",
            (json.dumps(detail, sort_keys=True, separators=(",", ":")), row[0]),
        )
        for _, sql in triggers:
            conn.execute(sql)
        conn.commit()
        after = conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'audit_log'"
        ).fetchall()
        assert sorted(after) == sorted(triggers)
    finally:
        conn.close()


def test_a_tampered_audit_record_is_refused_naming_the_audit_chain(
    backup: Path, home: Path
) -> None:
    bad = variant(backup, "audit.sqlite")
    _tamper_audit(bad)
    assert integrity(bad) == "ok"
    before = snapshot(home)
    refused(invoke("restore", str(bad), "--yes"), "audit chain", "edited")
    assert_untouched(home, before)


def test_a_newer_schema_is_refused_naming_both_versions(backup: Path, home: Path) -> None:
    bad = variant(backup, "newer.sqlite")
    edit(bad, f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    before = snapshot(home)
    refused(
        invoke("restore", str(bad), "--yes"),
        f"schema version {len(MIGRATIONS) + 1}",
        f"({len(MIGRATIONS)})",
    )
    assert_untouched(home, before)


def test_hostile_review_checkpoints_beside_a_backup_are_refused_before_anything_changes(
    backup: Path, home: Path
) -> None:
    reviews = backup.with_name(backup.name + ".reviews")
    edit(
        reviews,
        "CREATE TABLE checkpoints (thread TEXT)",
        "CREATE TRIGGER rewrite AFTER INSERT ON checkpoints BEGIN"
        " UPDATE checkpoints SET thread = 'x'; END",
    )
    before = snapshot(home)
    refused(invoke("restore", str(backup), "--yes"), "review checkpoints", "trigger rewrite")
    assert not (home / "reviews.sqlite").exists()
    assert_untouched(home, before)


# -- good backups --------------------------------------------------------------------------------
def test_a_good_backup_round_trips(backup: Path, home: Path) -> None:
    run("stats")
    before = run("stats", *ALL_TIERS)["documents"]
    assert invoke("delete", "D2").exit_code == 0
    assert invoke("show", "D2").exit_code == 3
    generation = run("stats")["generation"]
    result = invoke("restore", str(backup), "--yes")
    assert result.exit_code == 0, (result.output, result.exception)
    assert run("show", "D2")["id"] == "D2"
    assert run("stats", *ALL_TIERS)["documents"] == before
    assert run("stats")["generation"] > generation
    assert integrity(home / "kb.sqlite") == "ok"
    assert invoke("audit", "verify").exit_code == 0
    assert not [p.name for p in home.iterdir() if "restore" in p.name]


def test_an_older_schema_backup_is_migrated_on_restore(home: Path, tmp_path: Path) -> None:
    old = tmp_path / "v2.sqlite"
    conn = sqlite3.connect(old)
    for number in (1, 2):
        conn.executescript(MIGRATIONS[number - 1])
    conn.execute("PRAGMA application_id = 1592479566")  # schema.APPLICATION_ID
    conn.execute("PRAGMA user_version = 2")
    conn.commit()
    conn.close()
    fill(tmp_path / "docs")
    result = invoke("restore", str(old), "--yes")
    assert result.exit_code == 0, (result.output, result.exception)
    stats = run("stats", *ALL_TIERS)
    assert stats["documents"] == 0 and stats["schema_version"] == len(MIGRATIONS)
    assert invoke("audit", "verify").exit_code == 0


def test_the_bm25_files_beside_the_store_do_not_serve_the_old_contents(
    backup: Path, home: Path, tmp_path: Path
) -> None:
    """The in-memory index is saved beside kb.sqlite with the generation it was built at; a
    restore must move the generation past every one the live store had, or an index of the
    pre-restore text is loaded as current."""
    body = postmortem_text(
        "D1",
        title="incident 1 pool exhausted",
        services="[checkout]",
        body="## Summary\nThe zanzibar service returned errors for twenty minutes.\n\n"
        "## Symptoms\np99 latency rose and database connections reached the pool limit.\n\n"
        "## Root cause\nA slow query held connections open until the pool was exhausted.\n\n"
        "## Mitigation\nWe restarted the pods and raised the pool size.\n",
    )
    folder = tmp_path / "docs"
    (folder / "1.md").write_text(body)
    with SQLiteStore(home / "kb.sqlite") as store:  # one write: the generation moves by one
        Ingestor(store).ingest([folder])
    assert [r["id"] for r in run("search", "zanzibar")["results"]] == ["D1"]
    assert (home / "kb.sqlite.bm25.npz").exists()
    assert invoke("restore", str(backup), "--yes").exit_code == 0
    assert run("search", "zanzibar")["results"] == []
    assert [r["id"] for r in run("search", "pool exhausted", "-k", "10")["results"]]


# -- property: random damage is refused cleanly, or restores a store that passes every check --------
def _schema(path: Path) -> set[tuple[str, str, str]]:
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("SELECT type, name, sql FROM sqlite_master").fetchall()
    finally:
        conn.close()
    return {(t, n, " ".join((s or "").split())) for t, n, s in rows}


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, Path]]:
    """A live kb.sqlite (checkpointed), a backup of it, and a fresh store's file to compare
    schemas with."""
    root = tmp_path_factory.mktemp("pristine")
    with pytest.MonkeyPatch.context() as mp:
        _env(mp, root / "home")
        fill(root / "docs", n=12)
        assert invoke("backup", str(root / "b.sqlite")).exit_code == 0
        live_sha(root / "home")
    SQLiteStore(root / "fresh.sqlite").close()
    yield root / "home" / "kb.sqlite", root / "b.sqlite", root / "fresh.sqlite"


@settings(
    max_examples=30,
    deadline=None,
    database=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],  # no shrinking: a failure shows its first example
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    flips=st.lists(
        st.tuples(
            st.floats(min_value=0.0, max_value=1.0, exclude_max=True),
            st.integers(min_value=1, max_value=4096),
            st.integers(min_value=0, max_value=2**32 - 1),
        ),
        min_size=1,
        max_size=3,
    )
)
def test_random_damage_is_refused_cleanly_or_restores_a_sound_store(
    pristine: tuple[Path, Path, Path],
    monkeypatch: pytest.MonkeyPatch,
    flips: list[tuple[float, int, int]],
) -> None:
    live, good, fresh = pristine
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        shutil.copyfile(live, home / "kb.sqlite")
        shutil.copyfile(live.parent / "audit.key", home / "audit.key")  # the chain's key
        _env(monkeypatch, home)
        data = bytearray(good.read_bytes())
        for where, length, seed in flips:
            start = int(where * len(data))
            noise = random.Random(seed).randbytes(min(length, len(data) - start))
            end = start + len(noise)
            data[start:end] = bytes(a ^ b for a, b in zip(data[start:end], noise, strict=True))
        damaged = Path(tmp) / "damaged.sqlite"
        damaged.write_bytes(bytes(data))
        sha = live_sha(home)
        result = invoke("restore", str(damaged), "--yes")
        if result.exit_code != 0:
            line = refused(result, str(damaged))
            event("refused: " + next((w for w in REASONS if w in line), "other"))
            assert live_sha(home) == sha
            assert integrity(home / "kb.sqlite") == "ok"
        else:
            event("restored")
            assert integrity(home / "kb.sqlite") == "ok"
            assert _schema(home / "kb.sqlite") == _schema(fresh)
            assert invoke("audit", "verify").exit_code == 0
            run("stats", *ALL_TIERS)
            run("search", "pool exhausted", *ALL_TIERS)
        assert not [p.name for p in home.iterdir() if "restore" in p.name]
