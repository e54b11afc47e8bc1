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
from typing import TYPE_CHECKING

from pydantic import SecretStr

from seenbefore.config import Settings
from seenbefore.errors import ConfigError
from seenbefore.extras import requires
from seenbefore.storage.base import Store
from seenbefore.storage.sqlite.store import SQLiteStore

if TYPE_CHECKING:
    from seenbefore.storage.postgres.maintenance import Maintenance
    from seenbefore.storage.postgres.store import PostgresStore

    def _both_are_stores(lite: SQLiteStore, pg: PostgresStore) -> tuple[Store, Store]:
        """mypy checks here that each adapter implements the whole Store protocol."""
        return lite, pg


log = logging.getLogger(__name__)


def _secret(value: SecretStr | None) -> str:
    return value.get_secret_value().strip() if value is not None else ""


def _postgres(url: str, settings: Settings) -> PostgresStore:
    with requires("postgres", "SEENBEFORE_DATABASE_URL=postgresql://... (the PostgreSQL store)"):
        from seenbefore.storage.postgres.pool import PgOptions
        from seenbefore.storage.postgres.store import PostgresStore
    return PostgresStore(
        url,
        options=PgOptions(
            pool_max=settings.database_pool_max,
            statement_timeout_s=settings.database_statement_timeout_s,
        ),
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
    return opener(url, settings or Settings())


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
        from seenbefore.storage.postgres.pool import PgOptions
    return Maintenance(url, PgOptions(statement_timeout_s=settings.database_statement_timeout_s))
