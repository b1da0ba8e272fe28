"""What the sparse-MIL and set-kernel SVMs share: bags as rows of a sparse matrix, and a certified QP solve.

A *unit* of these SVMs is a linear combination of instances in the kernel's feature space: one instance, a
bag's mean or a bag's sum.  Stacking the units' weights as the rows of a sparse matrix ``A`` (units x
instances), the units' kernel is ``A K A'`` and a solution ``alpha`` of the dual over the units gives the
instance expansion ``f(x) = sum_i c_i k(x, x_i) + b`` with ``c = A' (y * alpha)``, so every fitted model is
scored on instances (and on bags through them) like the other MIL baselines.

:func:`certified_solve` solves a dual by the library's SMO and tightens its KKT tolerance until the duality gap
of the QP (primal objective at the returned classifier minus the dual objective, both from
:func:`multikernel.solve.svm.solve_inner`) is at most ``tol`` relative to the primal: the same certificate
as the MKL fits, here for one QP.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from multikernel.core.interfaces import InnerSolution
from multikernel.solve.outer import INNER_TOL_FLOOR
from multikernel.solve.svm import InnerQP, solve_inner

__all__ = ["certified_solve", "instance_units", "relative_gap", "unit_kernel", "units"]


def units(lists: list[np.ndarray], n: int, weight: str = "mean") -> sp.csr_matrix:
    """The rows ``e_B / |B|`` (``weight="mean"``) or ``e_B`` (``"sum"``) of the bags, shape (len(lists), n)."""
    sizes = np.array([len(b) for b in lists], dtype=np.float64)
    rows = np.repeat(np.arange(len(lists)), sizes.astype(np.intp))
    cols = np.concatenate(lists) if lists else np.zeros(0, dtype=np.intp)
    values = 1.0 / sizes[rows] if weight == "mean" else np.ones(len(rows))
    return sp.csr_matrix((values, (rows, cols)), shape=(len(lists), n))


def instance_units(rows: np.ndarray, n: int) -> sp.csr_matrix:
    """The rows ``e_i`` of the instances ``rows``, shape (len(rows), n): each instance its own unit."""
    rows = np.asarray(rows, dtype=np.intp)
    return sp.csr_matrix((np.ones(len(rows)), (np.arange(len(rows)), rows)), shape=(len(rows), n))


def unit_kernel(A: sp.csr_matrix, K: np.ndarray, B: sp.csr_matrix | None = None) -> np.ndarray:
    """``A K B'`` (``B = A`` by default, then exactly symmetric): the kernel between two sets of units."""
    AK = np.asarray(A @ K)
    if B is None:
        out = np.asarray((A @ AK.T).T)
        return 0.5 * (out + out.T)
    return np.asarray((B @ AK.T).T)


def relative_gap(sol: InnerSolution) -> float:
    """The certified relative duality gap of a QP solution: ``(primal - dual) / max(|primal|, 1e-12)``."""
    return max(0.0, sol.primal_objective - sol.dual_objective) / max(abs(sol.primal_objective), 1e-12)


def certified_solve(K: np.ndarray, problem: InnerQP, tol: float, alpha0: np.ndarray | None = None,
                    who: str = "the SVM") -> tuple[InnerSolution, float]:
    """Solve the dual ``problem`` on ``K`` to a certified relative duality gap ``tol``.

    The SMO starts at libsvm's KKT tolerance (1e-3, or ``tol`` when larger) and, while the gap exceeds
    ``tol``, divides it by 10 and resumes from the last solution, down to the library's floor
    (:data:`multikernel.solve.outer.INNER_TOL_FLOOR`); a ``ConvergenceWarning`` names the gap reached when
    the floor does not certify ``tol``.

    Returns
    -------
    solution : InnerSolution
        ``coef = y * alpha``, ``bias`` the KKT offset, both objectives.
    gap : float
        Its certified relative duality gap.
    """
    kkt = max(1e-3, tol)
    while True:
        sol = solve_inner(K, problem, alpha0=alpha0, tol=kkt)
        gap = relative_gap(sol)
        if gap <= tol:
            return sol, gap
        if kkt <= INNER_TOL_FLOOR:
            warnings.warn(f"{who}: the QP's certified relative duality gap is {gap:.3g} at the SMO's finest "
                          f"tolerance, above tol={tol:g}; the solution is kept. Increase tol",
                          ConvergenceWarning, stacklevel=3)
            return sol, gap
        alpha0, kkt = sol.alpha, max(kkt / 10.0, INNER_TOL_FLOOR)
