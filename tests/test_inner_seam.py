"""A new inner problem plugs into every outer solver through :class:`~multikernel.InnerProblem` alone.

The example (also in docs/architecture.md) is kernel ridge regression with learnt kernel weights:

    min_{mu in D}  max_alpha  y'alpha - alpha'alpha / (2C) - 1/2 sum_m mu_m alpha' K_m alpha,

whose inner problem has the closed form ``alpha = (K(mu) + I/C)^{-1} y`` and no SVM at all.  Its optimum is
checked against the same saddle point written in cvxpy.
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest

from multikernel import DenseStack, InnerProblem, InnerSolution, MKLProblem, create


class KernelRidge(InnerProblem):
    """``max_alpha y'alpha - alpha'alpha/(2C) - 1/2 alpha'K alpha``, solved exactly; one coefficient block."""

    def __init__(self, y: np.ndarray, C: float) -> None:
        self.y, self.C = np.asarray(y, dtype=np.float64), C

    @property
    def alpha_shape(self) -> tuple[int, ...]:
        return self.y.shape

    def solve(self, K, alpha0, tol) -> InnerSolution:
        K = np.asarray(K)
        alpha = np.linalg.solve(K + np.eye(len(self.y)) / self.C, self.y)
        f = K @ alpha
        dual = self.linear_term(alpha) - 0.5 * alpha @ f
        primal = 0.5 * alpha @ f + 0.5 * self.C * np.sum((self.y - f) ** 2)  # min_f 1/2||f||^2 + C/2 ||y - f||^2
        return InnerSolution(alpha=alpha, coef=alpha, bias=0.0, dual_objective=dual, primal_objective=primal)

    def linear_term(self, alpha: np.ndarray) -> float:
        return float(self.y @ alpha - alpha @ alpha / (2.0 * self.C))


def _reference(Ks: np.ndarray, y: np.ndarray, C: float, domain: str) -> float:
    alpha, t = cp.Variable(len(y)), cp.Variable(len(Ks))
    cons = [0.5 * cp.quad_form(alpha, cp.psd_wrap(K)) <= t[m] for m, K in enumerate(Ks)]
    bound = cp.max(t) if domain == "simplex" else cp.norm(t, 2)  # l2 ball: dual norm of l2
    prob = cp.Problem(cp.Maximize(y @ alpha - cp.sum_squares(alpha) / (2 * C) - bound), cons)
    prob.solve(solver=cp.CLARABEL)
    return float(prob.value)


@pytest.mark.parametrize(("regularizer", "solver"), [("simplex", "level"), ("simplex", "reduced_gradient"),
                                                     ("simplex", "projected_gradient"), ("simplex", "bcd"),
                                                     ("l2_ball", "bcd"), ("l2_ball", "projected_gradient")])
def test_kernel_ridge_mkl_through_the_seam(regularizer, solver):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(25, 3))
    y = X[:, 0] - 0.5 * X[:, 1] ** 2 + 0.1 * rng.normal(size=25)
    d2 = ((X[:, None] - X[None]) ** 2).sum(-1)
    Ks = np.array([X @ X.T, np.exp(-0.5 * d2), np.exp(-3.0 * d2)])
    Ks *= len(X) / np.trace(Ks, axis1=1, axis2=2)[:, None, None]
    problem = MKLProblem(stack=DenseStack(Ks), y=None, loss=None, inner=KernelRidge(y, C=10.0),
                         regularizer=create("regularizer", regularizer), tol=1e-7, max_iter=2000)
    result = create("solver", solver).solve(problem)
    assert result.dual_gap <= 1e-7
    ref = _reference(Ks, y, 10.0, "simplex" if regularizer == "simplex" else "l2")
    assert result.objective == pytest.approx(ref, rel=1e-5)
