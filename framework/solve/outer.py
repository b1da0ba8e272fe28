"""What every outer solver shares: the bounds and certified gap, the stopping rules, the inner tolerance, the
loop itself and its interruption.

An outer solver derives from :class:`OuterSolver` and writes only its step: from an evaluated
:class:`Iterate` (weights, inner solution, quadratic forms) to the next one, or :class:`Stalled` when it
cannot make progress at the current inner precision.  :meth:`OuterSolver.solve` runs the steps under one
rule for ``max_iter``, the certified stopping test, stalls (re-solve at a tighter inner tolerance before
giving up) and Ctrl-C (the best weights so far, with :class:`~multikernel.errors.FitInterruptedWarning`);
:class:`OuterLoop` keeps the bookkeeping and words the warning that says what would help.
"""

from __future__ import annotations

import abc
import math
import warnings
from typing import Any

import attrs
import numpy as np
from sklearn.exceptions import ConvergenceWarning

from multikernel.core.interfaces import InnerCapability, InnerSolution, MKLProblem, MKLResult, Solver
from multikernel.errors import FitInterruptedWarning
from multikernel.solve.scaling import ray_lower_bound
from multikernel.stack.combination import CombinedKernel
from multikernel.stack.products import CombinedColumns, StackProducts, supports_products

__all__ = ["OuterLoop", "OuterSolver", "Evaluator", "Iterate", "Stalled", "Converged", "start_point", "fixed_weights",
           "certified_lower_bound", "certified_forms", "truncation_slack", "revived", "INNER_TOL_FLOOR",
           "FLOAT32_INNER_TOL_FLOOR", "RESOLVABLE_GAP", "inner_tol_floor"]

#: The finest inner tolerance the loop asks for: below it the inner solvers' rounding errors dominate.  It was 1e-9
#: until a warm-started walk to C = 1e4 on a kernel scaled by 1e3 (objective 4.5e-3) stalled at a certified gap of
#: 1.05e-3 for tol 1e-3: the SMO's margin errors at its KKT tolerance, times C, are the inner primal-dual gap (about
#: C n tol), which the smallest objectives cannot absorb at 1e-9.  SMO-MKL's own floor is 1e-12.
INNER_TOL_FLOOR = 1e-11
#: About the smallest relative gap the certificates resolve in float64: inner solves at the floor leave relative errors
#: of 1e-10 to 1e-9 in the bounds (the level method's certificate hovered at 2.3e-9 on a box-simplex problem), so a
#: solver that stalls below it needs a larger tol, not a change.  On float32 stacks: 10 times their floor.
RESOLVABLE_GAP = 1e-8
#: The finest inner tolerance on a float32 stack.  Its kernels are float64 ones rounded by up to 2^-24 relative, so a
#: combination of rank-deficient kernels is indefinite by about that much (australian in the soft margin protocol:
#: eigenvalues down to -5.5e-7 beside a largest of 195), and the SMO cycled on that face at a KKT tolerance of 1e-9:
#: one solve ran into the 10^7-iteration limit (11 s) that converges at 1e-8 in 1.6 s.  (A floor of 1e-7 made
#: heart's grid 25 % slower: the line searches then compare values at too coarse a precision.)
FLOAT32_INNER_TOL_FLOOR = 1e-8


def inner_tol_floor(stack: Any) -> float:
    """The finest inner tolerance worth asking for on ``stack``: :data:`FLOAT32_INNER_TOL_FLOOR` for float32
    kernels, :data:`INNER_TOL_FLOOR` otherwise (also where the stack does not say its precision)."""
    try:
        single = np.dtype(stack.dtype) == np.float32
    except (AttributeError, NotImplementedError, TypeError):
        single = False
    return FLOAT32_INNER_TOL_FLOOR if single else INNER_TOL_FLOOR


