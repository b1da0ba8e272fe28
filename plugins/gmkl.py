"""GMKL regularizers (Varma and Babu, "More Generality in Efficient Multiple Kernel Learning", ICML 2009).

GMKL minimises ``J(mu) + r(mu)`` over ``mu >= 0`` with a differentiable regularizer ``r`` instead of a norm
constraint; spec section 2.4.2.  Three forms:

* ``gmkl_l1``:      ``r(mu) = sigma'mu`` (the form of the paper's experiments and of the thesis),
* ``gmkl_l2``:      ``r(mu) = (c/2) ||mu||^2``,
* ``gmkl_elastic``: ``r(mu) = sigma'mu + (c/2) ||mu||^2``.

``sigma`` is a positive number or one positive number per kernel (the paper's per-kernel costs).  Each is a
regularizer plugin on the unbounded domain ``mu >= 0`` with a penalty and its gradient (so projected gradient
with Armijo backtracking, the GMKL solver, serves it), the projection ``max(v, 0)``, and a closed-form block
coordinate step (so ``bcd`` serves it too).

The certified lower bound needs ``dual_bound(g) = max_{nu >= 0} nu'g - r(nu)``.  With ``c > 0`` it is
``sum_m (g_m - sigma_m)_+^2 / (2 c)``, finite everywhere.  With ``c = 0`` (pure l1) it is ``0`` when
``g <= sigma`` and ``+inf`` otherwise: an ``alpha`` with ``q_m(alpha)/2 > sigma_m`` for some kernel certifies
nothing by itself.  At the optimum ``q_m(alpha*)/2 <= sigma_m`` (with equality on the selected kernels), so
nearby ``alpha`` violate it by about the inner solver's error; the outer loop therefore certifies the best
bound on the ray ``s * alpha`` (:mod:`multikernel.solve.scaling`): ``s alpha`` stays feasible for the SVM dual,
and ``s = min(1, min_m sqrt(2 sigma_m / q_m(alpha)))`` satisfies the condition, so the certified gap of a
pure l1 GMKL is finite and tends to 0 with the inner solutions' error.
"""

from __future__ import annotations

import math

import numpy as np

from multikernel.core.hookspecs import hookimpl
from multikernel.core.interfaces import Regularizer
from multikernel.solve.projections import newton_from_above

__all__ = ["GMKLElastic", "GMKLL1", "GMKLL2"]


