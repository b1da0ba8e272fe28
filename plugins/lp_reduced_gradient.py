"""SimpleMKL's reduced gradient on the lp sphere (``reduced_gradient_lp``): SimpleMKL's algorithm for Lp-MKL, the
peer that ``smo_mkl`` is measured against on lp problems (docs/benchmarks.md).

The library's :class:`~multikernel.plugins.solvers.ReducedGradient` is SimpleMKL's algorithm (Rakotomamonjy et
al. 2008) on the simplex: the equality ``sum mu = 1`` is eliminated through the largest weight ``mu_v``, the
reduced gradient ``r_m = g_m - g_v`` gives the direction, and the solver takes maximal steps (to where a weight
reaches zero), an Armijo search and a line minimisation.  For the lp ball ``{mu >= 0, ||mu||_p <= 1}`` with
``1 <= p < inf`` the optimum lies on the sphere ``||mu||_p = 1`` (``J(mu)`` does not increase when a weight
grows), and the same method applies with that equality eliminated instead (Wolfe's reduced gradient for a
nonlinear equality): along the sphere ``d mu_v / d mu_m = -(mu_m / mu_v)^{p-1}``, so

    r_m = g_m - g_v (mu_m / mu_v)^{p-1}   (m != v),     D_v = -sum_{m != v} (mu_m / mu_v)^{p-1} D_m,

with ``D_m = -r_m`` (zero for a zero weight with ``r_m > 0``), and every trial point ``mu + t D`` is brought back
onto the sphere by scaling (``D`` is tangent to it, so this changes the step at second order only).  For
``p = 1`` this is SimpleMKL exactly.  The factor ``(mu_m / mu_v)^{p-1}`` is at most 1 and vanishes at a zero
weight, so the directions stay bounded where the weights do.  Each direction costs what SimpleMKL's does: an
SVM solve per trial point, warm-started.

It is none of the existing lp solvers: ``projected_gradient`` moves ``mu`` by Euclidean projections onto the
ball with spectral steps, ``bcd`` is Kloft et al.'s closed-form update, ``smo_mkl`` works on ``alpha``.  Every
iterate is evaluated and certified by the shared outer loop, so its gap means what every solver's gap means.
"""

from __future__ import annotations

import math

import numpy as np

from multikernel.core.capabilities import Capability
from multikernel.core.hookspecs import hookimpl
from multikernel.core.interfaces import MKLProblem, Solver
from multikernel.plugins.solvers import _RESIDUE, ReducedGradient

__all__ = ["SphereReducedGradient"]


class SphereReducedGradient(ReducedGradient):
    """SimpleMKL's reduced gradient for lp-MKL, on the sphere ``||mu||_p = 1`` (module docstring).

    Needs a regularizer whose domain is the lp ball (``lp_ball``, ``l2_ball``) with ``1 <= p < inf``; the
    parameters are those of :class:`~multikernel.plugins.solvers.ReducedGradient`.
    """

    name = "reduced_gradient_lp"
    requires = frozenset({Capability.LP_BALL, Capability.PENALTY_GRADIENT})
    p: float = 1.0  # set from the regularizer by check()

    def check(self, problem: MKLProblem) -> None:
        reg = problem.regularizer  # its domain is the lp ball: solve's check_parts (LP_BALL)
        reg.check(problem.stack.n_kernels)
        if math.isinf(float(reg.p)):
            raise ValueError("reduced_gradient_lp needs a finite p (p = inf fixes every weight at 1: the sum "
                             "kernel); use 'bcd' or 'projected_gradient'")
        self._check_parameters()
        self.p = float(reg.p)
        # A weight zeroed by a maximal step stays frozen on the simplex (its reduced gradient is positive);
        # on the sphere with p > 1 its reduced gradient is g_m < 0, so the next direction revives it and
        # SimpleMKL's loop of maximal steps cycled through the weights (over 400 steps in one iteration,
        # measured on heart at p = 1.1; one step per iteration stalled at gap 20).  For p > 1 the maximal
        # step only bounds the line search (its end point is never optimal: no lp-MKL optimum has a zero
        # weight with q_m > 0).
        self.max_maximal_steps = None if self.p == 1.0 else 0

    def _slopes(self, mu: np.ndarray, v: int) -> np.ndarray:
        """``(mu_m / mu_v)^{p-1}``: minus the derivative of ``mu_v`` along the sphere in ``mu_m``."""
        return (np.maximum(mu, 0.0) / mu[v]) ** (self.p - 1.0)

    def _reduced(self, mu: np.ndarray, grad: np.ndarray, v: int) -> np.ndarray:
        return grad - grad[v] * self._slopes(mu, v)

    def _complete(self, mu: np.ndarray, D: np.ndarray, v: int) -> np.ndarray:
        D[v] = 0.0
        D[v] = -float(self._slopes(mu, v) @ D)
        return D

    def _finish(self, mu: np.ndarray) -> np.ndarray:
        mu = np.where(mu > _RESIDUE * float(np.max(mu)), mu, 0.0)
        top = float(np.max(mu))
        return mu / (top * float(np.sum((mu / top) ** self.p)) ** (1.0 / self.p))


@hookimpl
def multikernel_solvers() -> dict[str, type[Solver]]:
    return {SphereReducedGradient.name: SphereReducedGradient}
