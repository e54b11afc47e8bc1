"""The console entry point: which runs preload MiniLM's session, and the read-only commands'
quick exit (no interpreter teardown) keeps every byte of output, the exit status and the audit."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from seenbefore.cli.launch import wants_minilm

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "postmortems"
ENTRY = "import sys; from seenbefore.cli.launch import main; sys.argv[0] = 'seenbefore'; main()"


@pytest.mark.parametrize(
    ("argv", "env", "expected"),
    [
        (["search", "db pool at max"], {}, True),
        (["investigate", "db pool at max"], {"SEENBEFORE_EMBEDDER": "MiniLM"}, True),
        (["search", "db pool at max", "--mode", "sparse"], {}, False),
        (["search", "db pool at max", "--mode=sparse"], {}, False),
        (["search", "--help"], {}, False),
        (["search", "x"], {"SEENBEFORE_EMBEDDER": "lsa"}, False),
        (["search", "x"], {"SEENBEFORE_EMBEDDER_RUNTIME": "torch"}, False),
        (["ingest", "docs/"], {}, False),
        ([], {}, False),
    ],
)
def test_which_runs_preload_minilm(
    argv: list[str], env: dict[str, str], expected: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SEENBEFORE_EMBEDDER", raising=False)
    monkeypatch.delenv("SEENBEFORE_EMBEDDER_RUNTIME", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert wants_minilm(argv) is expected


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("launch") / "home"
    done = subprocess.run(
        [sys.executable, "-c", ENTRY, "ingest", str(EXAMPLES)],
        env=_env(home),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return home


def _env(home: Path) -> dict[str, str]:
    return {"SEENBEFORE_HOME": str(home), "PATH": "/usr/bin:/bin", "SEENBEFORE_EMBEDDER": "lsa"}


def _entry(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", ENTRY, *args], env=_env(home), capture_output=True, text=True
    )


def test_quick_exit_keeps_all_output_and_the_audit(home: Path) -> None:
    def searches() -> int:
        with sqlite3.connect(home / "kb.sqlite") as conn:
            sql = "SELECT count(*) FROM audit_log WHERE action = 'search'"
            return int(conn.execute(sql).fetchone()[0])

    before = searches()
    done = _entry(home, "search", "database connection pool exhausted", "-k", "20", "--json")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)  # all of it, flushed before the process ended
    assert len(answer["results"]) == 20
    assert searches() == before + 1  # the audit record was committed, not left to teardown


@pytest.mark.parametrize(
    ("args", "status", "message"),
    [
        (["search", "x", "--mode", "psychic"], 2, "psychic"),
        (["search", "   "], 2, "search text is empty"),
        (["show", "nope"], 3, "no postmortem with id 'nope'"),
    ],
)
def test_quick_exit_keeps_the_exit_status(
    home: Path, args: list[str], status: int, message: str
) -> None:
    done = _entry(home, *args)
    assert done.returncode == status and message in done.stderr, done.stderr


def test_quick_exit_into_a_closed_pipe_fails_quietly(home: Path) -> None:
    shown = subprocess.run(
        f"{sys.executable} -c \"{ENTRY}\" search 'database pool' -k 20 | head -c 10",
        shell=True,
        env=_env(home),
        capture_output=True,
        text=True,
    )
    assert len(shown.stdout) == 10
    assert "Traceback" not in shown.stderr
