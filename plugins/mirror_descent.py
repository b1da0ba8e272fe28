"""Mirror descent with the entropy prox over the kernel weights: the MKL-MD / VSKL family of the Bucak thesis.

Spec section 2.4.3, Eq. (2.17): ``mu_{t+1} = argmin_{mu in D} eta_t grad F(mu_t)'(mu - mu_t) + KL(mu || mu_t)``
(Nath et al. 2009; Aflalo et al. 2011, VSKL; Beck and Teboulle 2003 for the entropic mirror descent itself).  On the
simplex this is the exponentiated-gradient (multiplicative) update ``mu_m <- mu_m exp(-eta g_m) / Z``, the update of
ML-MKL-SA with one label (spec section 9, item 10).  On the box-simplex of SM1MKL the same prox has the closed form
of :func:`entropic_prox`: the multiplicative update followed by the KL (not Euclidean) projection onto the capped
simplex, ``mu_m = min(cap, c w_m)`` with ``c`` found by sorting.
"""

from __future__ import annotations

import math

import numpy as np

from multikernel.core.capabilities import Capability
from multikernel.core.hookspecs import hookimpl
from multikernel.core.interfaces import MKLProblem, Solver
from multikernel.plugins.solvers import ClosedFormFallback, polyhedral_cap
from multikernel.solve.outer import Evaluator, Iterate, OuterSolver, Stalled

__all__ = ["MirrorDescent", "entropic_prox"]

STEP_RULES = ("armijo", "diminishing", "fixed")
#: The smallest positive weight of the solver's entropic steps, relative to the largest: 1e-12.  A multiplicative
#: step grows a weight by a bounded factor, so a weight driven to 1e-49 on the way (the floor was exp(-700)) took
#: 150 more iterations to regain the 4e-3 the optimum gives it, and the certificate waited for it (australian
#: subsets, warm-started C grid: max_iter 500 at a certified gap of 0.036 for tol 1e-3).  The floor's mass, at most
#: M * 1e-12, moves F by far less than any tolerance.
FLOOR = 1e-12


def entropic_prox(mu: np.ndarray, grad: np.ndarray, eta: float, cap: float = 1.0, floor: float = 0.0) -> np.ndarray:
    """``argmin_{x in D} eta grad'x + KL(x || mu)`` over ``D = {sum x = 1, 0 <= x <= cap}``.

    The unconstrained minimiser over ``sum x = 1`` is ``w ∝ mu exp(-eta grad)`` (computed in log space, so
    large steps neither overflow nor lose the largest weights).  With the cap, the KKT conditions of the KL
    projection give ``x_m = min(cap, c w_m)`` with one scalar ``c``: the largest ``w`` are capped, and ``c``
    spreads the remaining mass over the others in proportion to ``w``.  Sorting ``w`` finds the number of capped
    weights, the smallest ``k`` with ``(1 - k cap) w_(k+1) / sum_{j>k} w_(j) <= cap``.  Zero weights stay zero
    (the prox is multiplicative); positive weights stay positive, at least ``floor`` times the largest before the
    cap (``floor = 0``: ``exp(-700)``, the smallest that ``exp`` does not round to 0; the exact prox above it).

    Raises
    ------
    ValueError
        If the positive weights cannot carry the mass 1 under the cap (``cap * #positive < 1``).
    """
    pos = mu > 0
    logw = np.full(len(mu), -np.inf)
    logw[pos] = np.log(mu[pos]) - eta * np.asarray(grad, dtype=np.float64)[pos]
    top = float(np.max(logw))
    # The largest is 1 and zero weights stay 0.  A positive weight is kept above the floor: once exactly zero
    # (or vanishing), no multiplicative step could bring it back, and a long step on a flat objective (the
    # backtracking doubles its step after each success) would otherwise zero kernels that the cap needs.
    w = np.zeros(len(mu))
    w[pos] = np.exp(np.maximum(logw[pos] - top, math.log(floor) if floor > 0 else -700.0))
    if cap >= 1.0:
        return w / w.sum()
    n_pos = int(np.count_nonzero(w))
    if cap * n_pos < 1.0 - 1e-12:
        raise ValueError(f"the entropic prox cannot meet the cap {cap:g} with {n_pos} positive weights")
    order = np.argsort(-w)
    ws = w[order]
    tails = np.cumsum(ws[::-1])[::-1]  # tails[k] = sum_{j >= k} ws[j]
    k = np.arange(len(ws))
    with np.errstate(divide="ignore", invalid="ignore"):
        c = (1.0 - k * cap) / tails
        ok = (c * ws <= cap * (1.0 + 1e-12)) & (tails > 0)
    first = int(np.argmax(ok)) if ok.any() else n_pos - 1
    x = np.minimum(cap, c[first] * w)
    x[order[:first]] = cap
    return x


