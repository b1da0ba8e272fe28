"""One read of the stack per outer iteration: the products ``u_m = K_m v`` and the combined kernel by columns.

An outer MKL iteration needs, at the new inner solution ``alpha`` (``v = y * alpha``), the quadratic forms
``q_m = v'K_m v``, and then a warm-started inner solve at the next weights ``mu'``, which starts from the
gradient ``K(mu') v``.  Both come from the same products: :class:`StackProducts` computes
``u_m = K_m v`` for every kernel in one read of the support's rows of the stack, so that
``q_m = v'u_m`` and ``K(mu') v = sum_m mu'_m u_m`` for any ``mu'``, without reading the stack again.  The
inner solver then reads only the columns of ``K(mu')`` it touches, which :class:`CombinedColumns` computes
on demand from the stack (``sum_m mu'_m K_m[:, j]``) into the solver's bounded column cache: ``K(mu')`` is
never formed.
"""

from __future__ import annotations

import numpy as np

from multikernel._ext import _stack
from multikernel._threads import blas_for
from multikernel.core.interfaces import KernelColumns
from multikernel.stack.storage import DenseStack, KernelStack, _weights

__all__ = ["StackProducts", "CombinedColumns", "supports_products"]


def supports_products(stack: KernelStack) -> bool:
    """Whether ``stack`` serves :class:`StackProducts` and :class:`CombinedColumns`: a whole (not a subset
    view) square dense stack, whose kernels are read as their rows."""
    return (isinstance(stack, DenseStack) and stack._full and stack.n_rows == stack.n_cols
            and stack.n_rows > 0)


class StackProducts:
    """``u_m = K_m v`` for a coefficient vector ``v``, split by a mask of its entries (``bound``).

    The rows of the support of ``v`` are read once, whole: ``K_m v = sum_j v_j K_m[j, :]`` for symmetric
    kernels.  The split gives the products of the entries at a bound of the inner problem and of the free
    ones separately (``K_m v_bound`` and ``K_m v_free``), which the SMO needs to start (its gradient, and
    the bound part it keeps for shrinking) in the same read.

    Parameters
    ----------
    stack : DenseStack
        A whole square dense stack (:func:`supports_products`).
    alpha, coef : ndarray of shape (n,)
        The inner solution and its coefficients ``v`` (``y * alpha`` for the SVMs).
    bound : ndarray of bool, shape (n,)
        The entries at a bound of the inner problem.
    kernels : ndarray of int, optional
        The kernels whose products are computed (all by default).
    """

    def __init__(self, stack: DenseStack, alpha: np.ndarray, coef: np.ndarray, bound: np.ndarray,
                 kernels: np.ndarray | None = None) -> None:
        self.alpha, self.coef, self.bound = alpha, np.ascontiguousarray(coef, dtype=np.float64), bound
        M, n = stack.n_kernels, stack.n_rows
        self.kernels = (np.arange(M, dtype=np.intp) if kernels is None
                        else np.ascontiguousarray(kernels, dtype=np.intp))
        self.covered = np.zeros(M, dtype=bool)
        self.covered[self.kernels] = True
        nonzero = self.coef != 0
        self.u_bound = np.empty((len(self.kernels), n), dtype=np.float64)
        self.u_free = np.empty((len(self.kernels), n), dtype=np.float64)
        if len(self.kernels):
            for rows, out in ((nonzero & bound, self.u_bound), (nonzero & ~bound, self.u_free)):
                _stack.products_dense(stack.data, self.coef, np.flatnonzero(rows).astype(np.intp),
                                      self.kernels, out)

    def forms(self) -> np.ndarray:
        """``q[t] = v'K_m v`` for ``m = kernels[t]``."""
        # matrix-vector products are memory-bound: BLAS threads only contend (and stall on a busy machine)
        with blas_for(4.0 * self.u_bound.size):
            return self.u_bound @ self.coef + self.u_free @ self.coef

    def combined(self, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """``(K(mu) v_bound, K(mu) v_free)`` for the weights ``mu``; ``None`` when a kernel with a non-zero
        weight is not among the products' kernels."""
        if not self.covered[np.flatnonzero(weights)].all():
            return None
        w = weights[self.kernels]
        with blas_for(4.0 * self.u_bound.size):
            return w @ self.u_bound, w @ self.u_free


class CombinedColumns(KernelColumns):
    """The columns of ``K(mu) = sum_m mu_m K_m`` of a dense stack, computed when the SMO asks for them.

    A column costs one read of that row of every kernel at a non-zero weight (its rows are its columns:
    the kernels are symmetric), bit for bit the combined kernel's (the same order of sums as
    :meth:`DenseStack.combine`).  With ``products`` (of the inner solution the solve starts from), the
    SMO takes its starting gradient from them (:attr:`warm_products`) instead of reading the support's
    rows: a warm-started solve then reads only the columns it touches.

    Parameters
    ----------
    stack : DenseStack
        A whole square dense stack of symmetric kernels (:func:`supports_products`).
    weights : array-like of shape (M,)
        The weights ``mu``.
    diag : ndarray of shape (M, n)
        The kernels' diagonals (``stack.diag()``, kept by the caller across solves).
    products : StackProducts, optional
        Products of the start's coefficients.
    cache_size : float, optional
        Megabytes of columns the SMO may cache; by default all ``n`` columns (the memory of the combined
        kernel this replaces).
    """

    def __init__(self, stack: DenseStack, weights: np.ndarray, diag: np.ndarray,
                 products: StackProducts | None = None, cache_size: float | None = None) -> None:
        self.stack = stack
        self.weights, self._active = _weights(weights, stack.n_kernels)
        self.n = stack.n_rows
        self._diag = diag
        self.products = products
        self.cache_size = float(self.n * self.n * 8 / 2**20 + 1.0) if cache_size is None else float(cache_size)

    def column(self, i: int, out: np.ndarray) -> None:
        self.columns(np.array([i], dtype=np.intp), out[None])

    def columns(self, idx: np.ndarray, out: np.ndarray) -> None:
        _stack.combine_rows(self.stack.data, self.weights, self._active, np.ascontiguousarray(idx, dtype=np.intp),
                            out)

    def diagonal(self) -> np.ndarray:
        return self.weights @ self._diag

    def warm_products(self) -> tuple[np.ndarray, ...] | None:
        """``(alpha, coef, bound, K(mu) v_bound, K(mu) v_free)`` of the products' start, or ``None``.

        :func:`multikernel.solve.smo.solve_qp` uses them only after checking that they are for its start.
        """
        if self.products is None:
            return None
        parts = self.products.combined(self.weights)
        if parts is None:
            return None
        p = self.products
        return (p.alpha, p.coef, p.bound, *parts)
