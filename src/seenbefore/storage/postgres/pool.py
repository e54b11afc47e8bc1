"""Connections to PostgreSQL: bootstrap checks, migrations under an advisory lock, a pool, and one
way to run a transaction (tiers bound by ``bind_tiers``, statement timeout, bounded retries).

Every failure leaves as a :class:`~seenbefore.errors.StoreError` that names the database (never
its password) and says what to do; an unreachable server is one the service reports not-ready.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar

import psycopg
from psycopg import errors as pg_errors
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.pq import TransactionStatus
from psycopg_pool import ConnectionPool, PoolTimeout

from seenbefore.errors import SchemaVersionError, StoreError
from seenbefore.retry import exponential
from seenbefore.storage.postgres.schema import (
    APP_ROLE,
    BIND_FUNCTION,
    BINDING_SETTING,
    GRANTS,
    MIGRATION_LOCK,
    MIGRATIONS,
    MIN_SERVER_VERSION,
    OWNER_ROLE,
    SCHEMA,
    WRITE_LOCK,
    bootstrap_sql,
    revokes,
)

if TYPE_CHECKING:
    import tenacity

log = logging.getLogger(__name__)
IDLE = TransactionStatus.IDLE
T = TypeVar("T")
Conn = psycopg.Connection[tuple[Any, ...]]

# A dropped connection, a failover, a serialization failure or a deadlock: worth another try.
# Not a cancelled statement, nor PoolTimeout (the pool already spent connect_timeout_s on it).
RETRYABLE: tuple[type[Exception], ...] = (
    pg_errors.SerializationFailure,
    pg_errors.DeadlockDetected,
    psycopg.OperationalError,
)
NOT_RETRYABLE: tuple[type[Exception], ...] = (pg_errors.QueryCanceled, PoolTimeout)


@dataclass(frozen=True)
class PgOptions:
    pool_min: int = 1
    pool_max: int = 10
    statement_timeout_s: float = 30.0
    connect_timeout_s: float = 10.0
    retries: int = 3  # further attempts after the first, for RETRYABLE errors
    retry_backoff_s: float = 0.2


@dataclass(frozen=True)
class ServerInfo:
    vector_schema: str
    vector_version: str
    bypasses_rls: bool  # a superuser or BYPASSRLS login: policies are not enforced for it
    # may SET ROLE to the owner: migrates, binds tiers without a key, and is no boundary
    maintenance: bool = True


def redact(url: str) -> str:
    """The URL without its password, for messages and logs."""
    try:
        info = conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "(unparseable database URL)"
    host, port = info.get("host", "localhost"), info.get("port", "5432")
    return f"postgresql://{info.get('user', '')}@{host}:{port}/{info.get('dbname', '')}"


# One statement of the transaction's first round trip; the key travels as a bound parameter,
# never in the statement's text (which other sessions of the same login see in pg_stat_activity).
_BIND = sql.SQL("SELECT set_config({}, {}.{}(%s, %s, %s), true)").format(
    sql.Literal(BINDING_SETTING), sql.Identifier(SCHEMA), sql.Identifier(BIND_FUNCTION)
)


class Database:
    """A pool of connections to one migrated database. ``tier_key`` is what binds tiers on a
    service login (schema.py); a maintenance login binds without one."""

    def __init__(
        self, url: str, options: PgOptions | None = None, *, tier_key: str | None = None
    ) -> None:
        self.options = options or PgOptions()
        self.display = redact(url)
        self._url = url
        self._tier_key = tier_key or None
        try:
            with psycopg.connect(
                url, autocommit=True, connect_timeout=int(self.options.connect_timeout_s)
            ) as conn:
                self.info = self._migrate(conn)
        except psycopg.OperationalError as exc:
            raise self._unreachable(exc) from exc
        self._search_path = f"{SCHEMA}, {self.info.vector_schema}"
        if self.info.bypasses_rls:
            log.warning(
                "%s: the login role is a superuser or has BYPASSRLS, so row-level security is not"
                " enforced for it (queries still filter by tier); connect as an app role",
                self.display,
            )
        self._pool: ConnectionPool[Conn] = ConnectionPool(
            url,
            min_size=self.options.pool_min,
            max_size=self.options.pool_max,
            kwargs={
                "autocommit": True,
                "connect_timeout": int(self.options.connect_timeout_s),
                "application_name": "seenbefore",
            },
            configure=self._configure,
            timeout=self.options.connect_timeout_s,
            name="seenbefore",
            open=False,
        )
        try:
            self._pool.open(wait=True, timeout=self.options.connect_timeout_s)
        except PoolTimeout as exc:
            self._pool.close()
            raise self._unreachable(exc) from exc

    def close(self) -> None:
        self._pool.close()

    @property
    def url(self) -> str:
        """The URL as given (with its password): for other pools to the same database."""
        return self._url

    @property
    def pool(self) -> ConnectionPool[Conn]:
        """The pool, for transactions that span a block of code (storage/postgres/tx.py)."""
        return self._pool

    # -- connections ----------------------------------------------------------------------
    def _configure(self, conn: Conn) -> None:
        from pgvector.psycopg import register_vector

        conn.execute(
            "SELECT set_config('search_path', %s, false), set_config('statement_timeout', %s,"
            " false)",
            (self._search_path, f"{int(self.options.statement_timeout_s * 1000)}ms"),
        )
        register_vector(conn)

    def _unreachable(self, exc: BaseException) -> StoreError:
        return StoreError(
            f"database {self.display} is unreachable ({str(exc).strip() or type(exc).__name__});"
            " check SEENBEFORE_DATABASE_URL and that PostgreSQL is running and accepts"
            " connections from this host"
        )

    def run(
        self,
        fn: Callable[[Conn], T],
        *,
        tiers: Sequence[str] | None,
        write: bool = False,
        owner: bool = False,
    ) -> T:
        """``fn(conn)`` in one transaction that sees ``tiers`` (None: every tier, for
        maintenance). Writes hold the writer lock (one index writer at a time) and run READ
        COMMITTED; reads run REPEATABLE READ, READ ONLY. ``owner`` runs as the owner role (DDL).
        Retried on dropped connections, serialization failures and deadlocks, at most
        ``retries`` more times, so ``fn`` must be safe to run again."""
        if owner and not self.info.maintenance:
            raise StoreError(
                f"database {self.display}: this needs the schema's owner (DDL: reindex, vector"
                " index builds), and the login is a service login, which may not SET ROLE"
                f" {OWNER_ROLE}; run it with the maintenance login (SEENBEFORE_DATABASE_ADMIN_URL)"
            )
        retrying = exponential(self.options.retries, self.options.retry_backoff_s).retrying(
            on_exception=lambda e: isinstance(e, RETRYABLE) and not isinstance(e, NOT_RETRYABLE),
            sleep=time.sleep,
            before_sleep=self._before_retry,
        )
        try:
            result: T = retrying(self._run_once, fn, tiers, write, owner)
            return result
        except pg_errors.QueryCanceled as exc:
            raise StoreError(
                f"database {self.display}: a statement ran longer than the statement timeout"
                f" ({self.options.statement_timeout_s:g} s) and was cancelled; raise"
                " SEENBEFORE_DATABASE_STATEMENT_TIMEOUT_S or narrow the request"
            ) from exc
        except PoolTimeout as exc:
            raise self._unreachable(exc) from exc
        except RETRYABLE as exc:  # every attempt failed
            if isinstance(exc, pg_errors.ConnectionException) or (
                isinstance(exc, psycopg.OperationalError) and not exc.sqlstate
            ):
                raise self._unreachable(exc) from exc
            raise StoreError(
                f"database {self.display}: {type(exc).__name__} after"
                f" {self.options.retries + 1} attempts ({str(exc).strip()}); retry later"
            ) from exc
        except psycopg.Error as exc:
            raise StoreError(
                f"database {self.display}: {type(exc).__name__}: {str(exc).strip()}"
            ) from exc

    def _run_once(
        self, fn: Callable[[Conn], T], tiers: Sequence[str] | None, write: bool, owner: bool
    ) -> T:
        with self._pool.connection() as conn:
            if tiers == () and not write and not owner:
                return fn(conn)  # meta, blobs, quarantine: one autocommit statement
            try:
                self._begin(conn, tiers, write=write, owner=owner)
                result = fn(conn)
            except BaseException:
                if not conn.closed and conn.info.transaction_status != IDLE:
                    conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            return result

    def _before_retry(self, state: tenacity.RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome is not None else None
        log.info("retrying after %s (attempt %d)", type(exc).__name__, state.attempt_number)
        self._pool.check()  # drop every idle connection that died with this one

    def _begin(self, conn: Conn, tiers: Sequence[str] | None, *, write: bool, owner: bool) -> None:
        """One round trip (a pipeline): BEGIN, the tier binding (none for ``()``: the tables
        without tiers), the writer lock, the role."""
        with conn.pipeline():
            conn.execute(
                b"BEGIN ISOLATION LEVEL READ COMMITTED"
                if write
                else b"BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"
            )
            if tiers != ():
                conn.execute(_BIND, (self._tier_key, list(tiers or ()), tiers is None))
            if write:
                conn.execute(
                    sql.SQL("SELECT pg_advisory_xact_lock({})").format(sql.Literal(WRITE_LOCK))
                )
            if owner:
                conn.execute(sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(OWNER_ROLE)))

    # -- bootstrap and migrations -----------------------------------------------------------
    def _migrate(self, conn: Conn) -> ServerInfo:
        info = self._bootstrap(conn)
        if not info.maintenance:
            self._check_version(conn, info)
            return info
        conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
        try:
            version = self._check_version(conn, info)
            for number in range(version + 1, len(MIGRATIONS) + 1):
                with conn.transaction():
                    conn.execute(sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(OWNER_ROLE)))
                    if number == 1:
                        conn.execute(
                            sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(SCHEMA))
                        )
                    conn.execute(MIGRATIONS[number - 1].encode())
                    conn.execute(GRANTS.encode())
                    for statement in revokes(number):
                        conn.execute(statement.encode())
                    conn.execute(
                        "INSERT INTO meta (key, value) VALUES ('schema_version', %s)"
                        " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                        (str(number),),
                    )
                log.info("%s: applied schema migration %d", self.display, number)
            return info
        except pg_errors.InsufficientPrivilege as exc:
            raise StoreError(
                f"database {self.display}: {str(exc).strip()}; the login role needs the roles"
                f" and grants of the bootstrap (as a superuser): {self._bootstrap_hint(conn)}"
            ) from exc
        finally:
            if not conn.closed:
                conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))

    def _check_version(self, conn: Conn, info: ServerInfo) -> int:
        """The schema's version; SchemaVersionError when newer than this code, or older on a
        service login (which cannot migrate)."""
        conn.execute(
            "SELECT set_config('search_path', %s, false)", (f"{SCHEMA}, {info.vector_schema}",)
        )
        version = self._schema_version(conn)
        if version > len(MIGRATIONS):
            raise SchemaVersionError(
                f"database {self.display}: schema version {version} is newer than this"
                f" seenbefore understands ({len(MIGRATIONS)}); upgrade seenbefore"
            )
        if version < len(MIGRATIONS) and not info.maintenance:
            raise SchemaVersionError(
                f"database {self.display}: schema version {version}, and this seenbefore needs"
                f" {len(MIGRATIONS)}; the login is a service login (not a member of"
                f" {OWNER_ROLE}), which never migrates: run `seenbefore database setup` with"
                " the maintenance login (SEENBEFORE_DATABASE_ADMIN_URL) first"
            )
        return version

    def _schema_version(self, conn: Conn) -> int:
        row = conn.execute("SELECT to_regclass(%s)", (f"{SCHEMA}.meta",)).fetchone()
        if row is None or row[0] is None:
            return 0
        value = conn.execute(
            sql.SQL("SELECT value FROM {}.meta WHERE key = 'schema_version'").format(
                sql.Identifier(SCHEMA)
            )
        ).fetchone()
        return int(value[0]) if value else 0

    def _bootstrap_hint(self, conn: Conn) -> str:
        row = conn.execute("SELECT quote_ident(session_user), quote_ident(current_database())")
        login, database = row.fetchone() or ("<login role>", "<database>")
        return "; ".join(bootstrap_sql(login, database))

    def _bootstrap(self, conn: Conn) -> ServerInfo:
        """Check the server; create the roles and the extension when this login may."""
        server = int(conn.execute("SHOW server_version_num").fetchone()[0])  # type: ignore[index]
        if server < MIN_SERVER_VERSION:
            raise StoreError(
                f"database {self.display} runs PostgreSQL {server // 10000}; seenbefore needs 16"
                " or newer (role grants WITH INHERIT FALSE); upgrade the server"
            )
        row = conn.execute(
            "SELECT rolsuper, rolcreaterole, rolbypassrls FROM pg_roles WHERE rolname = session_user"
        ).fetchone()
        superuser, createrole, bypassrls = row or (False, False, False)
        exist = self._roles_exist(conn)
        row = (
            conn.execute(
                "SELECT pg_has_role(session_user, %s, 'USAGE'), pg_has_role(session_user, %s,"
                " 'SET')",
                (APP_ROLE, OWNER_ROLE),
            ).fetchone()
            if exist
            else None
        )
        app, owner = (bool(row[0]), bool(row[1])) if row else (False, False)
        if not (exist and app):
            if not (superuser or createrole):
                raise StoreError(
                    f"database {self.display}: the login role is not set up for seenbefore; as a"
                    f" superuser run: {self._bootstrap_hint(conn)} (or give the service its own"
                    " login: docs/postgres.md)"
                )
            self._create_roles(conn, superuser=bool(superuser))
            owner = True
        info = self._vector(conn, superuser=bool(superuser), bypass=bool(superuser or bypassrls))
        return replace(info, maintenance=owner)

    @staticmethod
    def _roles_exist(conn: Conn) -> bool:
        row = conn.execute(
            "SELECT count(*) FROM pg_roles WHERE rolname IN (%s, %s)", (OWNER_ROLE, APP_ROLE)
        ).fetchone()
        return bool(row and row[0] == 2)

    def _create_roles(self, conn: Conn, *, superuser: bool) -> None:
        login, database = conn.execute(
            "SELECT quote_ident(session_user), quote_ident(current_database())"
        ).fetchone() or ("", "")
        with conn.transaction():
            for statement in bootstrap_sql(login, database):
                if statement.startswith("CREATE EXTENSION"):
                    continue  # _vector() handles it, with its own message
                if statement.startswith("CREATE ROLE"):
                    name = statement.split()[2]
                    exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (name,))
                    if exists.fetchone():
                        continue
                conn.execute(statement.encode())
        log.info("%s: created roles %s and %s for %s", self.display, OWNER_ROLE, APP_ROLE, login)

    def _vector(self, conn: Conn, *, superuser: bool, bypass: bool) -> ServerInfo:
        row = conn.execute(
            "SELECT extnamespace::regnamespace::text, extversion FROM pg_extension"
            " WHERE extname = 'vector'"
        ).fetchone()
        if row is None:
            try:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            except pg_errors.InsufficientPrivilege as exc:
                raise StoreError(
                    f"database {self.display}: the pgvector extension is not installed and this"
                    " login may not install it; as a superuser run: CREATE EXTENSION vector"
                ) from exc
            except pg_errors.FeatureNotSupported as exc:
                raise StoreError(
                    f"database {self.display}: PostgreSQL has no pgvector ({exc}); install"
                    " pgvector on the server (the vector column type is all the store uses)"
                ) from exc
            row = conn.execute(
                "SELECT extnamespace::regnamespace::text, extversion FROM pg_extension"
                " WHERE extname = 'vector'"
            ).fetchone()
        assert row is not None
        return ServerInfo(str(row[0]), str(row[1]), bypass)


def with_database(url: str, database: str) -> str:
    """``url`` pointing at another database on the same server."""
    info = conninfo_to_dict(url)
    info["dbname"] = database
    return make_conninfo(**info)  # type: ignore[arg-type]
