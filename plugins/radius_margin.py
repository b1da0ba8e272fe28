"""Radius-margin kernel weights: GRAM (Lauriola, Polato and Aiolli, 2017) and R-MKL (Do et al., 2009).

The generalization bounds of the SVM grow with ``R^2 / rho^2``: ``R`` the radius of the minimum enclosing
ball (MEB) of the training points in feature space, ``rho`` the margin.  For a kernel ``K`` with diagonal
``d``, both are quadratic programs solved here by the library's SMO:

    R^2(K)   = max_{alpha in simplex}  alpha'd - alpha'K alpha                       (the MEB)
    rho^2(K) = min_{gamma in Gamma}    gamma'Y K Y gamma                              (the class hulls)

with ``Gamma`` the pairs of distributions over the two classes (``gamma >= 0``, each class summing to 1):
``rho`` is the distance between the classes' convex hulls, twice the hard margin.  Both are linear in the
kernel for fixed ``alpha``, ``gamma``, so their gradients in the weights are ``a_m = alpha'd_m -
alpha'K_m alpha`` and ``b_m = gamma'Y K_m Y gamma`` (Danskin).

* ``gram`` minimises the ratio ``R^2(K(mu)) / rho^2(K(mu))`` over the simplex.  ``R^2`` is convex and
  ``rho^2`` concave in ``mu``, so the ratio is quasi-convex; its logarithm is minimised by exponentiated
  gradient steps with a line search (MKLpy: fixed-step gradient steps on ``log mu``).  The ratio is
  infinite when the hulls intersect for every weight (a clear error says so).
* ``rmkl`` bounds the radius of the combination by ``sum_m mu_m R_m^2`` and lets it act as the slack of a
  square-hinge SVM: it maximises ``rho^2`` of the kernel ``K(mu) + (sum_m mu_m R_m^2 / C) I``, a concave
  function of ``mu`` (a minimum of linear ones), so the Frank-Wolfe gap certifies the weights' optimality.
  By duality the optimum is ``min_{gamma in Gamma} max_m gamma'Y(K_m + R_m^2/C I)Y gamma``.

The weights found are the combination of one SVM, the loss's (the C-SVC by default), as in MKLpy.
"""

from __future__ import annotations

import numbers

import numpy as np

from multikernel.core.hookspecs import hookimpl
from multikernel.core.interfaces import Method, MKLProblem, Solver
from multikernel.plugins._weights_first import SimplexSearch
from multikernel.solve.smo import solve_qp
from multikernel.stack.combination import CombinedKernel

__all__ = ["GRAMSolver", "RMKLSolver", "hull_margin", "kernel_radii", "margin_tol", "meb_radius"]


def meb_radius(K: np.ndarray, diag: np.ndarray, alpha0: np.ndarray | None = None, tol: float = 1e-7
               ) -> tuple[float, np.ndarray]:
    """The squared radius of the minimum enclosing ball of the points of kernel ``K`` and its ``alpha``.

    ``max_{alpha >= 0, 1'alpha = 1} alpha'diag - alpha'K alpha``, solved by SMO as
    ``min 1/2 alpha'K alpha - 1/2 diag'alpha`` (the same minimiser).
    """
    res = solve_qp(K, None, p=-0.5 * diag, lower=0.0, upper=np.inf, signed=False, total=1.0, alpha0=alpha0,
                   tol=tol)
    alpha = res.alpha
    return float(alpha @ diag - 2.0 * (res.objective + 0.5 * diag @ alpha)), alpha


def hull_margin(K: np.ndarray, y: np.ndarray, ridge: float = 0.0, gamma0: np.ndarray | None = None,
                tol: float = 1e-7) -> tuple[float, np.ndarray]:
    """The squared distance between the classes' convex hulls in kernel ``K + ridge I``, and its ``gamma``.

    ``min_{gamma in Gamma} gamma'Y (K + ridge I) Y gamma``: one QP with the two class sums fixed to 1.
    """
    res = solve_qp(K, y, p=0.0, lower=0.0, upper=np.inf, ridge=ridge, signed=True, y_sum=0.0, total=2.0,
                   alpha0=gamma0, tol=tol)
    return 2.0 * float(res.objective), res.alpha


def margin_tol(qp_tol: float, scale: float, last: float | None) -> float:
    """The margin QP's KKT tolerance: ``qp_tol`` times the kernel's scale, and at most 1e-3 of the last margin
    found (a nearly degenerate kernel has margins far below its scale, which a tolerance relative to the scale
    alone would not resolve), never below the SMO's reach (1e-13 of the scale)."""
    tol = qp_tol * scale
    if last:
        tol = max(min(tol, 1e-3 * last), 1e-13 * scale)
    return tol


def kernel_radii(stack, tol: float = 1e-7) -> np.ndarray:
    """``R_m^2`` of every kernel of ``stack`` (one MEB each, warm-started from the previous kernel's)."""
    diag = stack.diag()
    radii = np.empty(stack.n_kernels)
    alpha = None
    for m in range(stack.n_kernels):
        K = np.ascontiguousarray(stack.kernel(m), dtype=np.float64)
        radii[m], alpha = meb_radius(K, diag[m], alpha, tol * max(float(diag[m].mean()), 1e-300))
    return radii


