"""The append-only, hash-chained audit log.

Each record's ``hash`` is ``sha256(prev_hash + canonical JSON of the record)`` (every field but
``hash``, keys sorted, no spaces), and ``prev_hash`` is the hash of the record before it (64 zeros
for the first). From the first record written with an audit key beside the store (a SQLite
store's ``audit.key``, security/audit_key.py) the hash is an HMAC-SHA256 under that key instead:
whoever holds only the store (a backup) cannot re-hash an edited record. Triggers reject UPDATE
and DELETE on ``audit_log`` (on PostgreSQL TRUNCATE too, and the app role holds no UPDATE,
DELETE or TRUNCATE privilege on it); the chain makes an edit or a deletion made around them
detectable, and the chain head kept in ``meta`` (written in the same transaction) makes cutting
records off the end detectable too. Someone who can rewrite the whole store and holds the key
(or, on PostgreSQL, where the chain is unkeyed, the store alone) can rewrite the chain: copy
:meth:`AuditLog.verify`'s head elsewhere to anchor it.

Appends are strictly ordered (``store.sql.serialize``, storage/dialect.py): SQLite's ``BEGIN
IMMEDIATE`` admits one writer; on PostgreSQL each append first takes a transaction-level advisory
lock, so service replicas sharing the database extend one chain and never fork it. The chain
itself (records, canonical JSON, the row check) is in audit_chain.py; what a record may hold
(ids and labels, no text) in audit_fields.py.

The log keeps ids and hashes only. Query text is stored as an HMAC-SHA256 under a random salt
kept in the store (``blobs``), so equal queries can be correlated by someone holding the store
but the text cannot be read back; ``detail`` refuses free-text keys and long strings.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import secrets
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from seenbefore.errors import ConfigError, ConflictError, InputError
from seenbefore.security import audit_key
from seenbefore.security.audit_chain import (
    GENESIS_HASH,
    AuditRecord,
    AuditVerification,
    canonical_json,
    chain_hash,
    check_row,
    parse_row,
    split_head,
    to_record,
)
from seenbefore.security.audit_fields import check_action, check_detail, short
from seenbefore.security.audit_key import AuditKey
from seenbefore.security.tokens import Principal
from seenbefore.security.visibility import review_visible_sql
from seenbefore.storage.ports import AuditStore
from seenbefore.storage.sqlport import ServiceStore, SqlConn

__all__ = [
    "GENESIS_HASH",
    "AuditLog",
    "AuditRecord",
    "AuditVerification",
    "canonical_json",
    "chain_hash",
    "visible_sql",
]

SALT_KEY = "audit.query_salt"
HEAD_KEY = "audit_head"  # meta: "<id>:<hash>" of the newest record
MAX_READ = 10_000
_PAGE = 1000


class AuditLog:
    """Append-only audit records in the store's ``audit_log`` table (SQLite migration 3,
    PostgreSQL migrations 2 and 3). ``key``: the store's own audit key (made by the first
    append that finds none; security/audit_key.py), or a given one (a staged copy is verified
    under the live store's key), or None for an unkeyed chain."""

    def __init__(self, store: AuditStore, *, key: AuditKey | Literal["store"] | None = "store"):
        self.store = store
        self._key = key

    def key(self) -> AuditKey | None:
        """The key records are chained under (None: unkeyed)."""
        if self._key != "store":
            return self._key
        path = audit_key.key_path(self.store)
        if path is not None:
            return audit_key.load(path)
        return audit_key.server_key(self.store, self.store.get_meta(audit_key.META_KEY))

    def _key_for(self, conn: SqlConn, next_id: int) -> AuditKey | None:
        if self._key != "store":
            return self._key
        path = audit_key.key_path(self.store)
        if path is not None:
            return audit_key.load_or_create(path, next_id)
        return audit_key.server_key(self.store, _server_mark(conn))

    def key_server_chain(self) -> AuditKey:
        """Key a server store's chain from its next record on (``seenbefore audit key``): a new
        key, marked in the database's meta in the chain's own serialized transaction, returned
        for the operator to give every replica. Refused on a store with a key file (SQLite
        keys itself) and on a chain already keyed."""
        if audit_key.key_path(self.store) is not None:
            raise ConfigError(
                "this store keeps its audit key in a file beside it (audit.key), made by its "
                "first record: there is nothing to key"
            )
        with self.store.transaction() as conn:
            self.store.sql.serialize(conn, "audit_log")
            marked = audit_key.keyed_from(_server_mark(conn))
            if marked is not None:
                raise ConflictError(
                    f"this database's audit chain is already keyed (from record {marked[0]}); "
                    "its key is the one you were given then"
                )
            last = conn.execute("SELECT max(id) FROM audit_log").fetchone()
            next_id = int(last[0]) + 1 if last is not None and last[0] is not None else 1
            key = audit_key.AuditKey(secrets.token_bytes(32), next_id)
            conn.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?)",
                (audit_key.META_KEY, audit_key.marker(key)),
            )
        return key

    # -- writing ----------------------------------------------------------------------------
    def record(
        self,
        actor: Principal | str,
        action: str,
        *,
        session: str | None = None,
        query: str | None = None,
        doc_ids: Sequence[str] = (),
        tiers: Sequence[str] = (),
        draft_id: str | None = None,
        decision: str | None = None,
        detail: Mapping[str, Any] | None = None,
    ) -> AuditRecord:
        """Append one record. ``tiers`` are the access tiers of the documents in ``doc_ids``; a
        Principal's role, own tiers and token id go into ``detail['principal']``. The record's
        ``tiers`` are every tier it names — those, the actor's own and a token's tiers in
        ``detail['token_tiers']`` — so a reader who does not hold one of them never sees the
        record, nor learns from it which tier names exist."""
        check_action(action)
        extra: dict[str, Any] = dict(detail or {})
        named = {*tiers, *(str(t) for t in extra.get("token_tiers") or ())}
        if isinstance(actor, Principal):
            name = actor.name
            named |= set(actor.tiers)
            extra.setdefault(
                "principal",
                {"role": actor.role, "tiers": list(actor.tiers), "token_id": actor.token_id},
            )
        else:
            name = actor
        check_detail(extra)
        fields: dict[str, Any] = {
            "actor": short(name, "actor", required=True),
            "session": short(session, "session"),
            "action": action,
            "doc_ids": [short(d, "doc_ids item", required=True) for d in doc_ids],
            "tiers": sorted({short(t, "tiers item", required=True) for t in named}),
            "draft_id": short(draft_id, "draft_id"),
            "decision": short(decision, "decision"),
            "detail": extra,
        }
        with self.store.transaction() as conn:
            self.store.sql.serialize(conn, "audit_log")  # one chain across replicas, no fork
            fields["query_hash"] = None if query is None else _hmac(_salt(conn), query)
            last = conn.execute(
                "SELECT id, hash FROM audit_log ORDER BY id DESC LIMIT 1"
            ).fetchone()
            fields["id"] = int(last["id"]) + 1 if last else 1
            fields["prev_hash"] = str(last["hash"]) if last else GENESIS_HASH
            fields["time"] = dt.datetime.now(dt.UTC).isoformat(timespec="microseconds")
            digest = chain_hash(fields["prev_hash"], fields, self._key_for(conn, fields["id"]))
            conn.execute(
                "INSERT INTO audit_log (id, time, actor, session, action, query_hash, doc_ids,"
                " tiers, draft_id, decision, detail, prev_hash, hash)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    fields["id"],
                    fields["time"],
                    fields["actor"],
                    fields["session"],
                    action,
                    fields["query_hash"],
                    canonical_json(fields["doc_ids"]),
                    canonical_json(fields["tiers"]),
                    fields["draft_id"],
                    fields["decision"],
                    canonical_json(extra),
                    fields["prev_hash"],
                    digest,
                ),
            )
            conn.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (HEAD_KEY, f"{fields['id']}:{digest}"),
            )
        return to_record({**fields, "hash": digest})

    def hash_text(self, text: str) -> str:
        """The salted hash the log stores for ``text`` (to find records of a known query, or to
        put a note's hash into ``detail``)."""
        with self.store.transaction() as conn:
            return _hmac(_salt(conn), text)

    # -- reading ----------------------------------------------------------------------------
    def read(
        self,
        *,
        limit: int = 100,
        action: str | None = None,
        actor: str | None = None,
        since_id: int | None = None,
        tiers: Sequence[str] | None = None,
    ) -> list[AuditRecord]:
        """Records in id order: the newest ``limit`` of them, or with ``since_id`` the first
        ``limit`` after that id (to page or tail). With ``tiers`` (the API's caller), only the
        records :func:`visible_sql` lets a holder of those tiers see; None: every record."""
        if not 1 <= limit <= MAX_READ:
            raise InputError(f"limit is {limit}, expected 1..{MAX_READ}")
        where, params = ["1 = 1"], []
        if tiers is not None:
            clause, held = visible_sql(self.store, tiers)
            where.append(clause)
            params.extend(held)
        if action is not None:
            where.append("action = ?")
            params.append(action)
        if actor is not None:
            where.append("actor = ?")
            params.append(actor)
        clause = " AND ".join(where)
        if since_id is not None:
            rows = self.store.query(
                f"SELECT * FROM audit_log WHERE {clause} AND id > ? ORDER BY id LIMIT ?",
                (*params, since_id, limit),
            )
        else:
            rows = self.store.query(
                f"SELECT * FROM audit_log WHERE {clause} ORDER BY id DESC LIMIT ?",
                (*params, limit),
            )[::-1]
        return [to_record(parse_row(r)) for r in rows]

    # -- verifying --------------------------------------------------------------------------
    def verify(self) -> AuditVerification:
        """Recompute the chain up to the head recorded in ``meta``; the first bad record wins."""
        head = self.store.get_meta(HEAD_KEY)  # read first: records appended later are not checked
        head_id, head_hash = split_head(head)
        key = self.key()
        prev_id, prev_hash, checked = 0, GENESIS_HASH, 0
        while True:
            rows = self.store.query(
                "SELECT * FROM audit_log WHERE id > ? AND id <= ? ORDER BY id LIMIT ?",
                (prev_id, head_id, _PAGE),
            )
            for row in rows:
                bad = check_row(row, prev_id, prev_hash, key)
                if bad is not None:
                    return AuditVerification(False, checked, bad[0], bad[1])
                checked += 1
                prev_id, prev_hash = int(row["id"]), str(row["hash"])
            if len(rows) < _PAGE:
                break
        if head is None:
            later = self.store.query("SELECT min(id) FROM audit_log")[0][0]
            if later is not None:
                return AuditVerification(
                    False, 0, int(later), "the chain head in meta is missing: the log was altered"
                )
        elif prev_id != head_id:
            return AuditVerification(
                False,
                checked,
                prev_id + 1,
                f"record {prev_id + 1} is missing: the chain head says the log ends at record "
                f"{head_id} but it ends at {prev_id} (records were deleted)",
            )
        elif prev_hash != head_hash:
            return AuditVerification(
                False, checked, head_id, f"record {head_id} does not match the chain head in meta"
            )
        broken = self.store.audit_guards_missing()
        if broken:
            return AuditVerification(
                False,
                checked,
                None,
                f"the chain is intact but {broken}: someone removed the append-only guards; "
                "restore the store from a backup",
                prev_hash if checked else None,
            )
        return AuditVerification(
            True,
            checked,
            None,
            f"intact: {checked} records, chain head matches",
            prev_hash if checked else None,
        )


