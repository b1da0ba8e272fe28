"""The combined kernel ``K(mu) = sum_m mu_m K_m`` along a sequence of weights, updated by their change.

Outer solvers evaluate ``K(mu)`` at a sequence of weights that differ in a few entries: kernels at zero
weight stay at zero, kernels at a box-simplex cap stay at the cap, and a sparse L1 solution moves only its
support.  Adding ``sum_m (mu_m - mu'_m) K_m`` over the kernels whose weight changed reads only those kernels
of the stack, where ``combine`` reads every kernel with a non-zero weight; on memory-bound stacks the
cost is proportional to the kernels read.

A stack that must never be combined densely (a lazy stack, whose ``column_provider`` is not ``None``)
gets a column provider instead: the inner solver computes the columns it needs, within its column cache.
"""

from __future__ import annotations

import numpy as np

from multikernel.core.interfaces import KernelColumns
from multikernel.stack.storage import KernelStack

__all__ = ["CombinedKernel"]


class CombinedKernel:
    """``K(mu)`` for successive weights, recomputed from the change of weights when that reads less.

    The returned array is owned by this object and overwritten by the next call: use it before asking for
    the next weights.  Rounding errors of the updates are bounded by a recomputation from scratch every
    ``refresh_every`` updates (each update adds about one unit in the last place of ``K``).

    For a stack with a column provider (:meth:`KernelStack.column_provider`, the lazy backend) the call
    returns that provider, a :class:`~multikernel.solve.smo.KernelColumns`, and no ``n x n`` array is ever
    formed.  Every sample loss accepts both.

    Parameters
    ----------
    stack : KernelStack
        The base kernels (square or not).
    refresh_every : int, default=32
        Updates between two recomputations from scratch.
    """

    def __init__(self, stack: KernelStack, refresh_every: int = 32) -> None:
        self.stack = stack
        self.refresh_every = int(refresh_every)
        self._weights: np.ndarray | None = None
        self._K: np.ndarray | None = None
        self._updates = 0

    def release(self) -> None:
        """Free the combined kernel (its ``n x n`` memory); the next call recomputes it from scratch.

        For a solver that no longer needs it: the one-pass path reads ``K(mu)`` by columns from then on.
        """
        self._K = self._weights = None
        self._updates = 0

    def __call__(self, weights: np.ndarray) -> np.ndarray | KernelColumns:
        weights = np.asarray(weights, dtype=np.float64)
        columns = self.stack.column_provider(weights)
        if columns is not None:
            return columns
        previous = self._weights
        if previous is not None and previous.shape == weights.shape and self._updates < self.refresh_every:
            delta = weights - previous
            changed = np.count_nonzero(delta)
            if changed == 0:
                return self._K
            if changed < np.count_nonzero(weights):
                self.stack.combine(delta, out=self._K, accumulate=True)
                self._weights = weights.copy()
                self._updates += 1
                return self._K
        self._K = self.stack.combine(weights, out=self._K)
        self._weights = weights.copy()
        self._updates = 0
        return self._K
