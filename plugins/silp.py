"""SILP: Sonnenburg's semi-infinite linear program for MKL, solved by cutting planes (column generation).

Sonnenburg, Raetsch, Schaefer and Schoelkopf, "Large Scale Multiple Kernel Learning", JMLR 7:1531-1565, 2006;
the MKL-SIP / MKL-SILP of the Bucak thesis (spec section 2.4.1, with the sign of (2.15) corrected, erratum E3).

Every inner solve at ``mu_t`` gives a feasible ``alpha_t`` and the cut ``h_t(mu) = L(alpha_t) - 1/2 q(alpha_t)'mu``,
a linear minorant of ``J`` (on the simplex, ``sum_m mu_m (1'alpha - S_m(alpha)/2)`` of the thesis).  The restricted
master problem ``min_{mu in D, t} t`` subject to ``h_r(mu) <= t`` for every cut kept is an LP, solved by HiGHS
(through ``highspy``, one warm model with a row per cut: :mod:`multikernel.plugins._master_lp`); its
minimiser is the next iterate.  That is Kelley's cutting-plane
method; the level method (:class:`multikernel.plugins.solvers.LevelMethod`) is the same model with a projection
that keeps the iterates stable.  The model, the LP and the certificate are the level method's own
(:class:`multikernel.plugins.solvers.CuttingPlanes`): cuts are kept across iterations (the warm constraint set),
and the LP multipliers give the aggregate ``alpha_bar``, whose certified lower bound is at least the LP value, so
the certified duality gap of the :class:`~multikernel.solve.outer.OuterLoop` closes as fast as the LP's gap.
"""

from __future__ import annotations

import numpy as np

from multikernel.core.capabilities import Capability
from multikernel.core.hookspecs import hookimpl
from multikernel.core.interfaces import MKLProblem, Solver
from multikernel.plugins.solvers import CuttingPlanes, polyhedral_cap
from multikernel.solve.outer import Converged, Evaluator, Iterate, OuterLoop, OuterSolver, Stalled

__all__ = ["SILP"]


class SILP(OuterSolver):
    """Cutting planes over the kernel weights with the restricted master LP (Sonnenburg et al. 2006).

    Each iteration solves the inner problem at a query point given by the LP minimiser of the model built from
    every cut so far, adds its cut and re-solves the LP (HiGHS).  Works for the polyhedral domains
    ``{sum mu = 1, 0 <= mu <= cap}``: ``simplex`` (L1-MKL), ``box_simplex`` (SM1MKL) and ``uniform``; a convex
    penalty on them (``simplex_l2``, ``simplex_power``) enters each cut through its tangent, as in the level
    method, so the master problem stays an LP.  Curved domains (``lp_ball``, ``elastic_net``: the SIP of Kloft
    et al., whose master problem is not an LP) are not served; ``bcd`` is the solver there.

    With ``stabilize=False`` the query point is the LP minimiser itself: Sonnenburg's SILP, i.e. Kelley's
    cutting-plane method, whose iterates jump between far-apart vertices of the domain (a zig-zag tail that took
    4-16 times the level method's time on the benchmark).  By default the query point is smoothed towards the
    stability centre ``c`` (the evaluated weights of least ``F``): ``mu = a c + (1 - a) mu_LP``, the in-out /
    dual-price smoothing of column generation (Wentges 1997; Ben-Ameur and Neto 2007), with ``a`` adapted at
    every step (Pessoa et al. 2013): larger when ``F`` increases along ``mu_LP - c`` at the last query (the step
    went past the minimum on that segment), smaller when it still decreases.  The master problem stays the same LP
    over the whole domain, so its value and the certificate are the plain method's; only the query points change.
    If the new cut does not cut off ``mu_LP``, convexity gives ``F(mu) <= a F(c) + (1 - a) theta`` with
    ``theta`` the LP value, so the query becomes the new centre and the gap ``F(c) - theta`` shrinks by the factor
    ``a`` (up to the inner solves' precision); otherwise the cut removes ``mu_LP`` from the model, Kelley's
    progress.  Weights below ``1e-3`` of the largest are set to zero in the smoothed point (renormalized, unless
    that breaks a cap; any point of the domain is a valid query), or the weights of the uniform start would decay
    geometrically and keep every kernel in the combination; after a query so cleared that did not become the
    centre, the next query keeps its small weights (on kernels of very different scales a tiny weight can matter).

    The solve stops on the certified relative duality gap (``problem.tol``), like every solver.  With ``lp_gap``
    it also stops on Sonnenburg's own rule, ``|1 - theta_{t+1} / J_t| <= lp_gap`` with ``theta_{t+1}`` the master
    LP's value after the cut of iterate ``t`` and ``J_t`` the objective at it; the result is then marked
    converged and its ``dual_gap`` is still the certified gap reached.

    Parameters
    ----------
    max_cuts : int, default=1000
        The most cuts kept.  Beyond it the oldest cuts inactive in the last LP are dropped (the aggregate cut,
        added every iteration, keeps the LP value, so the lower bound does not fall).
    lp_gap : float or None, default=None
        Sonnenburg's relative LP gap ``epsilon_MKL`` (their default is 1e-3), an extra stopping rule; ``None``
        stops on the certified gap only.
    stabilize : bool, default=True
        Smooth the query points towards the stability centre (above); ``False`` is the plain SILP of the paper.
    smoothing : float, default=0.5
        The first smoothing weight ``a`` in ``[0, 1)``, adapted from then on (``stabilize=True`` only).
    """

    name = "silp"
    requires = frozenset({Capability.POLYHEDRAL, Capability.CAP, Capability.PENALTY_GRADIENT})

    def __init__(self, max_cuts: int = 1000, lp_gap: float | None = None, stabilize: bool = True,
                 smoothing: float = 0.5) -> None:
        self.max_cuts = max_cuts
        self.lp_gap = lp_gap
        self.stabilize = stabilize
        self.smoothing = smoothing

    def check(self, problem: MKLProblem) -> None:
        if not (isinstance(self.max_cuts, int | np.integer) and self.max_cuts >= 2):
            raise ValueError(f"max_cuts must be an integer >= 2; got {self.max_cuts!r}")
        if self.lp_gap is not None and not (isinstance(self.lp_gap, int | float) and 0 < self.lp_gap < 1):
            raise ValueError(f"lp_gap must be None or a number in (0, 1) (Sonnenburg's epsilon_MKL, e.g. 1e-3); "
                             f"got {self.lp_gap!r}")
        if not isinstance(self.stabilize, bool | np.bool_):
            raise ValueError(f"stabilize must be True or False; got {self.stabilize!r}")
        if not (isinstance(self.smoothing, int | float | np.floating) and 0.0 <= self.smoothing < 1.0):
            raise ValueError(f"smoothing must be a number in [0, 1) (the weight of the stability centre); "
                             f"got {self.smoothing!r}")
        polyhedral_cap(problem.regularizer, problem.stack.n_kernels, solver="silp")

    def evaluator(self, problem: MKLProblem, loop: OuterLoop) -> Evaluator:
        return _Centred(problem, loop, self.max_cuts, float(self.smoothing))

    def step(self, evaluate: _Centred, it: Iterate) -> Iterate | Stalled | Converged:
        if evaluate.model is None:
            return Stalled("the master LP failed (HiGHS)")
        value, _, minimiser = evaluate.model
        if self.lp_gap is not None and abs(1.0 - value / it.objective) <= self.lp_gap:
            return Converged(f"Sonnenburg's relative LP gap |1 - theta/J| <= {self.lp_gap:g}")
        # HiGHS' vertex may be off the domain by rounding: clip to the box and restore the sum.
        new = np.clip(minimiser, 0.0, evaluate.cap)
        new /= new.sum()
        if self.stabilize:
            new = evaluate.smoothed(new, it)
        if np.max(np.abs(new - it.mu)) <= 1e-12:
            # The model is minimal at the current weights: their own cut lies below the model minimum only by
            # the inner solve's error, so only a tighter inner solve can move the model.
            return Stalled("the master LP's minimiser is the current weights at this inner precision")
        return evaluate(new, it.sol.alpha)