def certified_lower_bound(problem: MKLProblem, alpha: np.ndarray, q: np.ndarray) -> float:
    """The certified lower bound of the optimum that ``alpha`` (with its quadratic forms ``q``) gives.

    ``L(alpha) - dual_bound(q/2)`` (weak duality), replaced by the best bound on the ray ``s * alpha`` when it
    is infinite and the inner problem declares a ray (:mod:`multikernel.solve.scaling`; finite for GMKL's pure
    l1 regularizer, whose plain bound is infinite near the optimum).  Never below the plain bound.
    The problem's ``ray_search`` setting says when to search the ray.
    """
    plain = problem.linear_term(alpha) - problem.regularizer.dual_bound(0.5 * q)
    search = problem.ray_search
    if search == "never" or (search == "infinite" and math.isfinite(plain)):
        return plain
    ray = problem.ray(alpha)
    if ray is None:
        return plain
    return ray_lower_bound(problem.regularizer, q, *ray, plain=plain)


def truncation_slack(problem: MKLProblem, coef: np.ndarray) -> np.ndarray | None:
    """What the quadratic forms of ``coef`` on the exact kernels may exceed those of the stack by, per kernel.

    ``None`` for a stack that holds its kernels exactly; a factored stack
    (:class:`~multikernel.stack.factored.FactoredStack`) bounds the forms of its truncation residuals.
    """
    bound = getattr(problem.stack, "truncation_bound", None)
    return None if bound is None else bound(coef)


