"""API tokens: hashed at rest, roles in order, tiers, revocation, last use."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from seenbefore.errors import AuthError, ConflictError, ForbiddenError, InputError, NotFoundError
from seenbefore.security.tokens import (
    ROLES,
    Principal,
    TokenStore,
    check_tiers,
    local_principal,
)
from seenbefore.storage.sqlite.store import SQLiteStore

GIVEN = "sb_" + "A" * 40


@pytest.fixture
def tokens(store: SQLiteStore) -> TokenStore:
    return TokenStore(store)


def test_create_returns_the_token_once_and_stores_only_its_hash(
    tokens: TokenStore, store: SQLiteStore
) -> None:
    plaintext, principal = tokens.create("alice", "reviewer", ["General", "restricted", "general"])
    assert plaintext.startswith("sb_") and len(plaintext) == 3 + 43  # 32 bytes, urlsafe base64
    assert principal.role == "reviewer" and principal.tiers == ("general", "restricted")
    assert principal.token_id is not None and principal.token_id.startswith("tok_")
    rows = store.query("SELECT * FROM api_tokens")
    assert len(rows) == 1
    assert rows[0]["token_hash"] == hashlib.sha256(plaintext.encode()).hexdigest()
    assert plaintext not in [str(v) for v in tuple(rows[0])]
    store.close()
    raw = b"".join(p.read_bytes() for p in Path(store.path).parent.iterdir() if p.is_file())
    assert plaintext.encode() not in raw


def test_authenticate_returns_the_principal_and_records_last_use(tokens: TokenStore) -> None:
    plaintext, created = tokens.create("alice", "responder", ["general"])
    assert tokens.list()[0].last_used_at is None
    principal = tokens.authenticate(plaintext)
    assert principal == created
    info = tokens.list()[0]
    assert info.last_used_at is not None and info.active
    assert "sb_" not in repr(info) and "hash" not in repr(info)


@pytest.mark.parametrize(
    ("given", "message"),
    [("", "no token"), ("Bearer xyz", "does not start with 'sb_'"), (GIVEN, "unknown token")],
)
def test_authenticate_rejects_missing_malformed_and_unknown_tokens(
    tokens: TokenStore, given: str, message: str
) -> None:
    tokens.create("alice", "viewer", ["general"])
    with pytest.raises(AuthError, match=message):
        tokens.authenticate(given)


def test_a_revoked_token_stops_working(tokens: TokenStore) -> None:
    plaintext, principal = tokens.create("ci", "viewer", ["general"])
    assert principal.token_id is not None
    tokens.revoke(principal.token_id)
    tokens.revoke(principal.token_id)  # idempotent
    with pytest.raises(AuthError, match="revoked"):
        tokens.authenticate(plaintext)
    assert not tokens.list()[0].active
    with pytest.raises(NotFoundError, match="tok_nope"):
        tokens.revoke("tok_nope")


def test_unknown_role_and_empty_tiers_name_the_allowed_values(tokens: TokenStore) -> None:
    with pytest.raises(InputError, match="viewer, responder, reviewer, admin"):
        tokens.create("alice", "root", ["general"])
    with pytest.raises(InputError, match="tiers are empty"):
        tokens.create("alice", "viewer", [" ", ""])
    with pytest.raises(InputError, match="not a tier name"):
        tokens.create("alice", "viewer", ["gen eral"])
    with pytest.raises(InputError, match="local:"):
        tokens.create("local:root", "viewer", ["general"])
    assert tokens.list() == []


def test_roles_are_ordered() -> None:
    reviewer = Principal("r", "reviewer", ("general",))
    assert [reviewer.allows(r) for r in ROLES] == [True, True, True, False]
    assert Principal("a", "admin", ()).allows("admin")
    assert not Principal("v", "viewer", ()).allows("responder")
    with pytest.raises(ForbiddenError, match="needs role admin"):
        reviewer.require("admin", "deleting a postmortem")
    with pytest.raises(InputError, match="expected one of"):
        Principal("x", "superuser", ())


def test_ensure_is_idempotent_and_follows_the_given_role(tokens: TokenStore) -> None:
    first = tokens.ensure(GIVEN, "admin", "admin", ["general"])
    again = tokens.ensure(GIVEN, "admin", "admin", ["general"])
    assert first == again and len(tokens.list()) == 1
    assert tokens.has_admin()
    changed = tokens.ensure(GIVEN, "ops", "reviewer", ["general", "restricted"])
    assert changed.token_id == first.token_id and changed.role == "reviewer"
    assert not tokens.has_admin()
    assert tokens.authenticate(GIVEN).tiers == ("general", "restricted")
    assert changed.token_id is not None
    tokens.revoke(changed.token_id)
    with pytest.raises(ConflictError, match="revoked"):
        tokens.ensure(GIVEN, "admin", "admin", ["general"])


@pytest.mark.parametrize("bad", ["sb_short", "A" * 45, "sb_" + "a b" * 20])
def test_ensure_refuses_weak_or_malformed_tokens(tokens: TokenStore, bad: str) -> None:
    with pytest.raises(InputError, match="not a seenbefore token") as info:
        tokens.ensure(bad, "admin", "admin", ["general"])
    assert bad not in str(info.value)  # a secret is never echoed


def test_has_admin_ignores_revoked_and_lower_roles(tokens: TokenStore) -> None:
    assert not tokens.has_admin()
    tokens.create("v", "viewer", ["general"])
    assert not tokens.has_admin()
    _, admin = tokens.create("root", "admin", ["general"])
    assert tokens.has_admin()
    assert admin.token_id is not None
    tokens.revoke(admin.token_id)
    assert not tokens.has_admin()


def test_local_principal_is_the_local_user_as_admin() -> None:
    p = local_principal(["general", "restricted"])
    assert p.name.startswith("local:") and len(p.name) > len("local:")
    assert p.role == "admin" and p.tiers == ("general", "restricted") and p.token_id is None


def test_check_tiers_splits_a_comma_list() -> None:
    assert check_tiers("general, Restricted,general") == ("general", "restricted")
