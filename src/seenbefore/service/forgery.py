"""Cross-site request forgery defences for the web queue's forms: each form carries a CSRF token
derived from the session (``check_csrf``), and a POST sent by a page of another origin is refused
whatever it carries (``same_origin``). The JSON API needs neither: it takes bearer tokens only
(deps.py), which a browser never sends on its own."""

from __future__ import annotations

from urllib.parse import urlsplit

from fastapi import Request

from seenbefore.errors import ForbiddenError, InputError
from seenbefore.service.deps import Caller, Ready


def same_origin(request: Request) -> None:
    """ForbiddenError for a POST sent by a page of another origin. Browsers send ``Origin`` on
    every form POST (``Referer`` where a privacy setting drops it); a request with neither
    (curl, an old client) is left to the CSRF token. Compared by host and port: another port
    of the same host is another origin, although it is the same *site* for SameSite cookies."""
    sent = request.headers.get("origin") or request.headers.get("referer")
    if sent is None:
        return
    own = (request.headers.get("host") or "").lower()
    theirs = "" if sent == "null" else urlsplit(sent).netloc.lower()
    scheme = urlsplit(sent).scheme.lower()
    default = {"http": ":80", "https": ":443"}.get(scheme, "")
    if theirs != own and theirs.removesuffix(default) != own.removesuffix(default):
        raise ForbiddenError(
            f"this form was posted from {sent[:200]!r}, not from the review queue's own pages "
            f"({own}); the queue accepts only its own forms: open it at http(s)://{own}/ and "
            "submit there"
        )


def check_csrf(app: Ready, who: Caller, token: str) -> None:
    if who.web is None or not app.sessions.check_csrf(who.web, token):
        raise InputError(
            "the form's CSRF token is missing or does not match this session; reload the page "
            "and submit again"
        )
