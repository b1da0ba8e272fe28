"""Built-in outer solvers: block coordinate descent, projected gradient, reduced gradient (SimpleMKL) and
the level method.

All of them minimise ``F(mu) = Omega(mu) + J(mu)`` over the regularizer's domain, with
``J(mu) = max_alpha L(alpha) - 1/2 sum_m mu_m q_m(alpha)``.  By Danskin's theorem the gradient is
``dF/dmu_m = -q_m(alpha*)/2 + dOmega/dmu_m`` at the inner optimum ``alpha*``.  Each solver writes only its
step; :class:`multikernel.solve.outer.OuterSolver` runs the steps and
:class:`multikernel.solve.outer.OuterLoop` owns the bounds, the certified duality gap, the stopping rule and the
inner tolerance.  Every inner solve starts
from the previous ``alpha``.
"""

from __future__ import annotations

import math
import mmap
from collections.abc import Callable

import attrs
import numpy as np
from threadpoolctl import ThreadpoolController

from multikernel._threads import blas_for
from multikernel.core.capabilities import Capability, offered_by
from multikernel.core.hookspecs import hookimpl
from multikernel.core.interfaces import InnerSolution, MKLProblem, MKLResult, Regularizer, Solver
from multikernel.plugins._kept_cuts import keep_cuts, rescaled_cuts
from multikernel.plugins._master_lp import MasterLP
from multikernel.solve.outer import Converged, Evaluator, Iterate, OuterLoop, OuterSolver, Stalled, revived

# The solvers, and the parts other solver plugins build on (the toolkit of docs/plugins.md): the closed-form
# fallback of the line-search solvers, the cutting-plane model of the level method, level steps after a crawl,
# and the cap of a polyhedral domain.
__all__ = ["BlockCoordinateDescent", "LevelMethod", "ProjectedGradient", "ReducedGradient",
           "ClosedFormFallback", "CuttingPlanes", "LevelAfter", "polyhedral_cap"]


class _PartialFormsEvaluator(Evaluator):
    """Computes all quadratic forms (a certified lower bound) only every ``certify_every`` iterations when
    most weights are zero; the other iterates are recorded with their upper bound only."""

    def __init__(self, problem: MKLProblem, loop: OuterLoop, certify_every: int) -> None:
        super().__init__(problem, loop)
        self.certify_every = certify_every

    def __call__(self, mu: np.ndarray, alpha0: np.ndarray | None, with_q: bool = True) -> Iterate:
        return super().__call__(mu, alpha0, with_q=with_q and self.full(mu))

    def full(self, mu: np.ndarray) -> bool:
        """Whether the iterate at ``mu`` gets all its quadratic forms (a certified lower bound)."""
        return self.loop.n_iter % self.certify_every == 0 or 2 * np.count_nonzero(mu) > len(mu)


@attrs.frozen
class _Overrelaxation:
    """The exponent of ``bcd``'s next extrapolated trial, and how many iterations to wait before it.

    An accepted trial doubles the exponent.  A rejected one halves it; at the smallest exponent (2) the
    trials pause for 1, 2, 4, ... iterations (where the plain update is the better step, as for lp-MKL at
    p = 3, the trials cost few extra SVM solves).
    """

    exponent: float = 2.0
    skip: int = 0
    pause: int = 1

    def accepted(self, largest: float) -> _Overrelaxation:
        return _Overrelaxation(exponent=min(2.0 * self.exponent, largest))

    def rejected(self) -> _Overrelaxation:
        if self.exponent > 2.0:
            return attrs.evolve(self, exponent=max(self.exponent / 2.0, 2.0))
        return _Overrelaxation(exponent=2.0, skip=self.pause, pause=2 * self.pause)


#: A step that lowers ``F`` by less than this fraction of the certified gap (absolute) crawls.
CRAWL = 1e-3


def _crawls(evaluate: Evaluator, before: Iterate, after: Iterate) -> bool:
    """Whether the step from ``before`` to ``after`` lowered ``F`` by less than :data:`CRAWL` of the certified gap."""
    return before.objective - after.objective < CRAWL * (evaluate.loop.upper - evaluate.loop.lower)


class LevelAfter:
    """``level_after``: on a polyhedral domain keep the cut of every certified iterate (a lazy cutting-plane model,
    no LP) and, at the first stalled step (or, with ``switch_on_crawl``, a step that lowers ``F`` by less than
    :data:`CRAWL` of the gap), or after ``level_after`` iterations, solve the model once and go
    on with the level method's steps.  Shared by projected gradient and ``bcd``, whose own step is their ``_step``
    and whose own evaluator their ``_own_evaluator``."""

    level_after: int | None = None
    #: Whether a crawling step (not only a stalled one) switches to the level method's steps.
    switch_on_crawl = False

    def _check_level_after(self, problem: MKLProblem) -> None:
        if self.level_after is None:
            return
        if not (isinstance(self.level_after, int | np.integer) and not isinstance(self.level_after, bool)
                and self.level_after >= 1):
            raise ValueError(f"level_after must be None or a positive integer; got {self.level_after!r}")
        polyhedral_cap(problem.regularizer, problem.stack.n_kernels, f"{self.name} with level_after")

    def evaluator(self, problem: MKLProblem, loop: OuterLoop) -> Evaluator:
        if self.level_after is None:
            return self._own_evaluator(problem, loop)
        return CuttingPlanes(problem, loop, _LEVEL.max_cuts, lazy=True)

    def _own_evaluator(self, problem: MKLProblem, loop: OuterLoop) -> Evaluator:
        """The solver's evaluator without ``level_after``."""
        return Evaluator(problem, loop)

    def step(self, evaluate: Evaluator, it: Iterate) -> Iterate | Stalled | Converged:
        if self.level_after is None:
            return self._step(evaluate, it)
        return self._step_or_level(evaluate, it)

    def _step_or_level(self, evaluate: CuttingPlanes, it: Iterate) -> Iterate | Stalled | Converged:
        """The solver's own ``_step`` until the switch, then the level method's steps on the model of every cut."""
        if not evaluate.lazy:  # switched: the level method's step on the model of every cut so far
            return _LEVEL.step(evaluate, it)
        nxt = self._step(evaluate, it) if evaluate.loop.n_iter < self.level_after else Stalled("switch")
        if not isinstance(nxt, Stalled):
            if not (self.switch_on_crawl and _crawls(evaluate, it, nxt)):
                return nxt
            it = nxt
        # The solver's steps stalled, crawled or took level_after iterations: the cutting-plane model of the cuts
        # collected along the way certifies the weights (its aggregate alpha_bar, typically where F has a kink)
        # or continues with the level method's steps, which do not crawl where F is nearly flat.
        evaluate.lazy = False
        if not evaluate.settle(it.mu):
            return nxt
        if evaluate.loop.met:
            return Converged("the aggregate of the cutting-plane model certifies the current weights")
        return _LEVEL.step(evaluate, it)


