"""The kernel stack: M base kernels over the same rows and columns, and the fused operations on them."""

from __future__ import annotations

import numpy as np

from multikernel._ext import _stack

__all__ = ["KernelStack", "DenseStack"]


class KernelStack:
    """Abstract stack of ``n_kernels`` matrices of shape ``(n_rows, n_cols)``.

    Solvers use only the operations below, so that every storage backend (dense, memory-mapped, lazy)
    serves every solver.
    """

    n_kernels: int
    n_rows: int
    n_cols: int

    def combine(self, weights: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """``sum_m weights[m] * K_m`` over the kernels with a non-zero weight, as float64."""
        raise NotImplementedError

    def quad_forms(self, v: np.ndarray) -> np.ndarray:
        """``q[m] = v' K_m v`` for every kernel (square stacks), touching only the non-zeros of ``v``."""
        raise NotImplementedError

    def kernel(self, m: int) -> np.ndarray:
        """The ``m``-th kernel as an array."""
        raise NotImplementedError


class DenseStack(KernelStack):
    """A stack held in memory as one C-contiguous array of shape (M, n_rows, n_cols).

    Parameters
    ----------
    data : ndarray of shape (M, n_rows, n_cols), float32 or float64
        The kernels; used without a copy when already C-contiguous in a supported dtype.
    """

    def __init__(self, data: np.ndarray) -> None:
        data = np.asarray(data)
        if data.ndim != 3:
            raise ValueError(f"a kernel stack must have shape (M, n_rows, n_cols); got shape {data.shape}")
        if data.dtype not in (np.float32, np.float64):
            data = data.astype(np.float64)
        self.data = np.ascontiguousarray(data)
        self.n_kernels, self.n_rows, self.n_cols = self.data.shape

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype

    @property
    def nbytes(self) -> int:
        return int(self.data.nbytes)

    def combine(self, weights: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        weights = np.ascontiguousarray(weights, dtype=np.float64)
        if weights.shape != (self.n_kernels,):
            raise ValueError(f"expected {self.n_kernels} weights, got shape {weights.shape}")
        if out is None:
            out = np.empty((self.n_rows, self.n_cols), dtype=np.float64)
        active = np.flatnonzero(weights).astype(np.intp)
        _stack.combine_dense(self.data, weights, active, out)
        return out

    def quad_forms(self, v: np.ndarray) -> np.ndarray:
        if self.n_rows != self.n_cols:
            raise ValueError("quad_forms needs a square (train x train) stack")
        v = np.ascontiguousarray(v, dtype=np.float64)
        support = np.flatnonzero(v).astype(np.intp)
        out = np.empty(self.n_kernels, dtype=np.float64)
        _stack.quad_forms_dense(self.data, v, support, out)
        return out

    def kernel(self, m: int) -> np.ndarray:
        return self.data[m]
