"""/docs and /redoc render in headless Chromium with the network off: every request goes to the
server itself (no CDN, no font host, no favicon from elsewhere), and the pages' CSP (scripts from
this origin only) is never violated."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from seenbefore.service.app import create_app
from seenbefore.service.routers.docs import ASSET_TYPES, DOCS_CSP
from tests.service.conftest import service_settings
from tests.service.live import live_server
from tests.service.test_browser import ARGS, CHROMIUM

# no name resolves but the loopback address: a request to any other host fails at once
OFFLINE = [*ARGS, "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"]


def test_docs_pages_name_no_other_host(tmp_path: Path) -> None:
    with TestClient(create_app(service_settings(tmp_path / "home"))) as client:
        for path in ("/docs", "/redoc"):
            page = client.get(path)
            assert page.status_code == 200
            assert page.headers["content-security-policy"] == DOCS_CSP
            assert "script-src 'self';" in DOCS_CSP and "unsafe-eval" not in DOCS_CSP
            assert not re.search(r"https?://", page.text), page.text  # every URL is relative
            assert "<script>" not in page.text  # no inline script: the CSP forbids them
        for name, media in ASSET_TYPES.items():
            got = client.get(f"/docs-assets/{name}")
            assert got.status_code == 200 and got.headers["content-type"].startswith(media)
            assert len(got.content) > 500
        assert client.get("/docs-assets/..%2Fcore.py").status_code == 404
        assert client.get("/docs-assets/swagger-ui.css.map").status_code == 404


@pytest.mark.integration
def test_docs_and_redoc_render_offline_in_chromium(tmp_path: Path) -> None:
    if not shutil.which(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: `make test` installs it (scripts/system_deps.sh)")
    from playwright.sync_api import expect, sync_playwright

    with (
        live_server(create_app(service_settings(tmp_path / "home"))) as base,
        sync_playwright() as p,
    ):
        browser = p.chromium.launch(executable_path=CHROMIUM, args=OFFLINE, headless=True)
        try:
            context = browser.new_context()
            elsewhere: list[str] = []
            fetched: list[str] = []

            def gate(route, request):  # type: ignore[no-untyped-def]
                if request.url.startswith(base + "/"):
                    fetched.append(request.url[len(base) :])
                    route.continue_()
                else:
                    elsewhere.append(request.url)
                    route.abort()

            context.route("**/*", gate)
            page = context.new_page()
            page.set_default_timeout(20_000)
            violations: list[str] = []
            page.on(
                "console",
                lambda m: (
                    violations.append(m.text) if "Content Security Policy" in m.text else None
                ),
            )

            page.goto(f"{base}/docs")
            expect(page.locator(".swagger-ui .info .title")).to_contain_text("seenbefore")
            approve = page.locator(
                ".opblock-summary-path", has_text="/v1/reviews/{review_id}/approve"
            )
            expect(approve.first).to_be_visible()
            assert "/openapi.json" in fetched and "/docs-assets/swagger-ui-bundle.js" in fetched

            page.goto(f"{base}/redoc")
            expect(page.locator("h1").first).to_contain_text("seenbefore")
            heading = page.locator("h2", has_text="Approve a draft (optionally edited)")
            expect(heading.first).to_be_visible()
            assert "/docs-assets/redoc.standalone.js" in fetched

            assert elsewhere == [], elsewhere
            # ReDoc's sidebar always adds Redocly's logo from cdn.redoc.ly: the CSP blocks it
            # before any request leaves (so it is not in ``elsewhere`` either); nothing else
            # (no script, no style) is refused
            logo = "Loading the image 'https://cdn.redoc.ly/redoc/logo-mini.svg'"
            assert [v for v in violations if not v.startswith(logo)] == [], violations
        finally:
            browser.close()
