"""``another_failure``: the evidence of absence the failure modes give, in words, on every
surface (CLI, HTTP, web, MCP) -- and only where both modes are known and differ."""

from __future__ import annotations

from typing import Any

from seenbefore.core.confidence import FOUND, NONE, POSSIBLE
from seenbefore.retrieval.output import another_failure


def mode(slug: str, *, inferred: bool = False, p: float = 1.0) -> dict[str, Any]:
    return {"slug": slug, "inferred": inferred, "p": p, "known": not inferred or p >= 0.5}


POOL = mode("connection-pool-exhaustion", inferred=True, p=0.77)
CERT = mode("certificate-expiry")


def test_a_query_that_names_another_failure_than_the_first_postmortem_is_told_so() -> None:
    line = another_failure(POSSIBLE, POOL, CERT)
    assert line == (
        "the query reads as connection-pool-exhaustion (inferred, p 0.77); the first "
        "postmortem is certificate-expiry: another failure"
    )
    assert another_failure(NONE, POOL, CERT) == line
    inferred = mode("certificate-expiry", inferred=True, p=0.62)  # an untyped postmortem's
    assert another_failure(POSSIBLE, POOL, inferred) == line.replace(
        "is certificate-expiry:", "is certificate-expiry (inferred, p 0.62):"
    )


def test_nothing_is_said_where_a_mode_is_unknown_they_agree_or_the_verdict_is_found() -> None:
    assert another_failure(POSSIBLE, POOL, mode("connection-pool-exhaustion")) is None
    assert another_failure(POSSIBLE, POOL, mode("certificate-expiry", inferred=True, p=0.3)) is None
    vague = mode("rate-limiting", inferred=True, p=0.04)
    assert another_failure(NONE, vague, CERT) is None  # a vague query names nothing
    assert another_failure(POSSIBLE, None, CERT) is None
    assert another_failure(POSSIBLE, POOL, None) is None
    assert another_failure(FOUND, POOL, CERT) is None
    assert another_failure(None, POOL, CERT) is None  # an unscored search
