"""The web review queue: plain HTML forms, no JavaScript, no build step.

Log in with an API token: the page sets a signed session cookie (HttpOnly, SameSite=Strict,
Secure over HTTPS) naming the token, never holding it, and good until logout (the session's row
in the store is deleted, so a saved copy of the cookie opens nothing) or until the token is
revoked. Every form carries a CSRF token (derived from the session; the login form uses a
double-submit cookie), and every POST from a page of another origin (``Origin``, else
``Referer``, naming another host or port) is refused with 403 before anything else. Failed logins
are throttled per client address, as failed API tokens are. All text shown is escaped by
Jinja2 and cleaned of invisible and control characters first (retrieved text is untrusted).
Search is a POST so query text never lands in URLs or access logs."""

from __future__ import annotations

import datetime as dt
import secrets
from pathlib import Path
from typing import Annotated, Any

import jinja2
from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates

from seenbefore.core.confidence import verdict_of
from seenbefore.errors import AccountRequired, AuthError, InputError, SeenbeforeError
from seenbefore.knowledge.failure_taxonomy import taxonomy
from seenbefore.retrieval.hybrid import SearchOptions
from seenbefore.review import account
from seenbefore.review.models import DismissReason, DraftEdits, Review
from seenbefore.service import actions, queue_rows
from seenbefore.service.deps import (
    Caller,
    Ready,
    ServiceState,
    authenticated,
    client_key,
    ready,
    session_caller,
)
from seenbefore.service.errors import TITLES, status_for
from seenbefore.service.forgery import check_csrf, same_origin
from seenbefore.service.routers.postmortems import postmortem_out
from seenbefore.service.routers.search import with_failure_modes
from seenbefore.service.sessions import LOGIN_CSRF_COOKIE, SESSION_COOKIE
from seenbefore.textguard import sanitize_for_display
from seenbefore.types import SEVERITIES, SearchFilters

WEB = Path(__file__).resolve().parent.parent / "web"
STATIC = WEB / "static"
STATIC_TYPES = {".css": "text/css", ".js": "text/javascript"}
CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
REASONS = (
    (DismissReason.WRONG_PRECEDENT.value, "wrong precedent"),
    (DismissReason.RIGHT_PRECEDENT_WRONG_CAUSE.value, "right precedent, wrong cause"),
    (DismissReason.NOT_ENOUGH_EVIDENCE.value, "not enough evidence"),
    (DismissReason.OTHER.value, "other"),
)

router = APIRouter(include_in_schema=False)

_env = jinja2.Environment(
    loader=jinja2.FileSystemLoader(WEB / "templates"),
    autoescape=True,
    undefined=jinja2.ChainableUndefined,
)
_env.filters["clean"] = lambda value: sanitize_for_display("" if value is None else str(value))
_env.filters["verdict"] = lambda record: verdict_of(record or {})  # the words every surface uses
_env.filters["similarity"] = lambda score, top: queue_rows.similarity(float(score or 0), float(top))
templates = Jinja2Templates(env=_env)

AppDep = Annotated[Ready, Depends(ready)]


def _headers() -> dict[str, str]:
    return {
        "Content-Security-Policy": CSP,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "same-origin",
        "Cache-Control": "no-store",
    }


def page(
    request: Request, name: str, context: dict[str, Any], *, status_code: int = 200
) -> HTMLResponse:
    return templates.TemplateResponse(
        request, name, context, status_code=status_code, headers=_headers()
    )


def _context(who: Caller | None, **more: Any) -> dict[str, Any]:
    return {
        "who": who.principal if who else None,
        "csrf": who.web.csrf if who and who.web else "",
        **more,
    }


def error_page(request: Request, who: Caller | None, exc: SeenbeforeError) -> Response:
    status, _ = status_for(exc)
    detail = str(exc) if status < 500 or status == 503 else "the server could not do that"
    response = page(
        request,
        "error.html",
        _context(who, status=status, title=TITLES.get(status, "Error"), detail=detail),
        status_code=status,
    )
    retry = getattr(exc, "retry_after_s", None)
    if retry is not None:
        response.headers["Retry-After"] = str(max(1, int(retry + 0.999)))
    return response


def _login_redirect() -> RedirectResponse:
    return RedirectResponse("/login", status_code=303)


def web_caller(request: Request, app: AppDep) -> Caller | None:
    """The logged-in user (session cookie only; a bearer header is not a browser login)."""
    return session_caller(request, app)


WebCaller = Annotated[Caller | None, Depends(web_caller)]


