"""``/docs`` (Swagger UI) and ``/redoc`` (ReDoc) served from this server alone: no CDN, no font
host, no favicon from elsewhere, so the API's documentation renders on a machine with no
internet (and a browser opening it tells no third party that it did).

The assets come from the ``fastapi-offline`` wheel (MIT; Swagger UI under Apache 2.0, ReDoc
under MIT), which ships ``swagger-ui-bundle.js``, ``swagger-ui.css``, ``redoc.standalone.js``
and a favicon; a dependency of the ``server`` extra, so they are upgraded with pip rather than
copied into this repository. Only its files are used, served at ``/docs-assets/<name>``.

Neither page has an inline script: Swagger UI starts from ``/static/swagger-init.js``, reading
the schema's URL from a data attribute, and ReDoc starts itself from its ``<redoc spec-url>``
element. So the pages' Content-Security-Policy allows scripts from this origin only. Styles
allow ``'unsafe-inline'`` (both UIs set element styles at run time), images ``data:`` (Swagger
UI's icons) and workers ``blob:`` (ReDoc's search index). ReDoc's sidebar always adds Redocly's
logo from cdn.redoc.ly: ``img-src`` blocks it before any request leaves, and the link's text
stays. Tested in Chromium with name resolution off (tests/service/test_docs_offline.py).
"""

from __future__ import annotations

import html
from importlib import resources
from importlib.abc import Traversable

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

ASSETS_PACKAGE = "fastapi_offline"
ASSET_TYPES = {
    "swagger-ui-bundle.js": "text/javascript",
    "swagger-ui.css": "text/css",
    "redoc.standalone.js": "text/javascript",
    "favicon.png": "image/png",
}
DOCS_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
OPENAPI_URL = "/openapi.json"

router = APIRouter(include_in_schema=False)

SWAGGER_PAGE = """<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>{title} - Swagger UI</title>
  <link rel="icon" type="image/png" href="{root}/docs-assets/favicon.png">
  <link rel="stylesheet" href="{root}/docs-assets/swagger-ui.css">
</head>
<body>
  <div id="swagger-ui" data-openapi="{root}{openapi}"></div>
  <script src="{root}/docs-assets/swagger-ui-bundle.js"></script>
  <script src="{root}/static/swagger-init.js"></script>
</body>
</html>
"""

REDOC_PAGE = """<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>{title} - ReDoc</title>
  <link rel="icon" type="image/png" href="{root}/docs-assets/favicon.png">
</head>
<body>
  <redoc spec-url="{root}{openapi}"></redoc>
  <script src="{root}/docs-assets/redoc.standalone.js"></script>
</body>
</html>
"""


def _assets() -> Traversable | None:
    try:
        return resources.files(ASSETS_PACKAGE).joinpath("static")
    except ModuleNotFoundError:
        return None


def _missing() -> Response:
    return Response(
        f"the API documentation pages need the {ASSETS_PACKAGE.replace('_', '-')} package, "
        "which is not installed; install the 'server' extra: pip install 'seenbefore[server]'",
        status_code=503,
        media_type="text/plain",
    )


def _page(request: Request, template: str) -> Response:
    if _assets() is None:
        return _missing()
    root = html.escape(str(request.scope.get("root_path") or "").rstrip("/"), quote=True)
    title = html.escape(str(getattr(request.app, "title", "API")))
    body = template.format(title=title, root=root, openapi=OPENAPI_URL)
    return HTMLResponse(
        body,
        headers={
            "Content-Security-Policy": DOCS_CSP,
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "same-origin",
        },
    )


@router.get("/docs")
def swagger_ui(request: Request) -> Response:
    return _page(request, SWAGGER_PAGE)


@router.get("/redoc")
def redoc(request: Request) -> Response:
    return _page(request, REDOC_PAGE)


@router.get("/docs-assets/{name}")
def asset(name: str) -> Response:
    if name not in ASSET_TYPES:
        return Response("not found", status_code=404, media_type="text/plain")
    folder = _assets()
    if folder is None:
        return _missing()
    return Response(
        folder.joinpath(name).read_bytes(),
        media_type=ASSET_TYPES[name],
        headers={"Cache-Control": "public, max-age=86400", "X-Content-Type-Options": "nosniff"},
    )
