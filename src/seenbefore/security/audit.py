"""The append-only, hash-chained audit log.

Each record's ``hash`` is ``sha256(prev_hash + canonical JSON of the record)`` (every field but
``hash``, keys sorted, no spaces), and ``prev_hash`` is the hash of the record before it (64 zeros
for the first). Triggers reject UPDATE and DELETE on ``audit_log`` (on PostgreSQL TRUNCATE too,
and the app role holds no UPDATE, DELETE or TRUNCATE privilege on it); the chain makes an edit or
a deletion made around them detectable, and the chain head kept in ``meta`` (written in the same
transaction) makes cutting records off the end detectable too. Someone who can rewrite the whole
store can rewrite the chain: copy :meth:`AuditLog.verify`'s head elsewhere to anchor it.

Appends are strictly ordered: SQLite's ``BEGIN IMMEDIATE`` admits one writer; on PostgreSQL each
append first takes a transaction-level advisory lock (``AUDIT_LOCK``), so service replicas
sharing the database extend one chain and never fork it.

The log keeps ids and hashes only. Query text is stored as an HMAC-SHA256 under a random salt
kept in the store (``blobs``), so equal queries can be correlated by someone holding the store
but the text cannot be read back; ``detail`` refuses free-text keys and long strings.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import math
import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from seenbefore.errors import InputError
from seenbefore.review.records import visible_sql as review_visible_sql
from seenbefore.security.tokens import Principal
from seenbefore.storage.pg_schema import APP_ROLE, AUDIT_LOCK
from seenbefore.storage.sqlport import ServiceStore, SqlConn, SqlRow, is_postgres, marks

GENESIS_HASH = "0" * 64
SALT_KEY = "audit.query_salt"
HEAD_KEY = "audit_head"  # meta: "<id>:<hash>" of the newest record
TRIGGERS = ("audit_log_no_update", "audit_log_no_delete")
PG_TRIGGERS = ("audit_log_append_only", "audit_log_no_truncate")  # pg_schema migrations 2, 3
PG_FORBIDDEN = ("UPDATE", "DELETE", "TRUNCATE")  # privileges the app role must not hold
MAX_READ = 10_000
MAX_FIELD_CHARS = 200  # strings in detail, session, draft_id, decision: ids and labels, not text
TEXT_KEYS = frozenset({"query", "text", "body", "note", "snippet", "content", "prompt", "summary"})
_ACTION = re.compile(r"^[a-z][a-z0-9_.:-]{0,63}$")
_PAGE = 1000


@dataclass(frozen=True)
class AuditRecord:
    id: int
    time: str  # UTC, ISO 8601
    actor: str
    session: str | None
    action: str
    query_hash: str | None  # HMAC-SHA256 of the whitespace-normalised query under the store's salt
    doc_ids: tuple[str, ...]  # documents returned / affected, in rank order
    tiers: tuple[str, ...]  # access tiers of those documents
    draft_id: str | None
    decision: str | None
    detail: Mapping[str, Any] = field(hash=False)
    prev_hash: str
    hash: str

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["doc_ids"] = list(self.doc_ids)
        data["tiers"] = list(self.tiers)
        data["detail"] = dict(self.detail)
        return data


@dataclass(frozen=True)
class AuditVerification:
    ok: bool
    checked: int  # records whose hash was recomputed
    first_bad_id: int | None
    reason: str
    head_hash: str | None = None  # the newest record's hash: anchor it outside the store

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def chain_hash(prev_hash: str, body: Mapping[str, Any]) -> str:
    """sha256 of the previous hash followed by the canonical JSON of the record's fields."""
    return hashlib.sha256((prev_hash + canonical_json(dict(body))).encode("utf-8")).hexdigest()


