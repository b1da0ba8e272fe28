"""The certified lower bound along the ray ``s * alpha``: the best bound a dual point gives.

Weak duality gives, for any feasible ``alpha``, the lower bound ``D(alpha) = L(alpha) - dual_bound(q(alpha)/2)``
of the MKL optimum (``q_m(alpha) = c' K_m c``, quadratic in ``alpha``).  When the zero vector is feasible for the
inner problem (the hinge forms: ``0 <= alpha <= C``, ``y'alpha = 0``; the square hinge: ``alpha >= 0``), so is
``s * alpha`` for ``0 <= s <= s_max`` (``s_max >= 1``, where a box bound is reached), and along that ray

    D(s alpha) = a s - b s^2 - dual_bound(s^2 q(alpha) / 2),    L(s alpha) = a s - b s^2,

with ``a, b`` from the loss (``b`` the ridge part ``alpha'alpha/(2C)`` of the square hinge, ``0`` for the hinge).
``dual_bound`` is a maximum of linear functions of its argument (convex) and non-decreasing on ``q >= 0`` (the
weights are non-negative), so ``D(s alpha)`` is concave in ``s``; its maximum over ``[0, s_max]`` is the best
certified bound on this ray, and never below the plain ``D(alpha)`` (``s = 1``).

Why it matters: a regularizer without a norm bound on the weights has an infinite ``dual_bound`` outside a
region -- GMKL's pure l1 ``r(mu) = sigma'mu`` on ``mu >= 0`` gives ``+inf`` as soon as ``q_m(alpha)/2 > sigma_m``
for one kernel, which inexact inner solutions near the optimum always risk.  ``s = min(1, min_m sqrt(2 sigma_m /
q_m))`` brings any ``alpha`` inside, so the certificate becomes finite and tends to the optimum with ``alpha``.
For the other regularizers the plain bound is finite and the ray only tightens it (mostly in early
iterations; at an optimal ``alpha`` the best ``s`` is 1), which did not pay for its cost: the outer loop
searches the ray where the plain bound is infinite (:func:`multikernel.solve.outer.certified_lower_bound`,
the problem's ``ray_search``), for inner problems that declare their ray
(:meth:`multikernel.core.interfaces.InnerProblem.ray`); others (the nu-form, whose ``1'alpha = 1`` no scaling
keeps, and task inner problems that do not declare one) keep the plain bound.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import minimize_scalar

from multikernel.core.interfaces import Regularizer

__all__ = ["ray_lower_bound"]

#: Bisection steps for the end of the region where ``dual_bound`` is finite (``s`` to 2**-48 of its bracket).
_BISECTIONS = 48
#: Doublings of the bracket when neither a box bound nor a ridge limits ``s``.
_DOUBLINGS = 60


def ray_lower_bound(regularizer: Regularizer, q: np.ndarray, a: float, b: float, s_max: float,
                    plain: float) -> float:
    """``max(plain, max_{0 <= s <= s_max} a s - b s^2 - dual_bound(s^2 q / 2))``.

    Parameters
    ----------
    regularizer : Regularizer
        Gives ``dual_bound``.
    q : ndarray of shape (n_kernels,)
        The quadratic forms ``q_m(alpha)``.
    a, b : float
        ``L(s alpha) = a s - b s^2`` (``b >= 0``).
    s_max : float
        The largest feasible scale (``>= 1``; ``inf`` without an upper bound on ``alpha``).
    plain : float
        The bound at ``s = 1`` (``-inf`` when ``dual_bound(q/2)`` is infinite), already computed.

    Returns
    -------
    float
        A certified lower bound of the MKL optimum, never below ``plain``.
    """
    g = 0.5 * np.asarray(q, dtype=np.float64)

    def bound(s: float) -> float:
        value = regularizer.dual_bound(s * s * g)
        return a * s - b * s * s - value if math.isfinite(value) else -math.inf

    best = plain
    if not math.isfinite(bound(0.0)):
        return best  # a domain whose dual bound is infinite even at q = 0: nothing to scale towards
    # A bracket [0, hi] of the maximiser.  With b > 0, a s - b s^2 < 0 beyond s = a / b, and dual_bound is
    # non-decreasing in s, so every s > a / b is worse than s = 0.
    hi = float(s_max)
    if b > 0:
        hi = min(hi, max(a / b, 0.0))
    if math.isinf(hi):
        hi = 1.0
        for _ in range(_DOUBLINGS):
            if not bound(2.0 * hi) > bound(hi):
                break
            hi *= 2.0
        hi *= 2.0
    if hi <= 0.0:
        return max(best, bound(0.0))
    # The region where the bound is finite is an interval [0, end]: find its end when hi is outside it.
    end = hi
    if not math.isfinite(bound(hi)):
        lo_finite, hi_infinite = (1.0 if math.isfinite(plain) and hi > 1.0 else 0.0), hi
        for _ in range(_BISECTIONS):
            mid = 0.5 * (lo_finite + hi_infinite)
            if mid <= lo_finite or mid >= hi_infinite:
                break
            if math.isfinite(bound(mid)):
                lo_finite = mid
            else:
                hi_infinite = mid
        end = lo_finite
    candidates = [bound(0.0), bound(end)]
    if end > 0.0:
        res = minimize_scalar(lambda s: -bound(s), bounds=(0.0, end), method="bounded",
                              options={"xatol": 1e-7 * end})
        candidates.append(bound(float(res.x)))
    return max(best, *candidates)
