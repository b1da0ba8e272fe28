"""Inner SVM solves on a precomputed kernel, all backed by the SMO core of :mod:`multikernel.solve.smo`.

``solve_svc`` is the C-SVC dual used inside every MKL wrapper:

    max_alpha 1'alpha - 1/2 (alpha*y)' K (alpha*y)   s.t.   0 <= alpha <= C,  y'alpha = 0.

The other forms of the library's inner problems have their own thin helper:

* :func:`solve_svc_nobias` -- the same without the bias (no equality constraint);
* :func:`solve_nu` -- the nu-form ``max -1/2 (alpha*y)'K(alpha*y)``, ``1'alpha = 1``, ``y'alpha = 0``,
  ``0 <= alpha <= C``;
* :func:`solve_square_hinge` -- the square hinge (L2-SVM) dual, ridge ``alpha'alpha/(2C)``;
* :func:`solve_simplex_ridge` -- ``max -1/2 alpha'(K + D) alpha`` over the simplex (IOKL's SVM step).

Each returns an :class:`~multikernel.core.interfaces.InnerSolution` whose ``primal_objective`` is the primal
objective evaluated at the returned classifier: an upper bound of the optimum, so that
``primal - dual >= 0`` certifies the solve.  Both objectives are computed from the solver's gradient
in O(n), without another pass over the kernel.
"""

from __future__ import annotations

import numpy as np

from multikernel.core.interfaces import InnerSolution
from multikernel.solve.smo import KernelColumns, QPResult, solve_qp

__all__ = [
    "solve_svc",
    "solve_svc_nobias",
    "solve_nu",
    "solve_square_hinge",
    "solve_simplex_ridge",
]


def _labels(y: np.ndarray, both_classes: bool) -> np.ndarray:
    y = np.asarray(y, dtype=np.float64).ravel()
    if not np.isin(y, (-1.0, 1.0)).all():
        raise ValueError("labels must be -1 or +1")
    if both_classes and not ((y > 0).any() and (y < 0).any()):
        raise ValueError("all training points are in one class; a classifier with a bias needs "
                         "samples of both classes (-1 and +1)")
    return y


def _positive(C: float | np.ndarray, n: int) -> float | np.ndarray:
    C_arr = np.asarray(C, dtype=np.float64)
    if C_arr.ndim not in (0, 1) or (C_arr.ndim == 1 and C_arr.shape != (n,)):
        raise ValueError(f"C must be a positive number or an array of shape ({n},)")
    if not (np.isfinite(C_arr).all() and (C_arr > 0).all()):
        raise ValueError(f"C must be positive and finite; got {C!r}")
    return float(C_arr) if C_arr.ndim == 0 else C_arr


def _hinge_solution(res: QPResult, y: np.ndarray, C: float | np.ndarray, bias: float) -> InnerSolution:
    """C-SVC style objectives from the QP gradient: ``G = y*(K coef) - 1``, so ``K coef = y*(G + 1)``."""
    alpha = res.alpha
    coef = alpha * y
    f = y * (res.gradient + 1.0)
    quad = float(coef @ f)
    dual = float(alpha.sum()) - 0.5 * quad
    primal = 0.5 * quad + float(np.sum(C * np.maximum(0.0, 1.0 - y * (f + bias))))
    return InnerSolution(alpha=alpha, coef=coef, bias=bias, dual_objective=dual,
                         primal_objective=primal, n_iter=res.n_iter)


