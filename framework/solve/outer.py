"""Bookkeeping shared by every outer solver: bounds, certified gap, stopping rules, interruption."""

from __future__ import annotations

import math
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from multikernel.core.interfaces import InnerSolution, MKLProblem, MKLResult

__all__ = ["OuterLoop"]


class OuterLoop:
    """Tracks one outer solve: the best primal (upper) and dual (lower) bounds and when to stop.

    For weights ``mu`` in the domain and the inner solution at ``mu``,

    * upper bound: inner primal objective + ``Omega(mu)`` (the MKL primal at a feasible point),
    * lower bound: ``L(alpha) - max_{nu in D} (nu' q/2 - Omega(nu))`` (weak duality, any alpha),

    so ``(upper - lower) / max(|upper|, 1e-12)`` is a certified relative duality gap.
    """

    def __init__(self, problem: MKLProblem) -> None:
        self.problem = problem
        self.upper = math.inf
        self.lower = -math.inf
        self.best: MKLResult | None = None
        self.history: list[dict[str, float]] = []
        self._previous_objective: float | None = None
        self.n_iter = 0
        self.inner_tol = problem.inner_tol

    def offer(self, mu: np.ndarray, sol: InnerSolution, q: np.ndarray | None) -> tuple[float, float]:
        """Update the bounds with an evaluated point that is not an iterate (a line-search trial).

        Any inner solution gives a certified lower bound, and any feasible ``mu`` with its classifier an
        upper bound, so trials may end the solve early.  Without ``q`` (a trial whose quadratic forms
        were not computed) only the upper bound is updated.  Returns the (upper, lower) bounds of this
        point (lower ``-inf`` without ``q``).
        """
        p = self.problem
        upper = sol.primal_objective + p.regularizer.penalty(mu)
        lower = -math.inf if q is None else p.linear_term(sol.alpha) - p.regularizer.dual_bound(0.5 * q)
        if upper < self.upper:
            self.upper = upper
            self.best = MKLResult(weights=mu.copy(), alpha=sol.alpha, coef=sol.coef, bias=sol.bias,
                                  objective=upper, lower_bound=lower, dual_gap=math.inf, n_iter=0,
                                  converged=False)
        self.lower = max(self.lower, lower)
        return upper, lower

    def record(self, mu: np.ndarray, sol: InnerSolution, q: np.ndarray | None) -> bool:
        """Record iteration results; return True when the stopping rule is met.

        ``q=None`` (the quadratic forms were not all computed) records the upper bound only; the gap then
        uses the best lower bound found so far, so the rule stays certified.
        """
        p = self.problem
        self.n_iter += 1
        upper, lower = self.offer(mu, sol, q)
        self._adapt_inner_tol(sol, upper)
        dual_at_mu = sol.dual_objective + p.regularizer.penalty(mu)
        gap = self.gap
        entry = {"iteration": self.n_iter, "objective": dual_at_mu, "upper": upper, "lower": lower,
                 "gap": gap, "n_selected": int(np.count_nonzero(mu))}
        self.history.append(entry)
        if p.callback is not None:
            p.callback(entry)
        if p.stopping == "relative_change":
            prev, self._previous_objective = self._previous_objective, dual_at_mu
            return prev is not None and abs(dual_at_mu - prev) <= p.tol * max(abs(prev), 1e-12)
        return gap <= p.tol

    def _adapt_inner_tol(self, sol: InnerSolution, upper: float) -> None:
        """Tighten the inner tolerance when the inner solve's own gap keeps the outer gap above tol.

        The certified outer gap can never be smaller than the inner primal-dual gap, so once the inner gap
        is a large part of the tolerance, further outer iterations at the same inner precision are wasted.
        Each inner solve is warm-started, so a tighter solve near the optimum is cheap.
        """
        if self.problem.stopping != "gap":
            return
        inner_gap = (sol.primal_objective - sol.dual_objective) / max(abs(upper), 1e-12)
        if inner_gap > 0.25 * self.problem.tol and self.inner_tol > 1e-9:
            self.inner_tol = max(self.inner_tol * 0.1, 1e-9)

    @property
    def met(self) -> bool:
        """Whether the certified gap already meets the tolerance (used when a solver stalls)."""
        return self.gap <= self.problem.tol

    @property
    def gap(self) -> float:
        if not (math.isfinite(self.upper) and math.isfinite(self.lower)):
            return math.inf
        return max(self.upper - self.lower, 0.0) / max(abs(self.upper), 1e-12)

    def result(self, converged: bool, interrupted: bool = False, reason: str | None = None) -> MKLResult:
        """The best iterate found, with the certified gap; warns when the rule was not met.

        ``reason`` replaces the default "max_iter reached" explanation of the ConvergenceWarning (for
        example when a line search can no longer decrease the objective).
        """
        if self.best is None:
            if interrupted:
                raise KeyboardInterrupt("interrupted during the first inner solve: no weights to return yet")
            raise RuntimeError("the outer loop was stopped before its first iteration finished")
        res = self.best
        res.lower_bound, res.dual_gap = self.lower, self.gap
        res.n_iter, res.converged, res.history = self.n_iter, converged, self.history
        if interrupted:
            warnings.warn(f"fit interrupted after {self.n_iter} outer iterations; returning the best "
                          f"weights so far (certified relative duality gap {self.gap:.3g})",
                          RuntimeWarning, stacklevel=3)
        elif not converged and reason is not None:
            warnings.warn(f"the outer solver stopped after {self.n_iter} iterations: {reason}; certified "
                          f"relative duality gap {self.gap:.3g} (tol={self.problem.tol:g}). A smaller "
                          f"inner_tol usually helps", ConvergenceWarning, stacklevel=3)
        elif not converged:
            warnings.warn(f"the outer solver stopped at max_iter={self.problem.max_iter} with a relative "
                          f"duality gap of {self.gap:.3g} (tol={self.problem.tol:g}); increase max_iter "
                          f"or tol", ConvergenceWarning, stacklevel=3)
        return res
