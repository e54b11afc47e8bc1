"""Words that say where an alert fired (service, cloud, region) or how much (measured values) are
weighed down in alert-style queries, so the failure evidence decides the ranking
(retrieval/identity.py)."""

from __future__ import annotations

import math
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from seenbefore.cli.explain import describe_weights
from seenbefore.config import Settings
from seenbefore.core.confidence import NONE
from seenbefore.core.trust import FusionWeights, GateDecision
from seenbefore.errors import InputError
from seenbefore.kb import KnowledgeBase
from seenbefore.retrieval.bm25 import BM25Index
from seenbefore.retrieval.embedders import load_neural_embedder
from seenbefore.retrieval.identity import (
    IDENTITY_WEIGHT,
    ServiceNames,
    alert_style,
    pair_weights,
    query_weights,
)
from seenbefore.retrieval.plan import SearchOptions, plan_query
from seenbefore.types import SearchFilters
from tests.conftest import EXAMPLES, untyped_examples

POOL_QUERY = (
    "payments-api (aws/us-east-1): db_connections_in_use at 100% of pool, p99 latency 8x "
    "baseline, error rate 12%, CPU normal"
)
# the sample KB's current connection-pool-exhaustion postmortems
POOL_DOCS = {"INC-2021-006", "INC-2023-019", "INC-2024-026", "INC-2025-032"}
SERVICES = ServiceNames(["payments-api", "orders-db", "ledger-service"])
W = IDENTITY_WEIGHT


def test_identity_words_of_an_alert_are_weighed_down() -> None:
    weights = query_weights(
        "payments-api (aws/us-east-1): db_connections_in_use at 100% of pool, p99 latency 8x "
        "baseline",
        SERVICES,
    )
    assert weights.alert == ("db_connections_in_use", "(aws/us-east-1)")
    assert weights.weights == {
        "payments": W,
        "api": W,
        "aws": W,
        "us": W,
        "east": W,
        "1": W,
        "100": W,  # "100%": a measured value
        "8x": W,
    }
    assert {d.term: d.why for d in weights.downweighted} == {
        "payments": "service payments-api",
        "api": "service payments-api",
        "aws": "cloud",
        "us": "region us-east-1",
        "east": "region us-east-1",
        "1": "region us-east-1",
        "100": "measured value",
        "8x": "measured value",
    }
    assert weights.of("pool") == 1.0 and weights.of("db") == 1.0 and weights.of("p99") == 1.0
    # the dense model reads the metric name as words; the rest of the text is as typed
    assert weights.dense_text == (
        "payments-api (aws/us-east-1): db connections in use at 100% of pool, p99 latency 8x "
        "baseline"
    )


def test_a_query_of_identity_words_alone_keeps_every_weight() -> None:
    weights = query_weights("payments-api (aws/us-east-1)", SERVICES)
    assert weights.alert == ("(aws/us-east-1)",)
    assert weights.weights == {}
    assert [(d.term, d.weight) for d in weights.kept] == [
        ("payments", 1.0),
        ("api", 1.0),
        ("aws", 1.0),
        ("us", 1.0),
        ("east", 1.0),
        ("1", 1.0),
    ]


def test_prose_keeps_every_weight() -> None:
    text = "We are seeing elevated errors on payments-api in AWS us-east-1 since 14:00."
    weights = query_weights(text, SERVICES)
    assert alert_style(text) == ()
    assert weights.weights == {} and weights.downweighted == ()
    assert weights.dense_text == text


def test_a_word_used_outside_the_service_name_is_evidence() -> None:
    weights = query_weights("orders-db: db_connections_in_use high, db pool exhausted", SERVICES)
    assert weights.weights == {"orders": W}  # "db" is the service's and the failure's


def test_a_service_only_hidden_documents_list_is_not_recognised() -> None:
    text = "payments-api: db_connections_in_use high"
    assert query_weights(text, SERVICES, visible=lambda name: False).weights == {}
    assert query_weights(text, SERVICES, visible=lambda name: True).weights == {
        "payments": W,
        "api": W,
    }


