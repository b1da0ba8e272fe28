"""The factored kernel stack: each kernel in its cheapest faithful form, in groups that share their points.

Most kernels of a paper-style family are exactly or nearly low-rank: a kernel on one feature with ``k``
distinct values has rank at most ``k`` (2 for a binary feature), a linear kernel on ``d`` features rank at
most ``d``, a Gaussian kernel on one feature decays to numerical rank a few tens.  :class:`FactoredStack`
stores kernels in **groups** of kernels that are functions of the same features (one feature, or all of
them).  A group maps the ``n`` samples to its ``k`` distinct *points* (``index``, shape (n,)), and each of
its kernels is, on the points, either

* ``dense``: the ``k x k`` kernel ``S_m`` between the points, exact (``K_m = P S_m P'`` with ``P`` the
  0/1 map of samples to points), or
* ``factor``: ``L_m`` of shape ``(k, r_m)`` from pivoted Cholesky, ``K_m ~ P L_m L_m' P'``, with the
  diagonal ``d_m`` of the residual ``S_m - L_m L_m'`` (positive semi-definite: a Schur complement).

The operations the solvers use cost per group, not per kernel entry: a quadratic form is
``w' S_m w`` or ``||L_m' w||^2`` with ``w = P'v`` (``O(n + k r_m)``); the combination
``K(mu) = sum_g P (sum_m mu_m S_m) P'`` forms each group's ``k x k`` combination, then adds it gathered
by ``index`` (one ``n x n`` pass per group, not per kernel; with many groups of very few points, all of those
by one symmetric rank update instead).  Row/column subsets (cross-validation folds)
only restrict the maps: the points and their kernels are shared, never copied.

**Certificate.** The residual ``E_m = K_m - P L_m L_m' P'`` is positive semi-definite, so for any ``v``,
``0 <= v'E_m v = w'E_S w <= (sum_a |w_a| sqrt(d_m[a]))^2`` (Cauchy-Schwarz on a PSD matrix,
``|E_ab| <= sqrt(E_aa E_bb)``).  :meth:`FactoredStack.truncation_bound` returns that bound; the outer loop
adds it to the quadratic forms of its lower bound (:func:`multikernel.solve.outer.certified_forms`), and
the upper bound (the inner primal objective on the factored kernels) already bounds the exact problem's,
since ``K_m >= L_m L_m'`` makes every inner maximum on the exact kernels smaller.  A certified gap on a
factored stack therefore bounds the distance to the optimum of the problem on the exact kernels.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import attrs
import numpy as np
from scipy.linalg import blas, lapack

from multikernel._ext import _stack
from multikernel.core.interfaces import KernelBuilder
from multikernel.core.validation import check_positive_real
from multikernel.stack.blocks import group_builders, raw_blocks
from multikernel.stack.memory import StackMemoryEstimate
from multikernel.stack.normalization import Normalization
from multikernel.stack.storage import KernelStack, _kernel_index, _out, _weights

__all__ = ["FactoredStack", "KernelGroup", "pivoted_cholesky", "factor_kernel", "rank_bound",
           "estimate_factored_memory", "build_factored", "DEFAULT_FACTOR_TOL"]

#: Default truncation of pivoted Cholesky: it stops when every residual diagonal entry is at most this
#: fraction of the kernel's largest diagonal entry.  The certificate pays ``(sum_a |w_a| sqrt(d_a))^2``,
#: about ``tol * ||alpha||_1^2`` on a trace-normalized kernel, which must stay well below ``tol * objective``
#: even at C = 100 on a few hundred points; at 1e-10 it did on the soft margin sets (docs/kernels.md).
DEFAULT_FACTOR_TOL = 1e-10
#: Groups with at most this fraction of distinct points (of the samples) are compressed to their points.
_COMPRESS_FRACTION = 0.5
#: Kernels on at most this many points are kept dense on the points: exact, and as small as a factor.
_SMALL_POINTS = 32
#: A factor is kept only when its rank is at most this fraction of the points (else the dense kernel on the
#: points is about as small, and exact).
_FACTOR_FRACTION = 0.5
#: A square combination with at least ``_EIGEN_MIN_GROUPS`` groups of at most ``_EIGEN_POINTS`` points adds
#: them as ``B B'`` (``B`` the samples' rows of the eigenvectors of each group's combination on its points,
#: scaled), all in one symmetric rank update, instead of one gathered ``n x n`` pass per group: ``n^2 k`` flops
#: at BLAS speed against ``n^2`` indexed reads per group.  On a fold of the German credit stand-in (54 one-hot
#: columns) the combination takes 0.5-0.6x the time; with a handful of such groups (heart, australian) the
#: eigendecompositions and the extra pass cost more than the gathers (1.3x on heart), and more points per group
#: make the update dearer than the gather (pima's 17-point feature).
_EIGEN_POINTS = 8
_EIGEN_MIN_GROUPS = 16


def pivoted_cholesky(S: np.ndarray, tol: float, max_rank: int | None = None
                     ) -> tuple[np.ndarray, np.ndarray] | None:
    """``L`` of shape (k, r) with ``S ~ L L'`` and the residual diagonal ``d`` (shape (k,), float64).

    LAPACK's pivoted Cholesky (``dpstrf``) on the symmetric PSD float64 matrix ``S``, stopped when the
    largest remaining diagonal entry is at most ``tol * max(diag(S))``.  ``d = diag(S) - rowsum(L**2)``
    (clipped at 0) plus a rounding allowance of ``k * eps * diag(S)``, so that it bounds the true residual's
    diagonal.  ``None`` when the rank would exceed ``max_rank``.
    """
    k = len(S)
    diag = np.array(np.diagonal(S), dtype=np.float64)
    top = float(diag.max(initial=0.0))
    if k == 0 or top <= 0.0:
        return np.zeros((k, 0)), np.maximum(diag, 0.0)
    c, piv, rank, info = lapack.dpstrf(np.array(S, dtype=np.float64, order="F"), tol=tol * top, lower=1)
    if info < 0:
        raise ValueError(f"pivoted Cholesky failed (LAPACK dpstrf info={info})")
    rank = int(rank)
    if max_rank is not None and rank > max_rank:
        return None
    L = np.zeros((k, rank))
    L[piv - 1] = np.tril(c)[:, :rank]
    resid = diag - np.einsum("ij,ij->i", L, L)
    resid = np.maximum(resid, 0.0) + k * np.finfo(np.float64).eps * np.abs(diag)
    return L, resid


def factor_kernel(S: np.ndarray, tol: float, min_points: int = _SMALL_POINTS
                  ) -> tuple[np.ndarray, np.ndarray] | None:
    """The factor of ``S`` (k x k, float64, PSD) worth storing: ``(L, residual diagonal)``, or ``None`` when the
    kernel stays dense on its points (at most ``min_points`` of them, or a rank above half of them at ``tol``)."""
    k = len(S)
    if k <= min_points:
        return None
    return pivoted_cholesky(S, tol, max_rank=int(_FACTOR_FRACTION * k))


@attrs.define(slots=False)
class KernelGroup:
    """Kernels that are functions of the same ``k`` points (see the module docstring).

    Attributes
    ----------
    index : ndarray of int, shape (n,)
        Point of each training sample.
    dense_ids, factor_ids : ndarray of int
        Stack indices of the group's dense and factored kernels.
    dense : ndarray of shape (len(dense_ids), k, k)
        The dense kernels on the points (exactly symmetric).
    factor : ndarray of shape (k, R)
        The factored kernels' ``L_m`` side by side: kernel ``factor_ids[t]`` owns columns
        ``offsets[t]:offsets[t + 1]``.
    offsets : ndarray of int, shape (len(factor_ids) + 1,)
    residual : ndarray of shape (len(factor_ids), k), float64
        Residual diagonals of the factored kernels on the points.
    """

    index: np.ndarray
    dense_ids: np.ndarray
    factor_ids: np.ndarray
    dense: np.ndarray
    factor: np.ndarray
    offsets: np.ndarray
    residual: np.ndarray

    def __attrs_post_init__(self) -> None:
        #: For each column of :attr:`factor`, the position of its kernel in :attr:`factor_ids`.
        self.owner = np.repeat(np.arange(len(self.factor_ids)), np.diff(self.offsets))
        #: Whether every sample is its own point, in order (no map to gather through).
        self.identity = bool(np.array_equal(self.index, np.arange(len(self.index))))
        self._points = np.arange(self.k, dtype=np.intp)
        self._dense_all = np.arange(len(self.dense_ids), dtype=np.intp)

    @property
    def k(self) -> int:
        return int(self.factor.shape[0])

    @property
    def nbytes(self) -> int:
        return int(self.index.nbytes + self.dense.nbytes + self.factor.nbytes + self.residual.nbytes)

    @classmethod
    def build(cls, index: np.ndarray, ids: Sequence[int], kernels: Sequence[np.ndarray], tol: float,
              dtype: np.dtype, min_points: int = _SMALL_POINTS) -> KernelGroup:
        """A group from its kernels on the points (float64, symmetric PSD ``k x k``), each factored when
        that keeps it faithful (residual at ``tol``) and smaller (:func:`factor_kernel`)."""
        k = int(index.max(initial=-1)) + 1 if len(kernels) == 0 else len(kernels[0])
        dense_ids, dense, factor_ids, factors, residuals = [], [], [], [], []
        for m, S in zip(ids, kernels, strict=True):
            got = factor_kernel(S, tol, min_points)
            if got is None:
                dense_ids.append(m)
                dense.append(S)
            else:
                factor_ids.append(m)
                factors.append(got[0])
                residuals.append(got[1])
        ranks = [f.shape[1] for f in factors]
        return cls(index=np.ascontiguousarray(index, dtype=np.intp),
                   dense_ids=np.array(dense_ids, dtype=np.intp), factor_ids=np.array(factor_ids, dtype=np.intp),
                   dense=np.ascontiguousarray(np.array(dense, dtype=dtype).reshape(len(dense), k, k)),
                   factor=np.ascontiguousarray(np.hstack(factors) if factors else np.zeros((k, 0)), dtype=dtype),
                   offsets=np.concatenate([[0], np.cumsum(ranks, dtype=np.intp)]).astype(np.intp),
                   residual=np.array(residuals, dtype=np.float64).reshape(len(factors), k))

    def add_combination(self, wd: np.ndarray, wf: np.ndarray, out: np.ndarray, rows: np.ndarray | None,
                        cols: np.ndarray | None) -> None:
        """``out += sum_m w_m K_m[rows, cols]`` over the group's kernels, with the weights ``wd`` of its dense
        kernels and ``wf`` of its factored ones; ``rows``/``cols`` are points (``None``: all of them, in order),
        the same array for a square block.

        The factored kernels add ``F_r diag(w) F_c'`` over the columns of non-zero weight, by BLAS (a
        symmetric rank-R update for a square block: half the products); the dense ones are summed by the
        stack's Cython loops.
        """
        if wd.any():
            active = np.flatnonzero(wd).astype(np.intp)
            if rows is None and cols is None:
                _stack.combine_dense(self.dense, wd, active, out, True, True)
            else:
                _stack.combine_gather(self.dense, wd, active, self._points if rows is None else rows,
                                      self._points if cols is None else cols, out, True)
        if wf.any():
            wcol = wf[self.owner]
            used = np.flatnonzero(wcol)
            F = self.factor[:, used] if len(used) < len(wcol) else self.factor
            Fr = F if rows is None else F[rows]
            if rows is cols:
                _add_gram(out, Fr, wcol[used])
            else:
                Fc = np.asarray(F if cols is None else F[cols], dtype=np.float64)
                out += (Fr * wcol[used]) @ Fc.T  # float64 products whatever the storage precision

    def forms(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(w'S_m w for the dense kernels, ||L_m'w||^2 for the factored ones)`` at point weights ``w``."""
        support = np.flatnonzero(w).astype(np.intp)
        qd = np.empty(len(self.dense_ids))
        if len(self.dense_ids):
            _stack.quad_forms_dense(self.dense, w, support, self._dense_all, qd, True)
        z = np.empty(self.factor.shape[1])
        _stack.factor_dots(self.factor, w, support, z)
        qf = np.bincount(self.owner, z * z, minlength=len(self.factor_ids))
        return qd, qf

    def diagonals(self) -> tuple[np.ndarray, np.ndarray]:
        """Diagonals on the points: (dense kernels (Md, k), factored kernels (Mf, k)), float64."""
        dd = np.array(np.diagonal(self.dense, axis1=1, axis2=2), dtype=np.float64)
        sq = np.asarray(self.factor, dtype=np.float64) ** 2
        df = np.zeros((len(self.factor_ids), self.k))
        for t in range(len(self.factor_ids)):
            df[t] = sq[:, self.offsets[t]:self.offsets[t + 1]].sum(axis=1)
        return dd, df