def certified_forms(problem: MKLProblem, coef: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Quadratic forms for a certified lower bound: ``q`` plus :func:`truncation_slack`.

    ``dual_bound`` is non-decreasing in ``q`` (the weights are non-negative), so the lower bound at forms
    that bound the exact kernels' from above bounds the optimum of the problem on the exact kernels.
    """
    slack = truncation_slack(problem, coef)
    return q if slack is None else q + slack


def fixed_weights(problem: MKLProblem) -> bool:
    """Whether the domain of the weights is a single point (the average kernel): no weight step, and no
    quadratic forms, since the certificate is then the inner solve's own gap."""
    return problem.regularizer.domain == "point"


class OuterLoop:
    """Tracks one outer solve: the best primal (upper) and dual (lower) bounds and when to stop.

    For weights ``mu`` in the domain and the inner solution at ``mu``,

    * upper bound: inner primal objective + ``Omega(mu)`` (the MKL primal at a feasible point),
    * lower bound: ``L(alpha) - max_{nu in D} (nu' q/2 - Omega(nu))`` (weak duality, any alpha),

    so ``(upper - lower) / max(|upper|, 1e-12)`` is a certified relative duality gap.  Where the lower bound
    at ``alpha`` is infinite, it is the best one on the ray ``s * alpha`` (:func:`certified_lower_bound`).
    """

    def __init__(self, problem: MKLProblem) -> None:
        self.problem = problem
        self.upper = math.inf
        self.lower = -math.inf
        self.best: MKLResult | None = None
        self.best_inner_gap = math.inf  # the inner solve's own gap (absolute) at the best upper bound
        self.history: list[dict[str, float]] = []
        self._previous_objective: float | None = None
        self.n_iter = 0
        self.inner_tol = problem.inner_tol
        self.inner_tol_floor = inner_tol_floor(problem.stack)
        #: The best lower bound without the truncation slack of a factored stack's kernels (``-inf`` on other stacks).
        self.untruncated_lower = -math.inf

    def offer(self, mu: np.ndarray, sol: InnerSolution, q: np.ndarray | None) -> tuple[float, float]:
        """Update the bounds with an evaluated point that is not an iterate (a line-search trial).

        Any inner solution gives a certified lower bound, and any feasible ``mu`` with its classifier an
        upper bound, so trials may end the solve early.  Without ``q`` (a trial whose quadratic forms
        were not computed) only the upper bound is updated, except on a single-point domain
        (:func:`fixed_weights`), whose lower bound is the inner dual objective.  Returns the (upper, lower)
        bounds of this point (lower ``-inf`` without ``q``, except there).
        """
        p = self.problem
        upper = sol.primal_objective + p.regularizer.penalty(mu)
        if q is not None:
            slack = truncation_slack(p, sol.coef)
            lower = certified_lower_bound(p, sol.alpha, q if slack is None else q + slack)
            if slack is not None:
                # the bound on the factored kernels alone: the advice of a fit that stops short names the truncation
                self.untruncated_lower = max(self.untruncated_lower, certified_lower_bound(p, sol.alpha, q))
        elif fixed_weights(p):
            # D = {mu}: dual_bound(q/2) = mu'q/2 - Omega(mu), and L(alpha) - mu'q/2 is the inner dual
            # objective on K(mu), which the inner solve computed without reading the stack again
            lower = sol.dual_objective + p.regularizer.penalty(mu)
            slack = truncation_slack(p, sol.coef)
            if slack is not None:
                lower -= 0.5 * float(mu @ slack)
        else:
            lower = -math.inf
        if upper < self.upper:
            self.upper = upper
            self.best_inner_gap = sol.primal_objective - sol.dual_objective
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
        if inner_gap > 0.25 * self.problem.tol:
            self.tighten_inner_tol()

    def tighten_inner_tol(self) -> bool:
        """Divide the inner tolerance by 10, down to :attr:`inner_tol_floor`; False if already there."""
        if self.inner_tol <= self.inner_tol_floor:
            return False
        self.inner_tol = max(self.inner_tol * 0.1, self.inner_tol_floor)
        return True

    @property
    def met(self) -> bool:
        """Whether the certified gap already meets the tolerance (used when a solver stalls)."""
        return self.gap <= self.problem.tol

    @property
    def gap(self) -> float:
        if not (math.isfinite(self.upper) and math.isfinite(self.lower)):
            return math.inf
        return max(self.upper - self.lower, 0.0) / max(abs(self.upper), 1e-12)

    @property
    def inner_gap(self) -> float:
        """The inner solve's own gap at the best weights, relative like :attr:`gap`."""
        return self.best_inner_gap / max(abs(self.upper), 1e-12)

    @property
    def inner_limited(self) -> bool:
        """Whether the inner solve's own gap is what keeps the certified gap above ``tol``.

        The certified gap at the best weights is at least about the inner gap there; when removing that
        inner gap would bring the certified gap within ``tol``, outer iterations cannot help, only more
        precise inner solves can.
        """
        return math.isfinite(self.gap) and self.gap - self.inner_gap <= self.problem.tol

    def _advice(self, stalled: bool, solver: str) -> str:
        """What would help a solve that stopped short of ``tol`` (``solver``: the name of the one that did)."""
        inner = self.inner_gap
        untruncated = (self.upper - self.untruncated_lower) / max(abs(self.upper), 1e-12)
        if math.isfinite(self.gap) and untruncated <= self.problem.tol < self.gap:
            return (f"the truncation of the factored kernels keeps it above tol (without it the gap would be "
                    f"{max(untruncated, 0.0):.3g}): a smaller factor_tol helps")
        if self.inner_limited:
            if self.inner_tol > self.inner_tol_floor:
                return (f"the inner solves' own gap ({inner:.3g}) keeps it above tol: a smaller inner_tol "
                        f"helps (it was {self.inner_tol:g} at the end)")
            return (f"the inner solves' own gap ({inner:.3g}) keeps it above tol even at the finest inner "
                    f"tolerance ({self.inner_tol_floor:g}): increase tol")
        other = f"another outer solver than {solver!r}" if solver else "another outer solver"
        resolvable = max(RESOLVABLE_GAP, 10.0 * self.inner_tol_floor)
        if stalled and self.gap <= resolvable:
            return (f"a certified gap below {resolvable:g} is beyond what inner solves at the finest "
                    f"tolerance resolve: increase tol")
        if stalled:
            return (f"neither more iterations nor a smaller inner_tol will help here: {other} may get further "
                    f"(`multikernel plugins` lists them)")
        return f"increase max_iter or tol; {other} may need fewer iterations"

    def result(self, converged: bool, interrupted: bool = False, reason: str | None = None,
               solver: str = "") -> MKLResult:
        """The best iterate found, with the certified gap; warns when the rule was not met.

        ``reason`` says why a solver stopped before ``max_iter`` (for example a line search that can no
        longer decrease the objective).  The warning then says what would help: a smaller ``inner_tol``
        only when the inner solves' own gap is what keeps the certified gap above ``tol``, else more
        iterations or another solver than ``solver`` (the name of this one).  After Ctrl-C
        (``interrupted``) the result has ``interrupted=True`` and a
        :class:`~multikernel.errors.FitInterruptedWarning` is issued.
        """
        if self.best is None:
            if interrupted:
                raise KeyboardInterrupt("interrupted during the first inner solve: no weights to return yet")
            raise RuntimeError("the outer loop was stopped before its first iteration finished")
        res = self.best
        res.lower_bound, res.dual_gap = self.lower, self.gap
        res.n_iter, res.converged, res.history = self.n_iter, converged, self.history
        res.interrupted = interrupted
        tol = self.problem.tol
        if interrupted:
            warnings.warn(f"fit interrupted after {self.n_iter} outer iterations; returning the best "
                          f"weights so far (certified relative duality gap {self.gap:.3g})",
                          FitInterruptedWarning, stacklevel=3)
        elif not converged and reason is not None:
            warnings.warn(f"the outer solver stopped after {self.n_iter} iterations: {reason}; certified "
                          f"relative duality gap {self.gap:.3g} (tol={tol:g}); {self._advice(True, solver)}",
                          ConvergenceWarning, stacklevel=3)
        elif not converged:
            warnings.warn(f"the outer solver stopped at max_iter={self.problem.max_iter} with a relative "
                          f"duality gap of {self.gap:.3g} (tol={tol:g}); {self._advice(False, solver)}",
                          ConvergenceWarning, stacklevel=3)
        return res


# --------------------------------------------------------------------------------------------------
# The loop every solver shares
# --------------------------------------------------------------------------------------------------
@attrs.define(slots=False)
class Iterate:
    """Weights with their evaluation: the inner solution, its quadratic forms and the objective.

    ``q`` is ``None`` when the quadratic forms were not computed (a line-search trial not yet accepted;
    the loop then records the upper bound only).  ``objective`` is ``F = J + Omega`` with ``J`` the inner
    *dual* objective, a lower bound of ``J(mu)`` (see :class:`Evaluator`).  ``memo`` is what a solver
    carries from one step to the next (the spectral step of projected gradient, the last direction of the
    reduced gradient); ``inner_tol`` the inner tolerance ``sol`` was solved at.
    """

    mu: np.ndarray
    sol: InnerSolution
    q: np.ndarray | None
    objective: float
    memo: Any = None
    inner_tol: float = math.inf

    @property
    def inner_gap(self) -> float:
        """The inner solve's own duality gap: the uncertainty of ``objective`` as a value of ``F(mu)``."""
        return max(self.sol.primal_objective - self.sol.dual_objective, 0.0)


@attrs.define(frozen=True)
class Stalled:
    """A step that cannot make progress at the current inner precision, and why."""

    reason: str


@attrs.define(frozen=True)
class Converged:
    """A step that ends the solve because the solver's own (the original authors') stopping rule holds.

    Only for rules a solver offers as an option beside the certified gap (SILP's relative LP gap, say); the
    result then has ``converged=True`` like ``stopping="relative_change"``, and ``dual_gap`` is still the
    certified gap reached.
    """

    reason: str


class Evaluator:
    """Inner solves at given weights (warm-started) and the objective ``F = J + Omega`` they give.

    ``F`` uses the inner *dual* objective: with a warm start it changes smoothly between neighbouring
    weights, which is what a line search compares; the inner gap (:attr:`Iterate.inner_gap`) says how far
    it may be from the true ``F``.  Every evaluation with its quadratic forms is offered to the outer loop,
    so a line-search trial can improve the certified bounds too.  One evaluator serves one solve; solvers
    that keep state across iterations (the cutting planes of the level method) extend it.

    **One read of the stack per iteration** (the problem's ``one_pass``; a whole dense stack and one SVM block): the
    quadratic forms of a solution are computed as the products ``u_m = K_m v`` (:class:`StackProducts`),
    which also give the next solve's starting gradient ``K(mu') v = sum_m mu'_m u_m`` for any new weights;
    that solve then reads only the columns of ``K(mu')`` it touches (:class:`CombinedColumns`), and the
    combined kernel is not formed.  Solves without such products (the first, or from another ``alpha``)
    use the combined kernel as before.
    """

    def __init__(self, problem: MKLProblem, loop: OuterLoop) -> None:
        self.problem = problem
        self.loop = loop
        self.n_solves = 0
        self.combined = CombinedKernel(problem.stack)
        inner = problem.inner
        self.fused = (problem.one_pass and supports_products(problem.stack)
                      and {InnerCapability.LABELLED_BLOCKS, InnerCapability.SINGLE_BLOCK} <= inner.capabilities())
        self._products: StackProducts | None = None
        self._diag: np.ndarray | None = None
        #: ``F`` where a descent solver last restarted from revived weights (its closed-form fallback): a
        #: restart is taken again only from a lower ``F``, so two restarts never repeat each other.
        self.restarted_at = math.inf

    def _kernel(self, mu: np.ndarray, alpha0: np.ndarray | None) -> Any:
        """``K(mu)`` for a solve from ``alpha0``: by columns with the starting gradient from the products of
        ``alpha0`` when there are such products (covering the weights' support), else combined."""
        products = self._products
        if products is None or alpha0 is None or alpha0 is not products.alpha or not self.fused:
            return self.combined(mu)
        if not products.covered[np.flatnonzero(mu)].all():
            return self.combined(mu)
        if self._diag is None:
            self._diag = self.problem.stack.diag()
        self.combined.release()  # its memory goes to the columns' cache instead
        return CombinedColumns(self.problem.stack, mu, self._diag, products)

    def forms(self, sol: InnerSolution, kernels: np.ndarray | None = None) -> np.ndarray:
        """The quadratic forms of ``sol`` (all kernels, or only ``kernels``, in that order).

        On the one-pass path they come from products kept for the next solve from ``sol.alpha``.
        """
        if self.fused and sol.at_bound is not None and np.ndim(sol.coef) == 1:
            self._products = StackProducts(self.problem.stack, sol.alpha, sol.coef, sol.at_bound, kernels)
            return self._products.forms()
        return self.problem.quad_forms(sol.coef, kernels)

    def __call__(self, mu: np.ndarray, alpha0: np.ndarray | None, with_q: bool = True) -> Iterate:
        """The inner solution at ``mu``, its quadratic forms (unless not ``with_q``) and ``F(mu)``.

        Line-search trials skip the quadratic forms, a pass over the stack as costly as the combination,
        until they are accepted (:meth:`certify`).
        """
        p = self.problem
        tol = self.loop.inner_tol
        sol = p.solve_inner(self._kernel(mu, alpha0), alpha0, tol)
        self.n_solves += 1
        it = Iterate(mu=mu, sol=sol, q=None, objective=sol.dual_objective + p.regularizer.penalty(mu), inner_tol=tol)
        if not with_q:
            self.loop.offer(mu, sol, None)
            return it
        return self.certify(it)

    def certify(self, it: Iterate) -> Iterate:
        """Compute the quadratic forms of ``it`` (if missing) and offer its lower bound to the loop."""
        if it.q is None:
            it.q = self.forms(it.sol)
        self.loop.offer(it.mu, it.sol, it.q)
        return it

    def gradient(self, it: Iterate) -> np.ndarray:
        """``dF/dmu = -q/2 + grad Omega(mu)`` (Danskin's theorem at the inner solution)."""
        return -0.5 * it.q + self.problem.regularizer.penalty_gradient(it.mu)


def revived(mu: np.ndarray, initial: np.ndarray) -> np.ndarray:
    """``mu`` with 0.1 % of the regularizer's ``initial`` point mixed in: every weight positive, still in the
    domain (a convex combination of two feasible points), and close to ``mu``.  Multiplicative and closed-form
    updates never move a zero weight; this lets them."""
    return 0.999 * mu + 0.001 * initial


def start_point(problem: MKLProblem, revive: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
    """The starting weights and alpha: the warm start made feasible for this regularizer, or ``initial``.

    A warm start from another point of a hyper-parameter grid may lie outside this domain (a smaller cap
    theta, say), so it is projected.  With ``revive``, zero weights are lifted by mixing in 0.1% of the
    initial point (a convex combination of two feasible points stays feasible): the multiplicative
    closed-form updates can never move a zero weight again.
    """
    reg, M = problem.regularizer, problem.stack.n_kernels
    reg.check(M)
    init = np.asarray(reg.initial(M), dtype=np.float64)
    warm = problem.warm_start
    if warm is None or np.shape(warm.weights) != (M,):
        return init, None
    mu = np.asarray(warm.weights, dtype=np.float64).copy()
    try:
        mu = np.asarray(reg.project(mu), dtype=np.float64)
    except NotImplementedError:
        mu = init  # the warm weights may lie outside this domain and cannot be brought back into it
    if revive and np.any(mu <= 0):
        mu = revived(mu, init)
    alpha = warm.alpha if np.shape(warm.alpha) == problem.block_shape else None
    return mu, alpha


class OuterSolver(Solver):
    """An outer solver written as its step; :meth:`solve` is the loop all of them share.

    A subclass implements :meth:`step` and may override :meth:`check` (parameters and domain, before any
    work), :meth:`evaluator` (an :class:`Evaluator` with per-solve state) and ``revive`` (lift the zero
    weights of a warm start).  The loop evaluates the starting weights, then alternates recording the
    iterate (bounds, callback, stopping rule) and a step, at most ``max_iter`` iterations.  A step that
    returns :class:`Stalled` makes the loop re-solve the same weights at a ten times smaller inner
    tolerance (or at the one the loop has tightened to since they were solved), a cheap warm-started solve;
    only at the finest tolerance does the stall end the solve (a ConvergenceWarning gives its reason and what
    would help).  Ctrl-C returns the best weights so far.  On a single-point domain (:func:`fixed_weights`)
    no step is taken and no quadratic form computed: the inner solve is refined until its gap meets ``tol``.
    """

    #: Lift zero weights of a warm start (for multiplicative updates, which never move a zero weight).
    revive: bool = False

    def check(self, problem: MKLProblem) -> None:
        """Raise ``ValueError`` for parameters or a regularizer this solver cannot work with."""

    def evaluator(self, problem: MKLProblem, loop: OuterLoop) -> Evaluator:
        """The per-solve evaluator (override to keep state across iterations)."""
        return Evaluator(problem, loop)

    @abc.abstractmethod
    def step(self, evaluate: Evaluator, it: Iterate) -> Iterate | Stalled | Converged:
        """From the recorded iterate ``it`` to the next evaluated one, :class:`Stalled`, or :class:`Converged`
        (the solver's own optional stopping rule holds)."""

    def solve(self, problem: MKLProblem) -> MKLResult:
        self.check_parts(problem)
        self.check(problem)
        return self._run(problem)

    def _run(self, problem: MKLProblem) -> MKLResult:
        """The outer loop on a checked problem."""
        loop = OuterLoop(problem)
        evaluate = self.evaluator(problem, loop)
        converged = interrupted = False
        reason = None
        fixed = fixed_weights(problem)
        try:
            it = evaluate(*start_point(problem, revive=self.revive), with_q=not fixed)
            while not (converged := loop.record(it.mu, it.sol, it.q)) and loop.n_iter < problem.max_iter:
                nxt = Stalled("the weights are fixed (a single-point domain)") if fixed else self.step(evaluate, it)
                if isinstance(nxt, Converged):
                    converged = True
                    break
                if isinstance(nxt, Stalled):
                    # Re-solve the same weights more precisely: at the tolerance the loop has already
                    # tightened to since this iterate was solved, or else at a tighter one.
                    if it.inner_tol <= loop.inner_tol and not loop.tighten_inner_tol():
                        converged, reason = loop.met, nxt.reason
                        break
                    nxt = evaluate(it.mu, it.sol.alpha, with_q=not fixed)
                it = nxt
        except KeyboardInterrupt:
            interrupted = True
        return self.finish(evaluate, loop.result(converged, interrupted, reason, solver=self.name))

    def finish(self, evaluate: Evaluator, result: MKLResult) -> MKLResult:
        """The result the solve returns; a solver may attach what its evaluator learnt (its cuts)."""
        return result
