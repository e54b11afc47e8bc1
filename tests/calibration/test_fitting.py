"""The one fit pipeline: style-balanced fit, the operating point by the two costs, held-out
figures and the precedence rule (evaluation/fitting.py)."""

from __future__ import annotations

import pytest

from seenbefore.calibration import fitting
from seenbefore.calibration.fitting import Labelled
from seenbefore.core.confidence import FOUND, NONE, POSSIBLE, ConfidenceModel

IDENTITY = ConfidenceModel({"passage_coverage": 1.0}, 0.0)  # p = sigmoid(x)


def _p_rows(ps: list[float], right: bool, style: str) -> list[Labelled]:
    import math

    # x chosen so that the identity model predicts exactly p
    return [Labelled({"passage_coverage": math.log(p / (1 - p))}, right, style) for p in ps]


def test_lo_keeps_false_no_precedent_at_5_percent_in_every_style_and_hi_at_5_percent_found() -> (
    None
):
    alerts = _p_rows([0.3 + 0.01 * i for i in range(20)], True, "alert")  # 0.30 .. 0.49
    updates = _p_rows([0.1 + 0.01 * i for i in range(20)], True, "update")  # 0.10 .. 0.29
    wrong = _p_rows([0.02 * i + 0.01 for i in range(20)], False, "alert")  # 0.01 .. 0.39
    off = _p_rows([0.05, 0.56], False, "off-domain")
    lo, hi, rule = fitting.operating_point(IDENTITY, [*alerts, *updates, *wrong, *off])
    # 40 cases with their precedent first, 20 per style, each style half the weight: 5 % of
    # the weight lies below the third-lowest, 0.12 (an update case): no style alone sets it
    assert lo == pytest.approx(0.12, abs=1e-4)
    assert "(alert, update)" in rule
    # no off-domain case may be "found": hi sits just above the highest one
    assert hi == pytest.approx(0.56, abs=1e-4)
    model = ConfidenceModel(IDENTITY.weights, 0.0, lo=lo, hi=hi)
    assert [model.verdict(p) for p in (0.1, 0.3, 0.6)] == [NONE, POSSIBLE, FOUND]


def test_a_style_with_too_few_cases_does_not_set_a_threshold() -> None:
    rows = _p_rows([0.9] * 20, True, "alert") + _p_rows([0.02], True, "rare")
    lo, hi, rule = fitting.operating_point(IDENTITY, rows)
    # the one "rare" case (p 0.02) does not pull lo down: the alert style's 0.9 sets it, which
    # meets hi (0.6, nothing wrong to place it by), so lo sits just under hi
    assert (lo, hi) == (pytest.approx(0.59), pytest.approx(0.6))
    assert "same (alert)" in rule and "no middle band" in rule


def test_fit_is_style_balanced_and_reports_held_out_figures_per_style() -> None:
    # a large easy style and a small hard one: balanced, the hard one still counts
    easy = [Labelled({"passage_coverage": 1.0}, True, "opening") for _ in range(200)] + [
        Labelled({"passage_coverage": 0.0}, False, "opening") for _ in range(200)
    ]
    hard = [Labelled({"passage_coverage": 0.6}, True, "alert") for _ in range(15)] + [
        Labelled({"passage_coverage": 0.4}, False, "alert", False) for _ in range(15)
    ]
    made = fitting.fit([*easy, *hard], [*easy, *hard], source="test")
    assert made.model.weights["passage_coverage"] > 0
    assert set(made.held_out) == {"all", "alert", "opening"}
    alert = made.held_out["alert"]
    assert alert["cases"] == 30 and alert["right_first"] == 15
    assert alert["false_no_precedent_when_first"] <= 0.05
    assert made.model.metrics["rule"] == made.rule


def test_the_precedence_rule_compares_log_loss_on_the_same_cases() -> None:
    rows = _p_rows([0.9] * 10, True, "a") + _p_rows([0.1] * 10, False, "a")
    sure = ConfidenceModel(IDENTITY.weights, 0.0)
    flat = ConfidenceModel({}, 0.0)
    assert fitting.beats(sure, flat, rows)[0] is True
    assert fitting.beats(flat, sure, rows)[0] is False
    assert fitting.beats(sure, None, rows)[0] is True


