"""A draft whose precedent's root cause was withheld (the injection scanner flagged it): every
channel says which incident's text was withheld and why, and none carries the injected text."""

from __future__ import annotations

import json
from typing import Any

import pytest

from seenbefore.investigation.reporter import OfflineReporter
from seenbefore.notify import Notification
from seenbefore.notify.opsgenie import opsgenie_request
from seenbefore.notify.pagerduty import pagerduty_event
from seenbefore.notify.slack import slack_payload
from seenbefore.notify.teams import teams_payload
from tests.investigation.injection_case import DOC_ID, evidence, shows_injection
from tests.notify.conftest import make_anomaly


@pytest.fixture
def message() -> Notification:
    draft = OfflineReporter().draft(evidence()).model_dump(mode="json")
    return Notification(make_anomaly(), "sig", draft=draft)


def _says_withheld(text: str) -> bool:
    flat = " ".join(text.split()).lower()
    return f"withheld from {DOC_ID.lower()} (root cause)" in flat and "instruction_override" in flat


def test_slack_draft_shows_the_withheld_line(message: Notification) -> None:
    payload = slack_payload(message)
    text = json.dumps(payload, ensure_ascii=False)
    assert not shows_injection(text)
    blocks = payload["blocks"]
    assert [b["type"] for b in blocks] == ["header", "section", "section", "context", "context"]
    assert _says_withheld(blocks[3]["elements"][0]["text"])


def test_teams_card_shows_the_withheld_line(message: Notification) -> None:
    card = teams_payload(message)["attachments"][0]["content"]
    text = json.dumps(card, ensure_ascii=False)
    assert not shows_injection(text)
    runs = [r for b in card["body"] for r in b.get("inlines", []) if r.get("color") == "Warning"]
    assert runs and _says_withheld(runs[0]["text"])  # a TextRun: shown as written, not Markdown


def test_pagerduty_details_carry_the_flag_and_the_line(message: Notification) -> None:
    event = pagerduty_event(message, "key")
    details: dict[str, Any] = event["payload"]["custom_details"]["draft"]
    assert not shows_injection(json.dumps(event, ensure_ascii=False))
    assert [w["doc_id"] for w in details["withheld"]] == [DOC_ID]
    assert _says_withheld(details["withheld"][0]["note"])


def test_opsgenie_note_shows_the_withheld_line(message: Notification) -> None:
    _, body = opsgenie_request(message)
    assert not shows_injection(body["note"])
    assert _says_withheld(body["note"])
