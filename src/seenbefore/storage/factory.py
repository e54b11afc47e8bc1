"""Choosing the store: SQLite unless ``SEENBEFORE_DATABASE_URL`` names a server database."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from seenbefore.config import Settings
from seenbefore.errors import ConfigError
from seenbefore.extras import requires
from seenbefore.storage.base import Store
from seenbefore.storage.sqlite.store import SQLiteStore

if TYPE_CHECKING:
    from seenbefore.storage.postgres.store import PostgresStore

    def _both_are_stores(lite: SQLiteStore, pg: PostgresStore) -> tuple[Store, Store]:
        """mypy checks here that each adapter implements the whole Store protocol."""
        return lite, pg


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
    )


# URL scheme -> opener. SQLite needs no URL: it is the default, at ``<home>/kb.sqlite``.
BACKENDS: dict[str, Callable[[str, Settings], PostgresStore]] = {
    "postgresql": _postgres,
    "postgres": _postgres,
}


def open_store(settings: Settings) -> Store:
    """The store the settings select: PostgreSQL for ``postgresql://...``, else SQLite."""
    url = settings.database_url.get_secret_value().strip() if settings.database_url else ""
    if not url:
        return SQLiteStore(settings.db_path)
    return open_url(url, settings)


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