def test_lo_also_spares_recurrence_shaped_cases() -> None:
    import dataclasses

    # present cases: 0.40 .. 0.59 (their 5 % quantile is 0.41)
    present = _p_rows([0.4 + 0.01 * i for i in range(20)], True, "alert")
    # recurrences (the source left out, a known precedent first) score lower: 0.05 .. 0.24
    again = [
        dataclasses.replace(r, recurrence=True)
        for r in _p_rows([0.05 + 0.01 * i for i in range(20)], True, "alert")
    ]
    lo_present, _, _ = fitting.operating_point(IDENTITY, present)
    assert lo_present == pytest.approx(0.41, abs=1e-4)  # one case of 20 at or below it
    lo, _, rule = fitting.operating_point(IDENTITY, [*present, *again])
    # among the recurrences alone at most 5 % may fall to "no precedent": lo drops below 0.06
    assert lo == pytest.approx(0.0599, abs=1e-6)
    assert "shaped like a recurrence (alert)" in rule
    model = ConfidenceModel(IDENTITY.weights, 0.0, lo=lo, hi=0.9)
    held = fitting.figures(model, [*present, *again])["all"]
    assert held["false_no_precedent_when_recurrence_first"] == 0.05  # the lowest one of 20


def test_each_shape_of_query_gets_the_thresholds_its_own_cases_set() -> None:
    # pager lines score high whether right or wrong; prose lower: one pair cannot serve both
    alerts = _p_rows([0.60 + 0.01 * i for i in range(20)], True, "alert")  # 0.60 .. 0.79
    alerts_wrong = _p_rows([0.40 + 0.01 * i for i in range(20)], False, "alert")  # .. 0.59
    prose = _p_rows([0.30 + 0.01 * i for i in range(20)], True, "update")  # 0.30 .. 0.49
    prose_wrong = _p_rows([0.05 + 0.01 * i for i in range(20)], False, "opening")  # .. 0.24
    off = _p_rows([0.05, 0.2], False, "off-domain")
    rows = [*alerts, *alerts_wrong, *prose, *prose_wrong, *off]
    points, rules = fitting.shape_points(IDENTITY, rows)
    assert set(points) == {"alert", "prose"}
    # each shape's pair is what operating_point gives on its own styles (and off-domain)
    alone = fitting.operating_point(IDENTITY, [*alerts, *alerts_wrong, *off])
    assert points["alert"] == alone[:2] and rules["alert"] == alone[2]
    # alert: lo from its right cases (0.61 less a hair) meets hi (just above 95 % of its wrong
    # ones, 0.58), so lo sits just under hi; prose: lo 0.31 less a hair, hi at its floor 0.5
    assert points["alert"] == (pytest.approx(0.57), pytest.approx(0.5801))
    assert points["prose"] == (pytest.approx(0.3099), pytest.approx(0.5))
    model = ConfidenceModel(IDENTITY.weights, 0.0, shapes=points)
    # the same p: "no precedent" as a pager line, "possible" as prose
    assert model.for_shape("alert").verdict(0.45) == NONE
    assert model.for_shape("prose").verdict(0.45) == POSSIBLE
    assert model.verdict(0.45) == POSSIBLE  # the overall pair (defaults 0.2 / 0.6)
    # held-out figures read each row by its own shape's thresholds
    held = fitting.figures(model, rows)
    assert held["alert"]["false_no_precedent_when_first"] == 0.0  # all at 0.60 and above
    assert held["alert"]["found_when_wrong"] == 0.05  # 0.59 alone reaches 0.5801
    assert held["update"]["false_no_precedent_when_first"] == 0.05  # 0.30 alone
    made = fitting.fit(rows, rows, source="test")
    assert set(made.model.shapes) == {"alert", "prose"}
    assert made.model.metrics["rules_by_shape"]["alert"].startswith("lo ")
    # a round trip keeps them; a model without them serves every shape with lo and hi
    assert ConfidenceModel.from_dict(made.model.as_dict()).shapes == made.model.shapes
    assert IDENTITY.for_shape("alert") is IDENTITY