class BlockCoordinateDescent(LevelAfter, OuterSolver):
    """Alternate an inner SVM solve and the regularizer's closed-form weight update.

    This is Algorithm 1 of Xu, Tsang and Xu (2013) for the box-simplex, and the classic analytic update
    of Kloft et al. (2011) for the simplex and the l_p ball.  With the classifier fixed, the weight step
    minimises the primal ``1/2 sum_m ||f_m||^2 / mu_m + Omega(mu)`` exactly (``closed_form_update``).  Each
    SVM solve starts from the previous alpha; a warm start from ``problem.warm_start`` is projected onto the
    domain and its zero weights revived (the multiplicative updates cannot revive them).  For the plain
    simplex (p = 1) this update is known to converge slowly; the certified gap shows it.

    The updates depend on the classifier only through ``||f_m|| = mu_m sqrt(q_m)``, so a zero weight stays
    zero and its ``q_m`` is needed only for the certified lower bound.  When most weights are zero, the
    forms of the non-zero ones are computed at every iteration and all forms (the certificate) every
    ``certify_every`` iterations; the upper bound is updated at every iteration.

    Parameters
    ----------
    certify_every : int, default=4
        Iterations between two certified lower bounds when most weights are zero (1: every iteration).
        The gap test can then stop the solve up to ``certify_every - 1`` iterations later than it could.
    extrapolate : bool, default=False
        Try the closed-form update ``T(mu)`` raised to a power: ``mu_m (T_m(mu) / mu_m)^t``, ``t > 1``, scaled back
        onto the domain's boundary by the regularizer's ``onto_boundary`` (the simplex, the l_p ball, elastic net;
        capability ``boundary``): over-relaxation of the multiplicative update, in its own geometry.  Where two
        kernels' forms nearly tie at the optimum, the plain update shrinks the losing weight by a factor close to 1
        per iteration: L1-MKL drawn by the tests took more than 200 iterations to a gap of 1e-3 where ``l1mkl`` took
        7.  The exponent doubles after every accepted trial (up to ``MAX_EXPONENT``) and halves after a rejected
        one; no weight falls below 1e-2 of the plain update's (a weight pushed to zero never grows again).  A trial
        is accepted only if it lowers ``F`` at least as much as the plain update is guaranteed to (the decrease of
        the primal with the classifier fixed); otherwise the plain update is taken, so no iteration does worse than
        the paper's.  A rejected trial costs one extra SVM solve; after a rejection at the smallest exponent (2) the
        trials pause for 1, 2, 4, ... iterations.
    level_after : int, optional
        On a polyhedral domain (the simplex, the box-simplex, with or without a penalty), keep the cut of ``F`` of
        every iterate and, at the first step that stalls or lowers ``F`` by less than 1e-3 of the certified gap,
        or after ``level_after`` iterations, continue with the level method's steps on the model of those cuts
        (as projected gradient's ``level_after``).  On L1-MKL the multiplicative update reaches the optimal
        value but its own ``alpha`` may not certify it where kernels nearly tie (a kink of ``F``): a warm-started
        walk sat at a certified gap of 3.9e-3 with ``F`` constant for 140 iterations, where the model's aggregate
        ``alpha_bar`` certifies at once.  Every iterate then gets all its quadratic forms (``certify_every`` does
        not apply).  ``None`` (default): the update throughout.
    """

    name = "bcd"
    requires = frozenset({Capability.CLOSED_FORM})
    revive = True

    #: The largest exponent of the extrapolated multiplicative step (``extrapolate``).
    MAX_EXPONENT = 1024.0
    #: An extrapolated weight stays above this fraction of the plain update's (``extrapolate``).
    SHRINK_FLOOR = 1e-2

    switch_on_crawl = True

    def __init__(self, certify_every: int = 4, extrapolate: bool = False, level_after: int | None = None) -> None:
        self.certify_every = certify_every
        self.extrapolate = extrapolate
        self.level_after = level_after

    def check(self, problem: MKLProblem) -> None:
        if not (isinstance(self.certify_every, int | np.integer) and self.certify_every >= 1):
            raise ValueError(f"certify_every must be a positive integer; got {self.certify_every!r}")
        if not isinstance(self.extrapolate, bool | np.bool_):
            raise ValueError(f"extrapolate must be True or False; got {self.extrapolate!r}")
        if self.extrapolate and Capability.BOUNDARY not in offered_by(problem.regularizer):
            raise ValueError(f"bcd's extrapolate=True needs a regularizer that scales a point onto its boundary "
                             f"(onto_boundary: the simplex, the l_p ball, elastic net), where a scaled update "
                             f"stays in the domain; {problem.regularizer.name!r} does not offer it: use "
                             f"extrapolate=False")
        self._check_level_after(problem)

    def _own_evaluator(self, problem: MKLProblem, loop: OuterLoop) -> Evaluator:
        return _PartialFormsEvaluator(problem, loop, self.certify_every)

    def _step(self, evaluate: Evaluator, it: Iterate) -> Iterate | Stalled:
        reg = evaluate.problem.regularizer
        q = it.q
        if q is None:
            # The update depends on q only through mu_m^2 q_m: zero weights (which stay zero) need no form.
            active = np.flatnonzero(it.mu)
            q = np.zeros(len(it.mu))
            q[active] = evaluate.forms(it.sol, active)
        new = reg.closed_form_update(it.mu, q)
        if new is None:
            raise ValueError(f"regularizer {reg.name!r} has no closed-form update; "
                             f"use a gradient solver instead of 'bcd'")
        new = np.asarray(new, dtype=np.float64)
        if np.array_equal(new, it.mu):
            return Stalled("the closed-form update returns the current weights")
        if not self.extrapolate:
            return evaluate(new, it.sol.alpha)
        longer, memo = self._extrapolated(evaluate, it, q, new)
        if longer is None:
            longer = evaluate(new, it.sol.alpha)
            longer.memo = memo
        return longer

    def _extrapolated(self, evaluate: _PartialFormsEvaluator, it: Iterate, q: np.ndarray,
                      new: np.ndarray) -> tuple[Iterate | None, _Overrelaxation]:
        """The trial ``mu_m (new_m / mu_m)^t``, ``t > 1``, renormalised, if it beats the plain update's
        guaranteed decrease (else ``None``), and the state of the next iteration's trial."""
        state = it.memo if isinstance(it.memo, _Overrelaxation) else _Overrelaxation()
        if state.skip:
            return None, attrs.evolve(state, skip=state.skip - 1)
        mu, t = it.mu, state.exponent
        act = (new > 0) & (mu > 0)  # where mu_m > 0 = new_m, q_m = 0: the weight is gone, its term vanishes
        # With the classifier f fixed the plain update lowers the primal 1/2 sum ||f_m||^2 / mu_m + Omega(mu) by
        # 1/2 sum ||f_m||^2 (1/mu_m - 1/new_m) + Omega(mu) - Omega(new), ||f_m||^2 = mu_m^2 q_m: F(new) is at
        # least that much lower (simplex_power and elastic_net have a penalty: it counts).
        reg = evaluate.problem.regularizer
        guaranteed = (0.5 * float(np.sum(mu * q) - np.sum(mu[act] ** 2 * q[act] / new[act]))
                      + float(reg.penalty(mu)) - float(reg.penalty(new)))
        cand = np.zeros_like(mu)
        log_ratio = np.log(new[act] / mu[act])
        cand[act] = np.exp(np.log(mu[act]) + t * (log_ratio - log_ratio.max()))  # largest factor 1: no overflow
        cand = reg.onto_boundary(cand)
        # no weight falls below a fraction of the plain update's: a weight pushed to zero never grows again
        cand[act] = np.maximum(cand[act], self.SHRINK_FLOOR * new[act])
        cand = reg.onto_boundary(cand)
        trial = evaluate(cand, it.sol.alpha, with_q=False)
        if not trial.objective <= it.objective - guaranteed:
            return None, state.rejected()
        trial.memo = state.accepted(self.MAX_EXPONENT)
        full = evaluate.full(cand) if isinstance(evaluate, _PartialFormsEvaluator) else True
        return (evaluate.certify(trial) if full else trial), trial.memo


