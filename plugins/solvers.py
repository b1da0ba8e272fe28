"""Built-in outer solvers: block coordinate descent, projected gradient and reduced gradient (SimpleMKL).

All three minimise ``F(mu) = Omega(mu) + J(mu)`` over the regularizer's domain, with
``J(mu) = max_alpha L(alpha) - 1/2 sum_m mu_m q_m(alpha)``.  By Danskin's theorem the gradient is
``dF/dmu_m = -q_m(alpha*)/2 + dOmega/dmu_m`` at the inner optimum ``alpha*``.  Every solver records its
iterates in :class:`multikernel.outer.OuterLoop`, which owns the bounds, the certified duality gap and the
stopping rule, and every inner solve starts from the previous ``alpha``.
"""

from __future__ import annotations

import numpy as np

from multikernel.hookspecs import hookimpl
from multikernel.interfaces import InnerSolution, MKLProblem, MKLResult, Solver
from multikernel.outer import OuterLoop

__all__ = ["BlockCoordinateDescent", "ProjectedGradient", "ReducedGradient"]


def _start(problem: MKLProblem, revive: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
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
        pass
    if revive and np.any(mu <= 0):
        mu = 0.999 * mu + 0.001 * init
    alpha = warm.alpha if np.shape(warm.alpha) == (len(problem.y),) else None
    return mu, alpha


class _Evaluator:
    """Inner solves at given weights (warm-started) and the objective ``F = J + Omega`` they give.

    ``F`` uses the inner *dual* objective: with a warm start it changes smoothly between neighbouring
    weights, which is what a line search compares.  Every evaluation is offered to the outer loop, so a
    line-search trial can improve the certified bounds too.
    """

    def __init__(self, problem: MKLProblem, loop: OuterLoop) -> None:
        self.problem = problem
        self.loop = loop
        self.n_solves = 0

    def __call__(self, mu: np.ndarray, alpha0: np.ndarray | None) -> tuple[InnerSolution, np.ndarray, float]:
        p = self.problem
        sol = p.loss.solve(p.stack.combine(mu), p.y, alpha0=alpha0, tol=p.inner_tol)
        self.n_solves += 1
        q = p.stack.quad_forms(sol.coef)
        return sol, q, sol.dual_objective + p.regularizer.penalty(mu)

    def gradient(self, mu: np.ndarray, q: np.ndarray) -> np.ndarray:
        return -0.5 * q + self.problem.regularizer.penalty_gradient(mu)


class BlockCoordinateDescent(Solver):
    """Alternate an inner SVM solve and the regularizer's closed-form weight update.

    This is Algorithm 1 of Xu, Tsang and Xu (2013) for the box-simplex, and the classic analytic update
    of Kloft et al. (2011) for the simplex and the l_p ball.  With the classifier fixed, the weight step
    minimises the primal ``1/2 sum_m ||f_m||^2 / mu_m + Omega(mu)`` exactly (``closed_form_update``).  Each
    SVM solve starts from the previous alpha; a warm start from ``problem.warm_start`` is projected onto the
    domain and its zero weights revived (the multiplicative updates cannot revive them).  For the plain
    simplex (p = 1) this update is known to converge slowly; the certified gap shows it.
    """

    name = "bcd"

    def solve(self, problem: MKLProblem) -> MKLResult:
        stack, reg = problem.stack, problem.regularizer
        mu, alpha = _start(problem, revive=True)
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


class ProjectedGradient(Solver):
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
        Trials per iteration before the solver stops as stalled (the inner solver's precision is then the
        limit; a ConvergenceWarning states the gap reached).
    """

    name = "projected_gradient"

    def __init__(self, sigma: float = 1e-4, max_backtracks: int = 30) -> None:
        self.sigma = sigma
        self.max_backtracks = max_backtracks

    def solve(self, problem: MKLProblem) -> MKLResult:
        reg = problem.regularizer
        if not (0 < self.sigma < 1 and self.max_backtracks >= 1):
            raise ValueError("projected_gradient needs 0 < sigma < 1 and max_backtracks >= 1")
        mu, alpha = _start(problem)
        loop = OuterLoop(problem)
        evaluate = _Evaluator(problem, loop)
        converged = interrupted = False
        reason = None
        try:
            sol, q, F = evaluate(mu, alpha)
            grad = evaluate.gradient(mu, q)
            eta = _initial_step(grad)
            for _ in range(problem.max_iter):
                if loop.record(mu, sol, q):
                    converged = True
                    break
                d = np.asarray(reg.project(mu - eta * grad), dtype=np.float64) - mu
                if np.max(np.abs(d)) <= 1e-12 * max(1.0, float(np.max(np.abs(mu)))):
                    converged = loop.met  # a fixed point of the projected step: stationary
                    reason = "the projected gradient step vanished (stationary up to the inner precision)"
                    break
                step = _armijo(evaluate, loop, mu, sol.alpha, F, float(grad @ d), d, self.sigma,
                               self.max_backtracks)
                if step is None:
                    converged = loop.met
                    reason = "the line search cannot decrease the objective any more"
                    break
                new_mu, sol, q, F = step
                new_grad = evaluate.gradient(new_mu, q)
                eta = _spectral_step(new_mu - mu, new_grad - grad, eta)
                mu, grad = new_mu, new_grad
        except KeyboardInterrupt:
            interrupted = True
        return loop.result(converged, interrupted, reason)


def _armijo(evaluate: _Evaluator, loop: OuterLoop, mu: np.ndarray, alpha0: np.ndarray, F: float,
            slope: float, d: np.ndarray, sigma: float, max_backtracks: int, t: float = 1.0):
    """Backtrack ``t`` from its start until ``F(mu + t d) <= F + sigma t slope``; ``None`` if it never does.

    ``slope = grad'd < 0``.  The next ``t`` minimises the quadratic through ``F``, the slope and the rejected
    value, kept within ``[0.1 t, 0.5 t]`` (the safeguard of Nocedal and Wright, section 3.5).
    """
    if slope >= 0:
        return None
    for _ in range(max_backtracks):
        cand = mu + t * d
        c_sol, c_q, c_F = evaluate(cand, alpha0)
        loop.offer(cand, c_sol, c_q)
        if c_F <= F + sigma * t * slope:
            return cand, c_sol, c_q, c_F
        curvature = c_F - F - t * slope
        t_quad = -slope * t * t / (2.0 * curvature) if curvature > 0 else 0.5 * t
        t = min(max(t_quad, 0.1 * t), 0.5 * t)
    return None


def _spectral_step(s: np.ndarray, r: np.ndarray, previous: float) -> float:
    """Barzilai-Borwein step ``s's / s'r``, bounded; doubles the previous step when the curvature is <= 0."""
    ss, sr = float(s @ s), float(s @ r)
    eta = ss / sr if sr > 0 else 2.0 * previous
    return min(max(eta, 1e-10), 1e10)


def _initial_step(grad: np.ndarray) -> float:
    """A first step that moves the weights by about one unit: the scale of the simplex."""
    spread = float(np.max(grad) - np.min(grad))
    scale = spread if spread > 0 else float(np.max(np.abs(grad)))
    return 1.0 / scale if scale > 0 else 1.0


class ReducedGradient(Solver):
    """SimpleMKL's reduced gradient descent on the simplex (Rakotomamonjy et al., JMLR 2008, Algorithm 1).

    The equality ``sum mu = 1`` is handled by eliminating the largest weight ``mu_v``: the reduced gradient
    is ``r_m = p_m - p_v`` for ``m != v``, and the descent direction ``D_m = -r_m`` except ``D_m = 0`` for a
    zero weight with ``r_m > 0`` (it would become negative), and ``D_v = -sum_{m != v} D_m``.  Along ``D``
    the solver first takes maximal feasible steps -- moving to the point where the next weight hits zero --
    while they decrease the objective, then runs an Armijo backtracking line search on ``[0, gamma_max]``
    (quadratic interpolation from the rejected boundary value; SimpleMKL itself uses a golden-section
    search there).
    Every evaluation is an SVM solve, warm-started from the current alpha.  Needs a regularizer whose
    domain is the simplex, declared by the class attribute ``domain = "simplex"`` (built-ins: ``simplex``,
    ``simplex_l2``, ``simplex_power``); the penalty gradient is included, so the penalised forms work too.

    Parameters
    ----------
    sigma : float, default=1e-4
        Armijo sufficient-decrease constant, in (0, 1).
    max_backtracks : int, default=30
        Trials per line search before the solver stops as stalled (ConvergenceWarning with the gap).
    """

    name = "reduced_gradient"

    def __init__(self, sigma: float = 1e-4, max_backtracks: int = 30) -> None:
        self.sigma = sigma
        self.max_backtracks = max_backtracks

    def solve(self, problem: MKLProblem) -> MKLResult:
        reg = problem.regularizer
        if getattr(reg, "domain", None) != "simplex":
            raise ValueError(f"reduced_gradient needs a regularizer on the simplex (simplex, simplex_l2, "
                             f"simplex_power); {reg.name!r} is not one. Use 'projected_gradient' or 'bcd'")
        if not (0 < self.sigma < 1 and self.max_backtracks >= 1):
            raise ValueError("reduced_gradient needs 0 < sigma < 1 and max_backtracks >= 1")
        mu, alpha = _start(problem)
        loop = OuterLoop(problem)
        evaluate = _Evaluator(problem, loop)
        converged = interrupted = False
        reason = None
        try:
            sol, q, F = evaluate(mu, alpha)
            for _ in range(problem.max_iter):
                if loop.record(mu, sol, q):
                    converged = True
                    break
                step = self._iteration(evaluate, loop, mu, sol, q, F)
                if step is None:
                    converged = loop.met
                    reason = "the reduced gradient line search cannot decrease the objective any more"
                    break
                mu, sol, q, F = step
        except KeyboardInterrupt:
            interrupted = True
        return loop.result(converged, interrupted, reason)

    @staticmethod
    def _direction(mu: np.ndarray, grad: np.ndarray) -> np.ndarray:
        v = int(np.argmax(mu))
        red = grad - grad[v]
        D = -red
        D[(mu <= 0) & (red > 0)] = 0.0
        D[v] = 0.0
        D[v] = -D.sum()
        return D

    def _iteration(self, evaluate: _Evaluator, loop: OuterLoop, mu: np.ndarray, sol: InnerSolution,
                   q: np.ndarray, F: float):
        """One descent update; ``None`` when no decrease is possible (stationary up to the precision)."""
        grad = evaluate.gradient(mu, q)
        D = self._direction(mu, grad)
        tiny = 1e-12 * max(1.0, float(np.max(np.abs(grad))))
        if np.max(np.abs(D)) <= tiny or float(grad @ D) >= 0:
            return None
        improved = False
        # Maximal feasible steps: go to where the next weight reaches zero while that lowers F.  As in
        # SimpleMKL the gradient is not recomputed here; only the direction is, with the zeroed weight frozen.
        while True:
            neg = D < -tiny
            ratios = np.full(len(mu), np.inf)
            ratios[neg] = -mu[neg] / D[neg]
            k = int(np.argmin(ratios))
            gamma_max = float(ratios[k])  # finite: sum D = 0 and D != 0 give a negative entry
            cand = np.maximum(mu + gamma_max * D, 0.0)
            cand[k] = 0.0
            cand /= cand.sum()
            c_sol, c_q, c_F = evaluate(cand, sol.alpha)
            loop.offer(cand, c_sol, c_q)
            if c_F >= F:
                break
            mu, sol, q, F, improved = cand, c_sol, c_q, c_F, True
            D = self._direction(mu, grad)
            if np.max(np.abs(D)) <= tiny or float(evaluate.gradient(mu, q) @ D) >= 0:
                return mu, sol, q, F
        # Armijo backtracking on [0, gamma_max] from the last accepted point; the rejected boundary value
        # c_F gives the first trial by quadratic interpolation.
        slope = float(evaluate.gradient(mu, q) @ D)
        if slope >= 0:
            return (mu, sol, q, F) if improved else None
        curvature = c_F - F - gamma_max * slope
        t0 = -slope * gamma_max**2 / (2.0 * curvature) if curvature > 0 else 0.5 * gamma_max
        t0 = min(max(t0, 0.1 * gamma_max), 0.5 * gamma_max)
        step = _armijo(evaluate, loop, mu, sol.alpha, F, slope, D, self.sigma, self.max_backtracks, t=t0)
        if step is not None:
            cand = np.maximum(step[0], 0.0)
            return cand / cand.sum(), step[1], step[2], step[3]
        return (mu, sol, q, F) if improved else None


@hookimpl
def multikernel_solvers() -> dict[str, type[Solver]]:
    return {cls.name: cls for cls in (BlockCoordinateDescent, ProjectedGradient, ReducedGradient)}
