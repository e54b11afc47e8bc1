"""The embedding cache in the PostgreSQL database (migration 6), keyed as the SQLite file is."""

from __future__ import annotations

from collections.abc import Sequence

from seenbefore.storage.postgres import tx as pg_tx
from seenbefore.storage.postgres.pool import Conn, Database


class PgVectorCache:
    def __init__(self, db: Database, *, owned: bool = False) -> None:
        self._db = db
        self._owned = owned
        self.location = f"the database {db.display}"

    def get(self, keys: Sequence[str]) -> dict[str, bytes]:
        if not keys:
            return {}
        wanted = list(keys)

        def read(conn: Conn) -> dict[str, bytes]:
            rows = conn.execute(
                "SELECT key, v FROM embedding_cache WHERE key = ANY (%s)", (wanted,)
            ).fetchall()
            return {str(k): bytes(v) for k, v in rows}

        return self._db.run(read, tiers=())

    def put(self, items: Sequence[tuple[str, bytes]]) -> None:
        if not items:
            return
        with pg_tx.transaction(self._db) as conn:  # one transaction for the batch
            conn.executemany(
                "INSERT INTO embedding_cache (key, v) VALUES (?, ?)"
                " ON CONFLICT (key) DO UPDATE SET v = excluded.v",
                list(items),
            )

    def close(self) -> None:
        if self._owned:
            self._db.close()
