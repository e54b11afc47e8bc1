"""Web sessions: a signed cookie (HMAC-SHA256 under a secret kept in the store) that names the
API token the user logged in with, a session id and an expiry, and a row in the store for each
session that is open. Nothing secret is in the cookie; the token itself is never stored.

A cookie is good only while its row exists: logout deletes the row, so a copy of the cookie
saved before logout opens nothing afterwards (on any replica: the rows live in the shared store,
in the ``blobs`` table under ``web.session.<sid>``). Each request also re-reads the token, so
revoking it (or changing its role or tiers) ends its sessions at once. Expired rows are removed
when a new session is issued. CSRF tokens are derived from the session id."""

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
SESSION_ROW = "web.session."  # + sid: an open session (value: the token id)
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


def _iso(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch, dt.UTC).isoformat(timespec="seconds")


class SessionSigner:
    """Issues, reads and ends sessions. Without a ``store`` (unit tests of the signature) a
    session lives until it expires; with one, until it expires or is ended."""

    def __init__(
        self,
        secret: bytes,
        *,
        store: ServiceStore | None = None,
        ttl_s: int = SESSION_TTL_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._secret = secret
        self._store = store
        self.ttl_s = ttl_s
        self._clock = clock

    def _sign(self, payload: str) -> str:
        return hmac.new(self._secret, payload.encode("ascii"), hashlib.sha256).hexdigest()

    def csrf_for(self, sid: str) -> str:
        return self._sign("csrf:" + sid)[:40]

    def issue(self, token_id: str) -> tuple[str, Session]:
        """A new session for ``token_id``: (cookie value, session)."""
        sid = secrets.token_hex(16)
        issued = self._clock()
        expires = int(issued) + self.ttl_s
        if self._store is not None:
            with self._store.transaction() as conn:
                conn.execute(  # sessions issued before the oldest one still valid: gone
                    "DELETE FROM blobs WHERE key LIKE ? AND updated_at < ?",
                    (SESSION_ROW + "%", _iso(issued - self.ttl_s)),
                )
                conn.execute(
                    "INSERT INTO blobs (key, value, updated_at) VALUES (?, ?, ?)",
                    (SESSION_ROW + sid, token_id.encode("utf-8"), _iso(issued)),
                )
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
        if self._store is not None and not self._store.query(
            "SELECT 1 FROM blobs WHERE key = ?", (SESSION_ROW + sid,)
        ):
            return None  # ended (logout) or never issued by this store
        return Session(sid, token_id, expires, self.csrf_for(sid))

    def end(self, session: Session) -> None:
        """Logout: the session's cookie, and every copy of it, opens nothing from now on."""
        if self._store is not None:
            with self._store.transaction() as conn:
                conn.execute("DELETE FROM blobs WHERE key = ?", (SESSION_ROW + session.sid,))

    def check_csrf(self, session: Session, given: str | None) -> bool:
        return bool(given) and hmac.compare_digest(session.csrf, str(given))
