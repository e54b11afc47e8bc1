from seenbefore.core.trust import (
    MIN_CORPUS_SIZE_FOR_LSA,
    FusionWeights,
    decide,
)

DEFAULT = FusionWeights(0.3, "shipped default")


def test_lsa_floor_at_49_and_50_documents() -> None:
    below = decide(
        embedder_name="lsa-128", is_lsa=True, corpus_documents=49, measured=None, default=DEFAULT
    )
    assert MIN_CORPUS_SIZE_FOR_LSA == 50
    assert not below.dense_trusted and below.weights.dense == 0.0
    assert "49 documents" in below.reason and "sparse-only" in below.reason
    at = decide(
        embedder_name="lsa-128", is_lsa=True, corpus_documents=50, measured=None, default=DEFAULT
    )
    assert at.dense_trusted and at.weights.dense == 0.3


def test_minilm_is_not_exempt_from_measurement() -> None:
    hurt = FusionWeights(0.0, "measured: dense does not help")
    gate = decide(
        embedder_name="all-MiniLM-L6-v2",
        is_lsa=False,
        corpus_documents=10,
        measured=hurt,
        default=DEFAULT,
    )
    assert not gate.dense_trusted and "does not help" in gate.reason
    small = decide(
        embedder_name="all-MiniLM-L6-v2",
        is_lsa=False,
        corpus_documents=10,
        measured=None,
        default=DEFAULT,
    )
    assert small.dense_trusted  # the floor applies to LSA only; MiniLM follows measurement
