"""The failure-mode signals: ``mode_match`` keeps one meaning whether the query is a pager line
(its probability spread over every mode) or a paragraph that names one."""

from __future__ import annotations

import math
from collections.abc import Mapping

import pytest

from seenbefore.retrieval.features import mode_lift, mode_signals
from seenbefore.types import Postmortem


class Reader:
    def __init__(self, query: Mapping[str, float], docs: Mapping[str, tuple[str, float]]):
        self.query, self.docs = query, docs

    def of_document(self, pm: Postmortem) -> tuple[str, float]:
        return self.docs.get(pm.id, ("", 0.0))

    def of_query(self, text: str) -> Mapping[str, float]:
        return self.query


def pm(doc_id: str) -> Postmortem:
    return Postmortem(id=doc_id, title=doc_id, date=None, body="", sections=())


def test_an_even_share_is_no_evidence_and_certainty_is_full() -> None:
    assert mode_lift(1 / 28, 28) == pytest.approx(0.0)
    assert mode_lift(0.01, 28) == 0.0  # below an even share: clipped, never negative
    assert mode_lift(1.0, 28) == pytest.approx(1.0)
    assert mode_lift(0.0, 28) == 0.0
    assert mode_lift(0.5, 1) == 0.0  # one mode tells nothing


def test_the_lift_grows_with_the_query_probability() -> None:
    values = [mode_lift(q, 28) for q in (0.05, 0.1, 0.3, 0.9)]
    assert values == sorted(values) and len(set(values)) == 4
    assert mode_lift(0.1, 28) == pytest.approx(math.log(2.8) / math.log(28))


def test_mode_match_is_the_lift_times_the_documents_probability() -> None:
    query = {"dns": 0.6, **{f"m{i}": 0.4 / 27 for i in range(27)}}
    reader = Reader(query, {"a": ("dns", 0.8), "b": ("m0", 0.9)})
    got = mode_signals(reader, "q", [pm("a"), pm("b")])
    assert got["mode_match"] == pytest.approx(mode_lift(0.6, 28) * 0.8)
    other = mode_signals(reader, "q", [pm("b"), pm("a")])
    assert other["mode_match"] == 0.0  # the query gives m0 less than an even share


def test_an_unknown_top_mode_matches_nothing() -> None:
    reader = Reader({"dns": 1.0}, {})
    assert mode_signals(reader, "q", [pm("a")])["mode_match"] == 0.0


def test_a_query_that_plainly_names_another_mode_is_evidence_of_absence() -> None:
    n = 28
    pool = {"connection-pool-exhaustion": 0.9, **{f"m{i}": 0.1 / (n - 1) for i in range(n - 1)}}
    reader = Reader(pool, {"cert": ("certificate-expiry", 0.95)})
    got = mode_signals(reader, "q", [pm("cert")])
    assert got["mode_consistency"] == pytest.approx(1.0 - mode_lift(0.9, n) * 0.95)
    assert got["mode_consistency"] < 0.2


def test_a_vague_query_contradicts_nothing() -> None:
    n = 28
    even = {f"m{i}": 1.0 / n for i in range(n)}
    reader = Reader(even, {"cert": ("m3", 0.95)})
    assert mode_signals(reader, "q", [pm("cert")])["mode_consistency"] == pytest.approx(1.0)


def test_a_query_that_names_the_top_documents_mode_too_is_not_contradicted() -> None:
    n = 28
    both = {"dns": 0.5, "deploy": 0.45, **{f"m{i}": 0.05 / (n - 2) for i in range(n - 2)}}
    reader = Reader(both, {"a": ("dns", 0.9), "b": ("cert", 0.9)})
    named = mode_signals(reader, "q", [pm("a")])["mode_consistency"]
    other = mode_signals(reader, "q", [pm("b")])["mode_consistency"]
    assert named > other  # the query names dns: a dns top is less contradicted than a cert one
    assert named == pytest.approx(1.0 - mode_lift(0.45, n) * 0.9 * (1.0 - mode_lift(0.5, n)))


def test_an_unknown_top_mode_or_no_result_is_not_contradicted() -> None:
    # 0 for "no result" would teach a KB whose modes are all unknown that it means "a result"
    reader = Reader({"dns": 1.0, "cert": 0.0}, {})
    assert mode_signals(reader, "q", [pm("a")])["mode_consistency"] == 1.0
    assert mode_signals(reader, "q", [])["mode_consistency"] == 1.0
