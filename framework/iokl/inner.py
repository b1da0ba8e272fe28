"""The SVM step of IOKL (4.12): the simplex QP with a per-sample ridge, as an inner problem of the core."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from multikernel.core.interfaces import InnerProblem, InnerSolution
from multikernel.solve.smo import fill_to_sum
from multikernel.solve.svm import InnerQP, solve_inner

__all__ = ["SimplexRidge"]


class SimplexRidge(InnerProblem):
    """``max_{alpha >= 0, 1'alpha = 1} -sum_i alpha_i^2 / (2 C_i) - 1/2 alpha' K alpha``.

    ``K`` is the combined input-output kernel, which already carries the candidates' signs, so the
    coefficient block is ``alpha`` itself and the core's ``q_k = alpha' K_k alpha`` are the thesis's
    ``alpha' K^IO_{m,t} alpha``.  With ``L(alpha) = -sum alpha_i^2 / (2 C_i)`` the MKL problem over the
    group regularizers is exactly IOKL-HM (4.4) or IOKL-SM (4.8).

    Parameters
    ----------
    C : ndarray of shape (n,)
        Per-sample costs of the square hinge loss (``C_l`` and ``C_u`` for semi-supervised learning).
    """

    def __init__(self, C: np.ndarray) -> None:
        C = np.asarray(C, dtype=np.float64)
        if C.ndim != 1 or not np.all(np.isfinite(C)) or np.any(C <= 0):
            raise ValueError("C must be a vector of positive finite costs")
        self.C = C
        self.ridge = 1.0 / C

    @property
    def alpha_shape(self) -> tuple[int, ...]:
        return self.C.shape

    def solve(self, K: Any, alpha0: np.ndarray | None, tol: float) -> InnerSolution:
        # IOKL's SVM step (4.12): the simplex with a per-sample ridge, solved as a general inner QP
        sol = solve_inner(K, InnerQP(p=0.0, ridge=self.ridge, total=1.0, signed=False), alpha0=alpha0, tol=tol)
        return _exact_total(sol)

    def linear_term(self, alpha: np.ndarray) -> float:
        return float(-0.5 * np.sum(self.ridge * alpha**2))


def _exact_total(sol: InnerSolution) -> InnerSolution:
    """``sol`` with ``sum(alpha) == 1`` to the last bit (moved by the solver's own rule, ``fill_to_sum``), or as it is.

    The SMO's ``alpha`` sums to 1 within a few ulps.  A warm start that does not sum to 1 exactly is moved
    onto the simplex by the solver (an ulp on one entry), and a start that moved cannot use the products of
    the previous quadratic forms (:meth:`~multikernel.iokl.stack.IOColumns.warm_products`), which are for the
    unmoved ``alpha``: the solve then reads the columns of the whole support again.  Moving the ulp here,
    before the forms, keeps the next start unmoved.  The objectives change by rounding only.
    """
    alpha = sol.alpha
    if alpha.sum() == 1.0:
        return sol
    alpha = alpha.copy()
    lo, up = np.zeros(len(alpha)), np.full(len(alpha), np.inf)
    for _ in range(3):
        fill_to_sum(alpha, lo, up, 1.0)
        if alpha.sum() == 1.0:
            return attrs.evolve(sol, alpha=alpha, coef=alpha.copy(), at_bound=alpha <= 0.0)
    return sol
