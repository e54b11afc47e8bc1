"""The review queue names each page: alert (or the query's first line), service, where, verdict
and p, the precedent, one status word, age; newest first."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

from seenbefore.review.models import Review
from seenbefore.service.queue_rows import (
    age,
    first_line,
    newest_first,
    row,
    similarity,
    status_word,
)
from tests.service.conftest import Service
from tests.service.test_web import login

NOW = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC)


def test_age_reads_like_a_person_says_it() -> None:
    assert age("2026-12-01T11:59:30+00:00", NOW) == "just now"
    assert age("2026-12-01T11:48:00+00:00", NOW) == "12 min ago"
    assert age("2026-12-01T09:00:00Z", NOW) == "3 h ago"
    assert age("2026-11-30T11:00:00+00:00", NOW) == "1 day ago"
    assert age("2026-11-28T12:00:00+00:00", NOW) == "3 days ago"
    assert age("not a time", NOW) == "not a time"


def _review(
    rid: str,
    created: str,
    request: dict[str, Any],
    *,
    status: str = "pending",
    outcome: str | None = None,
    draft: dict[str, Any] | None = None,
    evidence: dict[str, Any] | None = None,
    awaiting: bool = False,
) -> Review:
    return Review(
        id=rid,
        status=status,  # type: ignore[arg-type]
        outcome=outcome,
        round=1,
        access_tier="general",
        tiers=["general"],
        requested_by="t",
        created_at=created,
        updated_at=created,
        request=request,
        draft=draft or {},
        evidence=evidence or {},
        excluded_doc_ids=[],
        awaiting_decision=awaiting,
    )


def test_rows_from_an_alert_and_an_anomaly_newest_first() -> None:
    review = _review

    alert = review(
        "rev-a",
        "2026-12-01T11:00:00+00:00",
        {
            "source": "alertmanager",
            "labels": {
                "alertname": "HighLatency",
                "service": "pay",
                "cloud": "aws",
                "region": "us-east-1",
                "severity": "critical",
            },
        },
    )
    anomaly = review(
        "rev-b",
        "2026-12-01T11:50:00+00:00",
        {
            "source": "anomaly",
            "services": ["checkout-api"],
            "signals": ["p99_latency"],
            "labels": {"cloud": "gcp", "region": "europe-west1"},
        },
    )
    rows = newest_first([alert, anomaly], NOW)
    assert [r["review"].id for r in rows] == ["rev-b", "rev-a"]
    assert rows[0] | {"review": None} == {
        "review": None,
        "alert": "anomaly: p99_latency",
        "query": "",
        "service": "checkout-api",
        "where": "gcp/europe-west1",
        "severity": "unrated",
        "age": "10 min ago",
        "verdict": "",
        "p": "",
        "precedent": "",
        "precedent_title": "",
        "status": "drafting",
    }
    assert (rows[1]["alert"], rows[1]["service"], rows[1]["where"], rows[1]["severity"]) == (
        "HighLatency",
        "pay",
        "aws/us-east-1",
        "critical",
    )


def test_the_queue_page_shows_the_alert_it_answers(service: Service, shared_data: Path) -> None:
    firing = json.loads((shared_data / "alertmanager" / "webhook_v4_firing.json").read_text())
    labels = firing["alerts"][0]["labels"]
    assert (
        service.as_("responder", "post", "/v1/alerts/alertmanager", json=firing).status_code == 200
    )
    login(service.client, service.tokens["reviewer"])
    page = service.client.get("/reviews").text
    row = re.search(r'<tr class="review-row".*?</tr>', page, re.S)
    assert row, page[:2000]
    text = row.group(0)
    assert labels["alertname"] in text
    assert (labels.get("service") or labels.get("job")) in text
    assert re.search(r"just now|\d+ min ago", text)


def test_a_typed_query_row_reads_its_first_line_verdict_and_precedent() -> None:
    query = (
        "checkout-api: database connections at the pool limit since the 02:10 deploy, p99 "
        "latency eightfold\nsecond line"
    )
    draft = {
        "verdict": "possible precedent — check",
        "confidence": 0.2637,
        "novel": False,
        "cited_incidents": ["POOL-1", "DNS-1"],
    }
    evidence = {"candidates": [{"doc_id": "POOL-1", "title": "Checkout pool exhaustion"}]}
    text = _review("rev-t", "2026-12-01T11:00:00+00:00", {"query": query, "source": "text"},
                   draft=draft, evidence=evidence, awaiting=True)  # fmt: skip
    got = row(text, NOW)
    # 80 characters at most, cut at a word: through "p99" is 80 already, so "p99" goes too
    assert got["alert"] == (
        "checkout-api: database connections at the pool limit since the 02:10 deploy,…"
    )
    assert len(got["alert"]) == 77 and got["query"] == ""
    assert (got["service"], got["where"]) == ("", "")
    assert (got["verdict"], got["p"], got["status"]) == ("possible precedent — check", "0.26",
                                                          "pending")  # fmt: skip
    assert (got["precedent"], got["precedent_title"]) == ("POOL-1", "Checkout pool exhaustion")
    # an alert shows its name, and the first line of its query beneath
    request = {"query": "HighLatency on pay: p99 over 2 s", "labels": {"alertname": "HighLatency"}}
    alert = _review("rev-a", "2026-12-01T11:00:00+00:00", request)
    assert row(alert, NOW)["query"] == "HighLatency on pay: p99 over 2 s"
    # a no-precedent draft names no precedent (its neighbours are not matches)
    none = _review("rev-n", "2026-12-01T11:00:00+00:00", {"query": "q"},
                   draft={"verdict": "no precedent", "novel": True, "confidence": 0.01,
                          "cited_incidents": []}, evidence=evidence)  # fmt: skip
    assert (row(none, NOW)["verdict"], row(none, NOW)["precedent"]) == ("no precedent", "")


def test_one_status_word_and_relative_similarity() -> None:
    def word(status: str, outcome: str | None = None, awaiting: bool = False) -> str:
        return status_word(_review("r", "2026-12-01T11:00:00+00:00", {}, status=status,
                                   outcome=outcome, awaiting=awaiting))  # fmt: skip

    assert word("pending", awaiting=True) == "pending"
    assert word("pending") == "drafting"
    assert word("approved", "approved") == "approved"  # not "approved approved"
    assert word("closed", "alert_resolved") == "resolved"
    assert word("closed", "no_precedent") == "closed"
    # raw RRF 0.0164 and 0.0161 over a top of 0.0164: 1.00 and 0.98
    assert (similarity(0.0164, 0.0164), similarity(0.0161, 0.0164)) == (1.0, 0.98)
    assert similarity(0.01, 0.0) == 0.0
    assert first_line("\n\n  a   b \n c") == "a b"
    assert first_line("x" * 100) == "x" * 79 + "…"


def test_queue_rows_and_review_page_read_at_a_glance(service: Service) -> None:
    text = "checkout database connections at the pool limit\nmore detail on a second line"
    rid = service.as_("responder", "post", "/v1/investigations", json={"text": text}).json()["id"]
    login(service.client, service.tokens["reviewer"])
    page = service.client.get("/reviews").text
    found = re.search(rf'<tr class="review-row" data-review="{rid}".*?</tr>', page, re.S)
    assert found, page[:2000]
    cells = re.sub(r"<[^>]+>", "|", found.group(0))
    # the query's first line (whitespace folded) is the row's name; never the word "text"
    assert "checkout database connections at the pool limit more detail" in cells
    assert "|text|" not in cells
    assert re.search(r"(precedent found|possible precedent — check)\|\s*\|p 0\.\d\d\|", cells)
    assert "POOL-1" in cells and "|pending|" in cells
    review = service.client.get(f"/reviews/{rid}").text
    # Decide comes before the draft and the evidence; similarity is relative, 1.00 for the top
    assert review.index('id="decide"') < review.index('id="draft"') < review.index('id="evidence"')
    assert re.search(r'class="similarity"[^>]*>1\.00<', review)
    assert "· score" not in review  # the raw fused score is only a tooltip