def _signed_factor(S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(B, sign)`` with ``S = B diag(sign) B'`` for the symmetric ``S`` (k x k): its eigenvectors scaled by the
    square roots of the eigenvalues' magnitudes, without those at rounding level (``k eps`` of the largest).

    A combination at non-negative weights is PSD (all signs +1); an update by a change of weights need not be.
    """
    lam, V = np.linalg.eigh(S)
    top = float(np.abs(lam).max(initial=0.0))
    keep = np.abs(lam) > len(S) * np.finfo(np.float64).eps * top
    return V[:, keep] * np.sqrt(np.abs(lam[keep])), np.sign(lam[keep])


def _add_gram(out: np.ndarray, F: np.ndarray, w: np.ndarray) -> None:
    """``out += F diag(w) F'`` (float64 products, square) by symmetric rank updates, one per sign of ``w``."""
    upper = None
    for sign in (1.0, -1.0):
        cols = np.flatnonzero(sign * w > 0) if (w < 0).any() else (np.arange(len(w)) if sign > 0 else [])
        if not len(cols):
            continue
        scale = np.sqrt(sign * w[cols])
        G = F * scale if len(cols) == len(w) else F[:, cols] * scale  # float64, whatever F's precision
        # G' is Fortran-ordered: dsyrk reads it without a copy (trans=1 gives G G')
        upper = blas.dsyrk(sign, G.T, beta=1.0, c=upper, trans=1, lower=0)
    if upper is not None:
        _stack.add_upper_symmetric(out, upper)


class FactoredStack(KernelStack):
    """A stack of kernels stored in groups of shared points, dense or factored (see the module docstring).

    Build it from features with :class:`~multikernel.stack.KernelSet` (``backend="factored"``), or from
    precomputed kernels with :meth:`from_kernels`.

    Parameters
    ----------
    groups : sequence of KernelGroup
        Every kernel index ``0 .. n_kernels - 1`` in exactly one group.
    n_samples : int
        The training samples the groups' maps cover.
    rows, cols : ndarray of int, optional
        A subset of the samples for the rows and the columns (:meth:`subset`).
    dtype : dtype
        Precision of the stored kernels and factors.
    """

    def __init__(self, groups: Sequence[KernelGroup], n_samples: int, rows: np.ndarray | None = None,
                 cols: np.ndarray | None = None, dtype: np.dtype | str = "float64") -> None:
        self.groups = list(groups)
        self.n_samples = int(n_samples)
        self._dtype = np.dtype(dtype)
        ids = np.concatenate([np.concatenate([g.dense_ids, g.factor_ids]) for g in self.groups]) if groups else []
        self.n_kernels = len(ids)
        if not np.array_equal(np.sort(ids), np.arange(self.n_kernels)):
            raise ValueError("the groups of a factored stack must hold every kernel index exactly once")
        self._rows = None if rows is None else np.ascontiguousarray(rows, dtype=np.intp)
        self._cols = None if cols is None else np.ascontiguousarray(cols, dtype=np.intp)
        self.n_rows = self.n_samples if rows is None else len(self._rows)
        self.n_cols = self.n_samples if cols is None else len(self._cols)
        self._square = self._rows is self._cols or (self._rows is not None and self._cols is not None
                                                    and np.array_equal(self._rows, self._cols))
        # each group's map restricted to this stack's rows and columns (the same array for a square stack)
        self._ri = [g.index if rows is None else g.index[self._rows] for g in self.groups]
        self._ci = self._ri if self._square else [g.index if cols is None else g.index[self._cols]
                                                  for g in self.groups]
        self._diag: np.ndarray | None = None
        self._few_point_groups = sum(1 for g in self.groups if not g.identity and g.k <= _EIGEN_POINTS)
        #: Where each kernel is: (group, stored dense, position among the group's dense or factored kernels).
        self._where: dict[int, tuple[int, bool, int]] = {}
        for t, g in enumerate(self.groups):
            self._where.update((int(m), (t, True, i)) for i, m in enumerate(g.dense_ids))
            self._where.update((int(m), (t, False, i)) for i, m in enumerate(g.factor_ids))

    @classmethod
    def from_kernels(cls, K: np.ndarray, tol: float = DEFAULT_FACTOR_TOL, dtype: np.dtype | str | None = None,
                     min_points: int = _SMALL_POINTS) -> FactoredStack:
        """Factor precomputed training kernels (M, n, n), each in a group of its own (every sample a point).

        ``tol`` is pivoted Cholesky's relative truncation (:func:`pivoted_cholesky`); a kernel whose rank at
        ``tol`` exceeds half of ``n``, or on at most ``min_points`` samples, is kept dense.  The kernels must be
        symmetric positive semi-definite (check them first with
        :func:`~multikernel.stack.storage.check_kernel_matrices`).
        """
        tol = check_positive_real("tol (the factors' relative truncation)", tol)
        K = np.asarray(K)
        if K.ndim != 3 or K.shape[1] != K.shape[2]:
            raise ValueError(f"expected square training kernels of shape (M, n, n); got shape {K.shape}")
        dtype = np.dtype(K.dtype if dtype is None else dtype)
        n = K.shape[1]
        index = np.arange(n, dtype=np.intp)
        groups = []
        for m in range(K.shape[0]):
            S = np.array(K[m], dtype=np.float64)
            S = 0.5 * (S + S.T)  # exactly symmetric: the dense kernels are streamed by their upper triangles
            groups.append(KernelGroup.build(index, [m], [S], tol, dtype, min_points))
        return cls(groups, n, dtype=dtype)

    # ---------------------------------------------------------------------------------------------
    # Properties
    # ---------------------------------------------------------------------------------------------
    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    @property
    def nbytes(self) -> int:
        return int(sum(g.nbytes for g in self.groups))

    @property
    def symmetric(self) -> bool:
        return self._square

    @property
    def ranks(self) -> np.ndarray:
        """Columns stored per kernel: the factor's rank, or the number of points of a dense kernel."""
        out = np.empty(self.n_kernels, dtype=np.intp)
        for g in self.groups:
            out[g.dense_ids] = g.k
            out[g.factor_ids] = np.diff(g.offsets)
        return out

    @property
    def factored(self) -> np.ndarray:
        """Which kernels are stored as factors (bool, shape (M,))."""
        out = np.zeros(self.n_kernels, dtype=bool)
        for g in self.groups:
            out[g.factor_ids] = True
        return out

    # ---------------------------------------------------------------------------------------------
    # Operations
    # ---------------------------------------------------------------------------------------------
    def combine(self, weights: np.ndarray, out: np.ndarray | None = None, accumulate: bool = False
                ) -> np.ndarray:
        weights, _ = _weights(weights, self.n_kernels)
        out = _out(out, (self.n_rows, self.n_cols), accumulate)
        if not accumulate:
            out[...] = 0.0
        one, first = np.ones(1), np.zeros(1, dtype=np.intp)
        full = self._rows is None and self._cols is None
        # square stacks: the groups of very few points as B diag(sign) B', added by one rank update at the end
        factors: list[np.ndarray] = []
        signs: list[np.ndarray] = []
        eigen = self._square and self._few_point_groups >= _EIGEN_MIN_GROUPS
        for t, g in enumerate(self.groups):
            wd, wf = weights[g.dense_ids], weights[g.factor_ids]
            if not (wd.any() or wf.any()):
                continue
            if g.identity:
                # every sample its own point: the block is computed on this stack's rows and columns directly
                g.add_combination(wd, wf, out, None if full else self._ri[t], None if full else self._ci[t])
                continue
            # k points: the group's k x k combination, then brought to the samples
            S = np.zeros((g.k, g.k))
            g.add_combination(wd, wf, S, None, None)
            if eigen and g.k <= _EIGEN_POINTS:
                B, sign = _signed_factor(S)
                factors.append(B[self._ri[t]])
                signs.append(sign)
            else:
                _stack.combine_gather(S[None], one, first, self._ri[t], self._ci[t], out, True)
        if factors:
            _add_gram(out, np.hstack(factors), np.concatenate(signs))
        return out

    def _point_weights(self, t: int, v: np.ndarray, support: np.ndarray) -> np.ndarray:
        """``w = P'v`` for group ``t``: the sum of ``v`` over the samples of each point."""
        return np.bincount(self._ri[t][support], v[support], minlength=self.groups[t].k)

    def quad_forms(self, v: np.ndarray, kernels: np.ndarray | None = None) -> np.ndarray:
        v = self._check_v(v)
        support = np.flatnonzero(v)
        out = np.empty(self.n_kernels, dtype=np.float64)
        for t, g in enumerate(self.groups):
            qd, qf = g.forms(self._point_weights(t, v, support))
            out[g.dense_ids] = qd
            out[g.factor_ids] = qf
        return out if kernels is None else out[_kernel_index(kernels, self)]

    def truncation_bound(self, coef: np.ndarray) -> np.ndarray:
        """A bound on ``sum_t c_t'(K_m - K~_m)c_t`` for every kernel: what the quadratic forms of the exact
        kernels may exceed :meth:`quad_forms` by (0 for the dense kernels).

        ``coef`` is one coefficient vector (n,) or T blocks (T, n).  Per block and factored kernel,
        ``(sum_a |w_a| sqrt(d_m[a]))^2`` with ``w = P'c`` (see the module docstring).
        """
        coef = np.asarray(coef, dtype=np.float64)
        blocks = coef[None] if coef.ndim == 1 else coef
        out = np.zeros(self.n_kernels)
        for c in blocks:
            c = self._check_v(c)
            support = np.flatnonzero(c)
            for t, g in enumerate(self.groups):
                if len(g.factor_ids):
                    s = np.sqrt(g.residual) @ np.abs(self._point_weights(t, c, support))
                    out[g.factor_ids] += s * s
        return out

    def diag(self) -> np.ndarray:
        self._check_v(np.zeros(self.n_rows))
        if self._diag is None:
            out = np.empty((self.n_kernels, self.n_rows))
            for t, g in enumerate(self.groups):
                dd, df = g.diagonals()
                out[g.dense_ids] = dd[:, self._ri[t]]
                out[g.factor_ids] = df[:, self._ri[t]]
            self._diag = out
        return self._diag.copy()

    def kernel(self, m: int) -> np.ndarray:
        if int(m) not in self._where:
            raise IndexError(f"kernel index {m} out of range for {self.n_kernels} kernels")
        t, dense, i = self._where[int(m)]
        g = self.groups[t]
        if dense:
            return np.asarray(g.dense[i], dtype=np.float64)[np.ix_(self._ri[t], self._ci[t])]
        L = np.asarray(g.factor[:, g.offsets[i]:g.offsets[i + 1]], dtype=np.float64)
        return L[self._ri[t]] @ L[self._ci[t]].T

    def _check_v(self, v: np.ndarray) -> np.ndarray:
        if not self._square:
            raise ValueError("quadratic forms and diagonals need a stack whose rows are its columns (a training "
                             "stack or a fold of one, not a cross stack)")
        return super()._check_v(v)

    def subset(self, rows, cols=None) -> FactoredStack:
        r, c = self._subset_index(rows, cols)
        base_rows = np.arange(self.n_samples, dtype=np.intp) if self._rows is None else self._rows
        base_cols = np.arange(self.n_samples, dtype=np.intp) if self._cols is None else self._cols
        new_rows = base_rows[r]
        new_cols = new_rows if cols is None and self._square else base_cols[c]
        return FactoredStack(self.groups, self.n_samples, new_rows, new_cols, self._dtype)

    def materialize(self) -> FactoredStack:
        """This stack: a subset shares the groups' points and needs no copy to stream."""
        return self


# --------------------------------------------------------------------------------------------------
# From features
# --------------------------------------------------------------------------------------------------
def _columns_key(builder: KernelBuilder) -> tuple[int, ...] | None | bool:
    """The feature columns a built-in builder's kernel is a function of: a tuple, ``None`` for all features, or
    ``False`` for a builder that is not known to depend on its columns' values only (its own group, uncompressed)."""
    if not (hasattr(builder, "base_key") and hasattr(builder, "_kernel") and hasattr(builder, "columns")):
        return False
    cols = builder.columns
    return None if cols is None else tuple(int(c) for c in np.ravel(cols))


def _points(X: np.ndarray, key: tuple[int, ...] | None | bool) -> tuple[np.ndarray, np.ndarray]:
    """``(reps, index)``: a representative sample of each distinct point and the point of every sample;
    every sample its own point when the distinct rows are more than half of them."""
    n = len(X)
    identity = np.arange(n, dtype=np.intp)
    if key is False:
        return identity, identity
    A = X if key is None else X[:, list(key)]
    _, reps, index = np.unique(A, axis=0, return_index=True, return_inverse=True)
    if len(reps) > _COMPRESS_FRACTION * n:
        return identity, identity
    return reps.astype(np.intp), index.ravel().astype(np.intp)


def rank_bound(builder: KernelBuilder, n_points: int, n_features: int) -> int:
    """An upper bound on the rank of the builder's kernel on ``n_points`` points of ``n_features`` features,
    from what the builder is: ``d`` for a linear kernel on ``d`` features, ``C(d + p, p)`` for a polynomial of
    degree ``p`` (``C(d + p - 1, p)`` without offset), ``n_points`` otherwise."""
    name = getattr(builder, "name", "")
    key = _columns_key(builder)
    d = 0 if key is False else n_features if key is None else len(key)
    if d and name == "linear":
        return min(n_points, d)
    if d and name == "poly" and isinstance(getattr(builder, "degree", None), (int, np.integer)):
        p = int(builder.degree)
        terms = math.comb(d + p, p) if getattr(builder, "coef0", 1.0) else math.comb(d + p - 1, p)
        return min(n_points, terms)
    return n_points


def estimate_factored_memory(builders: Sequence[KernelBuilder], X: np.ndarray, dtype: str = "float64"
                             ) -> StackMemoryEstimate:
    """An upper bound on the memory of the factored stack of ``builders`` on the training features ``X``,
    before any kernel is computed.

    Each group's points are counted (the distinct rows of its columns); a kernel needs at most ``k^2`` values
    (dense on its ``k`` points), or ``k`` times its rank bound (:func:`rank_bound`) when that is at most half of
    ``k``.  Kernels of unknown rank (Gaussian ones on many points) are counted dense: pivoted Cholesky then
    usually stores far less.  Work arrays: one float64 ``n x n`` combination, and the largest group's ``k x k``
    combination and float64 kernel beside it while the stack is built.
    """
    n = len(X)
    itemsize = np.dtype(dtype).itemsize
    storage, largest = 0, 0
    points: dict[object, int] = {}
    for b in builders:
        key = _columns_key(b)
        if key is False or key not in points:
            k = n if key is False else len(_points(X, key)[0])
            if key is not False:
                points[key] = k
        else:
            k = points[key]
        r = rank_bound(b, k, X.shape[1])
        storage += (k * r if k > _SMALL_POINTS and r <= _FACTOR_FRACTION * k else k * k) * itemsize
        largest = max(largest, k)
    maps = len(points) * n * 8 + sum(1 for b in builders if _columns_key(b) is False) * n * 8
    work = n * n * 8 + 3 * largest * largest * 8
    return StackMemoryEstimate("factored", len(builders), n, n, str(np.dtype(dtype)), int(storage + maps + work),
                               0, int(storage + maps))


def build_factored(builders: Sequence[KernelBuilder], X: np.ndarray, normalize: str, dtype: np.dtype | str,
                   tol: float) -> tuple[FactoredStack, Normalization]:
    """The factored training stack of fitted ``builders`` on their training features ``X``, and the
    normalization constants fitted on the exact training kernels (shape (M, n) where per sample).

    Builders that are functions of the same feature columns form one group; its kernels are computed on the
    group's distinct points only (``k x k``, base matrices shared), normalized with constants of the ``n``
    training samples (which depend on a sample's point only), then factored or kept dense
    (:meth:`KernelGroup.build`).
    """
    dtype = np.dtype(dtype)
    M, n = len(builders), len(X)
    keys: dict[object, list[int]] = {}
    order: list[list[int]] = []
    for m, b in enumerate(builders):
        key = _columns_key(b)
        if key is False:
            order.append([m])
        else:
            if key not in keys:
                keys[key] = []
                order.append(keys[key])
            keys[key].append(m)
    norm_all = Normalization.empty(normalize, M, n)
    groups = []
    for ms in order:
        key = _columns_key(builders[ms[0]])
        reps, index = _points(X, key)
        compressed = len(reps) < n
        counts = np.bincount(index, minlength=len(reps)).astype(np.float64)
        kernels: dict[int, np.ndarray] = {}
        blocks = (raw_blocks(builders, group_builders(builders, ms), X[reps], reps) if compressed
                  else raw_blocks(builders, group_builders(builders, ms), X, None, symmetric=True))
        for m, K in blocks:
            S = np.array(K, dtype=np.float64)
            S = 0.5 * (S + S.T)  # the non-symmetric path of a compressed group: exactly symmetric from here on
            diag_n = np.diagonal(S)[index].copy()
            col_mean = [(S @ counts / n)[index]] if normalize == "center" else None
            norm = Normalization.fit(normalize, [diag_n], col_mean)
            for name in ("scale", "col_diag", "col_mean", "grand"):
                value = getattr(norm, name)
                if value is not None:
                    getattr(norm_all, name)[m] = value[0]
            norm.apply(S, 0, reps, reps)
            kernels[m] = 0.5 * (S + S.T)
        groups.append(KernelGroup.build(index, ms, [kernels[m] for m in ms], tol, dtype))
    return FactoredStack(groups, n, dtype=dtype), norm_all
