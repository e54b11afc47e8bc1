from seenbefore.calibration.weights import pick_weight, pick_weight_cv


def test_pick_keeps_dense_only_when_held_out_improves() -> None:
    # metric peaks at 0.4 on both splits -> kept
    helps, kept = pick_weight([1], [2], lambda w, cases: 1 - abs(w - 0.4))
    assert kept and helps.dense == 0.4 and "held-out" in helps.source

    # best on fit at 0.6 but held-out says sparse-only is better -> weight 0, said so
    def overfit(w: float, cases: list[int]) -> float:
        return 1 - abs(w - 0.6) if cases == [1] else 1 - w

    hurts, kept = pick_weight([1], [2], overfit)
    assert not kept and hurts.dense == 0.0 and "dense does not help" in hurts.source
    assert hurts.evidence["chosen_on_fit"] == 0.6
    flat, kept = pick_weight([1], [2], lambda w, cases: 0.5)
    assert not kept and flat.dense == 0.0 and flat.evidence["chosen_on_fit"] == 0.0


def test_pick_only_raises_a_baseline_that_held_out_beats() -> None:
    # best 0.4 but the baseline 0.5 is within MIN_GAIN of it on held-out: the baseline stays
    near, kept = pick_weight([1], [2], lambda w, cases: 1 - abs(w - 0.4) / 100, baseline=0.5)
    assert not kept and near.dense == 0.5 and "weight 0.5 kept" in near.source
    # 0.9 beats both sparse-only and the baseline by far on held-out: raised
    far, kept = pick_weight([1], [2], lambda w, cases: w, baseline=0.3)
    assert kept and far.dense == 1.0 and far.evidence["held_out_at_baseline"] == 0.3


def test_cross_validated_pick_reports_held_out_folds() -> None:
    # every case prefers weight 0.3: kept, with per-fold evidence
    helps = pick_weight_cv(list(range(10)), lambda w, cases: -abs(w - 0.3) * len(cases), folds=5)
    assert helps.dense == 0.3 and helps.evidence["chosen_per_fold"] == [0.3] * 5
    assert "5-fold held-out" in helps.source

    # half the cases prefer 0.8, half prefer sparse-only: no held-out gain, so weight 0
    def split_taste(w: float, cases: list[int]) -> float:
        return sum(-abs(w - (0.8 if c % 2 else 0.0)) for c in cases) / len(cases)

    hurts = pick_weight_cv(list(range(10)), split_taste, folds=5)
    assert hurts.dense == 0.0 and "does not help" in hurts.source
