"""What a restore keeps of the live store's history (issue 33): its audit log, its tokens'
revocations and its web sessions, whatever the backup holds.

A restore replaces the knowledge (documents, chunks, vectors, reviews, calibration); it used to
replace the history too: ``token revoke; restore older-backup`` brought the revoked token back,
erased every audit record written after the backup, recorded nothing, and ``audit verify``
still said intact. A backup whose audit log was edited and re-hashed, or which carried an extra
admin token, was accepted. Now, on the staged copy, before anything is replaced:

- :func:`check` -- the copy's audit chain verifies under the **live** store's audit key (the key
  is never in a backup: security/audit_key.py), and it agrees record for record with the live
  chain wherever both have a record (one is a prefix of the other); every token in the copy is
  the live store's (same id, same hash), or was issued in the chain that will be kept (a
  ``token.create`` or ``token.ensure`` record naming it: the disaster case, a live store
  younger than the backup). Anything else refuses the restore, naming it.
- :func:`carry` -- the copy takes the longer chain (the live records after the backup's last
  are appended to it, with the chain head), the live tokens (with the backup's own only where
  the chain issued them) with every token the chain revoked revoked, and the live store's web
  sessions, session secret and audit query salt.

The CLI then audits the restore itself on the restored store (``store.restore``), so the chain
after a restore is the live one plus that record: never shorter. Storage checks that the live
chain did not move while the copy was prepared (storage/sqlite/restore.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from seenbefore.errors import StoreError
from seenbefore.security.audit import HEAD_KEY, SALT_KEY, AuditLog
from seenbefore.storage.ports import AuditStore

REFUSED = "restore refused, the live store is unchanged"
ISSUED = ("token.create", "token.ensure")
_PAGE = 1000
KEPT_BLOBS = (SALT_KEY, "web.session_secret")  # and every web.session.<sid> row
SESSION_ROWS = "web.session."


def check(live: AuditStore, copy: AuditStore, source: Path) -> None:
    """Refuse (StoreError) a copy whose chain or tokens the live store does not vouch for."""
    key = AuditLog(live).key()
    result = AuditLog(copy, key=key).verify()
    if not result.ok:
        where = f"record {result.first_bad_id}: " if result.first_bad_id is not None else ""
        raise _refused(
            source,
            f"has an audit chain that does not verify under this home's audit key ({where}"
            f"{result.reason})",
            "a restore must carry an intact audit log chained by this home",
        )
    for ours, theirs in _pairs(live, copy):
        if ours != theirs:
            raise _refused(
                source,
                f"has audit record {theirs['id']} differing from the live store's record "
                f"{ours['id']} ({_differs(ours, theirs)})",
                "a backup's audit log must be the live log as it was then (edited, or from "
                "another store); to restore another store's backup, move this kb.sqlite aside "
                "first",
            )
    live_tokens = {r["id"]: r for r in _tokens(live)}
    issued = _issued(live, copy)
    for token in _tokens(copy):
        found = live_tokens.get(token["id"])
        if found is not None and found["token_hash"] != token["token_hash"]:
            raise _refused(
                source,
                f"holds token {token['id']} with a hash the live store's token of that id does "
                "not have",
                "a backup's tokens must be the ones this store issued",
            )
        if found is None and token["id"] not in issued:
            raise _refused(
                source,
                f"holds token {token['id']} ({token['name']}, role {token['role']}) that this "
                "store never issued (no token.create in its audit log)",
                "a backup's tokens must be the ones this store issued; create tokens with "
                "`seenbefore token create` after restoring",
            )


def carry(live: AuditStore, copy: AuditStore) -> dict[str, int]:
    """Write the live history into the copy (module docstring); what was carried."""
    copied = 0
    last = _last_id(copy)
    with copy.transaction() as conn:
        for row in _rows(live, after=last):
            columns = list(row)
            conn.execute(
                f"INSERT INTO audit_log ({', '.join(columns)}) VALUES "
                f"({', '.join('?' * len(columns))})",
                [row[c] for c in columns],
            )
            copied += 1
        if copied:
            conn.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (HEAD_KEY, live.get_meta(HEAD_KEY)),
            )
    kept = {r["id"]: r for r in _tokens(live)}
    for token in _tokens(copy):
        kept.setdefault(token["id"], token)  # issued in the kept chain (check said so)
    revoked = _revoked(copy)  # the copy now holds the longer chain
    with copy.transaction() as conn:
        conn.execute("DELETE FROM api_tokens")
        for token in kept.values():
            row = dict(token)
            if token["id"] in revoked and not row.get("revoked_at"):
                row["revoked_at"] = revoked[token["id"]]
            columns = list(row)
            conn.execute(
                f"INSERT INTO api_tokens ({', '.join(columns)}) VALUES "
                f"({', '.join('?' * len(columns))})",
                [row[c] for c in columns],
            )
        conn.execute(
            f"DELETE FROM blobs WHERE key IN ({', '.join('?' * len(KEPT_BLOBS))}) OR key LIKE ?",
            (*KEPT_BLOBS, SESSION_ROWS + "%"),
        )
        blobs = live.query(
            f"SELECT key, value, updated_at FROM blobs WHERE key IN "
            f"({', '.join('?' * len(KEPT_BLOBS))}) OR key LIKE ?",
            (*KEPT_BLOBS, SESSION_ROWS + "%"),
        )
        for blob in blobs:
            conn.execute(
                "INSERT INTO blobs (key, value, updated_at) VALUES (?, ?, ?)",
                (blob["key"], blob["value"], blob["updated_at"]),
            )
    return {"audit_records": copied, "tokens": len(kept), "revoked": len(revoked)}


# -- reading both chains ---------------------------------------------------------------------
def _rows(store: AuditStore, *, after: int = 0) -> Iterator[dict[str, Any]]:
    while True:
        rows = store.query(
            "SELECT * FROM audit_log WHERE id > ? ORDER BY id LIMIT ?", (after, _PAGE)
        )
        for row in rows:
            yield dict(row)
        if len(rows) < _PAGE:
            return
        after = int(rows[-1]["id"])


def _pairs(live: AuditStore, copy: AuditStore) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """(live record, copy record) for every id both hold, in id order."""
    yield from zip(_rows(live), _rows(copy), strict=False)


def _last_id(store: AuditStore) -> int:
    found = store.query("SELECT max(id) FROM audit_log")[0][0]
    return int(found) if found is not None else 0


def _differs(ours: dict[str, Any], theirs: dict[str, Any]) -> str:
    fields = [k for k in ours if ours.get(k) != theirs.get(k)]
    return f"{', '.join(fields[:4])} differ"


def _tokens(store: AuditStore) -> list[dict[str, Any]]:
    return [dict(r) for r in store.query("SELECT * FROM api_tokens ORDER BY id")]


def _issued(live: AuditStore, copy: AuditStore) -> set[str]:
    """Token ids a token.create or token.ensure record names, in either chain (they agree where
    both hold records, and the longer one is kept)."""
    found: set[str] = set()
    for store in (live, copy):
        found |= set(_named(store, ISSUED))
    return found


def _revoked(store: AuditStore) -> dict[str, str]:
    """Token id -> time of the token.revoke record naming it."""
    return _named(store, ("token.revoke",))


def _named(store: AuditStore, actions: tuple[str, ...]) -> dict[str, str]:
    rows = store.query(
        f"SELECT time, detail FROM audit_log WHERE action IN ({', '.join('?' * len(actions))})"
        " ORDER BY id",
        actions,
    )
    named: dict[str, str] = {}
    for row in rows:
        token_id = json.loads(row["detail"]).get("token_id")
        if isinstance(token_id, str):
            named.setdefault(token_id, str(row["time"]))
    return named


def _refused(source: Path, what: str, rule: str) -> StoreError:
    return StoreError(f"{REFUSED}: backup {source} {what}; {rule}")
