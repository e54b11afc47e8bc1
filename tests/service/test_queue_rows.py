"""The review queue names each page: alert, service, cloud/region, severity, age; newest first."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

from seenbefore.service.queue_rows import age, newest_first
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


def test_rows_from_an_alert_and_an_anomaly_newest_first() -> None:
    from seenbefore.review.models import Review

    def review(rid: str, created: str, request: dict[str, Any]) -> Review:
        return Review(
            id=rid,
            status="pending",
            round=1,
            access_tier="general",
            tiers=["general"],
            requested_by="t",
            created_at=created,
            updated_at=created,
            request=request,
            draft={},
            evidence={},
            excluded_doc_ids=[],
        )

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
        "service": "checkout-api",
        "where": "gcp/europe-west1",
        "severity": "unrated",
        "age": "10 min ago",
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