class ClosedFormFallback:
    """The way out of kinks and crawls for the descent solvers (projected and reduced gradient, mirror descent):
    the regularizer's closed-form step where a step stalls or lowers ``F`` by less than :data:`CRAWL` of the gap."""

    def _unless_crawling(self, evaluate: Evaluator, it: Iterate, nxt: Iterate) -> Iterate:
        """``nxt``, or the closed-form step from it when the step from ``it`` crawled (:func:`_crawls`;
        :meth:`_coordinate_step`)."""
        if _crawls(evaluate, it, nxt):
            return self._coordinate_step(evaluate, nxt) or nxt
        return nxt

    def _coordinate_step(self, evaluate: Evaluator, it: Iterate) -> Iterate | None:
        """Where gradient steps stall or crawl while the gap is not the inner solves' doing, the block coordinate
        update of ``bcd`` (the regularizer's ``closed_form_update``) from ``it``, if it lowers ``F``; where weights
        vanish and it does not, the revived weights themselves (a restart, at most once per value of ``F``); else
        ``None``.

        ``J`` has kinks where the SVM's solution is not unique (a nearly singular combination): there the
        gradient of one ``alpha`` need not give a descent direction, the Armijo search backtracks to nothing and
        the solve stopped far from the optimum (warm-started grids on australian, C = 0.1: certified gaps of
        0.26 for SGMKL by projected gradient and 0.11 for SimpleMKL's reduced gradient, for a tolerance of
        1e-2, after the inner tolerance was cut to its floor).  The closed-form update minimises
        the variational upper bound of ``F`` at the current classifier, so it lowers ``F`` wherever the weights
        are not optimal, with no line search; the gradient steps then go on from its point.
        """
        reg = evaluate.problem.regularizer
        if Capability.CLOSED_FORM not in offered_by(reg) or it.q is None or evaluate.loop.inner_limited:
            return None
        init = np.asarray(reg.initial(len(it.mu)), dtype=np.float64)
        gap = evaluate.loop.upper - evaluate.loop.lower  # before the trials below, whose offers may narrow it
        first = None
        if np.all(it.mu > 0):
            first = self._closed_form_trial(evaluate, it, it)
            # Where weights vanish the update grows them by a bounded factor per step: a step that crawls too
            # (mirror descent with a weight at 7e-13 that the optimum gives 0.47: 180 updates each lowering F by
            # 2e-14, at a certified gap of 0.037) is kept only if reviving does nothing better.
            if (first is not None and it.objective - first.objective >= CRAWL * gap) or np.all(it.mu > 1e-9 * init):
                return first
        # The update never moves a zero weight, and the kinks are where zero (or vanishing) weights would grow:
        # start it from the revived weights, as bcd does with a warm start.  The
        # inner solution there also breaks the tie among the optimal alphas at the kink the way the nearby
        # weights do, so its bound can certify the current weights when they are optimal (GMKL with one kernel
        # at mu = 1e-16: certified gap 0.1 from the SMO's arbitrary alpha, 0 from this one).
        base = evaluate(revived(it.mu, init), it.sol.alpha)
        trial = self._closed_form_trial(evaluate, base, it)
        if trial is not None:
            return trial
        if not it.objective < evaluate.restarted_at or base.objective - it.objective > 0.1 * gap:
            return first
        # Where the update from there does not descend either (a weight must grow from 1e-17 to 0.02, by a bounded
        # factor per update), the solver restarts from the revived weights, a step up that is a small part of the
        # gap: its gradient there sees the kernel the kink hid.  SimpleMKL with a triplicated linear kernel stopped
        # at a certified gap of 0.018 for tol 1e-3; restarted once (F up by 6e-5 relative), it certified 1.7e-4 two
        # iterations later.
        evaluate.restarted_at = it.objective
        base.memo = it.memo if isinstance(it.memo, float) else None
        return base

    @staticmethod
    def _closed_form_trial(evaluate: Evaluator, base: Iterate, it: Iterate) -> Iterate | None:
        """The closed-form update from the evaluated ``base``, evaluated, if it lowers ``F`` below ``it``'s."""
        new = evaluate.problem.regularizer.closed_form_update(base.mu, base.q)
        if new is None or np.array_equal(new, base.mu):
            return None
        trial = evaluate(np.asarray(new, dtype=np.float64), base.sol.alpha)
        if not trial.objective < it.objective:
            return None
        # projected gradient's spectral step survives the detour (without it the next steps restart from the
        # unit step and crawl again: gmkl_l1 with duplicated kernels took 200 iterations); the reduced gradient's
        # conjugate direction does not
        trial.memo = it.memo if isinstance(it.memo, float) else None
        return trial



class _LineSearchSolver(ClosedFormFallback, OuterSolver):
    """Shared parameters of the solvers that take Armijo line searches (``sigma``, ``max_backtracks``)."""

    def __init__(self, sigma: float = 1e-4, max_backtracks: int = 30) -> None:
        self.sigma = sigma
        self.max_backtracks = max_backtracks

    def check(self, problem: MKLProblem) -> None:
        if not (0 < self.sigma < 1 and self.max_backtracks >= 1):
            raise ValueError(f"{self.name} needs 0 < sigma < 1 and max_backtracks >= 1")

    def _armijo(self, evaluate: Evaluator, it: Iterate, d: np.ndarray, slope: float, t: float = 1.0,
                finish: Callable[[np.ndarray], np.ndarray] | None = None) -> tuple[Iterate, float] | Stalled:
        """Backtrack ``t`` until ``F(mu + t d) <= F + sigma t slope`` and ``F(mu + t d) < F``; that point and ``t``.

        ``slope = grad'd < 0``.  The next ``t`` minimises the quadratic through ``F``, the slope and the rejected
        value, kept within ``[0.1 t, 0.5 t]`` (the safeguard of Nocedal and Wright, section 3.5).  ``finish``
        maps each trial point to the one evaluated (for example to clear rounding residues).

        The values compared are inner dual objectives, each within its inner gap of the true ``F``.  ``F`` is
        convex, so no step shorter than ``t`` decreases it by more than ``-t slope``; once that is below the
        two inner gaps, a comparison cannot be trusted to tell a decrease from the inner solver's error: the
        search reports a stall, and the loop solves the inner problems more precisely.  At the finest inner
        tolerance the search goes on (warm-started neighbouring solves err alike, so their comparison is
        often better than the gaps say), still accepting only a strict decrease.
        """
        if not slope < 0:
            return Stalled("the search direction is not a descent direction at this inner precision")
        for _ in range(self.max_backtracks):
            cand = it.mu + t * d
            if finish is not None:
                cand = finish(cand)
            c = evaluate(cand, it.sol.alpha, with_q=False)
            if c.objective < it.objective and c.objective <= it.objective + self.sigma * t * slope:
                return evaluate.certify(c), t
            if -t * slope <= it.inner_gap + c.inner_gap and evaluate.loop.inner_tol > evaluate.loop.inner_tol_floor:
                return Stalled("the possible decrease along the search direction is below the inner "
                               "solves' precision")
            curvature = c.objective - it.objective - t * slope
            t_quad = -slope * t * t / (2.0 * curvature) if curvature > 0 else 0.5 * t
            t = min(max(t_quad, 0.1 * t), 0.5 * t)
        return Stalled("the line search cannot decrease the objective any more")