class AuditLog:
    """Append-only audit records in the store's ``audit_log`` table (SQLite migration 3,
    PostgreSQL migrations 2 and 3)."""

    def __init__(self, store: ServiceStore) -> None:
        self.store = store

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
        Principal's role, own tiers and token id go into ``detail['principal']``."""
        if not _ACTION.match(action):
            raise InputError(
                f"audit action is {action!r}; expected a lower-case name such as 'search' "
                "(letters, digits, '_', '.', ':', '-'; at most 64)"
            )
        extra: dict[str, Any] = dict(detail or {})
        if isinstance(actor, Principal):
            name = actor.name
            extra.setdefault(
                "principal",
                {"role": actor.role, "tiers": list(actor.tiers), "token_id": actor.token_id},
            )
        else:
            name = actor
        _check_detail(extra)
        fields: dict[str, Any] = {
            "actor": _short(name, "actor", required=True),
            "session": _short(session, "session"),
            "action": action,
            "doc_ids": [_short(d, "doc_ids item", required=True) for d in doc_ids],
            "tiers": sorted({_short(t, "tiers item", required=True) for t in tiers}),
            "draft_id": _short(draft_id, "draft_id"),
            "decision": _short(decision, "decision"),
            "detail": extra,
        }
        with self.store.transaction() as conn:
            if is_postgres(self.store):  # replicas append one at a time: one chain, no fork
                conn.execute("SELECT pg_advisory_xact_lock(?)", (AUDIT_LOCK,))
            fields["query_hash"] = None if query is None else _hmac(_salt(conn), query)
            last = conn.execute(
                "SELECT id, hash FROM audit_log ORDER BY id DESC LIMIT 1"
            ).fetchone()
            fields["id"] = int(last["id"]) + 1 if last else 1
            fields["prev_hash"] = str(last["hash"]) if last else GENESIS_HASH
            fields["time"] = dt.datetime.now(dt.UTC).isoformat(timespec="microseconds")
            digest = chain_hash(fields["prev_hash"], fields)
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
        return _record({**fields, "hash": digest})

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
        return [_record(_parse(r)) for r in rows]

    # -- verifying --------------------------------------------------------------------------
    def verify(self) -> AuditVerification:
        """Recompute the chain up to the head recorded in ``meta``; the first bad record wins."""
        head = self.store.get_meta(HEAD_KEY)  # read first: records appended later are not checked
        head_id, head_hash = _split_head(head)
        prev_id, prev_hash, checked = 0, GENESIS_HASH, 0
        while True:
            rows = self.store.query(
                "SELECT * FROM audit_log WHERE id > ? AND id <= ? ORDER BY id LIMIT ?",
                (prev_id, head_id, _PAGE),
            )
            for row in rows:
                bad = _check_row(row, prev_id, prev_hash)
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
        broken = self._guards_broken()
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

    def _guards_broken(self) -> str:
        """What is missing of the append-only guards ('' when all are in place)."""
        if not is_postgres(self.store):
            present = {r[0] for r in self.store.query("SELECT name FROM sqlite_master")}
            missing = [t for t in TRIGGERS if t not in present]
            return f"the append-only trigger(s) {', '.join(missing)} are missing" if missing else ""
        enabled = {
            str(r[0])
            for r in self.store.query(
                "SELECT tgname FROM pg_trigger WHERE tgrelid = 'audit_log'::regclass"
                " AND NOT tgisinternal AND tgenabled <> 'D'"
            )
        }
        missing = [t for t in PG_TRIGGERS if t not in enabled]
        if missing:
            return f"the append-only trigger(s) {', '.join(missing)} are missing or disabled"
        held = [
            p
            for p in PG_FORBIDDEN
            if self.store.query(
                "SELECT has_table_privilege(?::name, 'audit_log'::regclass, ?::text)",
                (APP_ROLE, p),
            )[0][0]
        ]
        if held:
            return f"the app role {APP_ROLE} may {', '.join(held)} audit_log rows"
        return ""


