"""Choosing the store: SQLite unless ``SEENBEFORE_DATABASE_URL`` names a server database.

A server database is reached by two logins (docs/postgres.md): the service's
(``SEENBEFORE_DATABASE_URL``: ``serve``) and the maintenance login (``SEENBEFORE_DATABASE_ADMIN_URL``:
migrations and the CLI). Where only the first is given, the CLI uses it too, and a service
that logs in with a login able to ``SET ROLE`` to the owner is warned that its tiers are not
a boundary.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import SecretStr

from seenbefore.config import Settings
from seenbefore.errors import ConfigError
from seenbefore.extras import requires
from seenbefore.storage.outbox import OutboxRows
from seenbefore.storage.ports import Store
from seenbefore.storage.sqlite.outbox import SqliteOutboxRows
from seenbefore.storage.sqlite.store import SQLiteStore
from seenbefore.storage.sqlite.vectorcache import SqliteVectorCache
from seenbefore.storage.vectorcache import VectorCache

if TYPE_CHECKING:
    from seenbefore.storage.postgres.maintenance import Maintenance
    from seenbefore.storage.postgres.pool import Database, PgOptions
    from seenbefore.storage.postgres.store import PostgresStore

    def _both_are_stores(lite: SQLiteStore, pg: PostgresStore) -> tuple[Store, Store]:
        """mypy checks here that each adapter implements the whole Store protocol."""
        return lite, pg


log = logging.getLogger(__name__)


def _secret(value: SecretStr | None) -> str:
    return value.get_secret_value().strip() if value is not None else ""


def _options(settings: Settings, pool_max: int | None = None) -> PgOptions:
    from seenbefore.storage.postgres.pool import PgOptions

    return PgOptions(
        pool_max=pool_max or settings.database_pool_max,
        statement_timeout_s=settings.database_statement_timeout_s,
    )


def _postgres(url: str, settings: Settings) -> PostgresStore:
    with requires("postgres", "SEENBEFORE_DATABASE_URL=postgresql://... (the PostgreSQL store)"):
        from seenbefore.storage.postgres.store import PostgresStore
    return PostgresStore(
        url,
        options=_options(settings),
        tier_key=_secret(settings.database_tier_key) or None,
    )


# URL scheme -> opener. SQLite needs no URL: it is the default, at ``<home>/kb.sqlite``.
BACKENDS: dict[str, Callable[[str, Settings], PostgresStore]] = {
    "postgresql": _postgres,
    "postgres": _postgres,
}


def open_store(settings: Settings, *, maintenance: bool = False) -> Store:
    """The store the settings select: PostgreSQL for ``postgresql://...``, else SQLite. On
    PostgreSQL, ``maintenance`` (the CLI) logs in with SEENBEFORE_DATABASE_ADMIN_URL when set;
    otherwise (``serve``) with SEENBEFORE_DATABASE_URL."""
    url = _secret(settings.database_url)
    if not url:
        return SQLiteStore(settings.db_path)
    admin = _secret(settings.database_admin_url)
    if maintenance and admin:
        return open_url(admin, settings)
    store = open_url(url, settings)
    if not maintenance and store.server.maintenance:
        log.warning(
            "%s: the service logs in with a login that may SET ROLE to the schema's owner, so"
            " row-level security is no boundary for it; give the service a login that is only"
            " a member of seenbefore_app and a tier key (docs/postgres.md)",
            store.url,
        )
    return store


def open_url(url: str, settings: Settings | None = None) -> PostgresStore:
    """A server store for ``url``; ConfigError for a scheme no backend serves."""
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    opener = BACKENDS.get(scheme)
    if opener is None:
        raise ConfigError(
            f"database URL scheme is {scheme or '(none)'!r}; expected one of"
            f" {', '.join(s + '://' for s in BACKENDS)} (unset SEENBEFORE_DATABASE_URL for the"
            " embedded SQLite store)"
        )
    settings = settings or Settings()
    store = opener(url, settings)
    store.audit_key_text = _secret(settings.audit_key)  # security/audit_key.py: server_key
    return store


def open_maintenance(settings: Settings) -> Maintenance:
    """The maintenance login's handle on the server database (`seenbefore database`): the
    admin URL, else the one URL. ConfigError when no server database is configured."""
    url = _secret(settings.database_admin_url) or _secret(settings.database_url)
    if not url:
        raise ConfigError(
            "no server database is configured; set SEENBEFORE_DATABASE_ADMIN_URL (the"
            " maintenance login) or SEENBEFORE_DATABASE_URL to postgresql://..."
        )
    with requires("postgres", "the PostgreSQL store"):
        from seenbefore.storage.postgres.maintenance import Maintenance
    return Maintenance(url, _options(settings))


# -- the small stores beside the knowledge base: the notification outbox, the rate limiter's
# buckets, the embedding cache. On SQLite each is what it was (a file in the data directory,
# buckets in the process); on PostgreSQL each is a table every replica shares (migration 6).
# Opened from the settings here; those that go with an open store come from the store itself
# (``Store.outbox_rows``, ``Store.shared_buckets``: storage/ports.py's SideStores).

SIDE_POOL_MAX = 2  # connections of an outbox or cache opened on its own (not the store's pool)


def _server_database(settings: Settings) -> Database | None:
    """A small pool to the server database the settings select (the CLI's login: the
    maintenance one when given), or None on SQLite."""
    url = _secret(settings.database_url)
    if not url:
        return None
    url = _secret(settings.database_admin_url) or url
    with requires("postgres", "SEENBEFORE_DATABASE_URL=postgresql://... (the PostgreSQL store)"):
        from seenbefore.storage.postgres.pool import Database
    return Database(
        url, _options(settings, SIDE_POOL_MAX), tier_key=_secret(settings.database_tier_key) or None
    )


def outbox_file(path: Path, *, create: bool = True) -> OutboxRows:
    """The outbox rows in the SQLite file at ``path`` (``create``: make it when missing)."""
    return SqliteOutboxRows(path, create=create)


def open_outbox_rows(settings: Settings, path: Path) -> OutboxRows:
    """The outbox the settings select: the database's table on PostgreSQL (its own small pool,
    closed with the rows), else the file at ``path``."""
    db = _server_database(settings)
    if db is None:
        return outbox_file(path)
    from seenbefore.storage.postgres.outbox import PgOutboxRows

    return PgOutboxRows(db, owned=True)


def open_vector_cache(settings: Settings, path: Path) -> VectorCache:
    """The embedding cache the settings select: the database's table on PostgreSQL, else the
    SQLite file at ``path``."""
    db = _server_database(settings)
    if db is None:
        return vector_cache_file(path)
    from seenbefore.storage.postgres.vectorcache import PgVectorCache

    return PgVectorCache(db, owned=True)


def vector_cache_file(path: Path) -> VectorCache:
    return SqliteVectorCache(path)
