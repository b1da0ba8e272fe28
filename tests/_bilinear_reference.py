"""Independent references of the bilinear classifiers written in cvxpy (a test dependency).

The library never imports this module.
"""

from __future__ import annotations

import numpy as np

__all__ = ["nuclear_norm_svm_cvxpy", "sdp_svm_cvxpy"]


def _cvxpy():
    try:
        import cvxpy as cp
    except ImportError as exc:  # pragma: no cover - the test extra installs it
        raise ImportError("the cvxpy references need cvxpy: pip install 'multikernel[test]'") from exc
    return cp


def nuclear_norm_svm_cvxpy(X: np.ndarray, y: np.ndarray, C: float, solver: str = "CLARABEL",
                           **solver_options) -> tuple[float, np.ndarray, float]:
    """Problem (2), ``min ||W||_* + C sum_i max(0, 1 - y_i (<W, X_i> + b))``, in cvxpy.

    Returns ``(optimal value, W, b)``.
    """
    cp = _cvxpy()
    n, h, w = X.shape
    W = cp.Variable((h, w))
    b = cp.Variable()
    scores = X.reshape(n, h * w) @ cp.vec(W, order="C") + b
    objective = cp.normNuc(W) + C * cp.sum(cp.pos(1 - cp.multiply(y, scores)))
    problem = cp.Problem(cp.Minimize(objective))
    problem.solve(solver=solver, **solver_options)
    return float(problem.value), np.asarray(W.value), float(b.value)


def sdp_svm_cvxpy(X: np.ndarray, y: np.ndarray, C: float, solver: str = "SCS",
                  **solver_options) -> tuple[float, np.ndarray, float]:
    """The SDP (4) of Srebro et al.: ``min_{Wt >= 0} 1/2 tr(Wt) + C hinge``, ``W`` the off-diagonal block.

    Returns ``(optimal value, W, b)``.
    """
    cp = _cvxpy()
    n, h, w = X.shape
    Wt = cp.Variable((h + w, h + w), PSD=True)
    b = cp.Variable()
    W = Wt[:h, h:]
    scores = X.reshape(n, h * w) @ cp.vec(W, order="C") + b
    objective = 0.5 * cp.trace(Wt) + C * cp.sum(cp.pos(1 - cp.multiply(y, scores)))
    problem = cp.Problem(cp.Minimize(objective))
    problem.solve(solver=solver, **solver_options)
    return float(problem.value), np.asarray(W.value), float(b.value)
