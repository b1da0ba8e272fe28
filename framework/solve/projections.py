"""Euclidean projections onto the kernel-weight domains, and the box-simplex inverse problem.

These are the small dense building blocks of the weight updates; all are O(M log M) or a short 1-D root
find, so they never matter next to an SVM solve.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq

from multikernel._ext import _box

__all__ = [
    "project_simplex",
    "project_capped_simplex",
    "project_lp_ball_nonneg",
    "box_simplex_inverse",
    "increasing_root",
    "newton_bracketed",
    "newton_from_above",
]


def project_simplex(v: np.ndarray, total: float = 1.0) -> np.ndarray:
    """Euclidean projection onto ``{w >= 0, sum w = total}`` (Duchi et al., ICML 2008, Fig. 1).

    Parameters
    ----------
    v : ndarray of shape (M,)
        The point to project.
    total : float, default=1.0
        The sum of the projection; must be positive.

    Returns
    -------
    ndarray of shape (M,)
        ``max(v - tau, 0)`` with the threshold ``tau`` that makes the entries sum to ``total``.
    """
    v = np.asarray(v, dtype=np.float64)
    u = np.sort(v)[::-1]
    cssv = np.cumsum(u) - total
    ind = np.arange(1, len(u) + 1)
    # rho is the last index whose entry stays positive after the shift; u[0] - cssv[0] = total > 0, so
    # there is always one.
    rho = int(np.nonzero(u - cssv / ind > 0)[0][-1])
    tau = cssv[rho] / (rho + 1)
    w = np.maximum(v - tau, 0.0)
    # Rounding can leave the sum a few ulps away from total; one rescale of the support fixes it.
    s = w.sum()
    if s > 0:
        w *= total / s
    return w


def project_capped_simplex(v: np.ndarray, theta: float) -> np.ndarray:
    """Euclidean projection onto the box-simplex ``{sum w = 1, 0 <= w <= theta}`` (needs ``theta*M >= 1``).

    The projection is ``clip(v - tau, 0, theta)`` with ``tau`` such that the entries sum to 1: the root of a
    piecewise linear function, found exactly by the compiled box-and-sum projection (expected O(M)).
    """
    v = np.asarray(v, dtype=np.float64)
    M = len(v)
    if theta * M <= 1.0 + 1e-12:
        return np.full(M, 1.0 / M)
    if theta >= 1.0:
        return project_simplex(v)
    w = _box.project(np.ascontiguousarray(v), np.zeros(M), np.full(M, float(theta)), 1.0)
    return _fix_box_simplex_sum(w, theta)


def _fix_box_simplex_sum(w: np.ndarray, theta: float) -> np.ndarray:
    """Remove the rounding error of the sum by spreading it over the entries strictly inside the box."""
    err = 1.0 - w.sum()
    free = (w > 0) & (w < theta)
    if err != 0.0 and free.any():
        w = w.copy()
        w[free] += err / free.sum()
        w = np.clip(w, 0.0, theta)
    return w


def increasing_root(f, lo: float, hi: float, xtol: float = 1e-14) -> float:
    """Root of a continuous non-decreasing ``f`` on ``[lo, hi]``, widening ``hi`` geometrically if needed."""
    flo = f(lo)
    if flo >= 0:
        return lo
    for _ in range(200):
        if f(hi) >= 0:
            break
        lo, hi = hi, 2.0 * hi if hi > 0 else 1.0
    return float(brentq(f, lo, hi, xtol=xtol, rtol=4 * np.finfo(float).eps, maxiter=500))


def newton_bracketed(fun, lo: np.ndarray, hi: np.ndarray, max_iter: int = 60, rtol: float = 1e-13,
                     atol: float = 0.0) -> np.ndarray:
    """Roots of increasing functions, element-wise: safeguarded Newton inside the brackets ``[lo, hi]``.

    ``fun(x)`` returns the values and derivatives at ``x`` (arrays).  Where the function does not change
    sign on the bracket, the nearer end is returned (``hi`` if ``fun(hi) <= 0``, ``lo`` if ``fun(lo) >= 0``),
    which is what the weight updates need for capped weights.  A Newton step that leaves the current
    bracket is replaced by bisection and the bracket shrinks with every evaluation, so it cannot diverge;
    near the root it converges quadratically (a handful of iterations instead of the ~50 of bisection,
    which matters because each iteration is a few numpy calls inside an outer root find).  An entry stops
    moving once its step is below ``rtol |x| + atol``: further steps only chase rounding noise in ``fun``,
    which can also corrupt the bracket.
    """
    lo, hi = np.array(lo, dtype=np.float64), np.array(hi, dtype=np.float64)
    f_lo, f_hi = fun(lo)[0], fun(hi)[0]
    out = np.where(f_hi <= 0, hi, lo)
    open_ = (f_lo < 0) & (f_hi > 0)
    if not open_.any():
        return out
    idx = np.flatnonzero(open_)
    lo, hi = lo[idx], hi[idx]

    def restricted(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        full = out.copy()
        full[idx] = x
        f, df = fun(full)
        return f[idx], df[idx]

    x = 0.5 * (lo + hi)
    moving = np.ones(len(idx), dtype=bool)
    for _ in range(max_iter):
        f, df = restricted(x)
        lo = np.where(moving & (f <= 0), x, lo)
        hi = np.where(moving & (f >= 0), x, hi)
        with np.errstate(divide="ignore", invalid="ignore"):
            new = x - np.where(df > 0, f / df, np.inf)
        new = np.where((new >= lo) & (new <= hi), new, 0.5 * (lo + hi))
        moving &= (np.abs(new - x) > rtol * np.abs(x) + atol) & (f != 0)
        x = np.where(moving, new, x)
        if not moving.any():
            break
    out[idx] = x
    return out


def newton_from_above(fun, x0: np.ndarray, max_iter: int = 100, rtol: float = 1e-15) -> np.ndarray:
    """Roots of increasing convex functions, element-wise, by Newton's method from ``x0`` with
    ``fun(x0) >= 0``.

    For an increasing convex function every Newton step from the right of the root stays on the right of
    it, so the iterates decrease monotonically to the root: no bracket, no safeguard, and every entry is
    updated with the same few numpy calls (quadratic convergence, a handful of iterations).
    """
    x = np.array(x0, dtype=np.float64)
    for _ in range(max_iter):
        f, df = fun(x)
        with np.errstate(divide="ignore", invalid="ignore"):
            step = np.where((f > 0) & (df > 0), f / df, 0.0)
        x = np.maximum(x - step, 0.0)
        if not np.any(step > rtol * np.abs(x)):
            break
    return x


def project_lp_ball_nonneg(v: np.ndarray, p: float) -> np.ndarray:
    """Euclidean projection onto ``{w >= 0, ||w||_p <= 1}`` for ``p`` in ``[1, inf]``.

    The ball is sign- and permutation-symmetric, so the projection of ``v`` onto its intersection with the
    non-negative orthant is the projection of ``max(v, 0)`` onto the ball.  For ``1 < p < inf`` (other than
    2) the KKT condition ``w_i + lam p w_i^(p-1) = v_i`` is solved by a root find on ``lam``, each
    coordinate by bisection.
    """
    v = np.maximum(np.asarray(v, dtype=np.float64), 0.0)
    if math.isinf(p):
        return np.minimum(v, 1.0)
    if np.sum(v**p) <= 1.0:
        return v
    if p == 1.0:
        return project_simplex(v)
    if p == 2.0:
        return v / np.linalg.norm(v)

    def coords(lam: float) -> np.ndarray:
        # w + lam p w^(p-1) is increasing in w >= 0 and equals v at the solution, which lies in [0, v].
        lo, hi = np.zeros_like(v), v.copy()
        for _ in range(80):
            mid = 0.5 * (lo + hi)
            big = mid + lam * p * mid ** (p - 1) > v
            hi = np.where(big, mid, hi)
            lo = np.where(big, lo, mid)
        return 0.5 * (lo + hi)

    lam = increasing_root(lambda t: 1.0 - np.sum(coords(t) ** p), 0.0, 1.0)
    w = coords(lam)
    return w / max(np.sum(w**p) ** (1.0 / p), 1.0)


def box_simplex_inverse(a: np.ndarray, theta: float) -> np.ndarray:
    """``argmin_{mu} sum_m a_m / mu_m`` over ``{sum mu = 1, 0 <= mu <= theta}``: Lemmas 3.1/3.2 of Xu et al.

    The solution caps the ``omega`` kernels with the largest ``a`` at ``theta`` and spreads the remaining
    mass ``1 - omega*theta`` proportionally to ``sqrt(a_m)`` over the others, where ``omega`` is the first
    index (in decreasing order of ``a``) that passes the test ``(1 - omega*theta) sqrt(a_omega) <= theta
    sum_{m >= omega} sqrt(a_m)``.  The test uses "<=" (not the paper's "<") so that ``theta = 1/M``, ties
    and ``M = 1`` are handled; see spec section 2.6.

    Parameters
    ----------
    a : ndarray of shape (M,)
        Non-negative weights (``a_m = ||f_m||^2 / 2`` in the MKL step); zero entries get zero weight unless
        mass is left over, which is then spread uniformly over them.
    theta : float
        Upper bound; ``theta >= 1/M``.

    Returns
    -------
    ndarray of shape (M,)
        A feasible minimiser: entries in ``[0, theta]`` summing to 1.
    """
    a = np.maximum(np.asarray(a, dtype=np.float64), 0.0)
    M = len(a)
    if theta * M < 1.0 - 1e-12:
        raise ValueError(f"theta={theta!r} < 1/M={1.0 / M!r}: the box-simplex is empty")
    if theta * M <= 1.0 + 1e-12:
        return np.full(M, 1.0 / M)  # the only feasible point, exactly
    theta = min(theta, 1.0)
    s = np.sqrt(a)
    order = np.argsort(-s, kind="stable")
    s_sorted = s[order]
    suffix = np.cumsum(s_sorted[::-1])[::-1]
    capped_mass = np.arange(M) * theta
    passes = (1.0 - capped_mass) * s_sorted <= theta * suffix
    # With theta*M > 1 the test passes at the last index in exact arithmetic; guard against rounding.
    w = int(np.argmax(passes)) if passes.any() else M - 1
    mu_sorted = np.empty(M)
    mu_sorted[:w] = theta
    rest = 1.0 - w * theta
    if suffix[w] > 0:
        mu_sorted[w:] = rest * s_sorted[w:] / suffix[w]
    else:
        # Every remaining a_m is zero: the objective does not depend on them, so any split is optimal; the
        # uniform one is feasible because rest / (M - w) <= theta  <=>  M*theta >= 1.
        mu_sorted[w:] = rest / (M - w)
    mu = np.empty(M)
    mu[order] = np.clip(mu_sorted, 0.0, theta)
    return _fix_box_simplex_sum(mu, theta)
