"""Logistic regression with non-negative weights, in numpy alone.

The confidence and precedent models are monotone in every signal (a larger coverage or margin
never lowers confidence), so their weights are bounded below by 0; the bias is free. The
objective is the mean log-loss plus ``l2 * |w|^2``, strictly convex in w, minimised by projected
Newton steps (Bertsekas 1982): variables at their bound whose gradient pushes outward stay
fixed, a Newton step is taken on the rest, projected back on w >= 0 and shortened until the
objective falls enough (Armijo). A dozen signals and a few thousand cases converge in well under
fifty steps, so self-calibration needs no SciPy.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

Vector = npt.NDArray[np.float64]
MAX_STEPS = 200
TOLERANCE = 1e-9  # on the projected gradient's largest component


def _objective(
    x: Vector, y: Vector, params: Vector, l2: float, s: Vector
) -> tuple[float, Vector, Vector]:
    """Loss, gradient, and the per-case weights p(1-p) of the Hessian at ``params``; ``s`` are
    the case weights, summing to 1."""
    d = x.shape[1]
    w, b = params[:d], params[d]
    z = np.clip(x @ w + b, -30.0, 30.0)
    p = 1.0 / (1.0 + np.exp(-z))
    eps = 1e-12
    loss = -float(s @ (y * np.log(p + eps) + (1 - y) * np.log(1 - p + eps))) + l2 * float(w @ w)
    residual = (p - y) * s
    grad = np.concatenate([x.T @ residual + 2.0 * l2 * w, [residual.sum()]])
    return loss, grad, p * (1.0 - p) * s


def fit_logistic_nonnegative(
    x: Vector, y: Vector, l2: float = 0.01, *, sample_weight: Vector | None = None
) -> tuple[Vector, float]:
    """(weights >= 0, bias) minimising the (``sample_weight``-weighted) mean log-loss +
    ``l2`` * |weights|^2."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n, d = x.shape
    s = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    s = s / s.sum()
    design = np.hstack([x, np.ones((n, 1))])
    ridge = np.full(d + 1, 2.0 * l2)
    ridge[d] = 1e-10  # the bias is not regularised; a hair keeps its Newton system solvable
    params = np.zeros(d + 1)
    loss, grad, curvature = _objective(x, y, params, l2, s)
    for _ in range(MAX_STEPS):
        projected = grad.copy()
        at_bound = np.zeros(d + 1, dtype=bool)
        at_bound[:d] = (params[:d] <= 0.0) & (grad[:d] > 0.0)
        projected[at_bound] = 0.0
        if np.max(np.abs(projected)) < TOLERANCE:
            break
        free = ~at_bound
        hessian = (design[:, free].T * curvature) @ design[:, free] + np.diag(ridge[free])
        step = np.zeros(d + 1)
        step[free] = -np.linalg.solve(hessian, grad[free])
        size = 1.0
        while True:
            trial = params + size * step
            trial[:d] = np.maximum(trial[:d], 0.0)
            trial_loss, trial_grad, trial_curvature = _objective(x, y, trial, l2, s)
            if trial_loss <= loss + 1e-4 * float(grad @ (trial - params)) or size < 1e-10:
                break
            size *= 0.5
        if loss - trial_loss < 1e-15 and size < 1e-10:
            break
        params, loss, grad, curvature = trial, trial_loss, trial_grad, trial_curvature
    return params[:d], float(params[d])
