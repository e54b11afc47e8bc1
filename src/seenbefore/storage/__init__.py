"""Storage: the Store protocol (base.py) and its adapters: the embedded SQLite store (sqlite.py,
the default) and the PostgreSQL server store (postgres.py, the ``postgres`` extra)."""

from seenbefore.storage.base import StoreStats
from seenbefore.storage.ports import Store
from seenbefore.storage.sqlite.store import SQLiteStore

__all__ = ["SQLiteStore", "Store", "StoreStats"]
