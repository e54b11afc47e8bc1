"""The audit log's hash chain: the record type, the canonical JSON every hash is taken over,
and the check of one stored row against the record before it (security/audit.py writes and
verifies the chain). A record the store's audit key covers (security/audit_key.py) is chained
by HMAC-SHA256 under it, every other by SHA-256."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from seenbefore.security.audit_key import AuditKey
from seenbefore.storage.sqlport import SqlRow

GENESIS_HASH = "0" * 64


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


def chain_hash(prev_hash: str, body: Mapping[str, Any], key: AuditKey | None = None) -> str:
    """sha256 of the previous hash followed by the canonical JSON of the record's fields; an
    HMAC-SHA256 under ``key`` instead when the key covers the record's id."""
    message = (prev_hash + canonical_json(dict(body))).encode("utf-8")
    if key is not None and key.covers(int(body["id"])):
        return key.mac(message)
    return hashlib.sha256(message).hexdigest()


def split_head(head: str | None) -> tuple[int, str | None]:
    if head is None:
        return 0, None
    number, _, digest = head.partition(":")
    return (int(number), digest) if number.isdigit() else (0, None)


def parse_row(row: SqlRow) -> dict[str, Any]:
    data = dict(row)
    for key in ("doc_ids", "tiers", "detail"):
        data[key] = json.loads(data[key])
    return data


def check_row(
    row: SqlRow, prev_id: int, prev_hash: str, key: AuditKey | None = None
) -> tuple[int, str] | None:
    rid = int(row["id"])
    if rid != prev_id + 1:
        return rid, (
            f"record {rid} follows record {prev_id}: records {prev_id + 1}..{rid - 1} were deleted"
        )
    if row["prev_hash"] != prev_hash:
        return rid, f"record {rid}'s prev_hash does not match record {prev_id}'s hash"
    try:
        data = parse_row(row)
    except (TypeError, ValueError) as exc:
        return rid, f"record {rid} holds unreadable JSON ({exc}): it was edited"
    stored = data.pop("hash")
    if chain_hash(prev_hash, data, key) != stored:
        keyed = key is not None and key.covers(rid)
        return rid, f"record {rid}'s content does not match its hash: it was edited" + (
            f" (or re-hashed without the audit key {key.path})"
            if keyed and key is not None
            else " (or it was chained under an audit key this home does not hold: an audit.key "
            "beside the store it came from)"
        )
    return None


def to_record(data: Mapping[str, Any]) -> AuditRecord:
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
