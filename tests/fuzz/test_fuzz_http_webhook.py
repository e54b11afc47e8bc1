"""Fuzz (issue 12): hostile Alertmanager webhook payloads. At least 1,000 generated payloads:
no answer is a 5xx or carries a traceback, a refused batch (4xx) started no investigation (the
batch is validated whole first), an answer never carries an alert field longer than its cap,
and the known-good postmortems read back byte-identical afterwards."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seenbefore.security.alert_caps import MAX_DESCRIPTION_CHARS
from tests.depth import examples
from tests.fuzz.http_door import Door, door, no_logged_tracebacks, raw, values
from tests.fuzz.strategies import FUZZ_BASE

__all__ = ["door"]  # the module fixture

PER_EXAMPLE = 20
EXAMPLES = examples(50)  # 1,000 payloads
FINGERPRINTS = ["f1", "f2", "f3"]  # mostly known keys: a re-delivery starts nothing new

text = st.one_of(st.text(max_size=40), st.sampled_from(["pool exhausted", "", " "]), values)
alert = st.fixed_dictionaries(
    {},
    optional={
        "status": st.sampled_from(["firing", "resolved", "pending", ""]) | values,
        "labels": st.dictionaries(st.text(max_size=8), st.text(max_size=20), max_size=4) | values,
        "annotations": st.fixed_dictionaries(
            {}, optional={"summary": text, "description": text | st.just("d" * 7000)}
        )
        | values,
        "startsAt": st.sampled_from(["2026-11-30T00:11:42Z", "not a time", ""]) | values,
        "fingerprint": st.sampled_from(FINGERPRINTS) | st.text(max_size=6) | values,
        "generatorURL": st.text(max_size=20) | values,
    },
)
webhook = st.fixed_dictionaries(
    {},
    optional={
        "version": st.sampled_from(["4", "3", 4]) | values,
        "status": text,
        "receiver": text,
        "groupKey": text,
        "alerts": st.lists(alert, max_size=4) | values,
    },
)
payloads = st.one_of(raw, webhook.map(json.dumps).map(str.encode))


def _longest_string(value: Any) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return max([0, *(_longest_string(v) for v in value.values())])
    if isinstance(value, list):
        return max([0, *(_longest_string(v) for v in value)])
    return 0


def test_no_payload_breaks_the_webhook(door: Door, caplog: pytest.LogCaptureFixture) -> None:
    before = door.known_good()
    sent = door.sent

    @settings(FUZZ_BASE, max_examples=EXAMPLES)
    @given(batch=st.lists(payloads, min_size=PER_EXAMPLE, max_size=PER_EXAMPLE))
    def check(batch: list[bytes]) -> None:
        for body in batch:
            reviews = door.reviews()
            out = door.post("responder", "/v1/alerts/alertmanager", body)
            if out.status_code >= 400:
                assert door.reviews() == reviews, out.text  # nothing of a refused batch started
            else:
                for started in out.json()["started"]:
                    review = door.client.get(
                        f"/v1/investigations/{started['investigation_id']}",
                        headers={"Authorization": f"Bearer {door.tokens['responder']}"},
                    ).json()
                    assert _longest_string(review["request"]) < MAX_DESCRIPTION_CHARS + 200

    with caplog.at_level(logging.WARNING):
        check()
    no_logged_tracebacks(caplog.records)
    assert door.sent - sent >= examples(1_000)
    assert door.known_good() == before
