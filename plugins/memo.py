"""MEMO (Lauriola, Polato and Aiolli, 2018): kernel weights that maximise the margin and the kernels' variance.

MEMO ("minimum effort, maximum output") maximises over the simplex the squared distance between the
classes' convex hulls in the combined kernel (:func:`~multikernel.plugins.radius_margin.hull_margin`) plus a
term that favours expressive combinations:

    max_{mu in simplex}  rho^2(K(mu)) + theta/2 mu'Q mu,      Q_kl = <K_k, K_l>_F / (tr Q / M)

(MKLpy's normalization of ``Q``).  With ``theta = 0`` it is the hard-margin (maximum hull distance)
combination, a concave problem whose Frank-Wolfe gap certifies the weights; ``theta > 0`` adds a convex
term to a maximisation, and the search then stops when the objective rose by at most a relative ``tol`` over
the last 10 steps.  The weights found are the combination of one SVM, the loss's (the C-SVC by default).
"""

from __future__ import annotations

import numbers

import numpy as np

from multikernel.core.hookspecs import hookimpl
from multikernel.core.interfaces import Method, MKLProblem, Solver
from multikernel.plugins._weights_first import SimplexSearch
from multikernel.plugins.alignment import frobenius_gram
from multikernel.plugins.radius_margin import hull_margin, margin_tol
from multikernel.stack.combination import CombinedKernel

__all__ = ["MEMOSolver"]


class MEMOSolver(SimplexSearch):
    """MEMO: the weights that maximise ``rho^2(K(mu)) + theta/2 mu'Q mu``, then the loss's SVM on ``K(mu)``.

    Parameters
    ----------
    theta : float, default=0.0
        Non-negative weight of the kernels' variance term (MKLpy's default is 0).
    qp_tol : float, default=1e-7
        KKT tolerance of the margin QPs, relative to the combined kernel's mean diagonal.
    """

    name = "memo"

    @property
    def certified(self) -> bool:  # type: ignore[override]
        """With ``theta = 0`` the objective is concave, and the Frank-Wolfe gap certifies the weights."""
        return not self.theta
    replaces_objective = "weights maximising the class-hull margin plus theta/2 mu'Q mu, then one SVM"

    def __init__(self, theta: float = 0.0, qp_tol: float = 1e-7) -> None:
        super().__init__(qp_tol=qp_tol)
        self.theta = theta

    def check(self, problem: MKLProblem) -> None:
        super().check(problem)
        if not (isinstance(self.theta, numbers.Real) and np.isfinite(self.theta) and self.theta >= 0):
            raise ValueError(f"memo's theta must be a non-negative number; got {self.theta!r}")

    def objective(self, problem: MKLProblem, y: np.ndarray):
        stack = problem.stack
        theta = float(self.theta)
        qp_tol = float(self.qp_tol)
        diag = stack.diag()
        combined = CombinedKernel(stack)
        Q = None
        if theta > 0:  # M^2 n^2 work: only when the term counts
            Q = frobenius_gram(stack)
            Q /= max(np.trace(Q) / len(Q), 1e-300)
        state = {"gamma": None, "m2": None}

        def evaluate(mu: np.ndarray) -> tuple[float, np.ndarray]:
            K = combined(mu)  # an array, or kernel columns for a lazy stack (solve_qp takes both)
            scale = max(float((mu @ diag).mean()), 1e-300)
            tol = margin_tol(qp_tol, scale, state["m2"])
            _, state["gamma"] = hull_margin(K, y, 0.0, state["gamma"], tol)
            b = np.maximum(stack.quad_forms(state["gamma"] * y), 0.0)
            state["m2"] = float(mu @ b)
            if Q is None:
                return -float(mu @ b), -b
            Qmu = Q @ mu
            return -float(mu @ b + 0.5 * theta * mu @ Qmu), -(b + theta * Qmu)

        return evaluate


MEMO = Method(
    name="memo", summary="MEMO: weights maximising the class-hull margin plus theta/2 mu'Q mu (theta = 0), "
                         "then one SVM.",
    loss="csvc", regularizer="simplex", solver="memo", solver_params={"theta": 0.0},
    citation="Lauriola, Polato and Aiolli, The minimum effort maximum output principle applied to Multiple Kernel "
             "Learning, ESANN 2018.",
)


@hookimpl
def multikernel_solvers() -> dict[str, type[Solver]]:
    return {MEMOSolver.name: MEMOSolver}


@hookimpl
def multikernel_methods() -> dict[str, Method]:
    return {MEMO.name: MEMO}
