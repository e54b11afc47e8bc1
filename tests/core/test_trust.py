from seenbefore.core.trust import (
    MIN_CORPUS_SIZE_FOR_LSA,
    FusionWeights,
    choose_weight,
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


def test_choose_weight_keeps_dense_only_when_held_out_improves() -> None:
    # metric peaks at 0.4 on both splits -> kept
    helps = choose_weight([1], [2], lambda w, cases: 1 - abs(w - 0.4))
    assert helps.dense == 0.4 and "held-out" in helps.source

    # best on fit at 0.6 but held-out says sparse-only is better -> weight 0, said so
    def overfit(w: float, cases: list[int]) -> float:
        return 1 - abs(w - 0.6) if cases == [1] else 1 - w

    hurts = choose_weight([1], [2], overfit)
    assert hurts.dense == 0.0 and "did not beat sparse-only" in hurts.source
    assert hurts.evidence["chosen_on_fit"] == 0.6
    flat = choose_weight([1], [2], lambda w, cases: 0.5)
    assert flat.dense == 0.0 and "sparse-only was best" in flat.source


def test_cross_validated_choice_reports_held_out_folds() -> None:
    from seenbefore.core.trust import choose_weight_cv

    # every case prefers weight 0.3: kept, with per-fold evidence
    helps = choose_weight_cv(list(range(10)), lambda w, cases: -abs(w - 0.3) * len(cases), folds=5)
    assert helps.dense == 0.3 and helps.evidence["chosen_per_fold"] == [0.3] * 5
    assert "5-fold held-out" in helps.source

    # half the cases prefer 0.8, half prefer sparse-only: no held-out gain, so weight 0
    def split_taste(w: float, cases: list[int]) -> float:
        return sum(-abs(w - (0.8 if c % 2 else 0.0)) for c in cases) / len(cases)

    hurts = choose_weight_cv(list(range(10)), split_taste, folds=5)
    assert hurts.dense == 0.0 and "does not help" in hurts.source