class ProjectedGradient(LevelAfter, _LineSearchSolver):
    """Projected gradient with spectral steps and Armijo backtracking: Algorithm 2 of Xu, Tsang and Xu (2013).

    Each iteration takes the gradient ``p = -q/2 + grad Omega(mu)`` (3.26) and the projected point
    ``mu_sub = Pi_D(mu - eta p)`` (3.27), with the regularizer's Euclidean projection (Duchi et al. for the
    simplex).  The paper leaves the step rule to "the standard line search"; we use the spectral projected
    gradient of Birgin, Martinez and Raydan (2000): ``eta`` is the Barzilai-Borwein step ``s's / s'r`` of the
    last move (``s`` the change of ``mu``, ``r`` of ``p``), which measures the curvature of ``F`` along the
    path, and an Armijo backtracking on ``mu + t (mu_sub - mu)``, ``t <= 1``, with safeguarded quadratic
    interpolation, guarantees descent: ``F(mu + t d) <= F(mu) + sigma t p'd``.  (A fixed ``eta`` that only
    grows and shrinks by halving zig-zags on curved domains such as the l_p ball.)  Every trial needs an SVM
    solve, warm-started from the current alpha.  Works for every regularizer with a ``project``.

    Parameters
    ----------
    sigma : float, default=1e-4
        Armijo sufficient-decrease constant, in (0, 1).
    max_backtracks : int, default=30
        Trials per iteration before the step counts as stalled (the loop then solves the inner problems
        more precisely; at the finest inner tolerance a ConvergenceWarning states the gap reached).
    level_after : int, optional
        On a polyhedral domain (simplex, box-simplex, with or without a penalty: L1-MKL, SM1MKL, SM2MKL), keep
        the cut of ``F`` of every accepted iterate and, at the first stalled step or after ``level_after``
        iterations, continue with the level method's steps (:class:`LevelMethod`, default parameters) on the
        model of all those cuts.  Where ``F`` has a kink or is nearly flat (SM2MKL at large ``theta``, near
        L1) the gradient steps crawl to the iteration cap, or stall with the primal value converged while each
        iterate's own ``alpha`` certifies little; the model's aggregate ``alpha_bar`` (a convex combination of
        the collected solutions) certifies such points at once.  Before the switch the cuts cost one small
        product per iteration (their cross products), no LP.  ``None`` (default): gradient steps throughout.
    metric : {"euclidean", "weights"}, default="euclidean"
        The metric of the gradient step.  ``"weights"`` scales the gradient of each weight by that weight
        (floored at ``1e-3`` of the largest): the diagonally scaled gradient projection of Bertsekas (1982),
        for the separable domain ``mu >= 0`` of GMKL only, where the scaled projection is still clipping at
        zero.  Weights of very different sizes (a nearly constant kernel that needs a weight of 1e3 next to
        weights of 0.5) make Euclidean steps crawl: ``gmkl_l1`` at ``C = 1000`` took 186 iterations
        there, 18 with this metric; over 200 drawn problems the largest count fell from 186 to 33 for
        ``gmkl_l1`` and from 91 to 22 for ``gmkl_elastic`` (it rose from 10 to 37 for ``gmkl_l2``, whose
        penalty's curvature is already Euclidean; docs/methods/gmkl.md).
    """

    name = "projected_gradient"
    requires = frozenset({Capability.PROJECTION, Capability.PENALTY_GRADIENT})

    #: Weights below this fraction of the largest are scaled as if they had this size (``metric="weights"``),
    #: so that a weight at zero can grow again.
    METRIC_FLOOR = 1e-3
    #: On the unbounded domain ``mu >= 0``, a line search starts where no weight exceeds this multiple of the
    #: largest one (bounded domains need no such bound: there it would cut short steps towards a vertex).
    MAX_GROWTH = 10.0

    def __init__(self, sigma: float = 1e-4, max_backtracks: int = 30, level_after: int | None = None,
                 metric: str = "euclidean") -> None:
        super().__init__(sigma=sigma, max_backtracks=max_backtracks)
        self.level_after = level_after
        self.metric = metric

    def check(self, problem: MKLProblem) -> None:
        super().check(problem)
        if self.metric not in ("euclidean", "weights"):
            raise ValueError(f"metric must be 'euclidean' or 'weights'; got {self.metric!r}")
        if self.metric == "weights" and problem.regularizer.domain != "nonnegative":
            raise ValueError(f"metric='weights' needs the separable domain mu >= 0 (the GMKL regularizers); "
                             f"{problem.regularizer.name!r} has the domain {problem.regularizer.domain!r}, "
                             f"whose projection in a scaled metric is not the Euclidean one: use "
                             f"metric='euclidean'")
        self._check_level_after(problem)

    def _step(self, evaluate: Evaluator, it: Iterate) -> Iterate | Stalled:
        grad = evaluate.gradient(it)
        scale = self._scale(it.mu)
        eta = _initial_step(scale * grad) if it.memo is None else it.memo
        d = np.asarray(evaluate.problem.regularizer.project(it.mu - eta * scale * grad), dtype=np.float64) - it.mu
        if np.max(np.abs(d)) <= 1e-12 * max(1.0, float(np.max(np.abs(it.mu)))):
            return Stalled("the projected gradient step vanished (stationary up to the inner precision)")
        t = self._first_trial(it.mu, d) if evaluate.problem.regularizer.domain == "nonnegative" else 1.0
        found = self._armijo(evaluate, it, d, float(grad @ d), t=t)
        if isinstance(found, Stalled):
            return self._coordinate_step(evaluate, it) or found
        nxt = found[0]
        nxt.memo = _spectral_step(nxt.mu - it.mu, evaluate.gradient(nxt) - grad, eta, scale)
        return self._unless_crawling(evaluate, it, nxt)

    def _first_trial(self, mu: np.ndarray, d: np.ndarray) -> float:
        """The first ``t`` of a line search on ``mu >= 0``: 1, or less where ``mu + d`` would leave every
        weight behind.

        On ``mu >= 0`` nothing bounds a Barzilai-Borwein step: after a move along a nearly flat direction
        (GMKL at C = 1e4 with a nearly constant kernel) it put one weight at 4e6 from 6e3, where the SMO ran
        into its iteration limit (1.3 s, and a warning) before the search backtracked.
        """
        top = float(np.max(mu))
        reach = float(np.max(mu + d))
        return min(1.0, self.MAX_GROWTH * top / reach) if top > 0 and reach > self.MAX_GROWTH * top else 1.0

    def _scale(self, mu: np.ndarray) -> np.ndarray | float:
        """The diagonal of the step's metric (inverse): 1, or the floored weights with mean 1."""
        if self.metric == "euclidean":
            return 1.0
        D = np.maximum(mu, self.METRIC_FLOOR * max(float(np.max(mu)), 1e-12))
        return D / D.mean()


def _spectral_step(s: np.ndarray, r: np.ndarray, previous: float, scale: np.ndarray | float = 1.0) -> float:
    """Barzilai-Borwein step ``s's / s'r``, bounded; doubles the previous step when the curvature is <= 0.

    In a scaled metric (steps ``-eta * scale * grad``) the step is ``s' diag(scale)^-1 s / s'r``.
    """
    ss, sr = float(s @ (s / scale)), float(s @ r)
    eta = ss / sr if sr > 0 else 2.0 * previous
    return min(max(eta, 1e-10), 1e10)


def _initial_step(grad: np.ndarray) -> float:
    """A first step that moves the weights by about one unit: the scale of the simplex.

    The spread of the gradient measures it (the projection onto a bounded domain removes a common shift),
    unless the spread is rounding noise: identical kernels have gradients equal up to 1e-16, and on the
    unbounded domain of GMKL a step of 1/spread took the weights from 0.2 to 4e13.
    """
    top = float(np.max(np.abs(grad)))
    spread = float(np.max(grad) - np.min(grad))
    scale = spread if spread > 1e-8 * top else top
    return 1.0 / scale if scale > 0 else 1.0


#: Weights below this fraction of the largest one are rounding residues of a step to the boundary.
_RESIDUE = 1e-12


def _clear_residues(mu: np.ndarray) -> np.ndarray:
    """``mu`` on the simplex with its rounding residues (``<= _RESIDUE * max mu``, or negative) set to zero.

    A step that takes several weights to zero at once leaves some of them at 1e-17 instead of 0; such a
    weight counts as positive in the next direction and caps the next maximal step at about 1e-17, which
    stalls the solver far from the optimum.
    """
    mu = np.where(mu > _RESIDUE * float(np.max(mu)), mu, 0.0)
    return mu / mu.sum()


@attrs.frozen(eq=False)
class _Conjugate:
    """What the reduced gradient carries to its next step: the eliminated weight, the free weights, the
    reduced gradient on them and the direction taken."""

    v: int
    free: np.ndarray
    red: np.ndarray
    D: np.ndarray


