"""The CLI end to end, in-process, against a store in a temporary SEENBEFORE_HOME."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from seenbefore.cli.app import app
from tests.conftest import EXAMPLES, cli_home, postmortem_text

runner = CliRunner()


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return cli_home(tmp_path, monkeypatch)


def run(*args: str) -> dict:  # type: ignore[type-arg]
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


@pytest.mark.slow  # a whole CLI round trip: over 4 s
def test_ingest_search_show_delete_on_sample_kb() -> None:
    summary = run("ingest", str(EXAMPLES))
    assert summary["version"] == 1
    assert summary["counts"]["added"] >= 60 and summary["counts"]["quarantined"] == 0
    assert summary["counts"]["superseded"] >= 2
    again = run("ingest", str(EXAMPLES))
    assert (
        again["counts"]["added"] == 0 and again["counts"]["unchanged"] == summary["counts"]["added"]
    )
    found = run("search", "connection pool exhausted, checkout p99 latency up", "-k", "3")
    assert len(found["results"]) == 3
    first = found["results"][0]
    assert set(first) >= {"rank", "id", "title", "score", "matched_by", "snippet", "status"}
    shown = run("show", first["id"])
    assert shown["id"] == first["id"] and shown["body"]
    stats = run("stats")
    assert stats["documents"] == summary["counts"]["added"] - stats_hidden(stats)
    result = runner.invoke(app, ["delete", first["id"]])
    assert result.exit_code == 0
    missing = runner.invoke(app, ["show", first["id"]])
    assert missing.exit_code == 3


def stats_hidden(stats: dict) -> int:  # type: ignore[type-arg]
    """Documents in tiers the default caller cannot see are not counted."""
    everything = run("stats", "--tier", "general", "--tier", "restricted", "--tier", "security")
    return int(everything["documents"]) - int(stats["documents"])


def test_quarantine_list_retry_drop(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    bad = folder / "bad.md"
    bad.write_text(postmortem_text("A", date="'2024-99-01'"))
    strict = runner.invoke(app, ["ingest", str(folder), "--strict"])
    assert strict.exit_code == 1 and "quarantined" in strict.output
    entries = run("quarantine")["entries"]
    assert len(entries) == 1 and "expected YYYY-MM-DD" in entries[0]["reason"]
    listed = runner.invoke(app, ["quarantine"], env={"COLUMNS": "80"}).output
    # the time is whole, to the minute, in UTC (it was cut mid-number: "03:50:1" / "3+00:00")
    minute = entries[0]["last_seen"][:16].replace("T", " ")
    assert "last seen (UTC)" in listed and minute in listed
    still_bad = runner.invoke(app, ["quarantine", "retry", str(entries[0]["id"])])
    assert still_bad.exit_code == 1
    bad.write_text(postmortem_text("A"))
    fixed = runner.invoke(app, ["quarantine", "retry", str(entries[0]["id"])])
    assert fixed.exit_code == 0, fixed.output
    assert run("quarantine")["entries"] == []
    assert runner.invoke(app, ["quarantine", "drop", "999"]).exit_code == 3


@pytest.mark.slow  # a whole CLI round trip: over 4 s
def test_backup_and_restore(tmp_path: Path) -> None:
    run("ingest", str(EXAMPLES))
    backup = tmp_path / "b.sqlite"
    assert runner.invoke(app, ["backup", str(backup)]).exit_code == 0
    docs = run("stats")["documents"]
    first = run("search", "memory", "-k", "1")["results"][0]["id"]
    runner.invoke(app, ["delete", first])
    assert run("stats")["documents"] == docs - 1
    assert runner.invoke(app, ["restore", str(backup), "--yes"]).exit_code == 0
    assert run("stats")["documents"] == docs


def test_errors_are_one_line_and_non_zero(tmp_path: Path, home: Path) -> None:
    env = {"SEENBEFORE_HOME": str(home), "PATH": "/usr/bin:/bin", "SEENBEFORE_EMBEDDER": "lsa"}
    cases = [
        (["ingest", str(tmp_path / "missing")], 2, "does not exist"),
        (["search", "   "], 2, "search text is empty"),
        (["search", "x", "--since", "2024-02-31"], 2, "expected YYYY-MM-DD"),
        (["show", "nope"], 3, "no postmortem with id 'nope'"),
    ]
    for args, code, message in cases:
        proc = subprocess.run(
            [sys.executable, "-m", "seenbefore", *args],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        assert proc.returncode == code, (args, proc.stderr)
        assert message in proc.stderr
        assert "Traceback" not in proc.stderr


@pytest.mark.slow  # a whole CLI round trip: over 4 s
def test_backup_and_restore_carry_the_review_checkpoints(tmp_path: Path, home: Path) -> None:
    import sqlite3

    run("ingest", str(EXAMPLES))
    with sqlite3.connect(home / "reviews.sqlite") as conn:  # stands in for LangGraph's file
        conn.execute("CREATE TABLE checkpoints (thread TEXT)")
        conn.execute("INSERT INTO checkpoints VALUES ('review-1')")
    conn.close()
    backup = tmp_path / "b.sqlite"
    assert runner.invoke(app, ["backup", str(backup)]).exit_code == 0
    assert (tmp_path / "b.sqlite.reviews").exists()
    (home / "reviews.sqlite").unlink()
    assert runner.invoke(app, ["restore", str(backup), "--yes"]).exit_code == 0
    with sqlite3.connect(home / "reviews.sqlite") as conn:
        assert conn.execute("SELECT thread FROM checkpoints").fetchall() == [("review-1",)]
    conn.close()
