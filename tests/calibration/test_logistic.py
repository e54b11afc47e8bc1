"""The numpy fitter behind every confidence model: non-negative weights, free bias, L2."""

from __future__ import annotations

import numpy as np

from seenbefore.calibration.logistic import fit_logistic_nonnegative


def _loss(x: np.ndarray, y: np.ndarray, w: np.ndarray, b: float, l2: float) -> float:
    p = 1.0 / (1.0 + np.exp(-(x @ w + b)))
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)) + l2 * w @ w)


def test_an_uninformative_signal_gets_weight_zero_and_the_bias_the_base_rate() -> None:
    x = np.array([[0.0], [0.0], [1.0], [1.0]])
    y = np.array([0.0, 1.0, 0.0, 1.0])  # the signal says nothing: p = 1/2 everywhere
    w, b = fit_logistic_nonnegative(x, y)
    assert abs(w[0]) < 1e-8 and abs(b) < 1e-8


def test_a_signal_that_lowers_the_odds_is_clipped_at_zero() -> None:
    x = np.array([[0.0], [0.0], [0.0], [1.0], [1.0], [1.0]])
    y = np.array([1.0, 1.0, 0.0, 0.0, 0.0, 1.0])  # unconstrained, w would be negative
    w, b = fit_logistic_nonnegative(x, y)
    assert w[0] == 0.0
    assert abs(b) < 1e-8  # then the bias is logit(3/6) = 0


def test_one_signal_matches_a_fine_grid_search() -> None:
    x = np.array([[0.0], [0.1], [0.4], [0.6], [0.9], [1.0]])
    y = np.array([0.0, 0.0, 1.0, 0.0, 1.0, 1.0])
    w, b = fit_logistic_nonnegative(x, y, l2=0.01)
    grid = [
        (_loss(x, y, np.array([gw]), gb, 0.01), gw, gb)
        for gw in np.linspace(0, 10, 401)
        for gb in np.linspace(-6, 2, 321)
    ]
    best, gw, gb = min(grid)
    assert _loss(x, y, w, b, 0.01) <= best + 1e-9
    assert abs(w[0] - gw) < 0.05 and abs(b - gb) < 0.05


def test_the_optimum_meets_the_kkt_conditions() -> None:
    rng = np.random.default_rng(7)
    x = rng.random((500, 6))
    truth = np.array([3.0, -2.0, 0.0, 1.5, -0.5, 2.0])
    y = (rng.random(500) < 1 / (1 + np.exp(-(x @ truth - 1.5)))).astype(float)
    w, b = fit_logistic_nonnegative(x, y, l2=0.01)
    p = 1 / (1 + np.exp(-(x @ w + b)))
    grad_w = x.T @ (p - y) / len(y) + 0.02 * w
    assert np.all(w >= 0)
    assert abs(float(np.sum(p - y))) / len(y) < 1e-7  # bias: stationary
    assert np.all(np.abs(grad_w[w > 0]) < 1e-7)  # free weights: stationary
    assert np.all(grad_w[w == 0] >= -1e-9)  # weights at 0: the gradient pushes outward
    assert (w == 0).sum() >= 2  # the two harmful signals are held at the bound