def test_a_shape_short_of_cases_keeps_the_overall_thresholds() -> None:
    rows = _p_rows([0.6] * 20, True, "update") + _p_rows([0.2] * 20, False, "opening")
    rows += _p_rows([0.7] * 3, True, "alert") + _p_rows([0.1] * 3, False, "alert")
    points, rules = fitting.shape_points(IDENTITY, rows)
    assert set(points) == {"prose"}
    assert rules["alert"].startswith("overall thresholds: 3 cases")


def test_thresholds_for_an_unknown_shape_or_out_of_order_are_refused() -> None:
    with pytest.raises(ValueError, match="the shapes are alert, prose"):
        ConfidenceModel(IDENTITY.weights, 0.0, shapes={"pager": (0.1, 0.5)})
    with pytest.raises(ValueError, match="alert thresholds must satisfy"):
        ConfidenceModel(IDENTITY.weights, 0.0, shapes={"alert": (0.6, 0.5)})


def test_when_the_two_rules_meet_lo_drops_to_where_cases_without_a_precedent_lie() -> None:
    import dataclasses

    # precedents first at 0.90 .. 0.99; no precedent in the KB at 0.01 .. 0.20: the 5 % rule
    # asks lo 0.90, hi sits at its floor 0.5, so the two meet
    right = _p_rows([0.90 + 0.005 * i for i in range(20)], True, "labelled")
    absent = [
        dataclasses.replace(r, has_precedent=False)
        for r in _p_rows([0.01 + 0.01 * i for i in range(20)], False, "labelled")
    ]
    lo, hi, rule = fitting.operating_point(IDENTITY, [*right, *absent])
    assert hi == pytest.approx(0.5, abs=1e-4)
    # the 95th percentile of the absent ones (0.20 is the one case of 20 above 0.19)
    assert lo == pytest.approx(0.19, abs=1e-4)
    assert "possible" in rule and "no middle band" not in rule
    model = ConfidenceModel(IDENTITY.weights, 0.0, lo=lo, hi=hi)
    # a precedent scored lower than any seen (0.46, as an anomaly unlike the fitted ones is) is
    # "possible", where lo just under hi (0.49) told a person there was none
    assert model.verdict(0.46) == POSSIBLE
    assert model.verdict(0.05) == NONE


def _scaled_rows(unit: float) -> list[Labelled]:
    """Cases where a narrow signal (``mode_match`` in [0, unit]) decides the label and a wide
    one (``covered_gap`` in [0, 3]) is noise; a few cases of each kind defy it."""
    import random

    rng = random.Random(7)
    rows = []
    for i in range(400):
        right = i % 2 == 0
        narrow = unit * (0.6 + 0.4 * rng.random() if right else 0.4 * rng.random())
        if i % 20 == 0:  # a few exceptions keep the fit finite
            narrow = unit - narrow
        rows.append(
            Labelled({"mode_match": narrow, "covered_gap": 3 * rng.random()}, right, "opening")
        )
    return rows


def test_a_signal_with_a_small_range_gets_its_due_whatever_its_units() -> None:
    # the penalty is on signals scaled to one spread: a signal that decides the label counts
    # the same whether it runs to 0.3 or to 3 (unscaled, the narrow one was shrunk to a weight
    # that left every case near the base rate)
    narrow = fitting.fit(_scaled_rows(0.3), _scaled_rows(0.3), source="test").model
    wide = fitting.fit(_scaled_rows(3.0), _scaled_rows(3.0), source="test").model
    for model, unit in ((narrow, 0.3), (wide, 3.0)):
        assert model.predict({"mode_match": 0.9 * unit, "covered_gap": 1.5}) > 0.8
        assert model.predict({"mode_match": 0.1 * unit, "covered_gap": 1.5}) < 0.2
    assert narrow.weights["mode_match"] == pytest.approx(10 * wide.weights["mode_match"], rel=1e-3)