def _kl(x: np.ndarray, y: np.ndarray) -> float:
    """``KL(x || y) = sum x log(x / y)`` for two points of the same total (0 log 0 = 0)."""
    pos = x > 0
    return float(np.sum(x[pos] * (np.log(x[pos]) - np.log(y[pos]))))


def _spread(grad: np.ndarray) -> float:
    """The scale of the gradient that matters on ``sum mu = 1`` (a constant shift does not change the step)."""
    spread = float(np.max(grad) - np.min(grad))
    return spread if spread > 0 else max(float(np.max(np.abs(grad))), 1e-300)


class MirrorDescent(ClosedFormFallback, OuterSolver):
    """Entropic mirror descent (exponentiated gradient) on the simplex and the box-simplex.

    Each step is the entropic prox of the gradient ``g = -q/2 + grad Omega`` (:func:`entropic_prox`) with step
    ``eta_t``, then an inner solve (warm-started from the current ``alpha``).  The step rules:

    * ``"armijo"`` (default): backtracking on the Bregman descent condition
      ``F(mu+) <= F(mu) + g'(mu+ - mu) + KL(mu+ || mu) / eta`` (the descent lemma of a function smooth relative to
      the entropy), halving ``eta`` until it holds with a strict decrease, and doubling the accepted ``eta`` for
      the next step.  ``F`` is smooth wherever the inner solution is unique, so the accepted steps follow its
      curvature, and the solver converges to the certified tolerance like the gradient solvers.
    * ``"diminishing"``: ``eta_t = eta sqrt(2 ln M / t) / ||g_t||_spread`` (Ben-Tal and Nemirovski; the deterministic
      form of the step of the thesis' Theorem 1, ``eta ~ sqrt(ln s / T) / G``), one inner solve per iteration and
      no line search.  Its ``O(1/sqrt(T))`` rate is the non-smooth guarantee: expect ``max_iter`` warnings at tight
      ``tol``.
    * ``"fixed"``: ``eta_t = eta / ||g_1||_spread``, the constant step of the thesis' experiments (Algorithm 1 of
      ML-MKL-SA with one label).

    The loop keeps the best iterate; the thesis averages the iterates instead (3.10), which needs one more
    inner solve per iteration to certify and has the same guarantee as the best iterate.  Needs a polyhedral
    domain ``{sum mu = 1, 0 <= mu <= cap}`` (``simplex``, ``box_simplex``, ``uniform``; a penalty on the simplex,
    ``simplex_l2`` or ``simplex_power``, enters through its gradient).  A warm start's zero weights are revived
    (multiplicative steps cannot move a zero weight).

    Parameters
    ----------
    step_rule : {"armijo", "diminishing", "fixed"}, default="armijo"
    eta : float, default=1.0
        The step scale, relative to the spread ``max g - min g`` of the gradient (``eta = 1`` moves the
        log-weights by at most 1 relative to each other): the first trial step for ``"armijo"``, the constant of
        the other rules.
    max_backtracks : int, default=30
        Trials per step for ``"armijo"`` before the step counts as stalled (the loop then solves the inner
        problems more precisely; at the finest inner tolerance a ConvergenceWarning states the gap reached).
    """

    name = "mirror_descent"
    requires = frozenset({Capability.POLYHEDRAL, Capability.CAP, Capability.PENALTY_GRADIENT})
    revive = True

    def __init__(self, step_rule: str = "armijo", eta: float = 1.0, max_backtracks: int = 30) -> None:
        self.step_rule = step_rule
        self.eta = eta
        self.max_backtracks = max_backtracks

    def check(self, problem: MKLProblem) -> None:
        if self.step_rule not in STEP_RULES:
            raise ValueError(f"step_rule must be one of {', '.join(map(repr, STEP_RULES))}; got {self.step_rule!r}")
        if not (isinstance(self.eta, int | float) and self.eta > 0 and math.isfinite(self.eta)):
            raise ValueError(f"eta must be a positive number; got {self.eta!r}")
        if not (isinstance(self.max_backtracks, int | np.integer) and self.max_backtracks >= 1):
            raise ValueError(f"max_backtracks must be a positive integer; got {self.max_backtracks!r}")
        polyhedral_cap(problem.regularizer, problem.stack.n_kernels, solver="mirror_descent")

    def step(self, evaluate: Evaluator, it: Iterate) -> Iterate | Stalled:
        grad = evaluate.gradient(it)
        cap = polyhedral_cap(evaluate.problem.regularizer, len(it.mu), solver="mirror_descent")
        if self.step_rule == "armijo":
            return self._backtrack(evaluate, it, grad, cap)
        if self.step_rule == "diminishing":
            M, t = len(it.mu), evaluate.loop.n_iter
            eta = self.eta * math.sqrt(2.0 * math.log(max(M, 2)) / t) / _spread(grad)
        else:
            if it.memo is None:
                it.memo = self.eta / _spread(grad)  # the first gradient fixes the scale of the constant step
            eta = it.memo
        new = entropic_prox(it.mu, grad, eta, cap, FLOOR)
        if np.max(np.abs(new - it.mu)) <= 1e-15:
            return Stalled("the mirror step vanished (stationary up to the inner precision)")
        nxt = evaluate(new, it.sol.alpha)
        nxt.memo = it.memo
        return nxt

    def _backtrack(self, evaluate: Evaluator, it: Iterate, grad: np.ndarray, cap: float) -> Iterate | Stalled:
        """The ``"armijo"`` rule: halve ``eta`` until the Bregman descent condition holds with a strict decrease.

        As in the Armijo search of the gradient solvers, the objectives compared are inner dual objectives, each
        within its inner gap of the true ``F``: once the predicted decrease ``-g'd`` is below the two gaps, a
        comparison cannot tell a decrease from the inner solver's error, and the step reports a stall (the loop
        then solves the inner problems more precisely).
        """
        eta = self.eta / _spread(grad) if it.memo is None else it.memo
        for _ in range(self.max_backtracks):
            new = entropic_prox(it.mu, grad, eta, cap, FLOOR)
            d = new - it.mu
            if np.max(np.abs(d)) <= 1e-15:
                return Stalled("the mirror step vanished (stationary up to the inner precision)")
            slope = float(grad @ d)
            c = evaluate(new, it.sol.alpha, with_q=False)
            if c.objective < it.objective and c.objective <= it.objective + slope + _kl(new, it.mu) / eta:
                nxt = evaluate.certify(c)
                nxt.memo = 2.0 * eta
                return self._unless_crawling(evaluate, it, nxt)
            if -slope <= it.inner_gap + c.inner_gap and evaluate.loop.inner_tol > evaluate.loop.inner_tol_floor:
                return Stalled("the possible decrease of the mirror step is below the inner solves' precision")
            eta *= 0.5
        return self._coordinate_step(evaluate, it) or Stalled("the mirror step cannot decrease the objective any more")


@hookimpl
def multikernel_solvers() -> dict[str, type[Solver]]:
    return {MirrorDescent.name: MirrorDescent}
