"""The inner problems of MKL regression: the epsilon-SVR dual (by the SMO) and kernel ridge regression (exact).

**epsilon-SVR.**  For a fixed kernel ``K`` and targets ``y`` the dual is

    max_{a, a*}  y'(a - a*) - epsilon 1'(a + a*) - 1/2 (a - a*)' K (a - a*),
    subject to   0 <= a, a* <= C,   1'(a - a*) = 0,

with primal ``1/2 ||f||^2 + C sum_i max(0, |y_i - f(x_i) - b| - epsilon)``.  As libsvm does, it is an
:class:`~multikernel.solve.svm.InnerQP` over the ``2n`` variables ``alpha = (a, a*)`` with signs ``s = (+1, -1)``
on the doubled kernel ``[[K, K], [K, K]]`` (:func:`doubled`: formed when small, else served by columns): then
``S alpha`` stacks ``(a, -a*)``, the equality is ``s'alpha = 0`` and its multiplier is the bias, and the
general QP certificate of :func:`~multikernel.solve.svm.solve_inner` is exactly the primal above.  The outer
problem sees one coefficient block ``c = a - a*`` of length ``n`` (``f(x) = sum_i c_i k(x, x_i) + b``); the dual
variables stay of length ``2n``.

**Kernel ridge regression.**  ``max_alpha y'alpha - alpha'alpha / (2C) - 1/2 alpha'K alpha``, with primal
``1/2 ||f||^2 + C/2 sum_i (y_i - f(x_i) - b)^2``; with an intercept the dual adds ``1'alpha = 0`` and ``b`` is
its multiplier (the least-squares SVM).  Its optimum is the solution of one positive definite linear system
(``(K + I/C) alpha = y - b 1``), so it is solved exactly (:func:`solve_ridge`): both objectives agree to
rounding and the warm start is not needed.  ``C`` is scikit-learn's ``KernelRidge(alpha=1/C)``.
"""

from __future__ import annotations

import math

import attrs
import numpy as np
import scipy.linalg

from multikernel.core.interfaces import InnerSolution, KernelColumns
from multikernel.core.validation import check_nonnegative_real, check_positive_real
from multikernel.solve.smo import as_symmetric_rows
from multikernel.solve.svm import InnerQP, solve_inner

__all__ = ["DoubledColumns", "doubled", "svr_problem", "solve_svr", "ridge_problem", "solve_ridge", "check_targets"]


def check_targets(y: np.ndarray) -> np.ndarray:
    """``y`` as a finite float64 vector, or a ``ValueError`` naming the problem."""
    y = np.asarray(y, dtype=np.float64)
    if y.ndim != 1:
        raise ValueError(f"regression targets of one problem must be a vector; got shape {y.shape}")
    if not np.isfinite(y).all():
        raise ValueError("regression targets must be finite (no NaN or infinity)")
    return y


class DoubledColumns(KernelColumns):
    """The ``2n x 2n`` kernel ``[[K, K], [K, K]]`` of a ``n x n`` kernel ``K``, served by columns.

    Column ``i`` is column ``i mod n`` of ``K`` written twice; the SMO caches the columns it uses, so each
    column of ``K`` is read at most twice per solve and the doubled kernel is never stored whole.

    Parameters
    ----------
    K : ndarray of shape (n, n) or KernelColumns
        A symmetric kernel (dense, or itself served by columns, as a lazy stack's combination is).
    """

    def __init__(self, K: np.ndarray | KernelColumns) -> None:
        if isinstance(K, KernelColumns):
            self._provider: KernelColumns | None = K
            self._dense = None
            self.base_n = int(K.n)
            self.cache_size = float(getattr(K, "cache_size", 200.0))
        else:
            self._provider = None
            self._dense = as_symmetric_rows(K)
            self.base_n = int(self._dense.shape[0])
        self.n = 2 * self.base_n

    def column(self, i: int, out: np.ndarray) -> None:
        self.columns(np.array([i], dtype=np.intp), out[None])

    def columns(self, idx: np.ndarray, out: np.ndarray) -> None:
        n = self.base_n
        rows = np.asarray(idx, dtype=np.intp) % n
        if self._dense is not None:
            out[:, :n] = self._dense[rows]  # row i of a symmetric kernel is its column i
        else:
            block = np.empty((len(rows), n))
            self._provider.columns(rows, block)  # type: ignore[union-attr]
            out[:, :n] = block
        out[:, n:] = out[:, :n]

    def diagonal(self) -> np.ndarray:
        d = (np.diagonal(self._dense) if self._dense is not None
             else self._provider.diagonal())  # type: ignore[union-attr]
        return np.tile(np.asarray(d, dtype=np.float64), 2)


#: Bytes up to which the doubled kernel of a dense kernel is formed (the SMO's dense path was 3 times faster
#: than serving its columns at C = 1 on 442 samples); beyond, it is served by columns within the SMO's cache.
DENSE_DOUBLING_BYTES = 256 * 2**20