class ReducedGradient(_LineSearchSolver):
    """SimpleMKL's reduced gradient descent on the simplex (Rakotomamonjy et al., JMLR 2008, Algorithm 1).

    The equality ``sum mu = 1`` is handled by eliminating the largest weight ``mu_v``: the reduced gradient
    is ``r_m = p_m - p_v`` for ``m != v``, and the descent direction ``D_m = -r_m`` except ``D_m = 0`` for a
    zero weight with ``r_m > 0`` (it would become negative), and ``D_v = -sum_{m != v} D_m``; while ``v`` and
    the free weights stay the same, ``D`` is made conjugate to the previous direction.  Along ``D``
    the solver first takes maximal feasible steps -- moving to the point where the next weights hit zero --
    while they decrease the objective, then runs an Armijo backtracking line search on ``[0, gamma_max]``
    (quadratic interpolation from the rejected boundary value) and moves the accepted point towards the
    minimum on the segment by parabolic steps (SimpleMKL itself uses a golden-section search there).  A
    maximal step sets to zero every weight that reaches the boundary with it (tied or
    duplicated kernels reach it together), and every trial point is cleared of rounding residues.
    Every evaluation is an SVM solve, warm-started from the current alpha.  Needs a regularizer whose
    domain is the simplex, declared by the class attribute ``domain = "simplex"`` (built-ins: ``simplex``,
    ``simplex_l2``, ``simplex_power``); the penalty gradient is included, so the penalised forms work too.

    Parameters
    ----------
    sigma : float, default=1e-4
        Armijo sufficient-decrease constant, in (0, 1).
    max_backtracks : int, default=30
        Trials per line search before the step counts as stalled (the loop then solves the inner problems
        more precisely; at the finest inner tolerance a ConvergenceWarning states the gap reached).
    line_search_refinements : int, default=10
        Parabolic steps towards the minimum along the direction after the Armijo point is found (0: stop at
        the Armijo point).
    """

    name = "reduced_gradient"
    requires = frozenset({Capability.SIMPLEX, Capability.PENALTY_GRADIENT})
    #: Maximal steps accepted per iteration (None: while they decrease ``F``, as SimpleMKL).
    max_maximal_steps: int | None = None

    def __init__(self, sigma: float = 1e-4, max_backtracks: int = 30, line_search_refinements: int = 10) -> None:
        super().__init__(sigma=sigma, max_backtracks=max_backtracks)
        self.line_search_refinements = line_search_refinements

    def check(self, problem: MKLProblem) -> None:
        # the simplex domain: solve's check_parts (SIMPLEX)
        self._check_parameters()

    def _check_parameters(self) -> None:
        _LineSearchSolver.check(self, None)
        if not (isinstance(self.line_search_refinements, int | np.integer) and self.line_search_refinements >= 0):
            raise ValueError(f"line_search_refinements must be a non-negative integer; got "
                             f"{self.line_search_refinements!r}")

    # The geometry of the domain, eliminated through its largest weight ``v`` (overridden on the lp sphere by
    # :class:`multikernel.plugins.lp_reduced_gradient.SphereReducedGradient`).
    def _reduced(self, mu: np.ndarray, grad: np.ndarray, v: int) -> np.ndarray:
        """The reduced gradient: ``dF/dmu_m`` along ``e_m`` with ``mu_v`` moving to stay in the domain."""
        return grad - grad[v]

    def _complete(self, mu: np.ndarray, D: np.ndarray, v: int) -> np.ndarray:
        """``D`` with ``D_v`` set so that the direction is tangent to the domain (``sum D = 0``)."""
        D[v] = 0.0
        D[v] = -D.sum()
        return D

    def _finish(self, mu: np.ndarray) -> np.ndarray:
        """A trial point brought back onto the domain, rounding residues cleared."""
        return _clear_residues(mu)

    def _direction(self, mu: np.ndarray, grad: np.ndarray) -> np.ndarray:
        v = int(np.argmax(mu))
        red = self._reduced(mu, grad, v)
        D = -red
        D[(mu <= 0) & (red > 0)] = 0.0
        return self._complete(mu, D, v)

    @staticmethod
    def _maximal_step(mu: np.ndarray, D: np.ndarray, tiny: float,
                      finish: Callable[[np.ndarray], np.ndarray] = _clear_residues) -> tuple[float, np.ndarray]:
        """The longest feasible step along ``D`` and its end point, with every weight that reaches zero zeroed.

        ``sum D = 0`` and ``D != 0`` give a negative entry, so ``gamma_max`` is finite unless every negative
        entry is rounding noise (then it is infinite, and so is the end point).
        """
        neg = D < -tiny
        ratios = np.full(len(mu), np.inf)
        ratios[neg] = -mu[neg] / D[neg]
        gamma_max = float(np.min(ratios))
        if not math.isfinite(gamma_max):
            return gamma_max, mu
        end = mu + gamma_max * D
        end[ratios <= gamma_max * (1.0 + 1e-9)] = 0.0  # all the weights that reach zero, not only the first
        return gamma_max, finish(end)

    def _conjugate(self, mu: np.ndarray, grad: np.ndarray, D: np.ndarray, memo: _Conjugate | None
                   ) -> tuple[np.ndarray, _Conjugate]:
        """The conjugate direction (Polak-Ribiere+) to ``D``, the steepest one, in the same reduced space.

        Steepest descent zig-zags when ``F`` is much stiffer along some weights than along others (kernels
        of very different scales): from (0.995, 0.005, 7e-5) SimpleMKL's steps went almost entirely into the
        stiff third weight, and 200 iterations left the gap at 2e-3 where the optimum is (0.82, 0.17, 0.01).
        Conjugate directions, with the line minimum along each, cross such valleys; the recurrence restarts
        (``D`` itself) whenever the eliminated weight or the free weights change, or when it would not descend.
        """
        v = int(np.argmax(mu))
        free = D != 0
        free[v] = False
        red = np.where(free, -D, 0.0)
        now = _Conjugate(v=v, free=free, red=red, D=D)
        if memo is None or memo.v != v or not np.array_equal(memo.free, free):
            return D, now
        beta = max(0.0, float(red @ (red - memo.red)) / max(float(memo.red @ memo.red), 1e-300))
        Dc = np.where(free, -red + beta * memo.D, 0.0)
        Dc = self._complete(mu, Dc, v)
        if not float(grad @ Dc) < 0:
            return D, now
        return Dc, attrs.evolve(now, D=Dc)

    def step(self, evaluate: Evaluator, it: Iterate) -> Iterate | Stalled:
        """One descent update; :class:`Stalled` when no decrease is possible at this inner precision."""
        grad = evaluate.gradient(it)
        D = self._direction(it.mu, grad)
        tiny = 1e-12 * max(1.0, float(np.max(np.abs(grad))))
        if np.max(np.abs(D)) <= tiny or not float(grad @ D) < 0:
            return Stalled("the reduced gradient vanished (stationary up to the inner precision)")
        D, memo = self._conjugate(it.mu, grad, D, it.memo)
        best, improved, taken = it, False, 0
        # Maximal feasible steps: go to where the next weights reach zero while that lowers F.  As in
        # SimpleMKL the gradient is not recomputed here; only the direction is, with the zeroed weights frozen.
        while True:
            gamma_max, end = self._maximal_step(best.mu, D, tiny, self._finish)
            if not math.isfinite(gamma_max):  # only rounding noise points out of the simplex
                return best if improved else Stalled("the reduced gradient vanished (stationary up to the "
                                                     "inner precision)")
            c = evaluate(end, best.sol.alpha, with_q=False)
            if not c.objective < best.objective or taken == self.max_maximal_steps:
                break
            best, improved, taken = evaluate.certify(c), True, taken + 1
            D = self._direction(best.mu, grad)
            if np.max(np.abs(D)) <= tiny or not float(evaluate.gradient(best) @ D) < 0:
                return best
        # Armijo backtracking on [0, gamma_max] from the last accepted point; the rejected boundary value
        # gives the first trial by quadratic interpolation.
        slope = float(evaluate.gradient(best) @ D)
        curvature = c.objective - best.objective - gamma_max * slope
        t0 = -slope * gamma_max**2 / (2.0 * curvature) if curvature > 0 else 0.5 * gamma_max
        t0 = min(max(t0, 0.1 * gamma_max), 0.5 * gamma_max)
        found = self._armijo(evaluate, best, D, slope, t=t0, finish=self._finish)
        if isinstance(found, Stalled):
            return best if improved else (self._coordinate_step(evaluate, it) or found)
        nxt = self._line_minimum(evaluate, best, D, found, (gamma_max, c.objective))
        # The conjugate recurrence continues only along an unbroken line search from ``it`` (a maximal step
        # changes the reduced space anyway).
        nxt.memo = None if improved else memo
        return self._unless_crawling(evaluate, it, nxt)

    def _line_minimum(self, evaluate: Evaluator, start: Iterate, D: np.ndarray, found: tuple[Iterate, float],
                      end: tuple[float, float]) -> Iterate:
        """Move the Armijo point towards the minimum of ``F`` on the segment, by parabolic interpolation.

        The Armijo point ``t`` lies below both ends (``F(0)`` and the rejected ``F(gamma_max)``), so the three
        points bracket the minimum of the convex ``F`` along ``D``; each trial fits a parabola through them
        and shrinks the bracket, at most ``line_search_refinements`` times.  SimpleMKL minimises along the
        line too (golden section): the first acceptable point is often a tenth of the best step, and
        steepest descent with such steps needed over 200 iterations on kernels of very different scales.
        """
        best, t = found
        a, fa, b, fb, c, fc = 0.0, start.objective, t, best.objective, end[0], end[1]
        for _ in range(self.line_search_refinements):
            den = (b - a) * (fb - fc) - (b - c) * (fb - fa)  # < 0 for a convex parabola through the bracket
            if not den < 0:
                break  # the three values are collinear to rounding: nothing to fit
            u = b - 0.5 * ((b - a) ** 2 * (fb - fc) - (b - c) ** 2 * (fb - fa)) / den
            if not (a < u < c) or abs(u - b) <= 0.01 * (c - a):
                break
            trial = evaluate(self._finish(start.mu + u * D), start.sol.alpha, with_q=False)
            if trial.objective < fb:
                if u > b:
                    a, fa = b, fb
                else:
                    c, fc = b, fb
                best, b, fb = trial, u, trial.objective
            elif u > b:
                c, fc = u, trial.objective
            else:
                a, fa = u, trial.objective
        return evaluate.certify(best)