def visible_sql(store: ServiceStore, tiers: Sequence[str]) -> tuple[str, list[str]]:
    """Audit records a holder of ``tiers`` may read: every tier the record names (the tiers of
    the documents, search hits and reviews it mentions) is among ``tiers``, and a review it
    names by ``draft_id`` is, while it exists, one ``tiers`` may see (review/records.py's rule:
    its postmortem tier and every evidence tier held). A record is shown whole or not at all;
    nothing is redacted, so a shown record still verifies against its hash."""
    reviews, review_params = review_visible_sql(store, tiers, alias="r")
    review_clause = (
        "(audit_log.draft_id IS NULL OR NOT EXISTS (SELECT 1 FROM reviews r"
        f" WHERE r.id = audit_log.draft_id AND NOT ({reviews})))"
    )
    if is_postgres(store):
        return (
            f"audit_log.tiers::jsonb <@ ?::jsonb AND {review_clause}",
            [json.dumps(list(tiers)), *review_params],
        )
    held = marks(tiers)
    return (
        "NOT EXISTS (SELECT 1 FROM json_each(audit_log.tiers) j"
        f" WHERE j.value NOT IN ({held})) AND {review_clause}",
        [*tiers, *review_params],
    )


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


def _short(value: str | None, name: str, *, required: bool = False) -> str | None:
    if value is None:
        if required:
            raise InputError(f"audit {name} is missing; give a non-empty value")
        return None
    if not isinstance(value, str) or (required and not value) or len(value) > MAX_FIELD_CHARS:
        raise InputError(
            f"audit {name} is {str(value)[:40]!r} ({len(str(value))} characters); expected an id "
            f"or label of 1..{MAX_FIELD_CHARS} characters (the audit log keeps no text)"
        )
    return value


def _check_detail(value: Any, depth: int = 0) -> None:
    if depth > 4:
        raise InputError("audit detail nests deeper than 4 levels; flatten it")
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise InputError(f"audit detail key {key!r} is not a string; use string keys")
            if key.lower() in TEXT_KEYS:
                raise InputError(
                    f"audit detail key {key!r} would store free text; the audit log keeps ids "
                    "and hashes only: pass the query as query=, or store "
                    f"{{'{key}_hash': audit.hash_text(...)}}, or leave it out"
                )
            _check_detail(item, depth + 1)
    elif isinstance(value, list | tuple):
        for item in value:
            _check_detail(item, depth + 1)
    elif isinstance(value, str):
        _short(value, "detail value")
    elif isinstance(value, float) and not math.isfinite(value):
        raise InputError(f"audit detail value {value} is not a finite number")
    elif value is not None and not isinstance(value, bool | int | float):
        raise InputError(
            f"audit detail value of type {type(value).__name__} is not JSON; use str, number, "
            "bool, None, list or mapping"
        )


def _split_head(head: str | None) -> tuple[int, str | None]:
    if head is None:
        return 0, None
    number, _, digest = head.partition(":")
    return (int(number), digest) if number.isdigit() else (0, None)


def _parse(row: SqlRow) -> dict[str, Any]:
    data = dict(row)
    for key in ("doc_ids", "tiers", "detail"):
        data[key] = json.loads(data[key])
    return data


def _check_row(row: SqlRow, prev_id: int, prev_hash: str) -> tuple[int, str] | None:
    rid = int(row["id"])
    if rid != prev_id + 1:
        return rid, (
            f"record {rid} follows record {prev_id}: records {prev_id + 1}..{rid - 1} were deleted"
        )
    if row["prev_hash"] != prev_hash:
        return rid, f"record {rid}'s prev_hash does not match record {prev_id}'s hash"
    try:
        data = _parse(row)
    except (TypeError, ValueError) as exc:
        return rid, f"record {rid} holds unreadable JSON ({exc}): it was edited"
    stored = data.pop("hash")
    if chain_hash(prev_hash, data) != stored:
        return rid, f"record {rid}'s content does not match its hash: it was edited"
    return None


def _record(data: Mapping[str, Any]) -> AuditRecord:
    return AuditRecord(
        id=int(data["id"]),
        time=data["time"],
        actor=data["actor"],
        session=data["session"],
        action=data["action"],
        query_hash=data["query_hash"],
        doc_ids=tuple(data["doc_ids"]),
        tiers=tuple(data["tiers"]),
        draft_id=data["draft_id"],
        decision=data["decision"],
        detail=data["detail"],
        prev_hash=data["prev_hash"],
        hash=data["hash"],
    )
