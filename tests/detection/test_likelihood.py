"""Anomaly likelihood on hand-worked score streams.

Q(z) = 0.5 * erfc(z / sqrt 2) is the Gaussian tail; Q(2) = 0.0227501319481792 and
Q(-2) = 0.9772498680518208. NAB's log scale: log(tail + 1e-10) / log(1e-10).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from seenbefore.detection.likelihood import AnomalyLikelihood, log_score, moving_average
from seenbefore.errors import InputError

Q2 = 0.0227501319481792


def fit(raw: list[float], **params: int) -> AnomalyLikelihood:
    defaults = {"learning_period": 0, "estimation_samples": 4, "averaging_window": 1}
    return AnomalyLikelihood(**{**defaults, **params}).fit(np.array(raw))  # type: ignore[arg-type]


def test_log_scale_values() -> None:
    assert log_score(np.array([0.0]))[0] == pytest.approx(1.0)
    assert log_score(np.array([1e-5]))[0] == pytest.approx(0.5, abs=1e-6)
    assert log_score(np.array([1e-3]))[0] == pytest.approx(0.3, abs=1e-6)
    assert log_score(np.array([1.0]))[0] == pytest.approx(0.0, abs=1e-9)


def test_moving_average_uses_only_the_last_rows() -> None:
    assert moving_average(np.array([1.0, 3.0, 5.0, 7.0]), 2).tolist() == [1.0, 2.0, 4.0, 6.0]


def test_probationary_rows_are_one_half() -> None:
    al = fit([0.1, 0.3, 0.1, 0.3, 0.4])
    assert al.likelihood_[:4].tolist() == [0.5] * 4


def test_two_sigma_above_the_past_mean() -> None:
    # rows 0..3: mean 0.2, variance 0.01 (std 0.1); row 4 at 0.4 is z = 2
    al = fit([0.1, 0.3, 0.1, 0.3, 0.4])
    assert al.tail_[4] == pytest.approx(Q2)
    assert al.likelihood_[4] == pytest.approx(1 - Q2)
    assert al.score_[4] == pytest.approx(math.log(Q2 + 1e-10) / math.log(1e-10))  # 0.16430
    assert al.score_[4] == pytest.approx(0.164301, abs=1e-6)


def test_below_the_mean_is_likely() -> None:
    al = fit([0.1, 0.3, 0.1, 0.3, 0.0])  # z = -2
    assert al.tail_[4] == pytest.approx(1 - Q2)


def test_floors_on_mean_and_variance() -> None:
    # a silent past: mean 0 -> 0.03, variance 0 -> 0.0003; 0.03 + 2 * sqrt(0.0003) is z = 2
    x = 0.03 + 2 * math.sqrt(0.0003)
    al = fit([0.0, 0.0, 0.0, 0.0, x])
    assert al.tail_[4] == pytest.approx(Q2)


def test_averaging_window() -> None:
    # window 2: averages 0.2, 0.2, 0.2, 0.2 then (0.2 + 0.6) / 2 = 0.4; the variance is
    # floored at 0.0003, so z = (0.4 - 0.2) / sqrt(0.0003) = 11.547
    al = fit([0.2, 0.2, 0.2, 0.2, 0.6], averaging_window=2)
    assert al.average_[4] == pytest.approx(0.4)
    assert al.tail_[4] == pytest.approx(0.5 * math.erfc(11.547005 / math.sqrt(2)), rel=1e-4)


def test_reestimation_reads_the_rows_before_it() -> None:
    # period 2: rows 4, 5 use the fit on rows 0..3; row 6 the fit on rows 0..5
    raw = [0.1, 0.3, 0.1, 0.3, 0.2, 0.2, 0.4]
    al = fit(raw, reestimation_period=2)
    var = (4 * 0.01) / 6  # rows 0..5 around mean 0.2
    assert al.tail_[5] == pytest.approx(0.5)  # 0.2 is the mean of rows 0..3
    assert al.tail_[6] == pytest.approx(0.5 * math.erfc(0.2 / math.sqrt(var) / math.sqrt(2)))


def test_history_window_and_learning_period() -> None:
    # learning 1 and history 4: the fit at row 6 reads rows 2..5 (mean 0.2, variance 0.005)
    raw = [9.0, 0.3, 0.1, 0.3, 0.2, 0.2, 0.4]
    al = fit(raw, learning_period=1, estimation_samples=3, history=4, reestimation_period=2)
    assert al.tail_[6] == pytest.approx(0.5 * math.erfc(0.2 / math.sqrt(0.005) / math.sqrt(2)))


def test_red_zone_run_reports_its_first_row_loudly() -> None:
    # the silent past: mean 0.03, std 0.01732; two rows at 1.0 are z = 56, tail ~ 0
    al = fit([0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0])
    assert al.score_[4] == pytest.approx(1.0)
    assert al.tail_[5] == 1e-3 and al.score_[5] == pytest.approx(0.3, abs=1e-6)
    assert al.tail_[6] == pytest.approx(0.5 * math.erfc(-0.03 / math.sqrt(0.0003) / math.sqrt(2)))


def test_flat_metric_is_never_unlikely() -> None:
    al = AnomalyLikelihood(learning_period=0, estimation_samples=4, averaging_window=1)
    al.fit(np.array([0.0, 0.0, 0.0, 0.0, 1.0]), values=np.full(5, 7.0))
    # the broad Gaussian: mean 0.5, std 1000 -> z = 0.0005
    assert al.tail_[4] == pytest.approx(0.5 * math.erfc(0.0005 / math.sqrt(2)))


def test_no_look_ahead() -> None:
    rng = np.random.default_rng(3)
    raw = rng.uniform(0, 0.3, 900)
    raw[700] = 1.0
    full = AnomalyLikelihood.for_probation(150).fit(raw).score_
    part = AnomalyLikelihood.for_probation(150).fit(raw[:650]).score_
    assert np.array_equal(full[:650], part)


def test_bad_input() -> None:
    with pytest.raises(InputError, match="finite raw scores"):
        AnomalyLikelihood().fit(np.array([0.1, math.nan]))
    with pytest.raises(InputError, match="do not match"):
        AnomalyLikelihood().fit(np.zeros(3), values=np.zeros(2))
