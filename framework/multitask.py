"""Shared kernel weights across several binary problems (multi-class MKL with one mu for all classes).

The one-vs-rest problems share the weights and their objectives are summed:

    min_{mu in D} Omega(mu) + sum_t max_{alpha_t} L(alpha_t) - 1/2 sum_m mu_m q_m(alpha_t)

so the outer solvers see one problem whose ``q_m`` is the sum over tasks.  :class:`MultiTaskLoss` solves
the tasks on the same combined kernel; :class:`SummedQuadForms` makes ``quad_forms`` of the stacked
coefficients return that sum.  Neither is a plugin: the estimator builds them for ``multiclass="shared"``.
"""

from __future__ import annotations

import numpy as np

from multikernel.interfaces import InnerSolution, SampleLoss
from multikernel.stack import KernelStack

__all__ = ["MultiTaskLoss", "SummedQuadForms"]


class MultiTaskLoss(SampleLoss):
    """Solve one inner problem per row of ``Y`` on the same kernel; sum the objectives.

    ``alpha``, ``coef`` and ``bias`` of the returned :class:`InnerSolution` are stacked per task
    (shapes (T, n), (T, n) and (T,)).
    """

    name = "multitask"

    def __init__(self, base: SampleLoss) -> None:
        self.base = base

    def solve(self, K: np.ndarray, y: np.ndarray, alpha0: np.ndarray | None = None,
              tol: float = 1e-3) -> InnerSolution:
        sols = [self.base.solve(K, yt, None if alpha0 is None else alpha0[t], tol) for t, yt in enumerate(y)]
        return InnerSolution(
            alpha=np.array([s.alpha for s in sols]), coef=np.array([s.coef for s in sols]),
            bias=np.array([s.bias for s in sols]),  # type: ignore[arg-type]
            dual_objective=float(sum(s.dual_objective for s in sols)),
            primal_objective=float(sum(s.primal_objective for s in sols)),
            n_iter=int(sum(s.n_iter for s in sols)),
        )

    def linear_term(self, alpha: np.ndarray, y: np.ndarray) -> float:
        return float(sum(self.base.linear_term(a, yt) for a, yt in zip(alpha, y, strict=True)))


class SummedQuadForms(KernelStack):
    """A view of a stack whose ``quad_forms`` takes stacked coefficients (T, n) and sums over tasks."""

    def __init__(self, stack: KernelStack) -> None:
        self.stack = stack
        self.n_kernels, self.n_rows, self.n_cols = stack.n_kernels, stack.n_rows, stack.n_cols

    def combine(self, weights: np.ndarray, out: np.ndarray | None = None, accumulate: bool = False
                ) -> np.ndarray:
        return self.stack.combine(weights, out, accumulate)

    def column_provider(self, weights: np.ndarray):  # noqa: ANN201 (the wrapped stack's provider or None)
        return self.stack.column_provider(weights)

    def quad_forms(self, v: np.ndarray, kernels: np.ndarray | None = None) -> np.ndarray:
        v = np.atleast_2d(v)
        return np.sum([self.stack.quad_forms(row, kernels) for row in v], axis=0)

    def kernel(self, m: int) -> np.ndarray:
        return self.stack.kernel(m)
