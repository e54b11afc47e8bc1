"""API tokens and roles.

A token is ``sb_`` + 32 random bytes (urlsafe base64). Only its SHA-256 is stored: the tokens carry
256 bits of entropy, so a fast hash is enough (a slow password hash defends low-entropy secrets);
the stored hash is compared in constant time. Each token has a role (``viewer`` < ``responder`` <
``reviewer`` < ``admin``) and the access tiers its holder may read.
"""

from __future__ import annotations

import datetime as dt
import getpass
import hashlib
import hmac
import json
import os
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass

from seenbefore.errors import AuthError, ConflictError, ForbiddenError, InputError, NotFoundError
from seenbefore.storage.sqlport import ServiceStore, SqlConn, SqlRow

ROLES: tuple[str, ...] = ("viewer", "responder", "reviewer", "admin")  # increasing power
TOKEN_PREFIX = "sb_"
TOKEN_BYTES = 32
MIN_SECRET_CHARS = (
    32  # a token given from outside (SEENBEFORE_ADMIN_TOKEN) needs this much after sb_
)
RESERVED_NAME_PREFIXES = ("local:", "service:")  # principals that hold no token
LAST_USED_RESOLUTION_S = 60  # last_used is written at most once a minute per token
_TIER = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")
_SECRET = re.compile(r"^[A-Za-z0-9_-]+$")


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _iso(when: dt.datetime) -> str:
    return when.isoformat(timespec="seconds")


def check_role(role: str) -> str:
    """``role`` normalised, or InputError naming the allowed roles."""
    value = role.strip().lower()
    if value not in ROLES:
        raise InputError(f"role is {role!r}, expected one of {', '.join(ROLES)}")
    return value


def check_tiers(tiers: Sequence[str] | str) -> tuple[str, ...]:
    """Tiers normalised (lower case, de-duplicated, order kept); at least one is required."""
    items = tiers.split(",") if isinstance(tiers, str) else list(tiers)
    out = tuple(dict.fromkeys(t.strip().lower() for t in items if t.strip()))
    if not out:
        raise InputError(
            "tiers are empty; give at least one access tier, e.g. --tiers general or "
            "--tiers general,restricted"
        )
    for tier in out:
        if not _TIER.match(tier):
            raise InputError(
                f"tier {tier!r} is not a tier name; use lower-case letters, digits, '.', '_' "
                "or '-' (at most 64), e.g. general"
            )
    return out


@dataclass(frozen=True)
class Principal:
    """Who is acting: a token holder, the local CLI user, or a service."""

    name: str  # e.g. "alice", "local:root" for CLI use, "service:alertmanager"
    role: str  # one of ROLES
    tiers: tuple[str, ...]  # access tiers this principal may read
    token_id: str | None = None  # None for CLI / service principals without a token

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise InputError(f"role is {self.role!r}, expected one of {', '.join(ROLES)}")

    def allows(self, role: str) -> bool:
        """True if this principal's role is at least ``role`` in ROLES order."""
        return ROLES.index(self.role) >= ROLES.index(check_role(role))

    def require(self, role: str, action: str = "this") -> None:
        """ForbiddenError unless :meth:`allows` ``role``."""
        if not self.allows(role):
            raise ForbiddenError(
                f"{self.name} has role {self.role}; {action} needs role {role} or higher; "
                "ask an admin for a token with that role"
            )


@dataclass(frozen=True)
class TokenInfo:
    """What may be shown about a token: never the token, never its hash."""

    id: str
    name: str
    role: str
    tiers: tuple[str, ...]
    created_at: str
    last_used_at: str | None
    revoked_at: str | None

    @property
    def active(self) -> bool:
        return self.revoked_at is None


def local_principal(tiers: Sequence[str]) -> Principal:
    """The person at the terminal: ``local:<user>``, role admin, with the tiers they asked for."""
    try:
        user = getpass.getuser()
    except (OSError, KeyError):  # no login name in some containers
        user = f"uid{os.getuid()}" if hasattr(os, "getuid") else "unknown"
    return Principal(name=f"local:{user}", role="admin", tiers=tuple(tiers))