def visible_sql(store: ServiceStore, tiers: Sequence[str]) -> tuple[str, list[Any]]:
    """Audit records a holder of ``tiers`` may read: every tier the record names (the tiers of
    the documents, search hits and reviews it mentions) is among ``tiers``, and a review it
    names by ``draft_id`` is, while it exists, one ``tiers`` may see (security/visibility.py's rule:
    its postmortem tier and every evidence tier held). A record is shown whole or not at all;
    nothing is redacted, so a shown record still verifies against its hash."""
    reviews, review_params = review_visible_sql(store, tiers, alias="r")
    review_clause = (
        "(audit_log.draft_id IS NULL OR NOT EXISTS (SELECT 1 FROM reviews r"
        f" WHERE r.id = audit_log.draft_id AND NOT ({reviews})))"
    )
    within, held = store.sql.json_within("audit_log.tiers", tiers)
    return f"{within} AND {review_clause}", [*held, *review_params]


def _server_mark(conn: SqlConn) -> str | None:
    """The mark in a server store's meta that its chain is keyed (audit_key.marker), if any."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (audit_key.META_KEY,)).fetchone()
    return None if row is None else str(row[0])


def _salt(conn: SqlConn) -> bytes:
    """The store's query salt, created on first use inside the caller's transaction."""
    conn.execute(
        "INSERT INTO blobs (key, value, updated_at) VALUES (?, ?, ?) ON CONFLICT (key) DO NOTHING",
        (SALT_KEY, secrets.token_bytes(32), dt.datetime.now(dt.UTC).isoformat(timespec="seconds")),
    )
    row = conn.execute("SELECT value FROM blobs WHERE key = ?", (SALT_KEY,)).fetchone()
    return bytes(row[0])


def _hmac(salt: bytes, text: str) -> str:
    normalised = " ".join(text.split())
    return hmac.new(salt, normalised.encode("utf-8"), hashlib.sha256).hexdigest()
