"""Fuzz (issue 12): hostile bodies at every HTTP route that reads one (search, investigations,
anomalies, postmortem POST and PUT, review approve and dismiss): 1,000 generated bodies spread
over the routes. No answer is a 5xx or carries a traceback, every error is problem+json,
nothing is logged as an unhandled error, and the known-good postmortems read back
byte-identical afterwards."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import postmortem_text
from tests.depth import examples
from tests.fuzz.http_door import Door, bodies, door, no_logged_tracebacks, values
from tests.fuzz.strategies import FUZZ_BASE

__all__ = ["door"]  # the module fixture

PER_EXAMPLE = 20
EXAMPLES = examples(50)  # 50 x 20 = 1,000 bodies, spread over the routes below

markdown = st.one_of(
    st.text(max_size=300),
    st.builds(
        lambda i, t, tier, body: postmortem_text(i, title=t, body=body, access_tier=tier),
        st.sampled_from(["POOL-1", "VAULT-1", "FUZZ-1", "fuzz 2", ""]),
        st.text(max_size=20),
        st.sampled_from(["general", "restricted", "[]", "''"]),
        st.text(max_size=80),
    ),
)
Route = tuple[str, str]  # method, path
ENTRY_POINTS: dict[str, tuple[str, list[Route], dict[str, st.SearchStrategy[Any]]]] = {
    "search": (
        "viewer",
        [("post", "/v1/search")],
        {
            "query": st.text(max_size=40) | values,
            "k": st.integers(-5, 80) | values,
            "mode": st.sampled_from(["hybrid", "sparse", "dense", "x"]) | values,
            "services": st.lists(st.text(max_size=10), max_size=3) | values,
            "since": st.sampled_from(["2024-01-01", "2030-01-01", "x"]) | values,
            "until": st.sampled_from(["2020-01-01", "2024-12-31"]) | values,
            "include_superseded": st.booleans() | values,
        },
    ),
    "investigations": (
        "responder",
        [("post", "/v1/investigations")],
        {
            # mostly not a usable text: each valid one runs a whole investigation
            "text": values | values | values | st.text(max_size=30),
            "severity": st.sampled_from(["SEV1", "SEV9"]) | values,
            "services": values,
        },
    ),
    "anomalies": (
        "responder",
        [("post", "/v1/anomalies")],
        {
            "id": values,
            "service": values,
            "start": st.sampled_from(["2026-01-01T00:00:00Z", "x"]) | values,
            "end": st.sampled_from(["2026-01-01T00:05:00Z"]) | values,
            "score": st.floats(-1, 2) | values,
            "deviations": st.lists(values, max_size=3),
        },
    ),
    "postmortem-writes": (
        "admin",
        [("post", "/v1/postmortems"), ("put", "/v1/postmortems/FUZZ-1")],
        {"markdown": markdown | values},
    ),
    "review-decisions": (
        "reviewer",
        [
            ("post", "/v1/reviews/rev-000000000000/dismiss"),
            ("post", "/v1/reviews/rev-000000000000/approve"),
        ],
        {
            "reason": st.sampled_from(["wrong_precedent", "other", "no"]) | values,
            "note": st.text(max_size=40) | values,
            "edits": values,
        },
    ),
}


def _request(name: str) -> st.SearchStrategy[tuple[str, str, str, bytes]]:
    who, routes, fields = ENTRY_POINTS[name]
    return st.tuples(st.just(who), st.sampled_from(routes), bodies(fields)).map(
        lambda t: (t[0], t[1][0], t[1][1], t[2])
    )


requests = st.sampled_from(sorted(ENTRY_POINTS)).flatmap(_request)


def test_no_body_breaks_an_entry_point(door: Door, caplog: pytest.LogCaptureFixture) -> None:
    before = door.known_good()
    sent: dict[str, int] = {}

    @settings(FUZZ_BASE, max_examples=EXAMPLES)
    @given(batch=st.lists(requests, min_size=PER_EXAMPLE, max_size=PER_EXAMPLE))
    def check(batch: list[tuple[str, str, str, bytes]]) -> None:
        for who, method, url, body in batch:
            door.post(who, url, body, method=method)
            sent[url] = sent.get(url, 0) + 1

    with caplog.at_level(logging.WARNING):
        check()
    no_logged_tracebacks(caplog.records)
    assert sum(sent.values()) >= examples(1_000)
    assert len(sent) == sum(len(routes) for _, routes, _ in ENTRY_POINTS.values())
    assert door.known_good() == before