def _half_sq_norms(mu: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``a_m = ||f_m||^2 / 2 = mu_m^2 q_m / 2``: the coefficients of the block coordinate step."""
    return 0.5 * mu * mu * np.maximum(q, 0.0)


class GMKLElastic(Regularizer):
    """GMKL's ``r(mu) = sigma'mu + (c/2) ||mu||^2`` on ``mu >= 0`` (Varma and Babu 2009).

    Parameters
    ----------
    sigma : float or array-like of shape (n_kernels,), default=1.0
        The l1 costs, non-negative (one per kernel, or one for all).
    c : float, default=1.0
        The l2 weight, non-negative.  At least one of ``sigma`` and ``c`` must be positive for every kernel,
        else ``r`` does not bound the weights and the problem has no minimiser.

    Notes
    -----
    * ``dual_bound(g) = max_{nu >= 0} nu'g - r(nu) = sum_m (g_m - sigma_m)_+^2 / (2c)`` (``c > 0``); for ``c = 0``
      it is ``0`` if ``g <= sigma`` and ``+inf`` otherwise (the outer loop's certificate then scales ``alpha``
      into the finite region: see the module docstring).
    * Block coordinate step: ``argmin_{nu >= 0} sum_m a_m / nu_m + r(nu)`` is separable; each ``nu_m > 0`` solves
      ``c nu^3 + sigma_m nu^2 = a_m`` (``nu_m = sqrt(a_m / sigma_m)`` for ``c = 0``), increasing and convex in
      ``nu``, by Newton from above.
    """

    name = "gmkl_elastic"
    domain = "nonnegative"

    def __init__(self, sigma: float | np.ndarray = 1.0, c: float = 1.0) -> None:
        self.sigma = sigma
        self.c = c

    def _c(self) -> float:
        try:
            c = float(self.c)
        except (TypeError, ValueError):
            raise ValueError(f"c must be a non-negative number; got {self.c!r}") from None
        if not (c >= 0 and math.isfinite(c)):
            raise ValueError(f"c must be a non-negative finite number; got {self.c!r}")
        return c

    def _sigma(self, n_kernels: int) -> np.ndarray:
        try:
            sigma = np.asarray(self.sigma, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"sigma must be a non-negative number or one per kernel; got {self.sigma!r}") from None
        if sigma.ndim == 0:
            sigma = np.full(n_kernels, float(sigma))
        if sigma.shape != (n_kernels,):
            raise ValueError(f"sigma must be one number or one per kernel ({n_kernels}); got shape {sigma.shape}")
        if not (np.all(sigma >= 0) and np.all(np.isfinite(sigma))):
            raise ValueError(f"sigma must be non-negative and finite; got {self.sigma!r}")
        return sigma

    def check(self, n_kernels: int) -> None:
        if n_kernels < 1:
            raise ValueError("at least one kernel is needed")
        sigma, c = self._sigma(n_kernels), self._c()
        if c == 0 and not np.all(sigma > 0):
            raise ValueError(f"{self.name}: with c = 0 every sigma must be positive, else the weights of the "
                             f"kernels without cost grow without bound; got sigma={self.sigma!r}")

    def initial(self, n_kernels: int) -> np.ndarray:
        return np.full(n_kernels, 1.0 / n_kernels)

    def strong_convexity(self) -> float:
        return self._c()

    def penalty(self, mu: np.ndarray) -> float:
        mu = np.asarray(mu, dtype=np.float64)
        return float(self._sigma(len(mu)) @ mu + 0.5 * self._c() * (mu @ mu))

    def penalty_gradient(self, mu: np.ndarray) -> np.ndarray:
        mu = np.asarray(mu, dtype=np.float64)
        return self._sigma(len(mu)) + self._c() * mu

    def dual_bound(self, g: np.ndarray) -> float:
        g = np.asarray(g, dtype=np.float64)
        excess = np.maximum(g - self._sigma(len(g)), 0.0)
        c = self._c()
        if c > 0:
            return float(excess @ excess / (2.0 * c))
        # max over nu >= 0 of nu'(g - sigma): unbounded as soon as one g_m exceeds its cost.
        return math.inf if np.any(excess > 0) else 0.0

    def closed_form_update(self, mu: np.ndarray, q: np.ndarray) -> np.ndarray:
        a = _half_sq_norms(np.asarray(mu, dtype=np.float64), q)
        sigma, c = self._sigma(len(a)), self._c()
        nu = np.zeros(len(a))
        pos = a > 0
        if not pos.any():
            return nu
        ap, sp = a[pos], sigma[pos]
        if c == 0:
            nu[pos] = np.sqrt(ap / sp)
            return nu
        # The root of c x^3 + s x^2 = a lies below sqrt(a/s) and cbrt(a/c): each term alone reaches a there.
        upper = np.cbrt(ap / c)
        has = sp > 0
        with np.errstate(over="ignore"):  # a tiny cost: the l2 root is the smaller one anyway
            upper[has] = np.minimum(upper[has], np.sqrt(ap[has] / sp[has]))

        def f(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            return c * x**3 + sp * x * x - ap, 3.0 * c * x * x + 2.0 * sp * x

        nu[pos] = newton_from_above(f, upper)
        return nu

    def project(self, v: np.ndarray) -> np.ndarray:
        return np.maximum(np.asarray(v, dtype=np.float64), 0.0)


class GMKLL1(GMKLElastic):
    """GMKL's ``r(mu) = sigma'mu`` on ``mu >= 0``: the l1 regularizer of Varma and Babu's experiments.

    Its ``dual_bound`` is finite only where ``q_m(alpha)/2 <= sigma_m`` for every kernel; the outer loop's
    certificate scales an ``alpha`` outside that region back into it (:mod:`multikernel.solve.scaling`), so
    its certified gap is finite like every other regularizer's.

    Parameters
    ----------
    sigma : float or array-like of shape (n_kernels,), default=1.0
        The costs, positive.
    """

    name = "gmkl_l1"

    def __init__(self, sigma: float | np.ndarray = 1.0) -> None:
        self.sigma = sigma

    c = 0.0


class GMKLL2(GMKLElastic):
    """GMKL's ``r(mu) = (c/2) ||mu||^2`` on ``mu >= 0``.

    Parameters
    ----------
    c : float, default=1.0
        The l2 weight, positive.
    """

    name = "gmkl_l2"

    def __init__(self, c: float = 1.0) -> None:
        self.c = c

    sigma = 0.0

    def check(self, n_kernels: int) -> None:
        if not self._c() > 0:
            raise ValueError(f"gmkl_l2 needs a positive c; got {self.c!r}")
        super().check(n_kernels)


@hookimpl
def multikernel_regularizers() -> dict[str, type[Regularizer]]:
    return {cls.name: cls for cls in (GMKLElastic, GMKLL1, GMKLL2)}
