"""The virtual stack of input-output kernels ``P_t' K_m P_t`` (spec section 3.1), never materialised.

A candidate ``t`` (a label vector, or a choice of one instance per unit) is a signed selection: unit ``u`` of
the SVM is instance ``index[t, u]`` of the input stack with sign ``sign[t, u]``.

* Output ambiguity (semi-supervised learning, instance-level MIL, clustering): the units are the samples,
  ``index[t] = 0..n-1`` and ``sign[t] = y_t``, so the kernel is ``K_m o (y_t y_t')``.
* Input ambiguity (bag-level MIL as in KI-SVM): the units are the positive bags and the negative instances,
  ``index[t]`` picks the key instance of each positive bag and ``sign`` is the unit's label, so the kernel
  is ``(y y') o K_m[index_t, index_t]`` (``conv(K o delta_t delta_t')`` with one instance per bag).

Kernel ``k = t * M + m`` of the stack is the pair (candidate ``t``, input kernel ``m``): the weights are the
``T x M`` matrix ``D`` of the thesis, one group of ``M`` per candidate.  The outer solvers only call
``combine`` (one ``U x U`` matrix per solve) and ``quad_forms``: ``q_{t,m} = u_t' K_m u_t`` with
``u_t = P_t (alpha)``, read from the input stack's own ``quad_forms``.
"""

from __future__ import annotations

import numpy as np

from multikernel.stack.storage import KernelStack

__all__ = ["IOStack"]


class IOStack(KernelStack):
    """``M * T`` input-output kernels over an input stack of ``M`` kernels and ``T`` candidates.

    Parameters
    ----------
    stack : KernelStack
        The ``M`` square input kernels over ``N`` instances.
    index : ndarray of shape (T, U), int
        Instance of each unit for each candidate.
    sign : ndarray of shape (T, U)
        Sign (label) of each unit for each candidate, in {-1, +1}.
    offset : float, default=0
        Constant added to every input kernel (``K_m + offset 11'``): the thesis absorbs the bias in the
        feature map this way (footnote 1 of chapter 4).
    """

    def __init__(self, stack: KernelStack, index: np.ndarray, sign: np.ndarray, offset: float = 0.0) -> None:
        stack._check_square("an input-output stack")
        index = np.atleast_2d(np.asarray(index, dtype=np.intp))
        sign = np.atleast_2d(np.asarray(sign, dtype=np.float64))
        if index.shape != sign.shape or index.shape[0] < 1:
            raise ValueError(f"index and sign must have the same shape (T, U) with T >= 1; got {index.shape} "
                             f"and {sign.shape}")
        if index.min() < 0 or index.max() >= stack.n_rows:
            raise ValueError(f"index entries must lie in [0, {stack.n_rows}); got [{index.min()}, {index.max()}]")
        if not np.all(np.abs(sign) == 1.0):
            raise ValueError("sign entries must be -1 or +1")
        self.inputs, self.index, self.sign, self.offset = stack, index, sign, float(offset)
        self.n_inputs = stack.n_kernels
        self.n_candidates = index.shape[0]
        self.n_kernels = self.n_inputs * self.n_candidates
        self.n_rows = self.n_cols = index.shape[1]
        # Output ambiguity: every candidate keeps the identity selection, so sum_t d_t K o y_t y_t' =
        # K o (Y' diag(d) Y) costs one product of (U x T)(T x U) per input kernel instead of T combinations.
        self._identity = bool(index.shape[1] == stack.n_rows and np.all(index == np.arange(stack.n_rows)))

    def with_candidate(self, index: np.ndarray, sign: np.ndarray) -> IOStack:
        """A new stack with one more candidate (the stored kernels are shared, not copied)."""
        return IOStack(self.inputs, np.vstack([self.index, index]), np.vstack([self.sign, sign]), self.offset)

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(np.float64)

    @property
    def nbytes(self) -> int:
        return int(self.index.nbytes + self.sign.nbytes)

    def _weights(self, weights: np.ndarray) -> np.ndarray:
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != (self.n_kernels,):
            raise ValueError(f"weights must have length {self.n_kernels}; got shape {w.shape}")
        return w.reshape(self.n_candidates, self.n_inputs)

    def combine(self, weights: np.ndarray, out: np.ndarray | None = None, accumulate: bool = False
                ) -> np.ndarray:
        W = self._weights(weights)
        U = self.n_rows
        if out is None:
            if accumulate:
                raise ValueError("accumulate=True needs the array to add to, as out")
            out = np.zeros((U, U))
        elif not accumulate:
            out[...] = 0.0
        active = np.flatnonzero(np.any(W != 0, axis=1))
        if len(active) == 0:
            return out
        S = self.sign[active]
        if self.offset:
            out += self.offset * (S.T * W[active].sum(axis=1)) @ S
        if self._identity:
            for m in np.flatnonzero(np.any(W[active] != 0, axis=0)):
                out += np.asarray(self.inputs.kernel(m), dtype=np.float64) * ((S.T * W[active, m]) @ S)
            return out
        for t in active:
            K = self.inputs.combine(W[t])
            idx = self.index[t]
            out += K[np.ix_(idx, idx)] * np.outer(self.sign[t], self.sign[t])
        return out

    def unit_vectors(self, v: np.ndarray, candidates: np.ndarray | None = None) -> np.ndarray:
        """``P_t v`` in instance space for each candidate: shape (len(candidates), N)."""
        cands = np.arange(self.n_candidates) if candidates is None else np.asarray(candidates)
        out = np.zeros((len(cands), self.inputs.n_rows))
        for j, t in enumerate(cands):
            np.add.at(out[j], self.index[t], v * self.sign[t])
        return out

    def quad_forms(self, v: np.ndarray, kernels: np.ndarray | None = None) -> np.ndarray:
        v = self._check_v(v)
        M = self.n_inputs
        if kernels is None:
            ks = np.arange(self.n_kernels)
        else:
            ks = np.asarray(kernels, dtype=np.intp).ravel()
        groups = np.unique(ks // M)
        u = self.unit_vectors(v, groups)
        q = np.empty((self.n_candidates, M))
        for j, t in enumerate(groups):
            q[t] = self.inputs.quad_forms(u[j])
            if self.offset:
                q[t] += self.offset * float(v @ self.sign[t]) ** 2
        return q.ravel()[ks]

    def kernel(self, k: int) -> np.ndarray:
        t, m = divmod(int(k), self.n_inputs)
        idx = self.index[t]
        K = np.asarray(self.inputs.kernel(m), dtype=np.float64)[np.ix_(idx, idx)] + self.offset
        return K * np.outer(self.sign[t], self.sign[t])

    def diag(self) -> np.ndarray:
        d = self.inputs.diag()  # (M, N)
        return (d[:, self.index] + self.offset).transpose(1, 0, 2).reshape(self.n_kernels, self.n_rows)

    def subset(self, rows, cols=None) -> KernelStack:
        raise NotImplementedError("an input-output stack is built per training set; subset the input stack")