def test_a_pager_line_headed_by_a_known_service_is_alert_style() -> None:
    aws = ServiceNames(["amazon-elastic-compute-cloud-n-virginia", "amazon-cloudwatch-oregon"])
    # the head is a known name, or the start of one, with its place in brackets
    weights = query_weights("Amazon Elastic Compute Cloud (London): Increased API Error Rates", aws)
    assert weights.alert == ("Amazon Elastic Compute Cloud (London)",)
    assert weights.weights == dict.fromkeys(["amazon", "elastic", "compute", "cloud", "london"], W)
    # its service still ranks (a recurrence on the same service first); the coverage the
    # verdict reads weighs it down
    assert weights.ranking == {} and not weights.ranked
    metric = query_weights(POOL_QUERY, SERVICES)
    assert metric.ranked and metric.ranking == metric.weights != {}
    assert query_weights("payments-api: p99 above 2 s", SERVICES).weights == {
        "payments": W,
        "api": W,
        "2": W,  # "2 s": a measured value
        "s": W,
    }
    # a colon after anything else is prose; so is a known service named after the colon
    assert query_weights("Note: the pool is exhausted", SERVICES).alert == ()
    assert query_weights("Update: payments-api pool exhausted", SERVICES).alert == ()
    assert query_weights("Amazon Route 53: DNS resolution failures", aws).alert == ()


def test_bare_numbers_and_constants_are_left_alone() -> None:
    weights = query_weights("checkout-api: error_rate up, HTTP 503, errno 110", SERVICES)
    assert weights.alert == ("error_rate",)
    assert weights.weights == {}  # checkout-api is unknown here; 503 and 110 are evidence
    assert alert_style("We are investigating INSUFFICIENT_DATA alarms in US-EAST-1") == ()


def test_weight_one_turns_the_weighing_off() -> None:
    assert query_weights(POOL_QUERY, SERVICES, weight=1.0).weights == {}


def test_pairs_weigh_as_their_lighter_word() -> None:
    words = ["payments", "api", "db", "pool"]
    weights = query_weights("payments-api: db_pool", SERVICES)
    assert weights.weights == {"payments": W, "api": W}
    pairs = ["payments api", "api db", "db pool"]
    assert pair_weights(pairs, words, words, weights) == {"payments api": W, "api db": W}


# -- the weights in BM25 ------------------------------------------------------------------------
def _index() -> BM25Index:
    # three rows of two words: every row's length is the average, so a word found once scores
    # idf * (k1 + 1) / (1 + k1) = idf
    return BM25Index.build(["pool exhausted", "pool payments", "dns payments"])


def test_a_weight_multiplies_the_words_contribution() -> None:
    index = _index()
    idf = math.log(1.0 + (3 - 2 + 0.5) / (2 + 0.5))  # pool and payments: df 2 of 3 = ln 1.6
    plain = index.scores(["payments", "pool"], None)
    weighted = index.scores(["payments", "pool"], None, {"payments": 0.1})
    assert plain.tolist() == pytest.approx([idf, 2 * idf, idf], rel=1e-6)
    assert weighted.tolist() == pytest.approx([idf, 1.1 * idf, 0.1 * idf], rel=1e-6)


def test_coverage_counts_each_word_at_its_weight() -> None:
    index = _index()
    terms = ["payments", "pool"]  # equal IDF
    assert index.coverage(terms, 2) == pytest.approx(0.5)
    assert index.coverage(terms, 2, {"payments": 0.1}) == pytest.approx(0.1 / 1.1)
    assert index.coverage(terms, 0, {"payments": 0.1}) == pytest.approx(1.0 / 1.1)
    # a word no row holds counts at the IDF it would have, times its weight
    unseen = math.log(1.0 + 3.5 / 0.5)
    expected = 1.0 * math.log(1.6) / (math.log(1.6) + 0.1 * unseen)
    assert index.coverage(["pool", "8x"], 0, {"8x": 0.1}) == pytest.approx(expected)


def test_the_identity_weight_is_checked() -> None:
    gate = GateDecision(False, FusionWeights(0.0, "test"), "test")
    assert plan_query(SearchOptions(), gate).identity_weight == IDENTITY_WEIGHT
    assert plan_query(SearchOptions(identity_weight=1.0), gate).identity_weight == 1.0
    with pytest.raises(InputError, match=r"identity weight is 1\.5, expected 0\.\.1"):
        plan_query(SearchOptions(identity_weight=1.5), gate)


