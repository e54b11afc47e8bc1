import itertools
import math

import pytest

from seenbefore.core.confidence import (
    FOUND,
    NONE,
    POSSIBLE,
    SIGNALS,
    ConfidenceModel,
    auroc,
    brier,
    expected_calibration_error,
    label,
    verdict,
)

MODEL = ConfidenceModel(
    {"sparse_coverage": 2.0, "sparse_margin": 1.0, "dense_cosine": 3.0, "agreement": 0.5},
    bias=-3.0,
    lo=0.4,
    hi=0.7,
)


def test_prediction_hand_worked() -> None:
    p = MODEL.predict(
        {"sparse_coverage": 0.5, "sparse_margin": 0.2, "dense_cosine": 0.6, "agreement": 1}
    )
    z = -3 + 2 * 0.5 + 0.2 + 3 * 0.6 + 0.5
    assert p == pytest.approx(1 / (1 + math.exp(-z)))


def test_confidence_is_monotonic_in_every_signal() -> None:
    grid = [0.0, 0.3, 0.7, 1.0]
    for name in SIGNALS:
        for base in itertools.product(grid, repeat=2):
            signals = dict(zip(("sparse_coverage", "dense_cosine"), base, strict=True))
            values = [MODEL.predict({**signals, name: v}) for v in grid]
            assert values == sorted(values), name


def test_negative_weights_and_unknown_signals_are_refused() -> None:
    with pytest.raises(ValueError, match="monotonic"):
        ConfidenceModel({"sparse_margin": -1.0}, 0.0)
    with pytest.raises(ValueError, match="unknown confidence signals"):
        ConfidenceModel({"bm25_raw": 1.0}, 0.0)


def test_three_verdicts_from_the_one_number_and_roundtrip() -> None:
    assert [MODEL.verdict(p) for p in (0.39, 0.4, 0.41, 0.69, 0.7, 0.95)] == [
        NONE,
        NONE,
        POSSIBLE,
        POSSIBLE,
        FOUND,
        FOUND,
    ]
    assert MODEL.is_novel(0.4) and not MODEL.is_novel(0.41)
    assert ConfidenceModel.from_dict(MODEL.as_dict()) == MODEL
    with pytest.raises(ValueError, match="lo < hi"):
        ConfidenceModel({}, 0.0, lo=0.6, hi=0.5)


def test_a_model_stored_before_three_states_keeps_its_threshold_as_lo() -> None:
    old = {"weights": {"sparse_margin": 1.0}, "bias": 0.0, "threshold": 0.35}
    model = ConfidenceModel.from_dict(old)
    assert (model.lo, model.hi) == (0.35, 0.6)
    high = ConfidenceModel.from_dict({**old, "threshold": 0.9})
    assert high.lo < high.hi == 1.0
    assert [label(p) for p in (0.9, 0.6, 0.3, 0.1)] == ["high", "medium", "low", "very low"]


def test_calibration_metrics_hand_worked() -> None:
    probs, outcomes = [0.9, 0.8, 0.3, 0.2], [1, 0, 0, 0]
    # bins: 0.9 -> [1], 0.8 -> [0], 0.3 -> [0], 0.2 -> [0]; each bin weight 1/4
    assert expected_calibration_error(probs, outcomes) == pytest.approx((0.1 + 0.8 + 0.3 + 0.2) / 4)
    assert brier(probs, outcomes) == pytest.approx((0.01 + 0.64 + 0.09 + 0.04) / 4)
    assert auroc([0.9, 0.8, 0.3, 0.2], [1, 0, 1, 0]) == pytest.approx(0.75)
    assert math.isnan(auroc([0.1], [1]))


def test_isotonic_knots_pool_violators_and_shrink_toward_the_raw_score() -> None:
    from seenbefore.core.confidence import isotonic_knots, recalibrate

    knots = isotonic_knots([0.1, 0.2, 0.3, 0.4], [0, 1, 0, 1], shrink=1.0)
    # (0.2, 1) and (0.3, 0) violate order and pool into one block at 0.25 with rate 1/2;
    # each block's rate is shrunk by one pseudo-case at its raw score
    assert knots == ((0.1, 0.05), (0.25, round(1.25 / 3, 6)), (0.4, 0.7))
    assert recalibrate(0.175, knots) == pytest.approx(0.05 + (1.25 / 3 - 0.05) * 0.5, abs=1e-6)
    assert recalibrate(0.0, knots) == 0.05 and recalibrate(0.9, knots) == 0.7
    assert recalibrate(0.3, ()) == 0.3


def test_a_model_round_trips_with_its_recalibration_and_the_verdict_reads_the_one_number() -> None:
    model = ConfidenceModel(
        {"sparse_coverage": 2.0}, -1.0, 0.3, 0.7, calibration=((0.1, 0.05), (0.9, 0.8))
    )
    assert ConfidenceModel.from_dict(model.as_dict()) == model
    p = model.predict({"sparse_coverage": 0.4})  # recalibrated sigmoid(-0.2)
    assert model.verdict(p) == ("no precedent" if p <= 0.3 else "possible precedent — check")
    assert model.verdict(0.7) == "precedent found" and model.is_novel(0.3)


def test_one_shared_word_is_no_evidence_of_a_precedent() -> None:
    from seenbefore.core.confidence import FOUND, POSSIBLE, verdict

    assert verdict(0.9, 0.2, 0.6) == FOUND  # unknown overlap: p alone
    assert verdict(0.9, 0.2, 0.6, shared=2) == FOUND
    assert verdict(0.9, 0.2, 0.6, shared=1) == POSSIBLE  # "capital of australia" vs Sydney
    assert verdict(0.1, 0.2, 0.6, shared=1) == "no precedent"  # the low end is p's alone


def test_the_confidence_word_never_contradicts_the_verdict() -> None:
    """Fixed quarters called a "no precedent" at p 0.55 "medium" where a KB's lo is 0.6, and
    a "possible" at 0.8 "high" (38 and 124 such answers on the AWS replay)."""
    lo, hi = 0.6, 0.85
    for p in [i / 100 for i in range(101)]:
        said = verdict(p, lo, hi)
        word = label(p, lo, hi)
        assert word in {FOUND: ("high",), POSSIBLE: ("low", "medium"), NONE: ("very low",)}[said]
    assert [label(p, lo, hi) for p in (0.55, 0.7, 0.8, 0.9)] == [
        "very low",
        "low",
        "medium",
        "high",
    ]
    # a verdict moved by something other than p (too few shared words, a new kind of signal)
    assert label(0.9, lo, hi, verdict=POSSIBLE) == "medium"
    assert label(0.7, lo, hi, verdict=NONE) == "very low"
    assert label(0.3, verdict=FOUND) == "high"