def solve_svc(
    K: np.ndarray | KernelColumns,
    y: np.ndarray,
    C: float | np.ndarray = 1.0,
    alpha0: np.ndarray | None = None,
    tol: float = 1e-3,
    max_iter: int = -1,
) -> InnerSolution:
    """Solve the C-SVC dual for a precomputed kernel.

    Parameters
    ----------
    K : ndarray of shape (n, n) or KernelColumns
        The (combined) training kernel, float32 or float64, C- or F-ordered; used without a copy.
    y : ndarray of shape (n,)
        Labels in {-1, +1}, both classes present.
    C : float or ndarray of shape (n,)
        Box bound of the dual variables (per sample when an array, e.g. labelled vs unlabelled).
    alpha0 : ndarray of shape (n,), optional
        Warm start (projected on the feasible set when needed).
    tol : float
        Stopping tolerance on the maximal KKT violation (as libsvm's ``eps``).
    max_iter : int
        Iteration limit (-1 for none).

    Returns
    -------
    InnerSolution
        ``primal_objective`` is ``1/2 coef'K coef + sum_i C_i max(0, 1 - y_i (K coef + b)_i)``.
    """
    y = _labels(y, both_classes=True)
    C = _positive(C, len(y))
    res = solve_qp(K, y, p=-1.0, lower=0.0, upper=C, y_sum=0.0, alpha0=alpha0, tol=tol, max_iter=max_iter)
    return _hinge_solution(res, y, C, res.bias)


def solve_svc_nobias(
    K: np.ndarray | KernelColumns,
    y: np.ndarray,
    C: float | np.ndarray = 1.0,
    alpha0: np.ndarray | None = None,
    tol: float = 1e-3,
    max_iter: int = -1,
) -> InnerSolution:
    """Solve the C-SVC dual without bias: ``0 <= alpha <= C`` and no equality constraint.

    The decision function is ``f(x) = sum_i alpha_i y_i k(x, x_i)``.  A single class is allowed (the
    ranking methods use differences of samples, all labelled +1).  Parameters as :func:`solve_svc`;
    ``tol`` bounds the largest projected-gradient entry.

    Returns
    -------
    InnerSolution
        ``bias`` is 0; ``primal_objective`` is ``1/2 coef'K coef + sum_i C_i max(0, 1 - y_i (K coef)_i)``.
    """
    y = _labels(y, both_classes=False)
    C = _positive(C, len(y))
    res = solve_qp(K, y, p=-1.0, lower=0.0, upper=C, alpha0=alpha0, tol=tol, max_iter=max_iter)
    return _hinge_solution(res, y, C, 0.0)


def solve_square_hinge(
    K: np.ndarray | KernelColumns,
    y: np.ndarray,
    C: float | np.ndarray = 1.0,
    alpha0: np.ndarray | None = None,
    tol: float = 1e-3,
    max_iter: int = -1,
) -> InnerSolution:
    """Solve the square hinge (L2-SVM) dual with bias.

        max 1'alpha - alpha'alpha/(2C) - 1/2 coef'K coef   s.t.  alpha >= 0,  y'alpha = 0,

    with ``coef = alpha*y``: the ridge ``1/C`` sits on the diagonal of ``Q``.

    Returns
    -------
    InnerSolution
        ``dual_objective`` includes the ridge term; ``primal_objective`` is
        ``1/2 coef'K coef + sum_i C_i/2 max(0, 1 - y_i (K coef + b)_i)^2``.
    """
    y = _labels(y, both_classes=True)
    C = _positive(C, len(y))
    res = solve_qp(K, y, p=-1.0, lower=0.0, upper=np.inf, ridge=1.0 / np.asarray(C), y_sum=0.0,
                   alpha0=alpha0, tol=tol, max_iter=max_iter)
    alpha = res.alpha
    coef = alpha * y
    ridge_part = alpha / np.asarray(C)
    f = y * (res.gradient + 1.0 - ridge_part)     # G = y*(K coef) + alpha/C - 1
    quad = float(coef @ f)
    dual = float(alpha.sum()) - float(alpha @ ridge_part) / 2.0 - 0.5 * quad
    xi = np.maximum(0.0, 1.0 - y * (f + res.bias))
    primal = 0.5 * quad + float(np.sum(0.5 * C * xi**2))
    return InnerSolution(alpha=alpha, coef=coef, bias=res.bias, dual_objective=dual,
                         primal_objective=primal, n_iter=res.n_iter)


