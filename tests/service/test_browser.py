"""The review queue end to end in real headless Chromium (Debian's /usr/bin/chromium, driven by
Playwright; never `playwright install`): log in, dismiss a draft, see the re-investigation,
approve it, find the new postmortem through search."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import httpx
import pytest

from seenbefore.service.app import create_app
from tests.service.conftest import prepare_home, service_settings
from tests.service.live import live_server

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ALERT = "checkout-api: database connections at the pool limit, p99 latency eightfold"

pytestmark = pytest.mark.integration


def test_review_queue_in_chromium(tmp_path: Path) -> None:
    if not shutil.which(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: `make test` installs it (scripts/system_deps.sh)")
    from playwright.sync_api import expect, sync_playwright

    settings = service_settings(tmp_path / "home")
    tokens = prepare_home(settings.home, tmp_path / "docs", settings)
    with live_server(create_app(settings)) as base:
        started = httpx.post(
            f"{base}/v1/investigations",
            json={"text": ALERT, "severity": "SEV2"},
            headers={"Authorization": f"Bearer {tokens['responder']}"},
            timeout=30,
        )
        assert started.status_code == 201, started.text
        rid = started.json()["id"]
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
            try:
                page = browser.new_page()
                page.set_default_timeout(15_000)
                page.goto(f"{base}/reviews")
                expect(page).to_have_url(re.compile(r"/login$"))
                page.fill("#token", tokens["reviewer"])
                page.click("button[type=submit]")
                expect(page).to_have_url(re.compile(r"/reviews$"))
                row = page.locator(f'tr[data-review="{rid}"]')
                # the row: the query's first line, its verdict's words with p, the precedent
                expect(row).to_contain_text(ALERT)
                expect(row).to_contain_text(
                    re.compile(r"(precedent found|possible precedent — check)\s*p 0\.\d\d")
                )
                expect(row.locator("td.precedent")).to_contain_text("POOL-1")
                expect(row.locator("td.status")).to_have_text("pending")
                expect(page.locator("h2.sev")).to_have_text(["SEV2"])
                row.locator("a").click()

                expect(page.locator("#review-round")).to_have_text("1")
                expect(page.locator("#evidence .evidence-item").first).to_have_attribute(
                    "data-doc", "POOL-1"
                )
                expect(page.locator("#evidence .matched-by").first).to_have_text("sparse")
                page.select_option("#reason", "wrong_precedent")
                page.fill("#note", "the resolver was failing, not the pool")
                page.click("#dismiss")

                expect(page.locator("#review-round")).to_have_text("2")
                expect(page.locator("#review-status")).to_have_text("pending")
                expect(page.locator("#history .event-dismissed")).to_contain_text("wrong_precedent")
                expect(page.locator("#evidence")).to_contain_text(
                    "excluded after dismissal: POOL-1"
                )
                first = page.locator("#evidence .evidence-item").first
                assert first.get_attribute("data-doc") != "POOL-1"

                # round 2 says no precedent: the short form asks for what it was
                expect(page.locator("#approve")).to_have_count(0)
                expect(page.locator("#account-why")).to_contain_text("no precedent")
                page.fill("#account-root-cause", "The cluster resolver dropped queries.")
                page.click("#account-approve")  # the browser refuses the empty required fields
                expect(page.locator("#review-status")).to_have_text("pending")
                page.fill("#account-resolution", "Scaled the resolver and cached lookups.")
                page.fill("#account-type", "dns-failure")
                page.click("#account-approve")
                expect(page.locator("#review-status")).to_have_text("approved")
                link = page.locator("#postmortem-link")
                expect(link).to_have_text(f"PM-{rid}")

                page.goto(f"{base}/search")
                page.fill("#q", "checkout-api database connections pool limit")
                page.click("#search")
                expect(page.locator(f'li.result[data-doc="PM-{rid}"]')).to_be_visible()
                page.locator(f'li.result[data-doc="PM-{rid}"] a').click()
                expect(page.locator("h1")).to_contain_text(f"PM-{rid}")
                cookie = next(c for c in page.context.cookies() if c["name"] == "sb_session")
                assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
            finally:
                browser.close()