class GRAMSolver(SimplexSearch):
    """GRAM: the weights that minimise the radius-margin ratio ``R^2 / rho^2`` of the combined kernel, then
    the loss's SVM on it.

    The ratio is quasi-convex and not smooth (the MEB and the hulls are often met by several solutions), so
    no gradient certifies it: the search stops when ``log(R^2 / rho^2)`` fell by at most ``tol`` over the
    last 10 steps (the ratio by a relative ``tol``).

    Parameters
    ----------
    qp_tol : float, default=1e-7
        KKT tolerance of the radius and margin QPs, relative to the combined kernel's mean diagonal.
    """

    name = "gram"
    replaces_objective = "weights minimising the radius-margin ratio R^2 / rho^2, then one SVM"
    certified = False
    relative = False

    def objective(self, problem: MKLProblem, y: np.ndarray):
        stack = problem.stack
        diag = stack.diag()
        combined = CombinedKernel(stack)
        state = {"alpha": None, "gamma": None, "m2": None}
        qp_tol = float(self.qp_tol)

        def evaluate(mu: np.ndarray) -> tuple[float, np.ndarray]:
            K = combined(mu)  # an array, or kernel columns for a lazy stack (solve_qp takes both)
            d = mu @ diag
            scale = max(float(d.mean()), 1e-300)
            _, state["alpha"] = meb_radius(K, d, state["alpha"], qp_tol * scale)
            _, state["gamma"] = hull_margin(K, y, 0.0, state["gamma"], margin_tol(qp_tol, scale, state["m2"]))
            alpha, gamma = state["alpha"], state["gamma"]
            a = diag @ alpha - stack.quad_forms(alpha)
            b = np.maximum(stack.quad_forms(gamma * y), 0.0)
            r2, m2 = float(mu @ a), float(mu @ b)
            state["m2"] = m2
            if not m2 > 1e-12 * scale:
                return np.inf, np.zeros_like(mu)
            return float(np.log(r2) - np.log(m2)), a / r2 - b / m2

        M = stack.n_kernels
        if not np.isfinite(evaluate(np.full(M, 1.0 / M))[0]):
            # rho^2 is 0 at the average kernel only if gamma'Y K_m Y gamma = 0 for every kernel: then for
            # every weight vector.
            raise ValueError("gram: the training classes' convex hulls intersect in the feature space of every "
                             "combination of these kernels (margin 0), so the radius-margin ratio is infinite; add a "
                             "kernel in which the classes are separable (a Gaussian kernel separates distinct "
                             "points) or use another method")
        return evaluate


class RMKLSolver(SimplexSearch):
    """R-MKL: the weights that maximise the class-hull distance of ``K(mu) + (sum_m mu_m R_m^2 / C) I`` (the
    radius bound acting as a square-hinge slack), then the loss's SVM on ``K(mu)``.

    Concave in the weights: the search stops at a certified relative Frank-Wolfe gap of ``tol``.  ``C`` is
    the loss's.

    Parameters
    ----------
    qp_tol : float, default=1e-7
        KKT tolerance of the radius and margin QPs, relative to the kernels' mean diagonal.
    """

    name = "rmkl"
    replaces_objective = "weights maximising the margin of K(mu) + radius bound / C, then one SVM"

    def check(self, problem: MKLProblem) -> None:
        super().check(problem)
        C = getattr(problem.loss, "C", None)
        if not (isinstance(C, numbers.Real) and C > 0):
            raise ValueError(f"rmkl weighs the radius bound by the loss's C, which must be one positive number; "
                             f"got {C!r}")

    def objective(self, problem: MKLProblem, y: np.ndarray):
        stack = problem.stack
        C = float(problem.loss.C)
        qp_tol = float(self.qp_tol)
        radii = kernel_radii(stack, qp_tol)
        diag = stack.diag()
        combined = CombinedKernel(stack)
        state = {"gamma": None, "m2": None}

        def evaluate(mu: np.ndarray) -> tuple[float, np.ndarray]:
            K = combined(mu)  # an array, or kernel columns for a lazy stack (solve_qp takes both)
            scale = max(float((mu @ diag).mean()), 1e-300)
            _, gamma = hull_margin(K, y, float(mu @ radii) / C, state["gamma"], margin_tol(qp_tol, scale, state["m2"]))
            state["gamma"] = gamma
            g = np.maximum(stack.quad_forms(gamma * y), 0.0) + radii * float(gamma @ gamma) / C
            state["m2"] = float(mu @ g)
            return -state["m2"], -g

        return evaluate


METHODS = (
    Method(name="gram", summary="GRAM: weights minimising the radius-margin ratio R^2/rho^2 (exponentiated gradient "
                                "with line search), then one SVM.",
           loss="csvc", regularizer="simplex", solver="gram",
           citation="Lauriola, Polato and Aiolli, Radius-margin ratio optimization for dot-product boolean kernel "
                    "learning, ICANN 2017."),
    Method(name="rmkl", summary="R-MKL: weights maximising the margin with the radius bound sum mu_m R_m^2 as "
                                "square-hinge slack (certified), then one SVM.",
           loss="csvc", regularizer="simplex", solver="rmkl",
           citation="Do, Kalousis, Woznica and Hilario, Margin and Radius Based Multiple Kernel Learning, "
                    "ECML PKDD 2009."),
)


@hookimpl
def multikernel_solvers() -> dict[str, type[Solver]]:
    return {GRAMSolver.name: GRAMSolver, RMKLSolver.name: RMKLSolver}


@hookimpl
def multikernel_methods() -> dict[str, Method]:
    return {m.name: m for m in METHODS}
