"""Tier keys: what lets a service login bind tiers (storage/postgres/schema.py, migration 5).

A key is ``sbk_`` + 32 random bytes (urlsafe base64); the database keeps its SHA-256 in
``tier_keys``, which only the owner reads or writes, with the tiers it grants (``None``: every
tier). The plaintext is shown once, when made, and travels to the database only as a bound
parameter of ``bind_tiers``. These statements run as the owner, so only a maintenance login
may make, list or revoke keys.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass

from seenbefore.errors import ConflictError, InputError, NotFoundError
from seenbefore.storage.postgres.pool import Conn
from seenbefore.storage.postgres.schema import TIER_KEYS

KEY_PREFIX = "sbk_"
KEY_BYTES = 32
MIN_SECRET_CHARS = 32  # a key given from outside (SEENBEFORE_DATABASE_TIER_KEY) needs this many
_SECRET = re.compile(r"^[A-Za-z0-9_-]+$")


@dataclass(frozen=True)
class TierKeyInfo:
    """What may be shown about a key: never the key, never its hash."""

    id: str
    name: str
    tiers: tuple[str, ...] | None  # None: every tier
    created_at: str
    revoked_at: str | None


def new_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(KEY_BYTES)


def check_key(plaintext: str, setting: str = "SEENBEFORE_DATABASE_TIER_KEY") -> str:
    """``plaintext`` if it is shaped like a tier key; InputError (without the value) if not."""
    secret = plaintext.removeprefix(KEY_PREFIX)
    if (
        not plaintext.startswith(KEY_PREFIX)
        or len(secret) < MIN_SECRET_CHARS
        or not _SECRET.match(secret)
    ):
        raise InputError(
            f"{setting} ({len(plaintext)} characters) is not a tier key: expected"
            f" '{KEY_PREFIX}' and at least {MIN_SECRET_CHARS} urlsafe characters; make one with"
            " `seenbefore database key --name NAME` (maintenance login)"
        )
    return plaintext


def _hash(plaintext: str) -> str:
    return hashlib.sha256(plaintext.encode("utf-8")).hexdigest()


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def register(
    conn: Conn, plaintext: str, name: str, tiers: Sequence[str] | None
) -> tuple[TierKeyInfo, bool]:
    """Register ``plaintext`` (idempotent: a registered key keeps its row); (its info, whether
    it was new). A revoked key stays revoked: ConflictError."""
    check_key(plaintext)
    clean = name.strip()
    if not clean or len(clean) > 100:
        raise InputError(f"key name is {name!r}; give a non-empty name of at most 100 characters")
    granted = None if tiers is None else list(tiers)
    row = conn.execute(
        f"INSERT INTO {TIER_KEYS} (id, name, key_hash, tiers, created_at)"
        " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (key_hash) DO NOTHING RETURNING id",
        ("key_" + secrets.token_hex(6), clean, _hash(plaintext), granted, _now()),
    ).fetchone()
    found = conn.execute(
        f"SELECT id, name, tiers, created_at, revoked_at FROM {TIER_KEYS} WHERE key_hash = %s",
        (_hash(plaintext),),
    ).fetchone()
    if found is None:  # inserted above, or there already: only a concurrent delete gets here
        raise ConflictError("the tier key vanished while it was registered; run it again")
    info = _info(found)
    if info.revoked_at is not None:
        raise ConflictError(
            f"tier key {info.id} ({info.name}) was revoked at {info.revoked_at}; make a new key"
            " instead of reusing it"
        )
    return info, row is not None


def listing(conn: Conn) -> list[TierKeyInfo]:
    rows = conn.execute(
        f"SELECT id, name, tiers, created_at, revoked_at FROM {TIER_KEYS} ORDER BY created_at, id"
    ).fetchall()
    return [_info(r) for r in rows]


def revoke(conn: Conn, key_id: str) -> None:
    """Revoke a key by id (idempotent): bindings with it fail from the next transaction on."""
    row = conn.execute(f"SELECT revoked_at FROM {TIER_KEYS} WHERE id = %s", (key_id,)).fetchone()
    if row is None:
        raise NotFoundError(
            f"no tier key with id {key_id!r}; `seenbefore database keys` shows the ids"
        )
    if row[0] is None:
        conn.execute(f"UPDATE {TIER_KEYS} SET revoked_at = %s WHERE id = %s", (_now(), key_id))


def _info(row: Sequence[object]) -> TierKeyInfo:
    tiers = row[2]
    return TierKeyInfo(
        id=str(row[0]),
        name=str(row[1]),
        tiers=None if tiers is None else tuple(str(t) for t in tiers),  # type: ignore[attr-defined]
        created_at=str(row[3]),
        revoked_at=None if row[4] is None else str(row[4]),
    )
