"""The audit chain's key: a secret kept beside the store, never inside it, so that a copy of the
store (a backup) carries records it cannot re-hash.

An unkeyed SHA-256 chain can be rewritten by anyone holding the file: edit a record, recompute
every hash after it, and ``audit verify`` says "intact" (issue 33: a backup edited so was
accepted by restore). Records from the key's ``from_id`` on are chained with
HMAC-SHA256 under the key instead; the records before it (written before the key existed) stay
SHA-256, so an existing store keeps verifying. The key lives in ``audit.key`` beside a SQLite
store's file (``SEENBEFORE_HOME/audit.key`` for the default store), written once, mode 0600,
as ``{"version": 1, "from_id": N, "key": "<64 hex>"}``; ``seenbefore backup`` copies the store
and not the key. Keep a copy of the key where you keep backups' secrets: a backup restored into
a home without the key that chained it is refused (its keyed records cannot be verified).

The key file is created by the first append that finds none, inside that append's serialized
transaction (so ``from_id`` is exactly the id being written, and no other writer appends
between). A store without a local file (PostgreSQL, SQLite in memory) has no key: its chain is
SHA-256 as before (PostgreSQL's backups are its own, and ``restore`` refuses there).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seenbefore.errors import ConfigError

KEY_FILE = "audit.key"
VERSION = 1


@dataclass(frozen=True, repr=False)
class AuditKey:
    secret: bytes
    from_id: int  # records with this id and later are keyed
    path: Path | None = None

    def __repr__(self) -> str:  # the secret never reaches a log or a traceback
        return f"AuditKey(from_id={self.from_id}, path={self.path})"

    def covers(self, record_id: int) -> bool:
        return record_id >= self.from_id

    def mac(self, message: bytes) -> str:
        return hmac.new(self.secret, message, hashlib.sha256).hexdigest()


def key_path(store: Any) -> Path | None:
    """Where the key of ``store`` lives: beside its local file; None without one."""
    local = getattr(store, "local_file", None)
    return Path(local).parent / KEY_FILE if local is not None else None


def load(path: Path | None) -> AuditKey | None:
    """The key at ``path``; None when there is none (or no path)."""
    if path is None:
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"audit key {path} cannot be read ({exc.strerror or exc})") from exc
    try:
        data = json.loads(text)
        if data.get("version") != VERSION:
            raise ValueError(f"version {data.get('version')!r}")
        secret = bytes.fromhex(data["key"])
        from_id = data["from_id"]
        if len(secret) < 32 or type(from_id) is not int or from_id < 1:
            raise ValueError("a key of 32 bytes and a whole from_id >= 1")
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise ConfigError(
            f"audit key {path} is damaged ({str(exc)[:80]}); put back the copy you kept (the "
            "records it chained cannot be verified without it)"
        ) from None
    return AuditKey(secret, from_id, path)


def load_or_create(path: Path, next_id: int) -> AuditKey:
    """The key at ``path``, made now (keying records from ``next_id`` on) if there is none.
    Call inside the append's serialized transaction."""
    found = load(path)
    if found is not None:
        return found
    secret = secrets.token_bytes(32)
    body = json.dumps({"version": VERSION, "from_id": next_id, "key": secret.hex()})
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process made it first
        return load(path) or AuditKey(secret, next_id, path)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(body + "\n")
        out.flush()
        os.fsync(out.fileno())
    return AuditKey(secret, next_id, path)
