"""Problems and the cvxpy reference shared by the IOKL tests."""

from __future__ import annotations

import cvxpy as cp
import numpy as np


def drawn_bags(n_bags: int = 18, seed: int = 2) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bags of 2-5 instances, bag ids that are neither contiguous nor sorted in the file, and a positive bag's
    witness shifted by +2 (an overlap that makes the C grid matter)."""
    rng = np.random.default_rng(seed)
    ids = rng.permutation(np.arange(100, 100 + 7 * n_bags, 7))
    X, groups, y = [], [], []
    for k, bag in enumerate(ids):
        m = int(rng.integers(2, 6))
        pts = rng.normal(size=(m, 2))
        label = 1 if k % 2 == 0 else -1
        if label > 0:
            pts[rng.integers(m)] += 2.0
        X.append(pts)
        groups += [bag] * m
        y += [label] * m
    order = rng.permutation(len(groups))  # instances of a bag are not contiguous
    return np.vstack(X)[order], np.array(y)[order], np.array(groups)[order]


def iokl_reference(kernels_io: list[list[np.ndarray]], C: np.ndarray, theta: float | None) -> float:
    """(4.4) / (4.8) written directly: max -sum a^2/(2C) - gamma - theta sum_t (||lambda_t|| - gamma)^+."""
    T, M, n = len(kernels_io), len(kernels_io[0]), len(C)
    a, lam, gamma = cp.Variable(n), cp.Variable((T, M)), cp.Variable()
    cons = [a >= 0, cp.sum(a) == 1]
    cons += [0.5 * cp.quad_form(a, cp.psd_wrap(kernels_io[t][m])) <= lam[t, m] for t in range(T) for m in range(M)]
    norms = cp.hstack([cp.norm(lam[t], 2) for t in range(T)])
    obj = -cp.sum(cp.multiply(1.0 / (2 * C), cp.square(a))) - gamma
    if theta is None:
        cons.append(norms <= gamma)
    else:
        obj = obj - min(theta, 1.0) * cp.sum(cp.pos(norms - gamma))
    prob = cp.Problem(cp.Maximize(obj), cons)
    prob.solve(solver=cp.CLARABEL)
    return float(prob.value)
