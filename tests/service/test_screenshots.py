"""Screenshots of the review queue and of a draft of each verdict (found, possible — check,
none), taken in headless Chromium from a service over the sample knowledge base. Set
SEENBEFORE_SCREENSHOTS=docs/images to refresh the ones docs/service.md shows; otherwise they go
to a temporary folder and the test checks the pages they show."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import httpx
import pytest

from seenbefore.kb import KnowledgeBase
from seenbefore.security.tokens import TokenStore
from seenbefore.service.app import create_app
from tests.conftest import EXAMPLES
from tests.service.conftest import service_settings
from tests.service.live import live_server
from tests.service.test_browser import ARGS, CHROMIUM

pytestmark = pytest.mark.integration

DRAFTS = (  # (name, text, severity, verdict the sample KB gives it)
    ("found", "partner API TLS certificate expired, handshake failures", "SEV2", "precedent found"),
    ("possible", "some requests are slower than usual", "SEV3", "possible precedent — check"),
    ("none", "the office coffee machine descaling reminder keeps beeping", "SEV4", "no precedent"),
)


def test_queue_and_draft_screenshots(tmp_path: Path) -> None:
    if not shutil.which(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: `make test` installs it (scripts/system_deps.sh)")
    from playwright.sync_api import expect, sync_playwright

    out = Path(os.environ.get("SEENBEFORE_SCREENSHOTS") or tmp_path / "shots")
    out.mkdir(parents=True, exist_ok=True)
    settings = service_settings(tmp_path / "home")
    with KnowledgeBase(settings) as kb:
        kb.ingest([EXAMPLES])
        store = TokenStore(kb.store)
        responder, _ = store.create("alertmanager", "responder", ["general"])
        reviewer, _ = store.create("ana", "reviewer", ["general"])
    with live_server(create_app(settings)) as base:
        ids = {}
        for name, text, severity, verdict in DRAFTS:
            started = httpx.post(
                f"{base}/v1/investigations",
                json={"text": text, "severity": severity},
                headers={"Authorization": f"Bearer {responder}"},
                timeout=60,
            )
            assert started.status_code == 201, started.text
            assert started.json()["draft"]["verdict"] == verdict, (name, started.json()["draft"])
            ids[name] = started.json()["id"]
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
            try:
                page = browser.new_page(viewport={"width": 1100, "height": 760})
                page.goto(f"{base}/login")
                page.fill("#token", reviewer)
                page.click("button[type=submit]")
                expect(page).to_have_url(re.compile(r"/reviews$"))
                for name, text, _, verdict in DRAFTS:
                    row = page.locator(f'tr[data-review="{ids[name]}"]')
                    expect(row).to_contain_text(text)
                    expect(row.locator("td.verdict")).to_contain_text(verdict)
                page.screenshot(path=str(out / "queue.png"), full_page=True)
                for name, _, _, verdict in DRAFTS:
                    page.goto(f"{base}/reviews/{ids[name]}")
                    expect(page.locator("#novel-flag")).to_have_text(verdict)
                    form = "#account-form" if name == "none" else "#approve-form"
                    expect(page.locator(form)).to_be_visible()  # Decide, near the top
                    page.screenshot(path=str(out / f"draft-{name}.png"))
            finally:
                browser.close()
    for name in ("queue", "draft-found", "draft-possible", "draft-none"):
        assert (out / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
