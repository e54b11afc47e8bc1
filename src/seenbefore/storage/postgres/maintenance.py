"""What `seenbefore database` does, on a maintenance login: migrate, set up the review
checkpoint tables, make and revoke tier keys, and say which logins are boundaries."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from seenbefore.errors import StoreError
from seenbefore.storage.postgres import keys
from seenbefore.storage.postgres.checkpoint import setup_checkpoints
from seenbefore.storage.postgres.pool import Conn, Database, PgOptions
from seenbefore.storage.postgres.schema import APP_ROLE, MIGRATIONS, OWNER_ROLE


@dataclass(frozen=True)
class Login:
    """A login that holds the app role's privileges, and whether it is a boundary."""

    name: str
    owner: bool  # may SET ROLE to the owner: migrates, binds any tier, not a boundary
    superuser: bool
    bypass_rls: bool

    @property
    def boundary(self) -> bool:
        return not (self.owner or self.superuser or self.bypass_rls)


class Maintenance:
    """A maintenance login's handle on the database (migrated when opened)."""

    def __init__(self, url: str, options: PgOptions | None = None) -> None:
        self._db = Database(url, options)
        if not self._db.info.maintenance:
            self._db.close()
            raise StoreError(
                f"database {self._db.display}: the login is a service login (not a member of"
                f" {OWNER_ROLE}); `seenbefore database` needs the maintenance login: set"
                " SEENBEFORE_DATABASE_ADMIN_URL"
            )
        self.display = self._db.display

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Maintenance:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def schema_version(self) -> int:
        return len(MIGRATIONS)  # opening migrated it

    def setup_checkpoints(self) -> None:
        setup_checkpoints(self._db.url)

    def make_key(
        self, name: str, tiers: Sequence[str] | None, plaintext: str | None = None
    ) -> tuple[str, keys.TierKeyInfo, bool]:
        """(the key, its info, whether it is new): ``plaintext`` registered, or a new key."""
        key = plaintext or keys.new_key()
        info, new = self._db.run(
            lambda c: keys.register(c, key, name, tiers), tiers=(), write=True, owner=True
        )
        return key, info, new

    def tier_keys(self) -> list[keys.TierKeyInfo]:
        return self._db.run(keys.listing, tiers=(), owner=True)

    def revoke_key(self, key_id: str) -> None:
        self._db.run(lambda c: keys.revoke(c, key_id), tiers=(), write=True, owner=True)

    def logins(self) -> list[Login]:
        """Every login holding the app role's privileges (superusers included)."""

        def read(conn: Conn) -> list[Login]:
            rows = conn.execute(
                "SELECT r.rolname, pg_has_role(r.oid, %s, 'SET'), r.rolsuper, r.rolbypassrls"
                " FROM pg_roles r WHERE r.rolcanlogin AND pg_has_role(r.oid, %s, 'USAGE')"
                " ORDER BY r.rolname",
                (OWNER_ROLE, APP_ROLE),
            ).fetchall()
            return [Login(str(r[0]), bool(r[1]), bool(r[2]), bool(r[3])) for r in rows]

        return self._db.run(read, tiers=())
