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
``combine`` (one ``U x U`` matrix per solve) or ``column_provider``, and ``quad_forms``:
``q_{t,m} = u_t' K_m u_t`` with ``u_t = P_t (alpha)``, read from the input stack's own ``quad_forms``.

Input ambiguity over an in-memory dense input stack gives the SVM step its columns on demand
(:class:`IOColumns`): the SMO reads a few hundred columns of the ``U x U`` combination, while forming it
densely read the ``M`` input kernels once per solve (on musk2, 5620 x 5620 per combination: 2-4 s each on
the shared machine against 0.05 s for the SMO itself).
"""

from __future__ import annotations

import contextlib

import numpy as np

from multikernel._ext import _stack
from multikernel._threads import one_blas_thread
from multikernel.core.interfaces import KernelColumns
from multikernel.stack.storage import DenseStack, KernelStack

__all__ = ["IOColumns", "IOStack"]


def _blas_for(n_rows: int) -> contextlib.AbstractContextManager:
    """One BLAS thread for small products: thread start-up costs more than the (U x T)(T x U) product."""
    return contextlib.nullcontext() if n_rows > 1500 else one_blas_thread()


class IOStack(KernelStack):
    """``M * T`` input-output kernels over an input stack of ``M`` kernels and ``T`` candidate groups.

    Group ``t`` holds one candidate per input kernel (Algorithm 3 keeps a candidate set per input kernel);
    a candidate shared by all kernels is given once, with shape (T, U).

    Parameters
    ----------
    stack : KernelStack
        The ``M`` square input kernels over ``N`` instances.
    index : ndarray of shape (T, U) or (T, M, U), int
        Instance of each unit for each candidate.
    sign : ndarray of the shape of ``index``
        Sign (label) of each unit for each candidate, in {-1, +1}.
    offset : float, default=0
        Constant added to every input kernel (``K_m + offset 11'``): the thesis absorbs the bias in the
        feature map this way (footnote 1 of chapter 4).
    """

    def __init__(self, stack: KernelStack, index: np.ndarray, sign: np.ndarray, offset: float = 0.0) -> None:
        stack._check_square("an input-output stack")
        M = stack.n_kernels
        index = np.asarray(index, dtype=np.intp)
        sign = np.asarray(sign, dtype=np.float64)
        if index.shape != sign.shape or index.ndim not in (2, 3) or index.shape[0] < 1:
            raise ValueError(f"index and sign must have the same shape (T, U) or (T, M, U) with T >= 1; got "
                             f"{index.shape} and {sign.shape}")
        if index.ndim == 2:
            index = np.repeat(index[:, None, :], M, axis=1)
            sign = np.repeat(sign[:, None, :], M, axis=1)
        if index.shape[1] != M:
            raise ValueError(f"index has {index.shape[1]} candidates per group for {M} input kernels")
        if index.min() < 0 or index.max() >= stack.n_rows:
            raise ValueError(f"index entries must lie in [0, {stack.n_rows}); got [{index.min()}, {index.max()}]")
        if not np.all(np.abs(sign) == 1.0):
            raise ValueError("sign entries must be -1 or +1")
        self.inputs, self.index, self.sign, self.offset = stack, index, sign, float(offset)
        self.n_inputs = M
        self.n_candidates = index.shape[0]
        self.n_kernels = M * self.n_candidates
        self.n_rows = self.n_cols = index.shape[2]
        # Output ambiguity: every candidate keeps the identity selection, so sum_t d_t K o y_t y_t' =
        # K o (Y' diag(d) Y) costs one product (U x T)(T x U) per input kernel instead of T combinations.
        self._identity = bool(self.n_rows == stack.n_rows and np.all(index == np.arange(stack.n_rows)))
        # Input ambiguity: the units shared by every candidate (the negative instances of bag-level MIL) come
        # last; their block is one combination of the input stack restricted to them, whatever the number
        # of candidates, and only the rows of the varying units are gathered per candidate.
        same = np.all((index == index[:1, :1]) & (sign == sign[:1, :1]), axis=(0, 1))
        varying = np.flatnonzero(~same)
        self._split = 0 if len(varying) == 0 else int(varying[-1]) + 1
        # The shared block's kernels, signed, per split: built on the first combination and handed on by
        # with_group (the cutting plane adds groups that keep the shared units), not rebuilt per solve.
        self._shared: dict[int, KernelStack] = {}
        # The products K_m P_{t,m} v of the last quadratic forms of every kernel (columns on demand only):
        # the next SVM solve, warm-started at v, takes its starting gradient from them (IOColumns.warm_products)
        # instead of reading the columns of v's support (about half of the columns an MKL solve read on musk2).
        self._products: tuple[np.ndarray, dict[int, tuple[np.ndarray, np.ndarray]]] | None = None

    def with_group(self, index: np.ndarray, sign: np.ndarray) -> IOStack:
        """A new stack with one more group, ``index`` and ``sign`` of shape (M, U) or (U,)."""
        index = np.broadcast_to(index, (self.n_inputs, self.n_rows))[None]
        sign = np.broadcast_to(sign, (self.n_inputs, self.n_rows))[None]
        new = IOStack(self.inputs, np.concatenate([self.index, index]), np.concatenate([self.sign, sign]),
                      self.offset)
        if new._split == self._split:
            new._shared = self._shared
        return new

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
        with _blas_for(U):
            self._combine(W, out)
        return out

    def _combine(self, W: np.ndarray, out: np.ndarray) -> None:
        used = np.flatnonzero(np.any(W != 0, axis=0))
        if self.offset and len(used):
            # offset * sum_{t,m} d_{t,m} s_{t,m} s_{t,m}': one (U x TM)(TM x U) product, one pass over out
            t_, m_ = np.nonzero(W[:, used])
            S = self.sign[t_, used[m_]]
            out += (S.T * (self.offset * W[t_, used[m_]])) @ S
        a = self._split
        for m in used:
            K = np.asarray(self.inputs.kernel(m), dtype=np.float64)
            active = np.flatnonzero(W[:, m])
            if self._identity:
                S = self.sign[active, m]
                out += K * ((S.T * W[active, m]) @ S)  # K o (sum_t d_{t,m} s_t s_t')
                continue
            for t in active:
                idx, sg = self.index[t, m], self.sign[t, m]
                rows = K[np.ix_(idx[:a], idx)]
                rows *= W[t, m] * sg[:a, None]
                rows *= sg
                out[:a] += rows
                out[a:, :a] += rows[:, a:].T
        if a < self.n_rows and not self._identity:
            block = self._shared_stack().combine(W.sum(axis=0))
            out[a:, a:] += block

    def column_provider(self, weights: np.ndarray) -> KernelColumns | None:
        """Columns on demand (:class:`IOColumns`) for input ambiguity over an in-memory dense input stack.

        Output ambiguity (every candidate the identity selection) combines densely: its SVM step has as many
        units as samples and its combination is one product per input kernel.  Other input stacks
        (memory maps, lazy) keep the dense combination of their shared block.
        """
        if not self._serves_columns():
            return None
        return IOColumns(self, self._weights(weights))

    def _serves_columns(self) -> bool:
        inputs = self.inputs
        return not self._identity and isinstance(inputs, DenseStack) and inputs._full and not isinstance(
            inputs.data, np.memmap)

    def _shared_stack(self) -> KernelStack:
        """The input kernels on the shared units, with their signs: ``K_m[shared, shared] o s s'``.

        An in-memory dense input stack is copied once (contiguous: combining it streams, where a view
        gathers every entry: ~3x faster per solve); other stacks (memory maps, lazy) keep a view.
        """
        a = self._split
        if a not in self._shared:
            fixed, sg = self.index[0, 0, a:], self.sign[0, 0, a:]
            view = self.inputs.subset(fixed)
            uniform = bool(np.all(sg == sg[0]))  # s s' = 1: nothing to apply
            if isinstance(view, DenseStack) and not isinstance(view.data, np.memmap):
                # one gathering pass per kernel (the stack's own combination, weight e_m), signs applied in place
                data = np.empty((view.n_kernels, view.n_rows, view.n_cols))
                for m in range(view.n_kernels):
                    view.combine(np.eye(view.n_kernels)[m], out=data[m])
                    if not uniform:
                        data[m] *= sg[:, None]
                        data[m] *= sg
                stack = DenseStack(data, symmetric=True)  # read by upper triangles: the IO kernel is symmetric
            elif uniform:
                stack = view
            else:
                stack = _SignedStack(view, sg)
            self._shared[a] = stack
        return self._shared[a]

    def lift(self, v: np.ndarray, t: int, m: int) -> np.ndarray:
        """``P_{t,m} v`` in instance space: the coefficients of candidate ``(t, m)`` on the N instances."""
        return np.bincount(self.index[t, m], weights=v * self.sign[t, m], minlength=self.inputs.n_rows)

    def quad_forms(self, v: np.ndarray, kernels: np.ndarray | None = None) -> np.ndarray:
        v = self._check_v(v)
        ks = np.arange(self.n_kernels) if kernels is None else np.asarray(kernels, dtype=np.intp).ravel()
        t_of, m_of = np.divmod(ks, self.n_inputs)
        q = np.empty(len(ks))
        if isinstance(self.inputs, DenseStack):
            # all forms of a solve served by columns: keep the whole products for the next solve's start
            keep = kernels is None and self._serves_columns()
            products = {}
            for m in np.unique(m_of):
                sel = np.flatnonzero(m_of == m)
                U = self._lift_many(v, t_of[sel], m)
                # every candidate of kernel m in one product: K_m is read once, not once per candidate.  (Not
                # the input stack's own quad_forms: its first reuse checks the stored kernels' exact
                # symmetry, a transposed pass over every kernel, 2 s per 6598 x 6598 kernel on musk2.)
                K = np.asarray(self.inputs.kernel(m))
                s = np.flatnonzero(np.any(U != 0, axis=1))
                if keep:
                    # (K_m U)' = U' K_m from the rows of the support (K_m symmetric): whole products
                    with _blas_for(len(K)):
                        P = U[s].T @ K[s]
                    q[sel] = np.einsum("ij,ji->j", U[s], P[:, s])
                    products[int(m)] = (t_of[sel], P)
                    continue
                if len(s) < 0.7 * len(K):
                    K, U = K[np.ix_(s, s)], U[s]
                with _blas_for(len(K)):
                    q[sel] = np.einsum("ij,ij->j", U, K @ U)
            if keep:
                self._products = (v.copy(), products)
        else:
            # other stacks compute their kernels' blocks in one pass: one call per lift
            shared = np.all(self.index == self.index[:, :1], axis=(1, 2)) & np.all(
                self.sign == self.sign[:, :1], axis=(1, 2))
            for t in np.unique(t_of):
                sel = np.flatnonzero(t_of == t)
                if shared[t]:  # one candidate for the whole group: one lift gives its M forms
                    q[sel] = self.inputs.quad_forms(self.lift(v, t, 0), m_of[sel])
                else:
                    for j in sel:
                        q[j] = self.inputs.quad_forms(self.lift(v, t, m_of[j]), [m_of[j]])[0]
        if self.offset:
            q += self.offset * (self.sign[t_of, m_of] @ v) ** 2
        return q

    def _lift_many(self, v: np.ndarray, ts: np.ndarray, m: int) -> np.ndarray:
        """``P_{t,m} v`` for the candidates ``ts`` of input kernel ``m``, as columns: shape (N, len(ts))."""
        U = np.empty((self.inputs.n_rows, len(ts)))
        for j, t in enumerate(ts):
            U[:, j] = np.bincount(self.index[t, m], weights=v * self.sign[t, m], minlength=self.inputs.n_rows)
        return U

    def kernel(self, k: int) -> np.ndarray:
        t, m = divmod(int(k), self.n_inputs)
        idx = self.index[t, m]
        K = np.asarray(self.inputs.kernel(m), dtype=np.float64)[np.ix_(idx, idx)] + self.offset
        return K * np.outer(self.sign[t, m], self.sign[t, m])

    def diag(self) -> np.ndarray:
        d = self.inputs.diag()  # (M, N)
        return (d[np.arange(self.n_inputs)[None, :, None], self.index] + self.offset).reshape(
            self.n_kernels, self.n_rows)

    def subset(self, rows, cols=None) -> KernelStack:
        raise NotImplementedError("an input-output stack is built per training set; subset the input stack")


class IOColumns(KernelColumns):
    """Columns of ``sum_{t,m} d_{t,m} K^IO_{t,m}`` (offset included) computed on demand from the input kernels.

    Column ``i`` is ``sum_{t,m} d_{t,m} s_{t,m,i} s_{t,m} o (K_m[x_{t,m,i}, x_{t,m}] + offset)``: rows of the
    input kernels (contiguous), gathered at the candidates' instances.  The units shared by every candidate
    (the negative instances of bag-level MIL, the last ``U - a``) have the same instance and sign in every
    group: their part reads one row per input kernel with the group-summed weight ``sum_t d_{t,m}``.

    Parameters
    ----------
    stack : IOStack
        Over a full in-memory :class:`~multikernel.stack.storage.DenseStack` of symmetric input kernels.
    W : ndarray of shape (T, M)
        The kernel weights ``d_{t,m}``.
    cache_size : float, default=200
        Megabytes of columns the SMO may cache.
    """

    def __init__(self, stack: IOStack, W: np.ndarray, cache_size: float = 200.0) -> None:
        self.stack, self.W, self.cache_size = stack, np.asarray(W, dtype=np.float64), cache_size
        self.n = stack.n_rows
        self.a = stack._split
        t_, m_ = np.nonzero(self.W)
        self._pairs = list(zip(t_.tolist(), m_.tolist(), self.W[t_, m_].tolist(), strict=True))
        self._summed = self.W.sum(axis=0)  # the shared units' weight per input kernel
        self._summed_active = np.flatnonzero(self._summed).astype(np.intp)
        # offset * sum_{t,m} d s s' is the rank-|pairs| product S' diag(w) S
        self._S = stack.sign[t_, m_]
        self._wS = (stack.offset * self.W[t_, m_])[:, None] * self._S
        # the shared units' instances and signs (the same in every group)
        self._tail_ind = np.ascontiguousarray(stack.index[0, 0, self.a:], dtype=np.intp)
        self._tail_sg = stack.sign[0, 0, self.a:]
        self._tail_sign = float(self._tail_sg[0]) if len(self._tail_sg) and np.all(
            self._tail_sg == self._tail_sg[0]) else None  # one sign for every shared unit (MIL: -1)

    def column(self, i: int, out: np.ndarray) -> None:
        self.columns(np.array([i]), out[None])

    def columns(self, idx: np.ndarray, out: np.ndarray) -> None:
        st, a = self.stack, self.a
        idx = np.asarray(idx, dtype=np.intp)
        out[...] = 0.0 if not len(self._pairs) else self._wS[:, idx].T @ self._S
        kern = [np.asarray(st.inputs.kernel(m)) for m in range(st.n_inputs)]  # views of the stored kernels
        varying, shared = np.flatnonzero(idx < a), np.flatnonzero(idx >= a)
        # Units that vary with the candidate: one row per (t, m), gathered at that candidate's instances.
        if len(varying):
            for t, m, w in self._pairs:
                ind, sg = st.index[t, m], st.sign[t, m]
                rows = kern[m][ind[idx[varying]]][:, ind]
                rows *= sg
                rows *= (w * sg[idx[varying]])[:, None]
                out[varying] += rows
        if len(shared) and a < self.n:
            # every column asked for is a shared unit's (the usual request): rows of out as a view, no gather
            rows = slice(None) if len(shared) == len(idx) else shared
            inst, sg = st.index[0, 0, idx[shared]], st.sign[0, 0, idx[shared]]
            if a:  # the varying units' entries of these rows, per candidate (a few columns)
                for t, m, w in self._pairs:
                    ind, s_t = st.index[t, m, :a], st.sign[t, m, :a]
                    out[rows, :a] += (w * sg)[:, None] * (kern[m][np.ix_(inst, ind)] * s_t)
            if len(self._summed_active):
                # sum_m (sum_t d_{t,m}) K_m[inst, tail]: one fused, threaded pass of gathers over the kernels'
                # rows (was a copy, a scaled sum and a gather per kernel: ~3x the memory traffic)
                tail = np.empty((len(inst), self.n - a))
                _stack.combine_gather(st.inputs.data, self._summed, self._summed_active,
                                      np.ascontiguousarray(inst), self._tail_ind, tail)
                if self._tail_sign is None:
                    tail *= self._tail_sg
                    tail *= sg[:, None]
                else:
                    tail *= (self._tail_sign * sg)[:, None]
                out[rows, a:] += tail

    def warm_products(self) -> tuple[np.ndarray, ...] | None:
        """``(alpha, coef, bound, K v_bound, K v_free)`` at the ``v`` of the stack's last quadratic forms.

        From the products ``K_m P_{t,m} v`` that :meth:`IOStack.quad_forms` kept: ``(K v)_u = sum_{t,m}
        d_{t,m} s_{t,m,u} (K_m P_{t,m} v)[x_{t,m,u}] + offset sum_{t,m} d_{t,m} s_{t,m,u} (s_{t,m}' v)``, no
        kernel column.  For IOKL's SVM step (:class:`~multikernel.iokl.inner.SimplexRidge`: ``alpha >= 0``
        and no upper bound, unsigned) the variables at a bound are the zeros of ``v``, so ``K v_bound = 0``.
        :func:`multikernel.solve.smo.solve_qp` uses them only after checking that they are for its start.
        """
        st = self.stack
        if st._products is None:
            return None
        v, products = st._products
        bound = v <= 0.0
        if np.any(v[bound] != 0.0):
            return None
        Kv = np.zeros(self.n)
        for t, m, w in self._pairs:
            if m not in products:
                return None
            ts, P = products[m]
            j = np.flatnonzero(ts == t)
            if len(j) != 1:
                return None
            Kv += (w * st.sign[t, m]) * P[j[0], st.index[t, m]]
        if len(self._pairs) and st.offset:
            Kv += self._wS.T @ (self._S @ v)
        return v, v, bound, np.zeros(self.n), Kv

    def diagonal(self) -> np.ndarray:
        st = self.stack
        d = st.inputs.diag()  # (M, N)
        out = np.zeros(self.n)
        for t, m, w in self._pairs:
            out += w * (d[m, st.index[t, m]] + st.offset)
        return out


class _SignedStack(KernelStack):
    """``K_m o s s'`` over a square stack that is not copied (a memory map or a lazy stack): combine only."""

    def __init__(self, stack: KernelStack, sign: np.ndarray) -> None:
        self.stack, self.sign = stack, sign
        self.n_kernels, self.n_rows, self.n_cols = stack.n_kernels, stack.n_rows, stack.n_cols

    def combine(self, weights: np.ndarray, out: np.ndarray | None = None, accumulate: bool = False
                ) -> np.ndarray:
        block = self.stack.combine(weights)
        block *= self.sign[:, None]
        block *= self.sign
        if out is None:
            return block
        if accumulate:
            out += block
        else:
            out[...] = block
        return out
