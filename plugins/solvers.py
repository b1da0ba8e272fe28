"""Built-in outer solvers."""

from __future__ import annotations

import numpy as np

from multikernel.hookspecs import hookimpl
from multikernel.interfaces import MKLProblem, MKLResult, Solver
from multikernel.outer import OuterLoop


class BlockCoordinateDescent(Solver):
    """Alternate an inner SVM solve and the regularizer's closed-form weight update.

    This is Algorithm 1 of Xu, Tsang and Xu (2013) for the box-simplex, and the classic analytic update
    of Kloft et al. (2011) for the simplex and the l_p ball.  Each SVM solve starts from the previous
    alpha.  Needs a regularizer with ``closed_form_update``.
    """

    name = "bcd"

    def solve(self, problem: MKLProblem) -> MKLResult:
        stack, reg = problem.stack, problem.regularizer
        M = stack.n_kernels
        reg.check(M)
        warm = problem.warm_start
        mu = warm.weights.copy() if warm is not None else reg.initial(M)
        alpha = warm.alpha if warm is not None else None
        loop = OuterLoop(problem)
        converged = interrupted = False
        try:
            for _ in range(problem.max_iter):
                sol = problem.loss.solve(stack.combine(mu), problem.y, alpha0=alpha, tol=problem.inner_tol)
                alpha = sol.alpha
                q = stack.quad_forms(sol.coef)
                if loop.record(mu, sol, q):
                    converged = True
                    break
                new = reg.closed_form_update(mu, q)
                if new is None:
                    raise ValueError(f"regularizer {reg.name!r} has no closed-form update; "
                                     f"use a gradient solver instead of 'bcd'")
                mu = np.asarray(new, dtype=np.float64)
        except KeyboardInterrupt:
            interrupted = True
        return loop.result(converged, interrupted)


@hookimpl
def multikernel_solvers() -> dict[str, type[Solver]]:
    return {"bcd": BlockCoordinateDescent}