# -- the sample knowledge base ------------------------------------------------------------------
@pytest.fixture(scope="module", params=["typed", "untyped"])
def sample_kb(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KnowledgeBase]:
    root = tmp_path_factory.mktemp(f"sample-{request.param}")
    docs = EXAMPLES if request.param == "typed" else untyped_examples(root / "docs")
    with KnowledgeBase(Settings(home=root / "home", embedder="none")) as kb:
        kb.ingest([docs])
        yield kb
    shutil.rmtree(root, ignore_errors=True)


def test_the_pool_alert_ranks_a_pool_exhaustion_first_by_keywords(sample_kb: KnowledgeBase) -> None:
    filters = SearchFilters(tiers=("general",))
    result = sample_kb.search(POOL_QUERY, filters, SearchOptions(k=5, mode="sparse"))
    assert result.candidates[0].doc_id in POOL_DOCS, [c.doc_id for c in result.candidates]
    assert {d.term for d in result.query_weights.downweighted} >= {"payments", "api", "aws"}
    explained = result.explain()["query_weights"]
    assert explained["downweighted"]["payments"] == {"weight": W, "why": "service payments-api"}
    # before: where the alert fired outweighed what failed
    weighed_equally = sample_kb.search(
        POOL_QUERY, filters, SearchOptions(k=5, mode="sparse", identity_weight=1.0)
    )
    assert weighed_equally.candidates[0].doc_id not in POOL_DOCS


def test_explain_says_which_words_were_weighed_down_and_why() -> None:
    lines = describe_weights(query_weights(POOL_QUERY, SERVICES), POOL_QUERY)
    assert "alert-style (db_connections_in_use, (aws/us-east-1))" in lines[0]
    assert f"weighed down x{W:g}" in lines[0]
    assert "payments, api (service payments-api)" in lines[0]
    assert "us, east, 1 (region us-east-1)" in lines[0]
    assert lines[1] == (
        "[bold]dense embeds[/]: payments-api (aws/us-east-1): db connections in use at 100% "
        "of pool, p99 latency 8x baseline, error rate 12%, CPU normal"
    )
    assert "prose, every word weighs 1" in describe_weights(query_weights("pods OOMKilled"), "x")[0]


@pytest.mark.slow
@pytest.mark.parametrize("typed", [True, False])
def test_the_pool_alert_ranks_a_pool_exhaustion_first_with_minilm(
    tmp_path: Path, typed: bool
) -> None:
    if load_neural_embedder() is None:
        pytest.skip("MiniLM is not available here")
    docs = EXAMPLES if typed else untyped_examples(tmp_path / "docs")
    with KnowledgeBase(Settings(home=tmp_path / "home", embedder="minilm")) as kb:
        kb.ingest([docs])
        result = kb.search(POOL_QUERY, SearchFilters(tiers=("general",)), SearchOptions(k=5))
    assert result.weights["dense"] > 0  # the default mode, dense voting
    assert result.candidates[0].doc_id in POOL_DOCS, [c.doc_id for c in result.candidates]
    if typed:
        assert result.verdict != NONE, (result.confidence, result.signals)


def test_paths_and_addresses_are_not_metric_names() -> None:
    assert alert_style("db_connections_in_use.") == ("db_connections_in_use",)
    assert alert_style("see https://example.com/you_broke_reddit for the story") == ()
    assert alert_style("resolving host_name.example.com failed") == ()


def test_the_verdict_uses_the_thresholds_of_the_querys_shape(sample_kb: KnowledgeBase) -> None:
    filters = SearchFilters(tiers=("general",))
    options = SearchOptions(k=5, mode="sparse")
    model = sample_kb.confidence_model("sparse")
    assert model is not None and set(model.shapes) == {"alert", "prose"}  # self-calibrated
    for text, shape in (
        (POOL_QUERY, "alert"),
        ("payments-api: connection pool exhausted, requests queueing", "alert"),
        ("We are investigating elevated latency on payments and a full connection pool", "prose"),
    ):
        result = sample_kb.search(text, filters, options)
        fit = result.confidence_model_fit
        assert fit is not None and fit.shape == shape, text
        assert (fit.lo, fit.hi) == model.shapes[shape]
        assert result.verdict == model.for_shape(shape).verdict(result.confidence, None) or (
            result.verdict == "possible precedent — check"  # "found" needs 2 shared words
        )
        assert result.explain()["confidence_model_fit"]["thresholds_for"] == shape
