"""Triage's dedupe and flapping memory survives a restart (``watch --prometheus`` saves it with the
detectors' state): a repeat of an anomaly already reported merges into it instead of being
reported again, and the saved anomaly keeps every field (rules and their severities included)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json

from seenbefore.detection.triage import Triage
from seenbefore.types import Anomaly, MetricDeviation, anomaly_from_dict, anomaly_to_dict

T0 = dt.datetime(2026, 12, 1, 3, 0, tzinfo=dt.UTC)


def anomaly(start_min: int, id_: str) -> Anomaly:
    return Anomaly(
        id=id_,
        service="checkout-api",
        cloud="aws",
        region="us-east-1",
        start=T0 + dt.timedelta(minutes=start_min),
        end=T0 + dt.timedelta(minutes=start_min + 5),
        score=0.8,
        deviations=(MetricDeviation("p99_latency", "up", 900.0, 120.0, 9.1, "ms"),),
        rules=("latency-high",),
        rules_severity=("SEV2",),
    )


def test_a_restarted_triage_merges_a_repeat_it_reported_before_the_restart() -> None:
    first = Triage()
    assert [a.id for a in first.process([anomaly(0, "a1")]).kept] == ["a1"]
    saved = json.loads(json.dumps(first.to_state()))  # through the state file's JSON
    resumed = Triage.from_state(saved)
    again = resumed.process([anomaly(20, "a2")])  # within the 30-minute dedupe window
    assert again.kept == [] and again.duplicates[0][1] == "a1"
    # without the saved memory the repeat would be reported a second time
    assert [a.id for a in Triage().process([anomaly(20, "a2")]).kept] == ["a2"]
    # an unreadable or other-version state starts afresh: a repeat is reported, never hidden
    assert Triage.from_state({"version": 99}).process([anomaly(20, "a3")]).kept


def test_the_anomaly_json_form_keeps_every_field() -> None:
    original = dataclasses.replace(anomaly(0, "a1"), severity="SEV2", truth_kind="pool")
    assert anomaly_from_dict(json.loads(json.dumps(anomaly_to_dict(original)))) == original
