"""Built-in regularizers: the domains ``D`` and penalties ``Omega`` of the kernel weights.

Every regularizer provides

* ``dual_bound(g) = max_{mu in D} mu'g - Omega(mu)``.  Where this maximum needs a root find, we return the
  value of the *Lagrangian dual function* at the multiplier found, which is never below the maximum (weak
  duality) -- so the lower bound ``L(alpha) - dual_bound(q/2)`` of the outer loop stays certified even when
  the root find is not exact;
* ``closed_form_update(mu, q) = argmin_{nu in D} 1/2 sum_m ||f_m||^2 / nu_m + Omega(nu)`` with
  ``||f_m||^2 = mu_m^2 q_m``: the weight step of block coordinate descent;
* ``project(v)``: the Euclidean projection onto ``D`` (for the gradient solvers);
* ``check``/``initial``.

The class attribute ``domain`` names the shape of ``D`` (``"simplex"``, ``"box_simplex"``, ...): the
reduced-gradient solver needs the simplex.
"""

from __future__ import annotations

import math

import numpy as np

from multikernel.core.hookspecs import hookimpl
from multikernel.core.interfaces import Regularizer
from multikernel.solve.projections import (
    box_simplex_inverse,
    increasing_root,
    newton_bracketed,
    project_capped_simplex,
    project_lp_ball_nonneg,
    project_simplex,
)

__all__ = [
    "Uniform",
    "Simplex",
    "BoxSimplex",
    "SimplexL2",
    "SimplexPower",
    "LpBall",
    "L2Ball",
    "ElasticNet",
]


