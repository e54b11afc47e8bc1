"""Web sessions: a signed cookie (HMAC-SHA256 under a secret kept in the store) that names the
API token the user logged in with, a session id and an expiry. Nothing secret is in the cookie;
the token itself is never stored. Each request re-reads the token, so revoking it (or changing
its role or tiers) takes effect at once. CSRF tokens are derived from the session id."""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

from seenbefore.storage.sqlport import ServiceStore

SESSION_COOKIE = "sb_session"
LOGIN_CSRF_COOKIE = "sb_login_csrf"
SECRET_KEY = "web.session_secret"
SESSION_TTL_S = 8 * 3600


@dataclass(frozen=True)
class Session:
    sid: str
    token_id: str
    expires: int
    csrf: str


def store_secret(store: ServiceStore) -> bytes:
    """The store's session-signing secret, created on first use (per store, survives restarts;
    two processes or replicas starting together agree on one, so a session cookie that one
    replica signed is good at every other)."""
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO blobs (key, value, updated_at) VALUES (?, ?, ?)"
            " ON CONFLICT (key) DO NOTHING",
            (SECRET_KEY, secrets.token_bytes(32), dt.datetime.now(dt.UTC).isoformat()),
        )
        row = conn.execute("SELECT value FROM blobs WHERE key = ?", (SECRET_KEY,)).fetchone()
    return bytes(row[0])


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class SessionSigner:
    def __init__(
        self, secret: bytes, *, ttl_s: int = SESSION_TTL_S, clock: Callable[[], float] = time.time
    ) -> None:
        self._secret = secret
        self.ttl_s = ttl_s
        self._clock = clock

    def _sign(self, payload: str) -> str:
        return hmac.new(self._secret, payload.encode("ascii"), hashlib.sha256).hexdigest()

    def csrf_for(self, sid: str) -> str:
        return self._sign("csrf:" + sid)[:40]

    def issue(self, token_id: str) -> tuple[str, Session]:
        """A new session for ``token_id``: (cookie value, session)."""
        sid = secrets.token_hex(16)
        expires = int(self._clock()) + self.ttl_s
        payload = _b64(json.dumps({"sid": sid, "tid": token_id, "exp": expires}).encode())
        return f"{payload}.{self._sign(payload)}", Session(
            sid, token_id, expires, self.csrf_for(sid)
        )

    def read(self, cookie: str | None) -> Session | None:
        """The session a cookie carries, or None if missing, forged or expired."""
        if not cookie or "." not in cookie:
            return None
        payload, _, signature = cookie.partition(".")
        if not hmac.compare_digest(self._sign(payload), signature):
            return None
        try:
            data = json.loads(_unb64(payload))
            sid, token_id, expires = str(data["sid"]), str(data["tid"]), int(data["exp"])
        except (ValueError, KeyError, TypeError, binascii.Error):
            return None
        if expires < self._clock():
            return None
        return Session(sid, token_id, expires, self.csrf_for(sid))

    def check_csrf(self, session: Session, given: str | None) -> bool:
        return bool(given) and hmac.compare_digest(session.csrf, str(given))
