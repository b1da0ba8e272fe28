"""Inner SVM solves on a precomputed kernel.

``solve_svc`` is the C-SVC dual used inside every MKL wrapper:

    max_alpha 1'alpha - 1/2 (alpha*y)' K (alpha*y)   s.t.   0 <= alpha <= C,  y'alpha = 0.

This module is the single entry point the rest of the library uses for it.
"""

from __future__ import annotations

import numpy as np
from sklearn.svm import SVC

from multikernel.interfaces import InnerSolution

__all__ = ["solve_svc", "svc_objectives"]


def svc_objectives(K: np.ndarray, y: np.ndarray, C: float, alpha: np.ndarray, bias: float) -> tuple[float, float]:
    """Dual and primal C-SVC objectives at ``alpha`` and ``bias``.

    The primal is evaluated at the classifier ``f = K (alpha*y) + bias``, so ``primal - dual >= 0``
    certifies how far ``alpha`` is from optimal.
    """
    coef = alpha * y
    Kc = K @ coef
    quad = float(coef @ Kc)
    dual = float(alpha.sum()) - 0.5 * quad
    slack = np.maximum(0.0, 1.0 - y * (Kc + bias))
    primal = 0.5 * quad + C * float(slack.sum())
    return dual, primal


def solve_svc(
    K: np.ndarray,
    y: np.ndarray,
    C: float = 1.0,
    alpha0: np.ndarray | None = None,
    tol: float = 1e-3,
    max_iter: int = -1,
) -> InnerSolution:
    """Solve the C-SVC dual for a precomputed kernel.

    Parameters
    ----------
    K : ndarray of shape (n, n)
        The (combined) training kernel.
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    C : float
        Box bound of the dual variables.
    alpha0 : ndarray of shape (n,), optional
        Warm start. Ignored by this libsvm-backed implementation.
    tol : float
        Stopping tolerance on the maximal KKT violation.
    max_iter : int
        Iteration limit (-1 for none).

    Returns
    -------
    InnerSolution
    """
    y = np.asarray(y, dtype=np.float64)
    model = SVC(C=C, kernel="precomputed", tol=tol, max_iter=max_iter)
    model.fit(K, y)
    coef = np.zeros(len(y))
    # libsvm orders classes as (-1, +1) and reports coefficients for a decision positive on +1.
    coef[model.support_] = model.dual_coef_[0]
    alpha = np.clip(coef * y, 0.0, C)
    bias = float(model.intercept_[0])
    dual, primal = svc_objectives(K, y, C, alpha, bias)
    return InnerSolution(alpha=alpha, coef=alpha * y, bias=bias, dual_objective=dual,
                         primal_objective=primal, n_iter=int(model.n_iter_[0]))