def doubled(K: np.ndarray | KernelColumns) -> np.ndarray | KernelColumns:
    """``[[K, K], [K, K]]``: formed when ``K`` is dense and the result small, else :class:`DoubledColumns`."""
    if not isinstance(K, KernelColumns):
        K = as_symmetric_rows(K)
        if 4 * K.size * K.itemsize <= DENSE_DOUBLING_BYTES:
            return np.tile(K, (2, 2))
    return DoubledColumns(K)


def svr_problem(y: np.ndarray, C: float, epsilon: float) -> InnerQP:
    """The epsilon-SVR dual over ``alpha = (a, a*)`` (see the module docstring).

    Parameters
    ----------
    y : ndarray of shape (n,)
        Finite real targets.
    C : float
        The positive cost of a deviation beyond ``epsilon``.
    epsilon : float
        The non-negative half-width of the insensitive tube.
    """
    y = check_targets(y)
    C = check_positive_real("C", C)
    epsilon = check_nonnegative_real("epsilon", epsilon)
    signs = np.concatenate([np.ones(len(y)), -np.ones(len(y))])
    return InnerQP(y=signs, p=np.concatenate([epsilon - y, epsilon + y]), upper=C, y_sum=0.0)


def solve_svr(K: np.ndarray | KernelColumns, y: np.ndarray, C: float, epsilon: float,
              alpha0: np.ndarray | None = None, tol: float = 1e-3) -> InnerSolution:
    """The epsilon-SVR on the kernel ``K``: ``alpha`` of shape (2n,), ``coef = a - a*`` of shape (n,).

    ``alpha0`` (shape (2n,)) warm-starts the SMO; ``tol`` bounds its KKT violation.  ``at_bound`` is left
    unknown: the outer loop's products path serves ``n``-long solutions of the SVM forms, not these.
    """
    problem = svr_problem(y, C, epsilon)
    sol = solve_inner(doubled(K), problem, alpha0=alpha0, tol=tol)
    n = len(y)
    return attrs.evolve(sol, coef=sol.coef[:n] + sol.coef[n:], at_bound=None)


def ridge_problem(y: np.ndarray, C: float, fit_intercept: bool = True) -> InnerQP:
    """Kernel ridge regression's dual as QP data: ``p = -y``, ridge ``1/C``, no bounds (``1'alpha = 0``
    with an intercept).  It gives ``L(alpha)`` and the ray; :func:`solve_ridge` solves it."""
    y = check_targets(y)
    C = check_positive_real("C", C)
    return InnerQP(p=-y, lower=-math.inf, upper=math.inf, ridge=1.0 / C, signed=False,
                   total=0.0 if fit_intercept else None)


def _dense(K: np.ndarray | KernelColumns) -> np.ndarray:
    if isinstance(K, KernelColumns):
        out = np.empty((int(K.n), int(K.n)))
        K.columns(np.arange(int(K.n), dtype=np.intp), out)
        return out
    return np.asarray(K, dtype=np.float64)


def solve_ridge(K: np.ndarray | KernelColumns, y: np.ndarray, C: float, fit_intercept: bool = True
                ) -> InnerSolution:
    """Kernel ridge regression on the kernel ``K``, solved exactly (one Cholesky factorization).

    Returns
    -------
    InnerSolution
        ``alpha = coef`` of shape (n,), ``bias`` the intercept (0 without one), the dual objective
        ``y'alpha - alpha'alpha/(2C) - 1/2 alpha'K alpha`` and the primal ``1/2 alpha'K alpha +
        C/2 ||y - K alpha - b||^2``.

    Raises
    ------
    ValueError
        When ``K + I/C`` is not positive definite (an indefinite kernel) or the kernel is not finite.
    """
    problem = ridge_problem(y, C, fit_intercept)
    y = np.asarray(-problem.p)
    Kd = _dense(K)
    if not np.isfinite(Kd).all():
        raise ValueError("the kernel contains non-finite values")
    A = Kd + np.eye(len(y)) / float(C)
    try:
        factor = scipy.linalg.cho_factor(A, check_finite=False)
    except np.linalg.LinAlgError:
        raise ValueError("K + I/C is not positive definite: the kernel is indefinite (check precomputed "
                         "kernels with multikernel.stack.storage.check_kernel_matrices) or C is too large "
                         "for its rounding") from None
    u = scipy.linalg.cho_solve(factor, y, check_finite=False)
    bias = 0.0
    alpha = u
    if fit_intercept:
        v = scipy.linalg.cho_solve(factor, np.ones(len(y)), check_finite=False)
        bias = float(u.sum() / v.sum())
        alpha = u - bias * v  # 1'alpha = 0: the intercept's multiplier
    f = Kd @ alpha
    quad = float(alpha @ f)
    primal = 0.5 * quad + 0.5 * float(C) * float(np.sum((y - f - bias) ** 2))
    return InnerSolution(alpha=alpha, coef=alpha.copy(), bias=bias,
                         dual_objective=problem.linear_term(alpha) - 0.5 * quad, primal_objective=primal)
