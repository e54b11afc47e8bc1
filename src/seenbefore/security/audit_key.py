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
between). A server store (PostgreSQL) has no file beside it: its key is made by ``seenbefore
audit key`` (which marks the chain keyed in the database's ``meta``, from the next record on, and
prints the key) and given to every replica as ``SEENBEFORE_AUDIT_KEY``; until then its chain is
SHA-256, tamper-evident only against someone who cannot also re-hash it (the database owner can,
with the append-only triggers switched off). SQLite in memory has no key.
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
    return parse(text, f"audit key {path}", path)


def parse(text: str, where: str, path: Path | None = None) -> AuditKey:
    """A key written as ``{"version": 1, "from_id": N, "key": "<64 hex>"}``; ConfigError naming
    ``where`` for anything else."""
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
            f"{where} is damaged ({str(exc)[:80]}); put back the copy you kept (the "
            "records it chained cannot be verified without it)"
        ) from None
    return AuditKey(secret, from_id, path)


def to_text(key: AuditKey) -> str:
    return json.dumps({"version": VERSION, "from_id": key.from_id, "key": key.secret.hex()})


def fingerprint(key: AuditKey) -> str:
    """What a server store's ``meta`` keeps of its key: enough to tell the right key from a
    wrong one, nothing to chain with."""
    return key.mac(b"seenbefore audit key fingerprint")[:16]


# -- a server store (PostgreSQL): the key comes from the settings (SEENBEFORE_AUDIT_KEY, the same
# JSON as the file, from a secret store every replica reads), and ``meta`` says the chain is
# keyed from which record and under which key (its fingerprint), so that a replica started
# without the key refuses to append unkeyed records instead of breaking the chain.
SETTING = "SEENBEFORE_AUDIT_KEY"
META_KEY = "audit_key"  # meta: {"from_id": N, "fingerprint": "..."}


def configured(store: Any) -> AuditKey | None:
    """The key a server store was opened with (``audit_key_text``), or None."""
    text = getattr(store, "audit_key_text", None)
    return None if not text else parse(text, SETTING)


def keyed_from(meta_value: str | None) -> tuple[int, str] | None:
    """(from_id, fingerprint) from a server store's meta value, or None when not keyed."""
    if meta_value is None:
        return None
    try:
        data = json.loads(meta_value)
        return int(data["from_id"]), str(data["fingerprint"])
    except (ValueError, TypeError, KeyError) as exc:
        raise ConfigError(
            f"the database's meta {META_KEY!r} is damaged ({str(exc)[:60]}): the audit chain's "
            "key record was edited; restore the database"
        ) from None


def marker(key: AuditKey) -> str:
    """The meta value that marks a server store's chain keyed under ``key``."""
    return json.dumps({"from_id": key.from_id, "fingerprint": fingerprint(key)})


def server_key(store: Any, meta_value: str | None) -> AuditKey | None:
    """The key a server store's records are chained under, checked against the mark in its
    meta (``meta_value``): None when the chain is not keyed; ConfigError when it is keyed and
    this process lacks the key or holds another one, or holds one for a chain never keyed."""
    key, marked = configured(store), keyed_from(meta_value)
    if marked is None:
        if key is not None:
            raise ConfigError(
                f"{SETTING} is set but this database's audit chain was never keyed: run "
                "`seenbefore audit key` (it keys the chain and prints the value to set) or unset it"
            )
        return None
    from_id, mark = marked
    if key is None:
        raise ConfigError(
            f"this database's audit chain is keyed from record {from_id}; give this process "
            f"the key in {SETTING} (the value `seenbefore audit key` printed): without it, it "
            "would break the chain"
        )
    if fingerprint(key) != mark or key.from_id != from_id:
        raise ConfigError(
            f"{SETTING} holds another key than the one this database's audit chain is keyed "
            f"with (from record {from_id}); set the value `seenbefore audit key` printed"
        )
    return key


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