#: In a smoothed query point, weights below this fraction of the largest are set to zero.
_SPARSE = 1e-3


class _Centred(CuttingPlanes):
    """The cutting-plane model with the stability centre (the evaluated iterate of least ``F``) and the adapted
    smoothing weight of :class:`SILP`."""

    def __init__(self, problem: MKLProblem, loop: OuterLoop, max_cuts: int, smoothing: float) -> None:
        super().__init__(problem, loop, max_cuts)
        self.center: Iterate | None = None
        self.weight = smoothing
        self._direction: np.ndarray | None = None  # mu_LP - c of the last smoothed query
        self._cleared = False  # whether the last query had small weights cleared

    def __call__(self, mu: np.ndarray, alpha0: np.ndarray | None, with_q: bool = True) -> Iterate:
        it = super().__call__(mu, alpha0, with_q)
        if it.q is not None and (self.center is None or it.objective < self.center.objective):
            self.center = it
        return it

    def smoothed(self, target: np.ndarray, it: Iterate) -> np.ndarray:
        """The query ``a c + (1 - a) target`` after adapting ``a`` to the slope of ``F`` at the last query ``it``."""
        if self._direction is not None:
            # The directional derivative of F along the last smoothing segment, at the point reached on it.
            if float(self.gradient(it) @ self._direction) > 0:
                self.weight = min(self.weight + 0.1 * (1.0 - self.weight), 0.95)
            else:
                self.weight = max(self.weight - 0.1, 0.0)
        c = self.center.mu
        self._direction = target - c
        new = self.weight * c + (1.0 - self.weight) * target  # in the domain: both points are
        # Only the centre's small weights are cleared: a small weight the LP chose stays (on a kernel scaled by
        # 1e3 the optimal weight was 1.6e-4; clearing it returned the current weights, a stall at gap 5e-3).
        sparse = np.where((new > _SPARSE * new.max()) | (target > 1e-9 * target.max()), new, 0.0)
        sparse /= sparse.sum()
        # Renormalizing may lift a weight above a cap below 1: then the point stays as it is.  So it does after a
        # query with cleared weights that did not become the centre: a small weight may matter (kernels scaled by
        # 1e2 at C = 1e4: clearing 3.4e-6 of a centre's weight raised F by 3.5 %, and 150 such queries near the
        # centre changed nothing, max_iter at a certified gap of 1.2e-3; a centre's weight of 4.7e-4 on a kernel
        # whose form is 55 times the others' was cleared at every step, each query the current, worse point).
        keep = np.max(sparse) > self.cap or (self._cleared and it is not self.center)
        self._cleared = not keep and not np.array_equal(sparse > 0, new > 0)
        return new if keep else sparse


@hookimpl
def multikernel_solvers() -> dict[str, type[Solver]]:
    return {SILP.name: SILP}