class LevelMethod(OuterSolver):
    """The level method for MKL: Xu, Jin, King and Lyu, "An Extended Level Method for Efficient Multiple
    Kernel Learning", NIPS 2008.

    Every inner solve at ``mu_i`` gives a feasible ``alpha_i`` and with it the linear minorant (cut)
    ``h_i(mu) = L(alpha_i) - 1/2 q(alpha_i)'mu <= J(mu)``, valid for every ``mu`` however loosely the SVM was
    solved.  The cutting-plane model ``max_i h_i`` is minimised over the domain by an LP (HiGHS through
    ``highspy``, one model kept warm across iterations, :mod:`multikernel.plugins._master_lp`); the next
    iterate is the Euclidean projection of the current one onto the
    level set ``{mu in D: h_i(mu) <= level for all i}``, ``level = lower + lambda (upper - lower)``.  The
    projection keeps the iterates stable, which is what the plain cutting-plane method (SILP) lacks.

    Certified lower bound: the LP's multipliers ``lam`` (on the simplex of the cuts) give the convex
    combination ``alpha_bar = sum_i lam_i alpha_i``, which is feasible for the inner problem.  Because
    ``L`` is concave and each ``q_m`` convex, ``L(alpha_bar) - max_{nu in D} nu'q(alpha_bar)/2`` is at least
    the model minimum, and it is offered to the :class:`~multikernel.solve.outer.OuterLoop` like any other
    ``alpha``, so the stopping rule relies on the loop's own certified bounds and never on the LP's
    arithmetic.  ``alpha_bar`` also gives a cut (the aggregate cut), which dominates the combination of
    the cuts it summarises; it is added to the model, so cuts that have stopped being active can be dropped
    without losing the model minimum.

    The projection, ``min ||mu - mu_i||^2`` over ``{mu in D, q_j'mu >= 2 (L_j - level)}``, is solved through
    its dual over the cut multipliers ``nu >= 0``: ``mu(nu) = Pi_D(mu_i + sum_j nu_j q_j)`` with the
    regularizer's Euclidean projection, and the concave dual function has the gradient ``b - Q mu(nu)``, so
    projected Newton steps on a handful of bounded variables solve it (a dense QP over ``M`` weights is avoided).  An
    inexact dual solution still yields a point of ``D``; only the level constraints are then approximate.

    Every SVM solve is warm-started from the previous ``alpha``.  Works for the polyhedral domains
    ``simplex`` (L1-MKL), ``box_simplex`` (SM1MKL) and ``uniform``, with or without a convex penalty
    ``Omega``: for a penalised regularizer (``simplex_l2``, i.e. SM2MKL, and ``simplex_power``) each cut of
    ``J`` gets the tangent of ``Omega`` at the iterate, ``Omega(mu_i) + grad Omega(mu_i)'(mu - mu_i)``, so the
    model is a cutting-plane model of ``F = J + Omega`` and stays an LP; the aggregate cut carries the same
    combination of tangents.  The certified lower bound still uses the exact penalty (the loop's
    ``dual_bound`` of ``alpha_bar``).  The other domains are not polyhedral.

    For SM2MKL this replaces Algorithm 2 (projected gradient) as the preset: ``F`` is nearly flat along the
    weights (its curvature there comes only from ``||mu||^2 / (2 theta)``), and gradient steps crawl, while
    the cutting planes of ``J`` are exact wherever the SVM's support does not change.

    Parameters
    ----------
    level : float, default=0.3
        ``lambda`` in ``(0, 1)``: where the level lies between the lower and upper bounds.  Small values
        take long steps (towards the model minimum, as SILP does); values near 1 stay close to the current
        iterate.
    max_cuts : int, default=200
        The most cuts kept.  Beyond it the oldest cuts inactive in the last LP are dropped (the aggregate
        cut keeps their information).
    """

    name = "level"
    requires = frozenset({Capability.PROJECTION, Capability.POLYHEDRAL, Capability.CAP, Capability.PENALTY_GRADIENT})

    def __init__(self, level: float = 0.3, max_cuts: int = 200) -> None:
        self.level = level
        self.max_cuts = max_cuts


    def check(self, problem: MKLProblem) -> None:
        if not (0.0 < self.level < 1.0 and self.max_cuts >= 2):
            raise ValueError("level needs 0 < level < 1 and max_cuts >= 2")
        polyhedral_cap(problem.regularizer, problem.stack.n_kernels)

    def evaluator(self, problem: MKLProblem, loop: OuterLoop) -> Evaluator:
        return CuttingPlanes(problem, loop, self.max_cuts)

    def finish(self, evaluate: CuttingPlanes, result: MKLResult) -> MKLResult:
        if evaluate.problem.keep_cuts:
            result.cuts = keep_cuts(evaluate.problem, evaluate.bundle)
        return result

    def step(self, evaluate: CuttingPlanes, it: Iterate) -> Iterate | Stalled:
        loop, model = evaluate.loop, evaluate.model
        # The level set is not empty: the level is at least the minimum of this very model (the pending
        # aggregate cut is not in it yet, so the LP value is the bundle's minimum).
        lower = loop.lower if model is None else max(loop.lower, model[0])
        target = lower + self.level * (loop.upper - lower)
        fallback = None if model is None else model[2]
        # The projection works on a few dozen multipliers: its BLAS calls are tiny, and BLAS threads waiting for
        # busy cores made each call cost milliseconds in the benchmark.
        with evaluate.blas.limit(limits=1, user_api="blas"):
            new = evaluate.bundle.project(it.mu, target, evaluate.problem.regularizer.project, fallback)
        if np.max(np.abs(new - it.mu)) <= 1e-12:
            # The level set holds the current point: its cut lies above the level only by the inner solver's
            # error, so only a tighter inner solve can make progress.
            return Stalled("the level set holds the current weights at the finest inner tolerance")
        return evaluate(new, it.sol.alpha)


#: The level method's parameters where projected gradient continues with its steps (``level_after``).
_LEVEL = LevelMethod()