def solve_nu(
    K: np.ndarray | KernelColumns,
    y: np.ndarray,
    C: float | np.ndarray = 1.0,
    alpha0: np.ndarray | None = None,
    tol: float = 1e-3,
    max_iter: int = -1,
) -> InnerSolution:
    """Solve the nu-form dual of the soft margin MKL derivations.

        max -1/2 coef'K coef   s.t.   1'alpha = 1,  y'alpha = 0,  0 <= alpha <= C,   coef = alpha*y.

    Working pairs are taken inside one class (libsvm's nu solver).  Feasible only when
    ``C * n_+ >= 1/2`` and ``C * n_- >= 1/2`` (for a scalar ``C``).

    Returns
    -------
    InnerSolution
        ``bias`` is the offset ``b``; with the margin ``rho`` (also found by the solver) the
        ``primal_objective`` is ``1/2 coef'K coef - rho + sum_i C_i max(0, rho - y_i (K coef + b)_i)``,
        the primal of ``min 1/2||w||^2 - rho + sum C_i xi_i, y_i (f(x_i) + b) >= rho - xi_i``.

    Raises
    ------
    ValueError
        When a class is missing or the bounds make ``1'alpha = 1, y'alpha = 0`` infeasible.
    """
    y = _labels(y, both_classes=True)
    C = _positive(C, len(y))
    res = solve_qp(K, y, p=0.0, lower=0.0, upper=C, y_sum=0.0, total=1.0, alpha0=alpha0, tol=tol,
                   max_iter=max_iter)
    alpha = res.alpha
    coef = alpha * y
    f = y * res.gradient                          # G = y*(K coef)
    quad = float(coef @ f)
    rho = res.rho
    primal = 0.5 * quad - rho + float(np.sum(C * np.maximum(0.0, rho - y * (f + res.bias))))
    return InnerSolution(alpha=alpha, coef=coef, bias=res.bias, dual_objective=-0.5 * quad,
                         primal_objective=primal, n_iter=res.n_iter)


def solve_simplex_ridge(
    K: np.ndarray | KernelColumns,
    ridge: float | np.ndarray,
    y: np.ndarray | None = None,
    alpha0: np.ndarray | None = None,
    tol: float = 1e-3,
    max_iter: int = -1,
) -> InnerSolution:
    """Solve ``max -1/2 alpha'(Kt + D) alpha`` over the simplex ``alpha >= 0, 1'alpha = 1``.

    ``Kt = (y y') o K`` when labels are given (else ``K``) and ``D = diag(ridge)``: the SVM step (4.12)
    of IOKL with ``ridge = 1/C_i`` (per-sample costs for labelled and unlabelled points).

    Returns
    -------
    InnerSolution
        ``coef = alpha*y`` (or ``alpha``), ``bias`` 0, ``dual_objective = -1/2 alpha'(Kt + D) alpha``,
        and ``primal_objective = 1/2 coef'K coef - rho + sum_i max(0, rho - f_i)^2 / (2 D_i)`` with
        ``f = Kt alpha`` and the solver's ``rho``: the square hinge primal
        ``min 1/2 ||w||^2 + sum_i xi_i^2/(2 D_i) - rho, f_i >= rho - xi_i``
        (a zero ridge makes that point's constraint hard: violated, the bound is ``inf``).
    """
    n = K.n if isinstance(K, KernelColumns) else np.shape(K)[0]
    D = np.broadcast_to(np.asarray(ridge, dtype=np.float64), (n,))
    signed = y is not None
    yv = _labels(y, both_classes=False) if signed else np.ones(n)
    res = solve_qp(K, yv if signed else None, p=0.0, lower=0.0, upper=np.inf, ridge=D, total=1.0,
                   alpha0=alpha0, tol=tol, max_iter=max_iter)
    alpha = res.alpha
    Kt_alpha = res.gradient - D * alpha            # G = Kt alpha + D alpha
    quad = float(alpha @ Kt_alpha)
    rho = res.rho
    viol = np.maximum(0.0, rho - Kt_alpha)
    with np.errstate(divide="ignore", invalid="ignore"):
        pen = np.where(D > 0, viol**2 / (2.0 * D), np.where(viol > 1e-9 * max(1.0, abs(rho)), np.inf, 0.0))
    primal = 0.5 * quad - rho + float(pen.sum())
    dual = -0.5 * quad - 0.5 * float(D @ alpha**2)
    return InnerSolution(alpha=alpha, coef=alpha * yv, bias=0.0, dual_objective=dual,
                         primal_objective=primal, n_iter=res.n_iter)