def token_hash(plaintext: str) -> str:
    return hashlib.sha256(plaintext.encode("utf-8")).hexdigest()


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(TOKEN_BYTES)


class TokenStore:
    """API tokens in the store's ``api_tokens`` table (SQLite migration 3, PostgreSQL 2)."""

    def __init__(self, store: ServiceStore) -> None:
        self.store = store

    def create(self, name: str, role: str, tiers: Sequence[str]) -> tuple[str, Principal]:
        """A new token; the plaintext is returned here once and never stored."""
        plaintext = new_token()
        return plaintext, self._insert(plaintext, name, role, tiers)

    def ensure(self, plaintext: str, name: str, role: str, tiers: Sequence[str]) -> Principal:
        """Register a token chosen outside (e.g. SEENBEFORE_ADMIN_TOKEN); idempotent. An existing
        registration takes the given name, role and tiers; a revoked one stays revoked."""
        secret = plaintext.removeprefix(TOKEN_PREFIX)
        if (
            not plaintext.startswith(TOKEN_PREFIX)
            or len(secret) < MIN_SECRET_CHARS
            or not _SECRET.match(secret)
        ):
            raise InputError(
                f"the given token ({len(plaintext)} characters) is not a seenbefore token: "
                f"expected '{TOKEN_PREFIX}' and at least {MIN_SECRET_CHARS} urlsafe characters; "
                'generate one with python -c "import secrets; '
                "print('sb_' + secrets.token_urlsafe(32))\""
            )
        name, role, tier_list = _check_fields(name, role, tiers)
        with self.store.transaction() as conn:
            row = _by_hash(conn, plaintext)
            if row is None:
                inserted = self._insert_row(conn, plaintext, name, role, tier_list)
                if inserted is not None:
                    return inserted
                row = _by_hash(conn, plaintext)  # another replica registered it meanwhile
                if row is None:
                    raise ConflictError(
                        "the token could not be registered (its hash collided with a row that "
                        "then vanished); retry"
                    )
            if row["revoked_at"] is not None:
                raise ConflictError(
                    f"token {row['id']} ({row['name']}) was revoked at {row['revoked_at']}; "
                    "configure a new token instead of reusing it"
                )
            conn.execute(
                "UPDATE api_tokens SET name = ?, role = ?, tiers = ? WHERE id = ?",
                (name, role, json.dumps(list(tier_list)), row["id"]),
            )
            return Principal(name=name, role=role, tiers=tier_list, token_id=row["id"])

    def authenticate(self, plaintext: str) -> Principal:
        """The principal holding ``plaintext``; AuthError if unknown or revoked."""
        if not plaintext:
            raise AuthError("no token given; send 'Authorization: Bearer sb_...'")
        if not plaintext.startswith(TOKEN_PREFIX):
            raise AuthError(
                f"the token given does not start with '{TOKEN_PREFIX}'; use a token from "
                "`seenbefore token create`"
            )
        digest = token_hash(plaintext)
        rows = self.store.query("SELECT * FROM api_tokens WHERE token_hash = ?", (digest,))
        if not rows or not hmac.compare_digest(str(rows[0]["token_hash"]), digest):
            raise AuthError("unknown token; check it, or ask an admin for a new one")
        row = rows[0]
        if row["revoked_at"] is not None:
            raise AuthError(
                f"token {row['id']} was revoked at {row['revoked_at']}; ask an admin for a new one"
            )
        self._touch(row["id"], row["last_used_at"])
        return Principal(
            name=row["name"],
            role=row["role"],
            tiers=tuple(json.loads(row["tiers"])),
            token_id=row["id"],
        )

    def list(self) -> list[TokenInfo]:
        # creation order (PostgreSQL keeps none: by creation second, then id)
        order = self.store.sql.insertion_order("created_at, id")
        rows = self.store.query(
            "SELECT id, name, role, tiers, created_at, last_used_at, revoked_at FROM api_tokens"
            f" ORDER BY {order}"
        )
        return [
            TokenInfo(
                id=r["id"],
                name=r["name"],
                role=r["role"],
                tiers=tuple(json.loads(r["tiers"])),
                created_at=r["created_at"],
                last_used_at=r["last_used_at"],
                revoked_at=r["revoked_at"],
            )
            for r in rows
        ]

    def revoke(self, token_id: str) -> None:
        """Revoke a token by id (idempotent); NotFoundError if there is no such token."""
        with self.store.transaction() as conn:
            row = conn.execute(
                "SELECT revoked_at FROM api_tokens WHERE id = ?", (token_id,)
            ).fetchone()
            if row is None:
                raise NotFoundError(
                    f"no token with id {token_id!r}; `seenbefore token list` shows the ids"
                )
            if row["revoked_at"] is None:
                conn.execute(
                    "UPDATE api_tokens SET revoked_at = ? WHERE id = ?", (_iso(_now()), token_id)
                )

    def has_admin(self) -> bool:
        rows = self.store.query(
            "SELECT 1 FROM api_tokens WHERE role = 'admin' AND revoked_at IS NULL LIMIT 1"
        )
        return bool(rows)

    # -- internals --------------------------------------------------------------------------
    def _insert(self, plaintext: str, name: str, role: str, tiers: Sequence[str]) -> Principal:
        name, role, tier_list = _check_fields(name, role, tiers)
        with self.store.transaction() as conn:
            principal = self._insert_row(conn, plaintext, name, role, tier_list)
        if principal is None:  # 256 random bits equal to a stored token's: never in practice
            raise ConflictError("a token with the same hash exists; create the token again")
        return principal

    @staticmethod
    def _insert_row(
        conn: SqlConn, plaintext: str, name: str, role: str, tiers: tuple[str, ...]
    ) -> Principal | None:
        """The new token's principal; None when a token with this hash exists (another replica
        registering the same SEENBEFORE_ADMIN_TOKEN at the same moment)."""
        token_id = "tok_" + secrets.token_hex(6)
        cur = conn.execute(
            "INSERT INTO api_tokens (id, name, role, tiers, token_hash, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (token_hash) DO NOTHING",
            (token_id, name, role, json.dumps(list(tiers)), token_hash(plaintext), _iso(_now())),
        )
        if cur.rowcount != 1:
            return None
        return Principal(name=name, role=role, tiers=tiers, token_id=token_id)

    def _touch(self, token_id: str, last_used_at: str | None) -> None:
        now = _now()
        if last_used_at is not None:
            elapsed = (now - dt.datetime.fromisoformat(last_used_at)).total_seconds()
            if 0 <= elapsed < LAST_USED_RESOLUTION_S:
                return
        with self.store.transaction() as conn:
            conn.execute(
                "UPDATE api_tokens SET last_used_at = ? WHERE id = ?", (_iso(now), token_id)
            )


def _by_hash(conn: SqlConn, plaintext: str) -> SqlRow | None:
    row: SqlRow | None = conn.execute(
        "SELECT * FROM api_tokens WHERE token_hash = ?", (token_hash(plaintext),)
    ).fetchone()
    return row


def _check_fields(name: str, role: str, tiers: Sequence[str]) -> tuple[str, str, tuple[str, ...]]:
    clean = name.strip()
    if not clean or len(clean) > 100 or clean.startswith(RESERVED_NAME_PREFIXES):
        raise InputError(
            f"token name is {name!r}; give a non-empty name of at most 100 characters, not "
            f"starting with {' or '.join(RESERVED_NAME_PREFIXES)} (who or what holds the "
            "token), e.g. --name alice"
        )
    return clean, check_role(role), check_tiers(tiers)