class CuttingPlanes(Evaluator):
    """The level method's evaluations: each adds its cut of ``F`` to the bundle and re-solves the model LP.

    ``model`` is the last LP's (value, multipliers, minimiser), ``None`` if HiGHS failed.  The aggregate cut
    of that LP (``alpha_bar``) is offered to the loop at once (a lower bound) and added to the bundle with
    the next cut.
    """

    aggregate = False  # the LP multipliers give this solver's own aggregate (alpha_bar)

    def __init__(self, problem: MKLProblem, loop: OuterLoop, max_cuts: int, lazy: bool = False) -> None:
        super().__init__(problem, loop)
        self.lazy = lazy
        self.cap = polyhedral_cap(problem.regularizer, problem.stack.n_kernels)
        self.bundle = _Bundle(max_cuts)
        self.blas = ThreadpoolController()
        self.model: tuple[float, np.ndarray, np.ndarray] | None = None
        self._pending: tuple | None = None
        # the cuts' cross products c_i'K_m c_j (O(M k^2)) kept within half of the stack's own size (at
        # least 16 MB: small stacks are cheap to read, but so are their cross products); beyond it the
        # aggregate forms are read from the stack again
        self.cross_bytes = max(problem.stack.nbytes // 2, 16 * 2**20)
        self.bundle.cross_limit = math.isqrt(self.cross_bytes // (8 * problem.stack.n_kernels))
        #: the cuts of a previous fit on this stack (a neighbouring C), rescaled into this fit's feasible set
        self._kept = rescaled_cuts(problem, getattr(problem.warm_start, "cuts", None))

    def certify(self, it: Iterate) -> Iterate:
        """The base certification (quadratic forms, bounds), then the iterate's cut, the model LP and the
        aggregate; every certified evaluation adds a cut, whichever solver steps (the level method, or
        projected gradient with ``level_after``)."""
        it = super().certify(it)
        mu = it.mu
        p = self.problem
        if self._pending is not None:
            self.bundle.add(*self._pending)
            self._pending = None
        # A cut of F = J + Omega: the cut of J plus the tangent of the (convex) penalty at mu.
        o, g = _penalty_tangent(p.regularizer, mu)
        for L, q, alpha, coef, cross in self._kept:  # before the first iterate's own cut
            self.bundle.add(L, q, alpha, coef, o, g, cross=cross)
        self._kept = []
        self.bundle.add(p.linear_term(it.sol.alpha), it.q, it.sol.alpha, it.sol.coef, o, g,
                        cross=self._cross(it))
        if not self.lazy:
            self.settle(mu)
        return it

    def settle(self, mu: np.ndarray) -> bool:
        """Minimise the model (the LP) and offer its aggregate ``alpha_bar`` to the loop; False if HiGHS failed.

        The level method settles at every cut.  A ``lazy`` model (projected gradient with ``level_after``) only
        collects the cuts (with their cross products) and settles when its solver asks: the LP is then solved
        once, not at every iteration.
        """
        self.model = self.bundle.model_minimum(self.cap)
        self._pending = None if self.model is None else self._aggregate(mu, self.model[1])
        return self.model is not None

    def _cross(self, it: Iterate) -> np.ndarray | None:
        """``c_i'K_m c`` for the bundle's cuts ``i`` and this iterate's ``c``, from the products ``K_m c`` the
        one-pass path computed for its forms (``None`` off that path, or beyond the memory budget)."""
        products = self._products
        if products is None or products.alpha is not it.sol.alpha or not products.covered.all():
            return None
        U = products.u_bound + products.u_free
        bundle = self.bundle
        if bundle.X is None and len(bundle.L):
            return None  # a cut without cross products: the aggregate forms come from the stack
        if len(bundle.L) + 2 > bundle.cross_limit:  # this cut and the pending aggregate: beyond the budget
            return None
        if not len(bundle.L):
            return np.zeros((0, U.shape[0]))
        with blas_for(2.0 * bundle.coefs.size * U.shape[0]):  # BLAS threads stall on a busy machine
            return bundle.coefs @ U.T

    def _aggregate(self, mu: np.ndarray, lam: np.ndarray
                   ) -> tuple[float, np.ndarray, np.ndarray, np.ndarray, float, np.ndarray] | None:
        """Offer ``alpha_bar = sum lam_i alpha_i`` to the loop (a lower bound only); return its cut."""
        if np.count_nonzero(lam) < 2:
            return None  # one active cut: alpha_bar is that cut's alpha, already offered
        problem, bundle = self.problem, self.bundle
        # tensordot: alpha is (n,) for one problem, (T, n) for tasks sharing the weights
        alpha_bar, coef_bar = np.tensordot(lam, bundle.alphas, axes=1), np.tensordot(lam, bundle.coefs, axes=1)
        cross = None
        if bundle.X is not None:
            # q_bar = sum_ij lam_i lam_j c_i'K_m c_j from the kept cross products: no read of the stack
            act = np.flatnonzero(lam)
            cross = np.einsum("i,ijm->jm", lam[act], bundle.X[act])  # c_bar'K_m c_j for every cut j
            q_bar = lam[act] @ cross[act]
        else:
            q_bar = problem.quad_forms(coef_bar)
        o_bar, g_bar = float(lam @ bundle.O), lam @ bundle.G
        # No classifier goes with alpha_bar: an infinite primal value makes it a pure lower-bound offer.
        aggregate = InnerSolution(alpha=alpha_bar, coef=coef_bar, bias=0.0, dual_objective=-math.inf,
                                  primal_objective=math.inf)
        self.loop.offer(mu, aggregate, q_bar)
        return problem.linear_term(alpha_bar), q_bar, alpha_bar, coef_bar, o_bar, g_bar, cross


def _penalty_tangent(reg: Regularizer, mu: np.ndarray) -> tuple[float, np.ndarray]:
    """The tangent ``o + g'nu`` of the penalty at ``mu`` (``o = Omega(mu) - g'mu``, ``g = grad Omega(mu)``).

    It lies below the convex penalty everywhere, so a cut of ``J`` plus it is a cut of ``F``.
    """
    if type(reg).penalty is Regularizer.penalty:
        return 0.0, np.zeros(len(mu))
    g = np.asarray(reg.penalty_gradient(mu), dtype=np.float64)
    return float(reg.penalty(mu) - g @ mu), g


def polyhedral_cap(reg: Regularizer, n_kernels: int, solver: str = "the level method") -> float:
    """The upper bound of every weight for the domains ``{sum mu = 1, 0 <= mu <= cap}``; else ValueError
    (naming ``solver``, the one that needs it)."""
    domain = getattr(reg, "domain", None)
    reg.check(n_kernels)
    if domain == "simplex":
        return 1.0
    if domain == "box_simplex":
        return float(reg.cap(n_kernels))
    if domain == "point":
        return 1.0 / n_kernels
    raise ValueError(f"{solver} needs a polyhedral domain (simplex, box_simplex, uniform); "
                     f"{reg.name!r} is not one. Use 'projected_gradient' or 'bcd'")


def _lazy_empty(shape: tuple[int, ...]) -> np.ndarray:
    """An uninitialised float64 array whose memory is mapped on first write, in huge pages where Linux offers
    them: the cross products grow by about 1 MB per cut, and faulting them in 4 KB pages took 0.5 s of a 6 s fit
    on a loaded machine (0.09 s with huge pages)."""
    nbytes = math.prod(shape) * 8
    if nbytes < 2**21 or not hasattr(mmap, "MADV_HUGEPAGE"):
        return np.empty(shape)
    buf = mmap.mmap(-1, nbytes)
    try:
        buf.madvise(mmap.MADV_HUGEPAGE)
    except OSError:  # transparent huge pages switched off: ordinary pages
        pass
    return np.frombuffer(buf, dtype=np.float64).reshape(shape)


class _Bundle:
    """The cuts ``h_j(mu) = L_j - 1/2 q_j'mu`` of ``J`` with the ``alpha``/``coef`` that made them.

    Also keeps the last LP multipliers (to choose the cuts to drop) and the last projection's dual
    solution (to warm-start the next projection).
    """

    def __init__(self, max_cuts: int) -> None:
        self.max_cuts = max_cuts
        self.L = np.zeros(0)
        self.Q: np.ndarray | None = None
        self.O = np.zeros(0)
        self.G: np.ndarray | None = None
        self.alphas: np.ndarray | None = None
        self.coefs: np.ndarray | None = None
        self.age = np.zeros(0, dtype=np.int64)
        self.active = np.zeros(0, dtype=bool)
        self.nu = np.zeros(0)
        self._count = 0
        #: ``X[i, j, m] = c_i'K_m c_j`` for every pair of cuts, while every cut came with its cross products
        self.X: np.ndarray | None = None
        self._xbuf: np.ndarray | None = None
        #: the most cuts the cross-product buffer may hold (its memory budget)
        self.cross_limit = 2**31
        #: the model LP, kept warm in HiGHS across iterations (made at the first :meth:`model_minimum`)
        self.lp: MasterLP | None = None

    def add(self, L: float, q: np.ndarray, alpha: np.ndarray, coef: np.ndarray, o: float = 0.0,
            g: np.ndarray | None = None, cross: np.ndarray | None = None) -> None:
        """Add the cut ``L - q'mu/2`` of ``J`` from ``alpha`` plus the penalty tangent ``o + g'mu``.

        The bundle keeps the cut of ``F``, ``(L + o) - (q - 2 g)'mu / 2``, in ``L`` and ``Q``; ``O`` and ``G``
        keep the tangents, which the aggregate cut needs (zero for the penalty-free domains).  ``cross``
        (shape (k, M): ``c_i'K_m coef`` for the k cuts already kept) extends the cross products :attr:`X`;
        a cut without it ends them.
        """
        k = len(self.L)
        if cross is not None and (self.X is not None or k == 0):
            if self._xbuf is None:
                # One buffer for the most cuts the bundle and the budget allow, never reallocated (growing it
                # by copies cost up to 0.3 s per copy: 100 MB on 442 kernels); its pages are mapped as the
                # products are written.
                size = max(min(self.cross_limit, self.max_cuts + 1), k + 1)
                self._xbuf = _lazy_empty((size, size, len(q)))
            X = self._xbuf[:k + 1, :k + 1]
            X[:k, k] = X[k, :k] = cross
            X[k, k] = q
            self.X = X
        else:
            self.X = self._xbuf = None
        g = np.zeros(len(q)) if g is None else np.asarray(g, dtype=np.float64)
        fq = q - 2.0 * g
        if self.Q is None:
            self.Q, self.alphas, self.coefs = fq[None, :].copy(), alpha[None].copy(), coef[None].copy()
            self.G = g[None, :].copy()
        else:
            self.Q = np.vstack([self.Q, fq])
            self.alphas = np.concatenate([self.alphas, alpha[None]])
            self.coefs = np.concatenate([self.coefs, coef[None]])
            self.G = np.vstack([self.G, g])
        self.L = np.append(self.L, L + o)
        if self.lp is not None:
            self.lp.add_cut(L + o, fq)
        self.O = np.append(self.O, o)
        self.age = np.append(self.age, self._count)
        self.active = np.append(self.active, True)
        self.nu = np.append(self.nu, 0.0)
        self._count += 1
        if len(self.L) > self.max_cuts:
            self._prune()

    def _prune(self) -> None:
        """Drop the oldest inactive cuts (or, if all are active, the oldest ones) down to ``max_cuts``."""
        excess = len(self.L) - self.max_cuts
        order = np.lexsort((self.age, self.active))  # inactive first, oldest first
        keep = np.ones(len(self.L), dtype=bool)
        keep[order[:excess]] = False
        keep[-1] = True  # never the newest cut
        if self.lp is not None:
            self.lp.delete_cuts(np.flatnonzero(~keep))
        self.L, self.Q, self.alphas, self.coefs = self.L[keep], self.Q[keep], self.alphas[keep], self.coefs[keep]
        self.O, self.G = self.O[keep], self.G[keep]
        self.age, self.active, self.nu = self.age[keep], self.active[keep], self.nu[keep]
        if self.X is not None:
            kept = int(keep.sum())
            self._xbuf[:kept, :kept] = self.X[keep][:, keep]
            self.X = self._xbuf[:kept, :kept]

    def model_minimum(self, cap: float) -> tuple[float, np.ndarray, np.ndarray] | None:
        """``min_{mu in D} max_j h_j(mu)`` by HiGHS: its value, the cuts' multipliers and the minimiser.

        ``None`` if HiGHS fails.  The LP lives in :class:`~multikernel.plugins._master_lp.MasterLP`, warm
        across calls (each call adds the cuts since the last one); ``cap`` is read at the first call.

        Variables ``(mu, t)``: minimise ``t`` subject to ``L_j - 1/2 q_j'mu <= t``, ``sum mu = 1`` and
        ``0 <= mu <= cap``.  The multipliers of the cut rows sum to 1 (the coefficient of ``t``).
        """
        if self.lp is None:
            self.lp = MasterLP(self.Q.shape[1], cap)
            for L, q in zip(self.L, self.Q, strict=True):
                self.lp.add_cut(L, q)
        res = self.lp.solve()
        if res is None:
            return None
        value, duals, mu = res
        lam = np.maximum(-duals, 0.0)
        total = lam.sum()
        if not total > 0:
            return None
        lam /= total
        self.active = lam > 0
        return value, lam, mu

    def project(self, center: np.ndarray, level: float, project: Callable[[np.ndarray], np.ndarray],
                fallback: np.ndarray | None) -> np.ndarray:
        """``argmin ||mu - center||^2`` over ``{mu in D: h_j(mu) <= level}``, by Newton's method on the dual.

        The constraints are ``q_j'mu >= 2 (L_j - level)``.  Every domain here has ``sum mu = 1``, so the mean
        of each ``q_j`` is moved to the right-hand side: near the optimum the cuts are nearly constant
        vectors (every selected kernel has the same ``q_m``), and a constant row would ask the dual for
        huge multipliers along a direction the domain cannot move in.  Rows are then scaled to unit norm
        (the multipliers have the scale of the weights).  The dual
        ``g(nu) = 1/2 ||mu(nu) - center||^2 + nu'(b - A mu(nu))``, ``mu(nu) = Pi_D(center + A'nu)``, is
        concave and piecewise quadratic over ``nu >= 0`` (one variable per cut, not per kernel), with gradient
        ``b - A mu(nu)``; :func:`_dual_newton` maximises it from the last projection's multipliers.  Should it
        fail numerically, ``fallback`` (the LP minimiser of the model, which lies in the level set) is
        returned; an inexact dual solution still yields a point of ``D`` (only the level constraints are then
        approximate), and the method's certificate does not depend on it.
        """
        means = self.Q.mean(axis=1)
        A = self.Q - means[:, None]
        norms = np.linalg.norm(A, axis=1)
        norms[norms == 0] = 1.0
        A /= norms[:, None]
        b = (2.0 * (self.L - level) - means) / norms
        if np.all(A @ center >= b):
            return center.copy()
        cap = math.inf if self.lp is None else self.lp.cap
        try:
            nu, mu = _dual_newton(A, b, center, project, cap, self.nu)
        except (ValueError, IndexError, FloatingPointError, np.linalg.LinAlgError):
            mu = None
        if mu is None or not np.all(np.isfinite(mu)):
            self.nu = np.zeros(len(b))
            return center.copy() if fallback is None else fallback.copy()
        self.nu = nu
        return mu


#: The smallest relative ridge on the Hessian of :func:`_dual_newton`'s steps (where the damping starts).
_MIN_RIDGE = 1e-10


def _dual_newton(A: np.ndarray, b: np.ndarray, center: np.ndarray, project: Callable[[np.ndarray], np.ndarray],
                 cap: float, nu0: np.ndarray, tol: float = 1e-9, max_iter: int = 100
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Maximise the projection's dual ``g(nu)`` over ``nu >= 0`` by projected Newton steps (Bertsekas 1982).

    ``Pi_D(z) = clip(z - tau, 0, cap)`` on ``D = {sum mu = 1, 0 <= mu <= cap}``, so with ``F`` the weights
    strictly inside ``(0, cap)`` the (generalized) Hessian of ``-g`` is ``A_F (I - 11'/|F|) A_F'``: exact on
    each quadratic piece of ``g``, which makes the steps finite-terminating in practice (5-10 steps where
    L-BFGS-B took about 200 evaluations).  The multipliers at zero whose gradient points below zero are held
    there; the step on the others is damped by an Armijo search along the projected path, and the relative
    ridge on the Hessian grows (x100) after a step that needed more than three halvings and shrinks (/10) after
    a full step: nearly parallel cuts make the Hessian nearly singular, and with a fixed ridge of 1e-10 the
    steps ran along its null space until the ascent stalled short of the projection.  Stops when the
    projected gradient (the violation of the level constraints, in the unit-norm rows) is below ``tol``;
    otherwise returns the last iterate.
    """
    k = len(b)
    nu = np.maximum(nu0, 0.0) if len(nu0) == k else np.zeros(k)

    def dual(nu: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        mu = np.asarray(project(center + A.T @ nu), dtype=np.float64)
        slack = b - A @ mu
        d = mu - center
        return 0.5 * float(d @ d) + float(nu @ slack), slack, mu

    def newton_step(nu: np.ndarray, grad: np.ndarray, mu: np.ndarray, free: np.ndarray, ridge: float) -> np.ndarray:
        inside = (mu > 0) & (mu < cap)
        Af = A[free][:, inside]
        s = Af.sum(axis=1)
        H = Af @ Af.T - np.outer(s, s) / max(int(inside.sum()), 1)
        step = np.zeros(k)
        if ridge:
            # Parallel cuts make H singular; a relative ridge keeps the step finite (the search damps the rest).
            H[np.diag_indices_from(H)] += ridge * (np.trace(H) / len(H) + 1.0)
            step[free] = np.linalg.solve(H, grad[free])
        else:
            step[free] = np.linalg.lstsq(H, grad[free], rcond=1e-13)[0]
        return step

    def violation(nu: np.ndarray, grad: np.ndarray) -> float:
        return float(np.max(np.abs(np.where(nu > 0, grad, np.maximum(grad, 0.0))), initial=0.0))

    def ascend(nu: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        g, grad, mu = dual(nu)
        ridge = _MIN_RIDGE
        for _ in range(max_iter):
            if violation(nu, grad) <= tol:
                break
            step = newton_step(nu, grad, mu, (nu > 0) | (grad > 0), ridge=ridge)
            t, halvings = 1.0, 0
            while True:
                trial = np.maximum(nu + t * step, 0.0)
                g_trial, grad_trial, mu_trial = dual(trial)
                if g_trial >= g + 1e-4 * float(grad @ (trial - nu)) or t < 1e-12:
                    break
                t *= 0.5
                halvings += 1
            # Levenberg-Marquardt damping: a step that needed many halvings went far along a direction of
            # (nearly) no curvature in this piece of g, where the next pieces bend it back; a larger ridge
            # turns the next steps towards the gradient.  Full steps relax it again.
            if halvings > 3:
                ridge = min(ridge * 100.0, 1.0)
            elif halvings == 0:
                ridge = max(ridge * 0.1, _MIN_RIDGE)
            if not g_trial >= g:
                if halvings > 3 and ridge < 1.0:
                    continue  # retry from the same point with the larger ridge
                break  # no ascent at this precision
            nu, g, grad, mu = trial, g_trial, grad_trial, mu_trial
        return nu, grad, mu

    nu, grad, mu = ascend(nu)
    if violation(nu, grad) > 1e3 * tol and np.any(nu0 > 0):
        # a warm start from far away can stall the damped steps; a cold start is the safer path then
        cold = ascend(np.zeros(k))
        if violation(cold[0], cold[1]) < violation(nu, grad):
            nu, grad, mu = cold
    if np.any(nu > 0):
        # The active sets are settled: one step without the ridge solves this quadratic piece to rounding, so
        # the result does not depend on where the iterations stopped within tol.
        trial = np.maximum(nu + newton_step(nu, grad, mu, nu > 0, ridge=0.0), 0.0)
        _, grad_trial, mu_trial = dual(trial)
        if violation(trial, grad_trial) <= violation(nu, grad):
            nu, mu = trial, mu_trial
    return nu, mu


@hookimpl
def multikernel_solvers() -> dict[str, type[Solver]]:
    return {cls.name: cls for cls in (BlockCoordinateDescent, ProjectedGradient, ReducedGradient, LevelMethod)}