def _component_norms(mu: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``||f_m|| = mu_m sqrt(q_m)``, the norms of the per-kernel parts of the classifier."""
    return mu * np.sqrt(np.maximum(q, 0.0))


def _half_sq_norms(mu: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``a_m = ||f_m||^2 / 2 = mu_m^2 q_m / 2``, the coefficients of the weight step (3.21)."""
    return 0.5 * mu * mu * np.maximum(q, 0.0)


def _need_kernels(n_kernels: int) -> None:
    if n_kernels < 1:
        raise ValueError("at least one kernel is needed")


def _positive(name: str, value: float) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a positive number; got {value!r}") from None
    if not (v > 0) or math.isnan(v):
        raise ValueError(f"{name} must be a positive number; got {value!r}")
    return v


# --------------------------------------------------------------------------------------------------
class Uniform(Regularizer):
    """The single point ``mu = 1/M``: the average kernel (no kernel learning)."""

    name = "uniform"
    domain = "point"

    def check(self, n_kernels: int) -> None:
        _need_kernels(n_kernels)

    def initial(self, n_kernels: int) -> np.ndarray:
        return np.full(n_kernels, 1.0 / n_kernels)

    def dual_bound(self, g: np.ndarray) -> float:
        return float(np.mean(g))

    def closed_form_update(self, mu: np.ndarray, q: np.ndarray) -> np.ndarray:
        return self.initial(len(mu))

    def project(self, v: np.ndarray) -> np.ndarray:
        return self.initial(len(v))


class _OnTheSimplex(Regularizer):
    """The unit simplex as domain (with or without a penalty): its projection and its boundary ``sum mu = 1``."""

    domain = "simplex"

    def project(self, v: np.ndarray) -> np.ndarray:
        return project_simplex(v)

    def onto_boundary(self, v: np.ndarray) -> np.ndarray:
        return v / v.sum()


class Simplex(_OnTheSimplex):
    """The simplex ``{mu >= 0, sum mu = 1}``: L1-MKL ("hard margin" MKL).

    The weight step is ``mu_m = ||f_m|| / sum ||f||`` (Rakotomamonjy et al. 2008; Kloft et al. 2011 with
    p = 1); ``dual_bound(g) = max_m g_m``.
    """

    name = "simplex"

    def check(self, n_kernels: int) -> None:
        _need_kernels(n_kernels)

    def initial(self, n_kernels: int) -> np.ndarray:
        return np.full(n_kernels, 1.0 / n_kernels)

    def dual_bound(self, g: np.ndarray) -> float:
        return float(np.max(g))

    def closed_form_update(self, mu: np.ndarray, q: np.ndarray) -> np.ndarray:
        norms = _component_norms(mu, q)
        total = norms.sum()
        if total <= 0.0:
            return np.full(len(mu), 1.0 / len(mu))
        return norms / total


# --------------------------------------------------------------------------------------------------
class BoxSimplex(Regularizer):
    """The box-constrained simplex ``{sum mu = 1, 0 <= mu <= theta}``: hinge soft margin MKL (SM1MKL).

    Parameters
    ----------
    theta : float, optional
        The cap, ``theta >= 1/M``.  ``theta = 1/M`` forces the average kernel; ``theta >= 1`` is L1-MKL.
    nu : float, optional
        The paper's experimental parametrization ``theta = 1/(nu M)``, ``nu`` in ``(0, 1]``: a lower bound
        on the fraction of selected kernels.  Give exactly one of ``theta`` and ``nu``.

    Notes
    -----
    The weight step (3.21) ``argmin sum_m a_m / mu_m`` over the box-simplex has the O(M log M) closed form
    of Lemmas 3.1/3.2 (Xu, Tsang and Xu 2013), see :func:`multikernel.solve.projections.box_simplex_inverse`.
    ``dual_bound(g)`` is the greedy LP optimum: weight ``theta`` on the largest ``g`` until the mass is
    spent.
    """

    name = "box_simplex"
    domain = "box_simplex"

    def __init__(self, theta: float | None = None, nu: float | None = None) -> None:
        self.theta = theta
        self.nu = nu

    def cap(self, n_kernels: int) -> float:
        """The cap ``theta`` for ``n_kernels`` kernels (from ``theta`` or ``nu``), validated."""
        _need_kernels(n_kernels)
        if (self.theta is None) == (self.nu is None):
            raise ValueError("box_simplex needs exactly one of theta (the cap, >= 1/M) or nu (theta = "
                             f"1/(nu M), 0 < nu <= 1); got theta={self.theta!r}, nu={self.nu!r}")
        if self.nu is not None:
            nu = _positive("nu", self.nu)
            if nu > 1.0 + 1e-12:
                raise ValueError(f"nu={self.nu!r} > 1 makes the box-simplex empty (theta = 1/(nu M) < "
                                 f"1/M); use 0 < nu <= 1 (nu = 1 is the average kernel, nu = 1/M is L1-MKL)")
            theta = 1.0 / (nu * n_kernels)
        else:
            theta = _positive("theta", self.theta)
        lowest = 1.0 / n_kernels
        if theta < lowest * (1.0 - 1e-12):
            raise ValueError(f"theta={theta!r} < 1/M = {lowest!r} for M={n_kernels} kernels: the weights "
                             f"cannot sum to 1 under the cap. Use theta >= 1/M (theta = 1/M is the average "
                             f"kernel, theta >= 1 is L1-MKL), or nu in (0, 1].")
        # Snap rounding noise (nu = 1 computed as 1/(1.0*M)) to the exact average-kernel case.
        return lowest if theta <= lowest * (1.0 + 1e-12) else theta

    def check(self, n_kernels: int) -> None:
        self.cap(n_kernels)

    def initial(self, n_kernels: int) -> np.ndarray:
        return np.full(n_kernels, 1.0 / n_kernels)

    def dual_bound(self, g: np.ndarray) -> float:
        g = np.asarray(g, dtype=np.float64)
        theta = self.cap(len(g))
        gs = np.sort(g)[::-1]
        # Greedy LP solution: theta on the largest entries until the unit mass is used up.
        weights = np.clip(1.0 - theta * np.arange(len(g)), 0.0, theta)
        return float(weights @ gs)

    def closed_form_update(self, mu: np.ndarray, q: np.ndarray) -> np.ndarray:
        return box_simplex_inverse(_half_sq_norms(mu, q), self.cap(len(mu)))

    def project(self, v: np.ndarray) -> np.ndarray:
        return project_capped_simplex(v, self.cap(len(v)))


# --------------------------------------------------------------------------------------------------
class SimplexPower(_OnTheSimplex):
    """The simplex with a power penalty ``kappa sum_m mu_m^p``: the p/(p-1)-hinge soft margin MKL.

    The thesis generalizes the square hinge of SM2MKL to the loss ``(theta/2) zeta^{p/(p-1)}`` of the kernel
    slacks ``zeta_m``, ``p > 1``.  Its Lagrangian dual over ``zeta`` is, term by term, the convex conjugate
    ``sup_{zeta >= 0} mu zeta - (theta/2) zeta^r`` with ``r = p/(p-1)``, which gives the penalty

        Omega(mu) = kappa sum_m mu_m^p,   kappa = (1/p) (2 (p-1) / (p theta))^{p-1},

    on the simplex.  ``p = 2`` is SM2MKL, ``Omega = ||mu||^2 / (2 theta)``.

    Parameters
    ----------
    theta : float, default=1.0
        The weight of the slack loss; larger ``theta`` means a weaker penalty (``theta -> inf`` is L1-MKL,
        ``theta -> 0`` the average kernel).
    p : float, default=2.0
        The penalty exponent, ``p > 1``.
    """

    name = "simplex_power"

    def __init__(self, theta: float = 1.0, p: float = 2.0) -> None:
        self.theta = theta
        self.p = p

    def _p(self) -> float:
        p = float(self.p)
        if not (p > 1.0 and math.isfinite(p)):
            raise ValueError(f"p must be a finite number > 1; got {self.p!r}")
        return p

    def kappa(self) -> float:
        """The penalty coefficient ``kappa``."""
        theta, p = _positive("theta", self.theta), self._p()
        return (1.0 / p) * (2.0 * (p - 1.0) / (p * theta)) ** (p - 1.0)

    def strong_convexity(self) -> float:
        # Omega'' = kappa p (p-1) mu^(p-2) on 0 < mu <= 1: at least kappa p (p-1) for p <= 2 (1/theta at p = 2);
        # for p > 2 it vanishes at mu = 0.
        p = self._p()
        return self.kappa() * p * (p - 1.0) if p <= 2.0 else 0.0

    def check(self, n_kernels: int) -> None:
        _need_kernels(n_kernels)
        self.kappa()

    def initial(self, n_kernels: int) -> np.ndarray:
        return np.full(n_kernels, 1.0 / n_kernels)

    def penalty(self, mu: np.ndarray) -> float:
        return float(self.kappa() * np.sum(np.maximum(mu, 0.0) ** self._p()))

    def penalty_gradient(self, mu: np.ndarray) -> np.ndarray:
        p = self._p()
        return self.kappa() * p * np.maximum(mu, 0.0) ** (p - 1.0)

    def _conjugate_terms(self, a: np.ndarray) -> np.ndarray:
        """``sup_{m >= 0} m a - kappa m^p`` for each entry of ``a``."""
        kappa, p = self.kappa(), self._p()
        ap = np.maximum(a, 0.0)
        return (1.0 - 1.0 / p) * (kappa * p) ** (-1.0 / (p - 1.0)) * ap ** (p / (p - 1.0))

    def dual_bound(self, g: np.ndarray) -> float:
        # max over the simplex of mu'g - kappa sum mu^p.  Dual: min_lam lam + sum_m conj(g_m - lam); the
        # optimal lam makes mu_m(lam) = ((g_m - lam)_+ / (kappa p))^{1/(p-1)} sum to 1.  Any lam gives an
        # upper bound, so we return the dual function at the lam found.
        g = np.asarray(g, dtype=np.float64)
        kappa, p = self.kappa(), self._p()
        gmax = float(np.max(g))

        def excess(lam: float) -> float:  # increasing in lam
            return 1.0 - float(np.sum((np.maximum(g - lam, 0.0) / (kappa * p)) ** (1.0 / (p - 1.0))))

        # At lam = gmax - kappa p the largest entry alone has mu = 1, so the sum is >= 1 there.
        lam = increasing_root(excess, gmax - kappa * p, gmax)
        return float(lam + np.sum(self._conjugate_terms(g - lam)))

    def closed_form_update(self, mu: np.ndarray, q: np.ndarray) -> np.ndarray:
        """``argmin_{nu in simplex} sum_m a_m / nu_m + kappa sum_m nu_m^p`` with ``a = ||f||^2 / 2``.

        KKT: ``kappa p nu_m^{p-1} - a_m / nu_m^2 = -lam`` for every ``nu_m > 0``; the left side increases in
        ``nu_m``, so each ``nu_m(lam)`` is found by safeguarded Newton (in log nu) and ``sum nu(lam) = 1``
        by a root find on ``lam``.
        """
        a = _half_sq_norms(mu, q)
        M = len(a)
        if M == 1:
            return np.ones(1)
        kappa, p = self.kappa(), self._p()
        pos = a > 0

        def weights(lam: float) -> np.ndarray:
            nu = np.empty(M)
            # Kernels with a_m = 0: nu_m = ((-lam)_+ / (kappa p))^{1/(p-1)}.
            nu[~pos] = (max(-lam, 0.0) / (kappa * p)) ** (1.0 / (p - 1.0))
            if pos.any():
                ap = a[pos]
                # phi(nu) = kappa p nu^(p-1) - a / nu^2 + lam increases in nu.  Below
                # nu_lo = sqrt(a / (kappa p + lam_+)) it is negative (kappa p nu^(p-1) <= kappa p for
                # nu <= 1), so [nu_lo, 1] brackets the root; a weight above 1 means a sum above 1 anyway
                # (set to 1).
                log_ap = np.log(ap)
                lo = np.minimum(0.5 * (log_ap - np.log(kappa * p + max(lam, 0.0))), 0.0)

                # Newton in u = log(nu), where phi is much closer to linear than in nu.  a / nu^2 is formed
                # as exp(log a - 2u): for a weight near 1e-160 (a ~ 1e-320) exp(-2u) alone overflows.
                def phi(u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
                    grow, shrink = kappa * p * np.exp((p - 1.0) * u), np.exp(log_ap - 2.0 * u)
                    return grow - shrink + lam, (p - 1.0) * grow + 2.0 * shrink

                hi = np.zeros(len(ap))
                at_one = phi(hi)[0] <= 0
                nu[pos] = np.where(at_one, 1.0, np.exp(newton_bracketed(phi, lo, hi, atol=1e-13)))
            return np.minimum(nu, 1.0)  # a weight above 1 already means a sum above 1

        def excess(lam: float) -> float:  # increasing in lam
            return 1.0 - float(np.sum(weights(lam)))

        lo = -1.0
        while excess(lo) > 0:
            lo *= 2.0
        lam = increasing_root(excess, lo, abs(lo) + 1.0)
        nu = weights(lam)
        return nu / nu.sum()



class SimplexL2(SimplexPower):
    """The simplex with the penalty ``||mu||^2 / (2 theta)``: square-hinge soft margin MKL (SM2MKL).

    Proposition 4 of Xu, Tsang and Xu (2013): the square-hinge loss of the kernel slacks gives the
    elastic-net type problem ``min_{mu in simplex} J(mu) + ||mu||^2 / (2 theta)``.  ``theta -> inf`` is
    L1-MKL and ``theta -> 0`` the average kernel.  ``dual_bound`` uses the exact simplex projection:
    ``max_{mu in simplex} mu'g - ||mu||^2/(2 theta)`` is attained at ``mu = Pi(theta g)``.

    Parameters
    ----------
    theta : float, default=1.0
        The weight of the square-hinge loss; positive.
    """

    name = "simplex_l2"

    def __init__(self, theta: float = 1.0) -> None:
        self.theta = theta

    p = 2.0

    def penalty(self, mu: np.ndarray) -> float:
        return float(np.dot(mu, mu) / (2.0 * _positive("theta", self.theta)))

    def penalty_gradient(self, mu: np.ndarray) -> np.ndarray:
        return np.asarray(mu, dtype=np.float64) / _positive("theta", self.theta)

    def dual_bound(self, g: np.ndarray) -> float:
        theta = _positive("theta", self.theta)
        g = np.asarray(g, dtype=np.float64)
        mu = project_simplex(theta * g)
        return float(mu @ g - mu @ mu / (2.0 * theta))


# --------------------------------------------------------------------------------------------------
class LpBall(Regularizer):
    """The non-negative part of the unit l_p ball, ``{mu >= 0, ||mu||_p <= 1}``: Lp-MKL (Kloft et al. 2011).

    Parameters
    ----------
    p : float, default=2.0
        ``p`` in ``[1, inf]`` (``float("inf")`` or ``"inf"``).  ``p = 1`` has the L1-MKL optimum, ``p = 2``
        is L2-MKL (the square-loss soft margin MKL), ``p = inf`` gives ``mu = 1``: the sum kernel, i.e. the
        average kernel with C scaled by M.

    Notes
    -----
    Weight step (Kloft et al. 2011, eq. 12): ``mu_m = ||f_m||^{2/(p+1)} / (sum_k ||f_k||^{2p/(p+1)})^{1/p}``.
    ``dual_bound(g) = ||g_+||_{p*}`` with ``1/p + 1/p* = 1``.
    """

    name = "lp_ball"
    domain = "lp_ball"

    def __init__(self, p: float = 2.0) -> None:
        self.p = p

    def _p(self) -> float:
        try:
            p = float(self.p)
        except (TypeError, ValueError):
            raise ValueError(f"p must be a number in [1, inf]; got {self.p!r}") from None
        if not p >= 1.0:
            raise ValueError(f"p must be in [1, inf] (the l_p ball is not convex for p < 1); got {self.p!r}")
        return p

    def check(self, n_kernels: int) -> None:
        _need_kernels(n_kernels)
        self._p()

    def initial(self, n_kernels: int) -> np.ndarray:
        p = self._p()
        return np.full(n_kernels, 1.0 if math.isinf(p) else n_kernels ** (-1.0 / p))

    def dual_bound(self, g: np.ndarray) -> float:
        p = self._p()
        gp = np.maximum(np.asarray(g, dtype=np.float64), 0.0)
        if p == 1.0:
            return float(np.max(gp))
        if math.isinf(p):
            return float(np.sum(gp))
        return float(np.linalg.norm(gp, ord=p / (p - 1.0)))

    def closed_form_update(self, mu: np.ndarray, q: np.ndarray) -> np.ndarray:
        p = self._p()
        if math.isinf(p):
            return np.ones(len(mu))
        norms = _component_norms(mu, q)
        top = norms.max()
        if top <= 0.0:
            return self.initial(len(mu))
        # Normalise by the largest norm first so that large p cannot overflow or underflow.
        w = (norms / top) ** (2.0 / (p + 1.0))
        return w / np.sum(w**p) ** (1.0 / p)

    def project(self, v: np.ndarray) -> np.ndarray:
        return project_lp_ball_nonneg(v, self._p())

    def onto_boundary(self, v: np.ndarray) -> np.ndarray:
        return v / np.linalg.norm(v, ord=self._p())


class L2Ball(LpBall):
    """``{mu >= 0, ||mu||_2 <= 1}``: L2-MKL (Cortes et al. 2009), the square-loss soft margin MKL."""

    name = "l2_ball"

    def __init__(self) -> None:
        pass

    p = 2.0


# --------------------------------------------------------------------------------------------------
class ElasticNet(Regularizer):
    """The elastic-net constraint ``{mu >= 0, v sum mu + (1 - v) sum mu^2 <= 1}``: SGMKL (Yang et al. 2011).

    Parameters
    ----------
    v : float, default=0.5
        The mixing weight in ``[0, 1]``: ``v = 1`` is L1-MKL, ``v = 0`` is L2-MKL.

    Notes
    -----
    Write ``h(mu) = v sum mu + (1 - v) sum mu^2``.

    * Weight step: ``argmin sum_m a_m / nu_m`` s.t. ``h(nu) <= 1``.  KKT: ``a_m / nu_m^2 = lam (v + 2 (1-v)
      nu_m)``, i.e. ``v nu_m^2 + 2 (1 - v) nu_m^3 = t a_m`` with ``t = 1/lam``.  The left side increases in
      ``nu_m``, so each ``nu_m(t)`` is one positive cubic root (vectorised Newton from an upper bound), and
      ``h(nu(t)) = 1`` (the constraint is active because the objective decreases in every ``nu_m``) is a
      safeguarded Newton iteration on ``log t`` whose derivative needs only the roots: four to six
      iterations of a few array operations, no conic solver (:func:`_elastic_net_weights`).  ``v = 1`` and
      ``v = 0`` are explicit (``nu ~ sqrt(a)``, ``nu ~ a^(1/3)``).
    * ``dual_bound(g) = max_{h(mu) <= 1, mu >= 0} mu'g = min_{lam > 0} lam + sum_m (g_m - lam v)_+^2 /
      (4 lam (1 - v))``, the multiplier from the same kind of root find.
    * Projection: ``x(lam) = max(0, (z - lam v) / (1 + 2 lam (1 - v)))`` with ``h(x(lam)) = 1``.
    """

    name = "elastic_net"
    domain = "elastic_net"

    def __init__(self, v: float = 0.5) -> None:
        self.v = v

    def _v(self) -> float:
        v = float(self.v)
        if not 0.0 <= v <= 1.0:
            raise ValueError(f"v must be in [0, 1] (v = 1 is L1-MKL, v = 0 is L2-MKL); got {self.v!r}")
        return v

    def _h(self, mu: np.ndarray) -> float:
        v = self._v()
        return float(v * np.sum(mu) + (1.0 - v) * np.dot(mu, mu))

    def _max_weight(self) -> float:
        """The largest single weight allowed: the root of ``v x + (1 - v) x^2 = 1``."""
        v = self._v()
        return 1.0 if v == 1.0 else 2.0 / (v + math.sqrt(v * v + 4.0 * (1.0 - v)))

    def check(self, n_kernels: int) -> None:
        _need_kernels(n_kernels)
        self._v()

    def initial(self, n_kernels: int) -> np.ndarray:
        v, M = self._v(), n_kernels
        # The uniform point with h = 1: (1-v) M t^2 + v M t - 1 = 0, in the cancellation-free form.
        return np.full(M, 2.0 / (v * M + math.sqrt(v * v * M * M + 4.0 * (1.0 - v) * M)))

    def dual_bound(self, g: np.ndarray) -> float:
        v = self._v()
        gp = np.maximum(np.asarray(g, dtype=np.float64), 0.0)
        if v == 1.0 or not gp.any():
            return float(np.max(gp))
        c = 1.0 - v

        def slack(lam: float) -> float:  # 1 - h(mu(lam)): increasing in lam
            mu = np.maximum(gp - lam * v, 0.0) / (2.0 * lam * c)
            return 1.0 - (v * mu.sum() + c * mu @ mu)

        # At lam = 1e-12 max(g) the largest weight alone is ~1e12 >> 1, so the bracket starts infeasible.
        gmax = float(gp.max())
        lam = increasing_root(slack, 1e-12 * gmax, gmax + 1.0)
        return float(lam + np.sum(np.maximum(gp - lam * v, 0.0) ** 2) / (4.0 * lam * c))

    def closed_form_update(self, mu: np.ndarray, q: np.ndarray) -> np.ndarray:
        a = _half_sq_norms(mu, q)
        pos = a > 0
        if not pos.any():
            return self.initial(len(mu))
        v = self._v()
        if np.count_nonzero(pos) == 1:  # one kernel takes the largest feasible weight
            return np.where(pos, self._max_weight(), 0.0)
        nu = np.zeros(len(a))
        # The KKT weights are homogeneous in a (nu_m(t) depends on t a_m only): scale by the largest a_m, so
        # that a range of a from 1e-320 to 1e10 needs no care below.
        nu[pos] = _elastic_net_weights(a[pos] / float(a[pos].max()), v)
        return self.onto_boundary(nu)

    def onto_boundary(self, nu: np.ndarray) -> np.ndarray:
        """Scale ``nu >= 0`` onto the boundary ``h = 1`` (removes the root find's last rounding; ``bcd``'s
        extrapolated trials)."""
        v = self._v()
        s1, s2 = float(nu.sum()), float(nu @ nu)
        if s1 <= 0:
            return nu
        # (1-v) s2 c^2 + v s1 c - 1 = 0
        c = 2.0 / (v * s1 + math.sqrt(v * v * s1 * s1 + 4.0 * (1.0 - v) * s2))
        return nu * c

    def project(self, z: np.ndarray) -> np.ndarray:
        v = self._v()
        zp = np.maximum(np.asarray(z, dtype=np.float64), 0.0)
        if self._h(zp) <= 1.0:
            return zp

        def x(lam: float) -> np.ndarray:
            return np.maximum(np.asarray(z) - lam * v, 0.0) / (1.0 + 2.0 * lam * (1.0 - v))

        lam = increasing_root(lambda lam: 1.0 - self._h(x(lam)), 0.0, 1.0)
        out = x(lam)
        return out if self._h(out) <= 1.0 else self.onto_boundary(out)


def _cubic_roots(rhs: np.ndarray, v: float, upper: np.ndarray) -> np.ndarray:
    """The positive roots ``x`` of ``v x^2 + 2 (1 - v) x^3 = rhs`` (``rhs > 0``), by Newton from ``upper``.

    ``g(x) = v x^2 + 2 (1 - v) x^3 - rhs`` is increasing and convex on ``x >= 0``, so Newton's method from
    a point with ``g >= 0`` decreases monotonically to the root (quadratically near it): from a tight upper
    bound it takes two to five vectorised steps.
    """
    c2 = 2.0 * (1.0 - v)
    x = upper.copy()
    for _ in range(100):
        x2 = x * x
        # x = 0 only where rhs underflowed to 0 (a weight of ~1e-320 times a small t): that root is 0
        step = np.divide(v * x2 + c2 * x2 * x - rhs, 2.0 * v * x + 3.0 * c2 * x2, out=np.zeros_like(x), where=x > 0)
        step = np.where(step > 0, step, 0.0)  # g(x) <= 0 (rounding at the root): stay
        x -= step
        if not np.any(step > 1e-15 * x):
            break
    return x


def _elastic_net_weights(a: np.ndarray, v: float) -> np.ndarray:
    """``argmin sum_m a_m / nu_m`` s.t. ``v sum nu + (1 - v) sum nu^2 <= 1``, ``a > 0`` with ``max a = 1``.

    KKT: ``nu_m(t)`` is the positive root of ``v nu^2 + 2 (1 - v) nu^3 = t a_m``, and ``t`` makes the
    constraint active, ``Phi(s) = h(nu(e^s)) - 1 = 0``.  ``v = 1`` (``nu ~ sqrt(a)``) and ``v = 0``
    (``nu ~ a^(1/3)``) are explicit.  Otherwise: safeguarded Newton on ``s = log t``, where
    ``dPhi/ds = sum_m nu_m (v + 2 (1 - v) nu_m)^2 / (2 v + 6 (1 - v) nu_m)`` needs no derivative of the roots;
    each ``nu(t)`` is found by Newton from an upper bound taken from the previous ``t``: for ``t' > t``,
    ``nu' <= nu sqrt(t'/t)``, for ``t' < t``, ``nu' <= nu (t'/t)^(1/3)`` (``g(x) / x^2`` and ``g(x) / x^3``
    are monotone), so each root needs two or three steps.  The caller rescales the result onto ``h = 1``.
    """
    if v == 1.0:
        nu = np.sqrt(a)
        return nu / nu.sum()
    if v == 0.0:
        nu = np.cbrt(a)
        return nu / math.sqrt(float(nu @ nu))
    c = 1.0 - v

    def generic_upper(t: float) -> np.ndarray:
        # Each term alone is at most t a: nu <= sqrt(t a / v) and nu <= cbrt(t a / (2 c)).
        return np.minimum(np.sqrt(t * a / v), np.cbrt(t * a / (2.0 * c)))

    def phi(nu: np.ndarray) -> tuple[float, float]:
        h = v * float(nu.sum()) + c * float(nu @ nu) - 1.0
        return h, float(np.sum(nu * (v + 2.0 * c * nu) ** 2 / (2.0 * v + 6.0 * c * nu)))

    # Start from below: nu_m <= sqrt(t a_m / v) and nu_m <= cbrt(t a_m / (2 c)), so the t that makes h = 1
    # with either bound in place of nu (a quadratic in sqrt(t), resp. t^(1/3)) is at most the root; the
    # larger of the two is usually within a few percent of it.
    def quadratic_root(lin: float, quad: float) -> float:  # the positive root of quad z^2 + lin z = 1
        return 2.0 / (lin + math.sqrt(lin * lin + 4.0 * quad))

    sqrt_a, cbrt_a = np.sqrt(a), np.cbrt(a)
    z_v = quadratic_root(v * float(sqrt_a.sum()) / math.sqrt(v), c * float(a.sum()) / v)
    k = math.cbrt(2.0 * c)
    z_c = quadratic_root(v * float(cbrt_a.sum()) / k, c * float(cbrt_a @ cbrt_a) / (k * k))
    s = max(2.0 * math.log(z_v), 3.0 * math.log(z_c))
    t = math.exp(s)
    nu = _cubic_roots(t * a, v, generic_upper(t))
    lo, hi = -math.inf, math.inf
    for _ in range(100):
        f, df = phi(nu)
        if f > 0:
            hi = min(hi, s)
        else:
            lo = max(lo, s)
        if abs(f) <= 1e-14 or hi - lo <= 1e-15 * max(1.0, abs(s)):
            break
        new = s - f / df if df > 0 else -math.inf
        if not (lo < new < hi):  # outside the bracket: bisect it (or step by a factor e^2 if it is open)
            new = (0.5 * (lo + hi) if math.isfinite(lo) and math.isfinite(hi)
                   else hi - 2.0 if math.isfinite(hi) else lo + 2.0)
        ratio = math.exp(new - s)
        bound = nu * (math.sqrt(ratio) if ratio >= 1.0 else math.cbrt(ratio))
        s, t = new, math.exp(new)
        nu = _cubic_roots(t * a, v, np.minimum(bound, generic_upper(t)))
    return nu


@hookimpl
def multikernel_regularizers() -> dict[str, type[Regularizer]]:
    classes = (Uniform, Simplex, BoxSimplex, SimplexL2, SimplexPower, LpBall, L2Ball, ElasticNet)
    return {cls.name: cls for cls in classes}