# -- static and login ------------------------------------------------------------------------------
@router.get("/static/{name}")
def static(name: str) -> Response:
    path = (STATIC / name).resolve()
    if path.parent != STATIC.resolve() or path.suffix not in STATIC_TYPES or not path.is_file():
        return Response("not found", status_code=404, media_type="text/plain")
    return FileResponse(path, media_type=STATIC_TYPES[path.suffix], headers=_headers())


@router.get("/")
def home() -> RedirectResponse:
    return RedirectResponse("/reviews", status_code=303)


@router.get("/login")
def login_form(request: Request) -> Response:
    token = secrets.token_hex(20)
    response = page(request, "login.html", {"who": None, "login_csrf": token, "error": ""})
    response.set_cookie(
        LOGIN_CSRF_COOKIE,
        token,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        max_age=1800,
        path="/login",
    )
    return response


@router.post("/login")
def login(
    request: Request,
    app: AppDep,
    token: Annotated[str, Form(max_length=500)],
    csrf_token: Annotated[str, Form(max_length=100)],
) -> Response:
    try:
        same_origin(request)
    except SeenbeforeError as exc:
        return error_page(request, None, exc)
    expected = request.cookies.get(LOGIN_CSRF_COOKIE, "")
    if not expected or not secrets.compare_digest(expected, csrf_token):
        return page(
            request,
            "login.html",
            {"who": None, "login_csrf": expected, "error": "the form expired; reload and retry"},
            status_code=400,
        )
    state: ServiceState = request.app.state.service
    try:
        principal = authenticated(
            state, client_key(request), lambda: app.tokens.authenticate(token.strip())
        )
    except AuthError as exc:
        return page(
            request,
            "login.html",
            {"who": None, "login_csrf": expected, "error": str(exc)},
            status_code=401,
        )
    except SeenbeforeError as exc:  # throttled: too many failed logins from this address
        return error_page(request, None, exc)
    cookie, session = app.sessions.issue(str(principal.token_id))
    app.audit.record(principal, "web.login", session="web:" + session.sid)
    response = RedirectResponse("/reviews", status_code=303)
    response.set_cookie(
        SESSION_COOKIE,
        cookie,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        max_age=app.sessions.ttl_s,
        path="/",
    )
    response.delete_cookie(LOGIN_CSRF_COOKIE, path="/login")
    return response


@router.post("/logout")
def logout(
    request: Request,
    app: AppDep,
    who: WebCaller,
    csrf_token: Annotated[str, Form(max_length=100)] = "",
) -> Response:
    if who is not None:
        try:
            same_origin(request)
            check_csrf(app, who, csrf_token)
        except SeenbeforeError as exc:
            return error_page(request, who, exc)
        if who.web is not None:
            app.sessions.end(who.web)
            app.audit.record(who.principal, "web.logout", session=who.session)
    response = _login_redirect()
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response


# -- the queue --------------------------------------------------------------------------------------
@router.get("/reviews")
def queue(request: Request, app: AppDep, who: WebCaller, status: str = "pending") -> Response:
    if who is None:
        return _login_redirect()
    chosen = status if status in ("pending", "approved", "closed") else None
    try:
        reviews = app.workflow.list(tiers=who.principal.tiers, status=chosen)
    except SeenbeforeError as exc:
        return error_page(request, who, exc)
    order = [*SEVERITIES, "unrated"]
    groups: dict[str, list[Any]] = {}
    for review in reviews:
        key = review.severity if review.severity in SEVERITIES else "unrated"
        groups.setdefault(str(key), []).append(review)
    now = dt.datetime.now(dt.UTC)  # most severe group first; newest first within it
    ordered = [(s, queue_rows.newest_first(groups[s], now)) for s in order if s in groups]
    return page(request, "queue.html", _context(who, groups=ordered, status=chosen or "all"))


@router.get("/reviews/{review_id}")
def review_page(request: Request, review_id: str, app: AppDep, who: WebCaller) -> Response:
    if who is None:
        return _login_redirect()
    try:
        review = app.workflow.get(review_id, tiers=who.principal.tiers)
    except SeenbeforeError as exc:
        return error_page(request, who, exc)
    return page(request, "review.html", _review_context(who, review))


def _review_context(
    who: Caller, review: Review, *, error: str = "", values: dict[str, str] | None = None
) -> dict[str, Any]:
    """The review page: a draft that cannot be approved as drafted (review/account.py) gets
    the short form asking for root cause, what fixed it and type instead of the button."""
    return _context(
        who,
        r=review,
        reasons=REASONS,
        can_decide=who.principal.allows("reviewer"),
        account_needed=account.reason(review) or "",
        headline=queue_rows.precedent(review.draft or {}, review.evidence or {}),
        account_error=error,
        account_values=values or {},
        failure_types=taxonomy().slugs,
    )


