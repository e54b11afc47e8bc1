"""Per-field caps on Alertmanager alerts (issue 12): the same caps in the service and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

from seenbefore.cli.investigate import requests_from
from seenbefore.security.alert_caps import (
    MAX_DESCRIPTION_CHARS,
    MAX_LABELS,
    MAX_SUMMARY_CHARS,
    cap_alert,
    cap_webhook,
    truncate,
)


def test_truncate_marks_the_cut_with_both_lengths() -> None:
    assert truncate("abcdef", 6) == ("abcdef", False)
    assert truncate("abcdefgh", 3) == ("abc… [truncated 8 → 3 chars]", True)
    text, cut = truncate("x" * 1_048_576, 10_000)
    assert cut and text == "x" * 10_000 + "… [truncated 1,048,576 → 10,000 chars]"


def test_cap_alert_cuts_each_field_and_says_which() -> None:
    labels = {f"l{i:03d}": "v" for i in range(MAX_LABELS + 6)}
    labels["service"] = "s" * 5_000
    alert = {
        "status": "firing",
        "labels": labels,
        "annotations": {"summary": "a" * 3_000, "description": "short", "runbook": "r" * 9},
        "fingerprint": "f" * 300,
    }
    capped = cap_alert(alert, 2)
    out = capped.alert
    assert out["annotations"]["summary"] == "a" * MAX_SUMMARY_CHARS + (
        "… [truncated 3,000 → 2,000 chars]"
    )
    assert out["annotations"]["description"] == "short"
    assert len(out["labels"]) == MAX_LABELS
    assert out["fingerprint"].startswith("f" * 200 + "… [truncated 300 → 200")
    assert capped.truncated == (
        f"alerts[2].labels ({MAX_LABELS + 7} → {MAX_LABELS} labels)",
        "alerts[2].annotations.summary",
        "alerts[2].fingerprint",
    )
    assert alert["annotations"]["summary"] == "a" * 3_000  # the caller's dict is untouched


def test_the_cli_applies_the_same_caps(tmp_path: Path) -> None:
    path = tmp_path / "alert.json"
    description = "d" * (MAX_DESCRIPTION_CHARS + 1)
    path.write_text(
        json.dumps(
            {
                "version": "4",
                "alerts": [
                    {
                        "status": "firing",
                        "labels": {"alertname": "Big", "service": "checkout-api"},
                        "annotations": {"summary": "pool exhausted", "description": description},
                    }
                ],
            }
        )
    )
    (request,) = requests_from(None, path, None)
    mark = f"… [truncated {MAX_DESCRIPTION_CHARS + 1:,} → {MAX_DESCRIPTION_CHARS:,} chars]"
    assert mark in request.query
    assert request.query.startswith("pool exhausted. ddd")
    assert len(request.query) < 10_000
    payload, capped = cap_webhook(json.loads(path.read_text()))
    assert capped[0].truncated == ("alerts[0].annotations.description",)
    assert payload["alerts"][0]["annotations"]["description"].endswith(mark)
