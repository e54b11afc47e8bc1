"""Storage: the Store protocol and its embedded SQLite implementation."""

from seenbefore.storage.base import Store, StoreStats
from seenbefore.storage.sqlite import SQLiteStore

__all__ = ["SQLiteStore", "Store", "StoreStats"]
