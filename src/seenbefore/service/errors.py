"""One exception handler: the error tree mapped to RFC 9457 problem details
(``application/problem+json``). Messages of the tree are written for users (what was received,
the rule, the fix), so they become ``detail``; anything else is a 500 without internals."""

from __future__ import annotations

import logging
import math
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from seenbefore.errors import (
    AccountRequired,
    AuthError,
    BusyError,
    ConfigError,
    ConflictError,
    ForbiddenError,
    InputError,
    NotFoundError,
    PostmortemInvalid,
    RateLimitedError,
    SeenbeforeError,
    StoreError,
)

log = logging.getLogger(__name__)

PROBLEM_JSON = "application/problem+json"
PROBLEM_BASE = "urn:seenbefore:problem:"

# Most specific first: the first class the error is an instance of decides.
STATUS_BY_ERROR: tuple[tuple[type[SeenbeforeError], int, str], ...] = (
    (PostmortemInvalid, 422, "invalid-postmortem"),
    (AccountRequired, 422, "account-required"),
    (InputError, 400, "invalid-input"),
    (AuthError, 401, "unauthenticated"),
    (ForbiddenError, 403, "forbidden"),
    (NotFoundError, 404, "not-found"),
    (ConflictError, 409, "conflict"),
    (BusyError, 503, "busy"),
    (RateLimitedError, 429, "rate-limited"),
    (StoreError, 503, "store-unavailable"),
    (ConfigError, 500, "configuration"),
)
TITLES = {
    400: "Bad request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not found",
    405: "Method not allowed",
    409: "Conflict",
    413: "Content too large",
    415: "Unsupported media type",
    422: "Unprocessable content",
    429: "Too many requests",
    500: "Internal server error",
    503: "Service unavailable",
}


def status_for(exc: SeenbeforeError) -> tuple[int, str]:
    for cls, status, slug in STATUS_BY_ERROR:
        if isinstance(exc, cls):
            return status, slug
    return 500, "internal"


def problem(
    status: int,
    slug: str,
    detail: str,
    instance: str,
    *,
    headers: dict[str, str] | None = None,
    extra: dict[str, Any] | None = None,
) -> JSONResponse:
    body: dict[str, Any] = {
        "type": PROBLEM_BASE + slug,
        "title": TITLES.get(status, "Error"),
        "status": status,
        "detail": detail,
        "instance": instance,
    }
    body.update(extra or {})
    return JSONResponse(body, status_code=status, headers=headers, media_type=PROBLEM_JSON)


def _instance(request: Request) -> str:
    return request.url.path


async def seenbefore_error(request: Request, exc: Exception) -> JSONResponse:
    if not isinstance(exc, SeenbeforeError):  # pragma: no cover - registered for the tree only
        return await unexpected_error(request, exc)
    status, slug = status_for(exc)
    headers: dict[str, str] = {}
    if status == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="seenbefore"'
    if isinstance(exc, RateLimitedError):
        headers["Retry-After"] = str(max(1, math.ceil(exc.retry_after_s)))
    if status >= 500:
        log.error("request %s failed: %s", _instance(request), type(exc).__name__)
        detail = str(exc) if status == 503 else "the server could not complete the request"
    else:
        detail = str(exc)
    extra: dict[str, Any] = {}
    if isinstance(exc, AccountRequired):  # the fields to write, for a client to ask for them
        extra = {"missing": list(exc.missing), "why": exc.why}
    return problem(status, slug, detail, _instance(request), headers=headers, extra=extra)


async def validation_error(request: Request, exc: Exception) -> JSONResponse:
    errors = exc.errors() if isinstance(exc, RequestValidationError) else []
    shown = [
        {"loc": [str(p) for p in e.get("loc", ())], "msg": str(e.get("msg", "")), "type": e["type"]}
        for e in errors[:20]
    ]
    first = shown[0] if shown else {"loc": [], "msg": "invalid request"}
    where = ".".join(first["loc"]) or "request"
    detail = f"{where}: {first['msg']}; fix the request body or parameters (see /docs)"
    return problem(422, "validation", detail, _instance(request), extra={"errors": shown})


async def http_error(request: Request, exc: Exception) -> JSONResponse:
    if not isinstance(exc, StarletteHTTPException):  # pragma: no cover
        return await unexpected_error(request, exc)
    status = exc.status_code
    detail = exc.detail if isinstance(exc.detail, str) else TITLES.get(status, "error")
    if status == 404:
        detail = f"nothing at {_instance(request)}; see /docs for the routes"
    elif status == 405:
        detail = f"{request.method} is not allowed on {_instance(request)}; see /docs"
    return problem(
        status,
        TITLES.get(status, "http").lower().replace(" ", "-"),
        detail,
        _instance(request),
        headers=dict(exc.headers or {}),
    )


async def unexpected_error(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unexpected error on %s", _instance(request))
    return problem(500, "internal", "the server could not complete the request", _instance(request))


def install(app: FastAPI) -> None:
    app.add_exception_handler(SeenbeforeError, seenbefore_error)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(Exception, unexpected_error)
