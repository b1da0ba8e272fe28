"""MK-MLR (thesis ch. 6): MLR-L1 as the inner problem of the library's outer MKL solvers.

The MK-MLR problem (6.5) is

    min_{mu in D} max_S  sum_ik Ysign_ik S_ik - 1/2 sum_m mu_m sum_k S_k' K_m S_k   (MLR-L1's constraints on S),

the library's outer problem with ``L(alpha) = sum alpha`` and one coefficient block per label: the label's
signed coefficients ``S_k`` (so ``q_m = sum_k S_k' K_m S_k = tr(S' K_m S)``).  Any registered regularizer gives
the domain ``D`` (``"simplex"``: the thesis's l1 domain; ``"lp_ball"``: l_p; ``"uniform"``: the average kernel)
and any registered outer solver the weights, with the certified duality gap of the fit core: the inner
solution's primal objective is MLR-L1's matching-hinge primal, so the gap certifies the whole saddle point.
(The thesis solves it by SILP with aggregated cuts; the level method is the library's cutting-plane solver.)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from multikernel.core.interfaces import InnerProblem, InnerSolution
from multikernel.ranking.solver import solve_mlr

__all__ = ["RankingInner"]


class RankingInner(InnerProblem):
    """MLR-L1 on a combined kernel, for :class:`~multikernel.MKLProblem` (``inner=RankingInner(...)``).

    Parameters
    ----------
    Ysign : ndarray of shape (n, m)
        +1 relevant, -1 irrelevant, 0 unknown.
    C : float
        MLR-L1's box bound.
    max_sweeps : int
        Passes over the samples per inner solve.
    random_state : int or None
        Seed of the visiting orders (the same for every solve: results are reproducible).

    Notes
    -----
    ``alpha`` and ``coef`` have shape (m, n): ``coef[k]`` is label ``k``'s coefficient vector ``S_k``, so the
    decision values on a cross kernel ``K(x, X)`` are ``K(x, X) @ coef.T``.  A warm start ``alpha0`` is a previous
    solution (``alpha = |coef|``).
    """

    def __init__(self, Ysign: np.ndarray, C: float = 1.0, *, max_sweeps: int = 1000,
                 random_state: int | None = 0) -> None:
        self.Ysign = np.ascontiguousarray(Ysign, dtype=np.float64)
        self.C = float(C)
        self.max_sweeps = max_sweeps
        self.random_state = random_state

    @property
    def alpha_shape(self) -> tuple[int, ...]:
        return self.Ysign.T.shape

    def solve(self, K: Any, alpha0: np.ndarray | None, tol: float) -> InnerSolution:
        coef0 = None
        if alpha0 is not None and np.shape(alpha0) == self.alpha_shape:
            coef0 = np.asarray(alpha0).T * self.Ysign
        sol = solve_mlr(K, self.Ysign, self.C, coef0=coef0, tol=tol, max_sweeps=self.max_sweeps,
                        random_state=self.random_state)
        return InnerSolution(alpha=sol.alpha.T, coef=sol.coef.T, bias=np.zeros(self.Ysign.shape[1]),
                             dual_objective=sol.dual_objective, primal_objective=sol.primal_objective,
                             n_iter=sol.n_sweeps)

    def linear_term(self, alpha: np.ndarray) -> float:
        return float(np.sum(alpha))
