"""What MissSVM and MICA share: their convex step, a C-SVC over *units* (fixed convex combinations of instances),
and the record of their steps (:class:`Steps`: the objectives, the step of least objective that a finished or
interrupted fit keeps, the warning of a capped fit).

A unit is a row ``v`` of a non-negative matrix ``V`` (units x instances) whose rows sum to one: a single instance
(a one-hot row) or a positive bag's combination of its instances.  In the kernel's feature space the unit is
``sum_j v_j phi(x_j)``, so the units' kernel is ``V K V'`` and the SVM's decision on any instance is
``f(x) = sum_j c_j k(x_j, x) + b`` with the instance coefficients ``c = V' (alpha o y)``.  The dual

    max_alpha  1'alpha - 1/2 (alpha o y)' V K V' (alpha o y),   0 <= alpha_u <= C_u,   y'alpha = 0

is solved by the library's SMO (:func:`~multikernel.solve.smo.solve_qp`, in double precision: libsvm caches kernel
columns in single precision, which on kernels of entries ~10^3 with bounds ~10^2 leaves errors of 10^-3 in the
margins and the bias, measured against cvxpy).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from multikernel.solve.smo import solve_qp

__all__ = ["SVM_TOL", "Steps", "bag_combinations", "hinge", "unit_svm"]

#: The SMO's stopping tolerance on the KKT violation of the units' SVM (a margin error): tighter than libsvm's
#: default 1e-3 because the alternations compare objectives and linearisations between steps.
SVM_TOL = 1e-6


def bag_combinations(bags: list[np.ndarray], weights: list[np.ndarray], n: int) -> sp.csr_matrix:
    """The units of ``bags`` with the given convex weights (one array per bag, same order): a sparse (bags x n)."""
    rows = np.repeat(np.arange(len(bags)), [len(b) for b in bags])
    return sp.csr_matrix((np.concatenate(weights), (rows, np.concatenate(bags))), shape=(len(bags), n))


def hinge(margins: np.ndarray) -> np.ndarray:
    """``max(0, 1 - margins)``."""
    return np.maximum(0.0, 1.0 - margins)


def unit_svm(K: np.ndarray, V: sp.csr_matrix, labels: np.ndarray, bounds: np.ndarray) -> tuple[np.ndarray, float]:
    """The C-SVC over the units ``V`` (rows of convex weights over the ``n`` instances of ``K``).

    Parameters
    ----------
    K : ndarray of shape (n, n)
        The instances' kernel.
    V : sparse matrix of shape (n_units, n)
    labels : ndarray of shape (n_units,)
        -1 / +1.
    bounds : ndarray of shape (n_units,)
        The box ``C_u`` of each unit's dual variable; units with a zero bound take no part.

    Returns
    -------
    coef : ndarray of shape (n,)
        The instance coefficients ``V' (alpha o y)``: ``f = K @ coef + intercept``.
    intercept : float
    """
    keep = np.flatnonzero(bounds > 0)
    V, labels, bounds = V[keep], labels[keep], bounds[keep]
    VK = np.asarray(V @ K)
    Ku = np.asarray(V @ VK.T)
    Ku = 0.5 * (Ku + Ku.T)  # exactly symmetric for libsvm
    if len(np.unique(labels)) < 2:
        # one class only: the SVM's optimum is w = 0 with the bias at that class (every dual variable at its
        # bound would violate y'alpha = 0); libsvm refuses one class, so it is written down directly
        return np.zeros(K.shape[0]), float(labels[0])
    res = solve_qp(Ku, labels, p=-1.0, lower=0.0, upper=bounds, y_sum=0.0, tol=SVM_TOL)
    return np.asarray(V.T @ (res.alpha * labels)).ravel(), float(res.bias)


class Steps:
    """The steps of an alternation on ``estimator``: each step's objective, and the step of least objective.

    :meth:`keep` writes that step into the estimator as its model (``dual_coef_`` over ``support_rows_``,
    ``intercept_``, ``objective_``, ``objectives_``, ``n_iter_``); it is the ``keep`` that Ctrl-C calls.
    """

    def __init__(self, estimator: Any) -> None:
        self.estimator = estimator
        self.history: list[float] = []
        self.best: tuple[float, np.ndarray, float] | None = None

    def record(self, coef: np.ndarray, intercept: float, objective: float) -> None:
        self.history.append(objective)
        if self.best is None or objective < self.best[0]:
            self.best = (objective, coef, intercept)

    def keep(self) -> None:
        est = self.estimator
        objective, coef, intercept = self.best
        est.support_rows_ = np.flatnonzero(coef)
        est.dual_coef_ = coef[est.support_rows_]
        est.intercept_ = float(intercept)
        est.objective_, est.objectives_, est.n_iter_ = float(objective), np.array(self.history), len(self.history)

    def capped(self, what: str) -> None:
        """Keep the best step and warn that ``what`` still held after ``max_iter`` steps."""
        self.keep()
        est = self.estimator
        warnings.warn(f"{type(est).__name__} stopped at max_iter={est.max_iter} with {what}; the step of least "
                      f"objective is kept. Increase max_iter", ConvergenceWarning, stacklevel=5)