def _edits(draft: dict[str, Any], fields: dict[str, str]) -> DraftEdits | None:
    changed = {
        k: v.strip()
        for k, v in fields.items()
        if v and v.strip() and v.strip() != str(draft.get(k) or "").strip()
    }
    return DraftEdits(**changed) if changed else None


@router.post("/reviews/{review_id}/approve")
def approve(
    request: Request,
    review_id: str,
    app: AppDep,
    who: WebCaller,
    csrf_token: Annotated[str, Form(max_length=100)] = "",
    title: Annotated[str, Form(max_length=200)] = "",
    summary: Annotated[str, Form(max_length=5000)] = "",
    hypothesis: Annotated[str, Form(max_length=20000)] = "",
    root_cause: Annotated[str, Form(max_length=20000)] = "",
    resolution: Annotated[str, Form(max_length=20000)] = "",
    failure_type: Annotated[str, Form(alias="type", max_length=200)] = "",
) -> Response:
    if who is None:
        return _login_redirect()
    fields = {
        "title": title,
        "summary": summary,
        "hypothesis": hypothesis,
        "root_cause": root_cause,
        "resolution": resolution,
        "type": failure_type,
    }
    try:
        same_origin(request)
        check_csrf(app, who, csrf_token)
        who.principal.require("reviewer", "approving a draft")
        current = app.workflow.get(review_id, tiers=who.principal.tiers)
        try:
            actions.approve(app, who, review_id, _edits(current.draft, fields))
        except AccountRequired as exc:  # the form again, with what was written kept
            context = _review_context(who, current, error=str(exc), values=fields)
            return page(request, "review.html", context, status_code=422)
    except SeenbeforeError as exc:
        return error_page(request, who, exc)
    return RedirectResponse(f"/reviews/{review_id}", status_code=303)


@router.post("/reviews/{review_id}/dismiss")
def dismiss(
    request: Request,
    review_id: str,
    app: AppDep,
    who: WebCaller,
    csrf_token: Annotated[str, Form(max_length=100)] = "",
    reason: Annotated[str, Form(max_length=64)] = "",
    note: Annotated[str, Form(max_length=5000)] = "",
) -> Response:
    if who is None:
        return _login_redirect()
    try:
        same_origin(request)
        check_csrf(app, who, csrf_token)
        who.principal.require("reviewer", "dismissing a draft")
        try:
            why = DismissReason(reason)
        except ValueError:
            raise InputError(
                f"dismissal reason is {reason!r}; choose one of "
                + ", ".join(r.value for r in DismissReason)
            ) from None
        actions.dismiss(app, who, review_id, why, note.strip())
    except SeenbeforeError as exc:
        return error_page(request, who, exc)
    return RedirectResponse(f"/reviews/{review_id}", status_code=303)


# -- search and documents ---------------------------------------------------------------------------
@router.get("/search")
def search_form(request: Request, app: AppDep, who: WebCaller) -> Response:
    if who is None:
        return _login_redirect()
    return page(request, "search.html", _context(who, query="", result=None))


@router.post("/search")
def search(
    request: Request,
    app: AppDep,
    who: WebCaller,
    q: Annotated[str, Form(max_length=10_000)] = "",
    csrf_token: Annotated[str, Form(max_length=100)] = "",
) -> Response:
    if who is None:
        return _login_redirect()
    try:
        same_origin(request)
        check_csrf(app, who, csrf_token)
        if not q.strip():
            raise InputError("the search text is empty; describe the symptoms")
        result = actions.search(
            app, who, q, SearchFilters(tiers=who.principal.tiers), SearchOptions(k=10)
        )
    except SeenbeforeError as exc:
        return error_page(request, who, exc)
    return page(
        request, "search.html", _context(who, query=q, result=with_failure_modes(app, result))
    )


@router.get("/postmortems/{doc_id}")
def postmortem_page(request: Request, doc_id: str, app: AppDep, who: WebCaller) -> Response:
    if who is None:
        return _login_redirect()
    try:
        doc = app.kb.store.get(doc_id, who.principal.tiers)
        app.audit.record(
            who.principal,
            "show",
            session=who.session,
            doc_ids=[doc.postmortem.id],
            tiers=[doc.postmortem.access_tier],
        )
    except SeenbeforeError as exc:
        return error_page(request, who, exc)
    return page(request, "postmortem.html", _context(who, pm=postmortem_out(doc)))
