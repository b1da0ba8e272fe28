"""The kernel stack: M base kernels over the same rows and columns, and the fused operations on them.

Three storage backends share one interface:

* :class:`DenseStack`: one array (M, n_rows, n_cols) in memory, float32 or float64;
* :class:`MemmapStack`: the same array in a file, paged in by the operating system;
* :class:`LazyStack`: no stored kernels; blocks are recomputed from the features when needed, within a
  memory budget for one block.

``subset(rows, cols)`` gives a view on a row/column subset (a cross-validation fold) without copying
the stored kernels.
"""

from __future__ import annotations

import os
import tempfile
import warnings
import weakref
from collections.abc import Sequence

import numpy as np

from multikernel._ext import _stack
from multikernel.core.interfaces import KernelBuilder, KernelColumns
from multikernel.core.validation import check_positive_real
from multikernel.stack.blocks import group_builders, raw_blocks
from multikernel.stack.normalization import Normalization

__all__ = ["KernelStack", "DenseStack", "MemmapStack", "LazyStack", "LazyColumns", "check_kernel_matrices"]


def check_kernel_matrices(K: np.ndarray, *, training: bool = True, kernel_axis: int = 0,
                          rtol: float | None = None) -> np.ndarray:
    """Check precomputed kernels given by a user before they reach a solver; return what to use.

    * NaN or infinite entries are refused (``ValueError`` naming the kernel and the first bad entry).
    * A training kernel that is not symmetric is symmetrized, ``(K + K')/2``, with a ``UserWarning``.
      Symmetrizing (rather than refusing) is the choice: ``(K + K')/2`` is the symmetric matrix closest
      to ``K`` (Frobenius norm) and gives the same quadratic forms ``v'Kv``, which are all an SVM dual
      reads of ``K``; the solvers assume symmetry (they read row ``i`` as column ``i``) and on a
      non-symmetric kernel the SMO can cycle until its iteration limit.  Differences within ``rtol``
      (rounding) are left as they are, without a copy.
    * A cheap hint of indefiniteness (a negative diagonal entry, or a 2 x 2 principal minor
      ``K_ii K_jj - K_ij^2`` clearly below zero) gives a ``UserWarning``: the SVM problem is then not
      convex and the solvers end at a stationary point, not a certified optimum.  Passing this check
      does not prove that a kernel is positive semi-definite.

    Parameters
    ----------
    K : array-like
        One kernel (2-D) or a stack of kernels (3-D) with the kernels along ``kernel_axis``: shape
        (M, n, n) by default, (n, n, M) with ``kernel_axis=-1``.
    training : bool, default=True
        Whether ``K`` holds training kernels (train x train, checked for symmetry and definiteness).
        Cross kernels (test x train) are only checked for finite values.
    kernel_axis : int, default=0
        Axis of the kernel index of a 3-D stack.
    rtol : float, optional
        Asymmetry tolerated, relative to the largest entry of each kernel; by default the square root
        of the machine epsilon of ``K``'s dtype (1.5e-8 for float64, 3.5e-4 for float32).

    Returns
    -------
    ndarray
        ``K`` itself (as a float32/float64 array) when it passes; a copy with the non-symmetric kernels
        symmetrized otherwise.

    Raises
    ------
    ValueError
        For NaN or infinite entries, or an array that is not 2-D or 3-D.
    """
    return _check_kernels(K, training, kernel_axis, rtol)[0]


def _check_kernels(K: np.ndarray, training: bool, kernel_axis: int, rtol: float | None,
                   weights: np.ndarray | None = None) -> tuple[np.ndarray, bool | None, np.ndarray | None]:
    """:func:`check_kernel_matrices`, whether every training kernel is exactly symmetric (``None``
    for cross kernels), and the combination at ``weights`` when asked for (else ``None``).

    Square training kernels are checked in one read of the stack (:func:`_stack.check_square_stack`:
    finite values, asymmetry and the indefiniteness hints together); the exact symmetry it finds spares
    :class:`DenseStack` its own read, and the combination at ``weights`` (a fit's first weights) made in
    the same read spares the fit's first combination (``None`` when the kernels had to be symmetrized, or
    when the per-thread buffers would be too large: see :func:`_fused_checks`).
    """
    arr = np.asarray(K)
    if arr.dtype not in (np.float32, np.float64):
        arr = arr.astype(np.float64)
    if arr.ndim not in (2, 3):
        raise ValueError(f"expected one kernel (2-D) or a stack of kernels (3-D); got shape {arr.shape}")
    stack = arr[None] if arr.ndim == 2 else np.moveaxis(arr, kernel_axis, 0)
    what = "the kernel" if arr.ndim == 2 else "kernel {m}"
    if not training or stack.shape[1] != stack.shape[2]:
        for m, Km in enumerate(stack):
            # a finite sum is a cheap proof without an n x n temporary (an overflowing one is re-checked)
            if not np.isfinite(np.sum(Km, dtype=np.float64)):
                for a in range(0, Km.shape[0], _row_step(Km.shape[1])):
                    bad = np.argwhere(~np.isfinite(Km[a:a + _row_step(Km.shape[1])]))
                    if bad.size:
                        i, j = bad[0]
                        raise ValueError(f"{what.format(m=m)} has NaN or infinite entries (the first at row "
                                         f"{a + i}, column {j}: {Km[a + i, j]}); kernels must be finite")
        return arr, None, None
    M = len(stack)
    finite, minor, maxabs, asym, scale, combined = _fused_checks(stack, weights)
    for m in range(M):
        if not finite[m]:
            i, j = np.argwhere(~np.isfinite(stack[m]))[0]  # an error path: a second read names the first
            value = stack[m, i, j]
            raise ValueError(f"{what.format(m=m)} has NaN or infinite entries (the first at row {i}, column {j}: "
                             f"{value}, so it contains {'NaN' if np.isnan(value) else 'infinity'}); kernels must "
                             f"be finite")
    tol = float(np.sqrt(np.finfo(arr.dtype).eps)) if rtol is None else float(rtol)
    asymmetric = [m for m in range(M) if asym[m] > tol * maxabs[m]]
    if asymmetric:
        names = "the training kernel is" if arr.ndim == 2 else f"the training kernels {asymmetric} are"
        warnings.warn(f"{names} not symmetric (relative difference above {tol:.1e}); using (K + K')/2, the "
                      f"closest symmetric matrix, which gives the same quadratic forms.  Kernel matrices must "
                      f"be symmetric: check how they are computed", UserWarning, stacklevel=3)
        arr = arr.copy()
        stack = arr[None] if arr.ndim == 2 else np.moveaxis(arr, kernel_axis, 0)
        for m in asymmetric:
            stack[m] = (stack[m] + stack[m].T) / 2
        # the indefiniteness hints below are about the kernels used: check the symmetrized ones again
        finite, minor, maxabs, asym, scale, combined = _fused_checks(stack, weights)
    diag = np.diagonal(stack, axis1=1, axis2=2)
    for m in range(M):
        hint = ""
        negative = np.flatnonzero(diag[m] < -1e-8 * max(scale[m], np.finfo(np.float64).tiny))
        if negative.size:
            k = negative[0]
            hint = f"negative diagonal entry K[{k}, {k}] = {diag[m, k]:.3g}"
        elif minor[m, 0] >= 0:
            i, j = minor[m]
            hint = (f"K[{i}, {j}]^2 = {float(stack[m, i, j]) ** 2:.3g} exceeds K[{i}, {i}] K[{j}, {j}] = "
                    f"{max(float(diag[m, i]), 0.0) * max(float(diag[m, j]), 0.0):.3g}")
        if hint:
            warnings.warn(f"{what.format(m=m)} is not positive semi-definite ({hint}): the SVM problem is then "
                          f"not convex, and the solvers return a stationary point whose duality gap is not a "
                          f"certificate.  Use a positive semi-definite kernel (for example clip the negative "
                          f"eigenvalues)", UserWarning, stacklevel=3)
    return arr, bool(not asym.any()), combined


#: Bytes of the per-thread buffers of a combination made during the checks; beyond them (large n, or many
#: threads) the buffers no longer stay in cache while the tiles stream past, and the fit combines later.
_FUSED_COMBINATION_BYTES = 64 * 2**20
#: Groups of kernels combined into separate buffers (one thread each) during the checks.
_FUSED_COMBINATION_GROUPS = 4
#: The Cauchy-Schwarz hint's slack on each square root: |K_ij| > sqrt(K_ii) sqrt(K_jj) (1 + 5e-7) + 1e-8 scale.
_CS_SLACK = float(np.sqrt(1.0 + 5e-7))


def _fused_checks(stack: np.ndarray, weights: np.ndarray | None = None
                  ) -> tuple[np.ndarray, ...]:
    """:func:`_stack.check_square_stack` on a (M, n, n) stack: (finite, minor, maxabs, asym, scale) per kernel,
    and the combination at ``weights`` when given and affordable (else ``None``).

    A stack that is not C-contiguous (kernels on another axis) is checked one contiguous kernel at a time.
    """
    M, n = stack.shape[:2]
    diag = np.array(np.diagonal(stack, axis1=1, axis2=2), dtype=np.float64)
    with np.errstate(invalid="ignore"):
        scale = np.where(np.isfinite(diag), np.abs(diag), 0.0).max(axis=1, initial=0.0)
        # square roots (see check_square_stack) with the bound's relative slack, 1 + 5e-7 on the product
        dpos = np.ascontiguousarray(np.sqrt(np.where(diag > 0, diag, 0.0)) * _CS_SLACK)
    finite, minor = np.zeros(M, dtype=np.intc), np.full((M, 2), -1, dtype=np.int64)
    maxabs, asym = np.zeros(M), np.zeros(M)
    combined = None
    # fixed by M, not by the thread count: the same sums on any machine
    groups = max(1, min(_FUSED_COMBINATION_GROUPS, M // 8))
    # the buffers stay small beside the stack (a few kernels' worth of memory is not worth a pass)
    affordable = groups * n * n * 8 <= min(_FUSED_COMBINATION_BYTES, stack.nbytes // 4)
    if weights is not None and stack.flags.c_contiguous and affordable:
        weights = np.ascontiguousarray(weights, dtype=np.float64)
        combined = np.zeros((groups, n, n))
    if stack.flags.c_contiguous:
        # Upper triangles (half the arithmetic of a compute-bound read), exact for the symmetric kernels; the
        # others, rare, are swept again whole.
        _stack.check_square_stack(stack, dpos, scale, finite, minor, maxabs, asym, combined, weights, True)
        for m in np.flatnonzero(asym != 0):
            _stack.check_square_stack(stack[m:m + 1], dpos[m:m + 1], scale[m:m + 1], finite[m:m + 1],
                                      minor[m:m + 1], maxabs[m:m + 1], asym[m:m + 1])
        if combined is not None and asym.any():
            combined = None  # upper triangles only: the fit combines the kernels itself
        if combined is not None:
            for g in range(1, len(combined)):  # in place, and no copy at all for one group
                combined[0] += combined[g]
            combined = combined[0] if len(combined) == 1 else combined[0].copy()
            # Below the diagonal the buffer is still 0: adding the mirror of the upper triangle fills it exactly.
            combined += np.triu(combined, 1).T
    else:
        for m in range(M):
            _stack.check_square_stack(np.ascontiguousarray(stack[m])[None], dpos[m:m + 1], scale[m:m + 1],
                                      finite[m:m + 1], minor[m:m + 1], maxabs[m:m + 1], asym[m:m + 1])
    return finite.astype(bool), minor, maxabs, asym, scale, combined


_CHECK_BLOCK = 1 << 22  # entries per block of the O(n^2) checks: bounded temporaries


def _row_step(n_cols: int) -> int:
    return max(1, _CHECK_BLOCK // max(n_cols, 1))


def _index(idx: Sequence[int] | np.ndarray | None, n: int, what: str) -> np.ndarray:
    if idx is None:
        return np.arange(n, dtype=np.intp)
    idx = np.asarray(idx)
    if idx.dtype == bool:
        if idx.shape != (n,):
            raise ValueError(f"a boolean {what} mask must have length {n}; got shape {idx.shape}")
        return np.flatnonzero(idx).astype(np.intp)
    idx = np.ascontiguousarray(idx.ravel(), dtype=np.intp)
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise ValueError(f"{what} indices out of range for {n} {what}")
    return np.ascontiguousarray(np.where(idx < 0, idx + n, idx), dtype=np.intp)


def _weights(weights: np.ndarray, n_kernels: int) -> tuple[np.ndarray, np.ndarray]:
    weights = np.ascontiguousarray(weights, dtype=np.float64).ravel()
    if weights.shape != (n_kernels,):
        raise ValueError(f"expected {n_kernels} weights, got shape {weights.shape}")
    return weights, np.flatnonzero(weights).astype(np.intp)


def _kernel_index(kernels: Sequence[int] | np.ndarray, stack: KernelStack) -> np.ndarray:
    ks = np.ascontiguousarray(kernels, dtype=np.intp).ravel()
    if ks.size and (ks.min() < 0 or ks.max() >= stack.n_kernels):
        raise ValueError(f"kernel indices out of range for {stack.n_kernels} kernels")
    return ks


def _out(out: np.ndarray | None, shape: tuple[int, int], accumulate: bool = False) -> np.ndarray:
    if out is None:
        if accumulate:
            raise ValueError("accumulate=True needs the array to add to, as out")
        return np.empty(shape, dtype=np.float64)
    if out.shape != shape or out.dtype != np.float64 or not out.flags.c_contiguous:
        raise ValueError(f"out must be a C-contiguous float64 array of shape {shape}")
    return out


class KernelStack:
    """Abstract stack of ``n_kernels`` matrices of shape ``(n_rows, n_cols)``.

    Solvers use only the operations below, so that every storage backend (dense, memory-mapped, lazy)
    serves every solver.
    """

    n_kernels: int
    n_rows: int
    n_cols: int

    @property
    def shape(self) -> tuple[int, int, int]:
        return (self.n_kernels, self.n_rows, self.n_cols)

    @property
    def dtype(self) -> np.dtype:
        """Precision of the stored kernels (operations return float64)."""
        raise NotImplementedError

    @property
    def nbytes(self) -> int:
        """Bytes the stack holds (in memory, or on disk for a memory map)."""
        raise NotImplementedError

    def combine(self, weights: np.ndarray, out: np.ndarray | None = None, accumulate: bool = False
                ) -> np.ndarray:
        """``sum_m weights[m] * K_m`` over the kernels with a non-zero weight, as float64.

        With ``accumulate``, the sum is added to ``out`` (which must be given) instead of replacing it:
        :class:`~multikernel.stack.combination.CombinedKernel` updates ``K(mu)`` by the weights that changed.
        """
        raise NotImplementedError

    def column_provider(self, weights: np.ndarray) -> KernelColumns | None:
        """The columns of ``sum_m weights[m] * K_m`` on demand, for a stack whose combination must never be
        formed densely (a lazy stack: memory bounded by the solver's column cache, not by ``n**2``).

        ``None`` (the default) means that the stack combines densely, with :meth:`combine`.
        """
        return None

    def quad_forms(self, v: np.ndarray, kernels: np.ndarray | None = None) -> np.ndarray:
        """``q[m] = v' K_m v`` for every kernel (square stacks), touching only the non-zeros of ``v``.

        With ``kernels`` (indices), only those forms, in that order: a solver whose update ignores the
        kernels at zero weight reads only the others (backends without a faster path compute all).
        """
        raise NotImplementedError

    def kernel(self, m: int) -> np.ndarray:
        """The ``m``-th kernel as an array."""
        raise NotImplementedError

    def diag(self) -> np.ndarray:
        """The diagonals of all kernels, float64 of shape (M, n) (square stacks)."""
        raise NotImplementedError

    def kernel_rows(self, rows: Sequence[int] | np.ndarray) -> np.ndarray:
        """The rows ``rows`` of every kernel, float64 of shape (M, len(rows), n_cols): what a solver that
        works on the kernels separately (SMO-MKL) reads per step from a stack it cannot hold."""
        return self.subset(rows, np.arange(self.n_cols)).to_array()

    def trace(self) -> np.ndarray:
        """The traces of all kernels, float64 of shape (M,) (square stacks)."""
        return self.diag().sum(axis=1)

    def subset(self, rows: Sequence[int] | np.ndarray, cols: Sequence[int] | np.ndarray | None = None
               ) -> KernelStack:
        """The stack restricted to ``rows`` and ``cols`` (``cols = rows`` when omitted), without copying
        the stored kernels.  Indices (or boolean masks) refer to this stack's rows and columns."""
        raise NotImplementedError

    def _subset_index(self, rows, cols) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`subset`'s arguments as index arrays into this stack's rows and columns."""
        r = _index(rows, self.n_rows, "rows")
        return r, (r if cols is None else _index(cols, self.n_cols, "columns"))

    def to_array(self) -> np.ndarray:
        """All kernels as one float64 array (M, n_rows, n_cols) (for tests and small stacks)."""
        return np.stack([np.asarray(self.kernel(m), dtype=np.float64) for m in range(self.n_kernels)])

    def _check_square(self, what: str) -> None:
        if self.n_rows != self.n_cols:
            raise ValueError(f"{what} needs a square stack; this one is {self.n_rows} x {self.n_cols}")

    def _check_v(self, v: np.ndarray) -> np.ndarray:
        self._check_square("quad_forms")
        v = np.ascontiguousarray(v, dtype=np.float64).ravel()
        if v.shape != (self.n_rows,):
            raise ValueError(f"v must have length {self.n_rows}; got shape {v.shape}")
        return v


class DenseStack(KernelStack):
    """A stack held as one C-contiguous array of shape (M, n_rows, n_cols), or a row/column subset of one.

    Parameters
    ----------
    data : ndarray of shape (M, n_rows, n_cols), float32 or float64
        The kernels; used without a copy when already C-contiguous in a supported dtype (a
        ``numpy.memmap`` stays a memory map).
    rows, cols : ndarray of int, optional
        Restrict the stack to these rows and columns of ``data`` (see :meth:`subset`).
    symmetric : bool, optional
        Whether every kernel of ``data`` is exactly symmetric; ``None`` checks it on first use (not for a
        memory map, which would be read whole).  Symmetric stacks are streamed by their upper triangles.
    """

    def __init__(self, data: np.ndarray, rows: np.ndarray | None = None,
                 cols: np.ndarray | None = None, symmetric: bool | None = None) -> None:
        if not isinstance(data, np.ndarray):
            data = np.asarray(data)
        if data.ndim != 3:
            raise ValueError(f"a kernel stack must have shape (M, n_rows, n_cols); got shape {data.shape}")
        if data.dtype not in (np.float32, np.float64):
            data = data.astype(np.float64)
        self.data = data if data.flags.c_contiguous else np.ascontiguousarray(data)
        M, n_rows, n_cols = self.data.shape
        self._rows = None if rows is None else _index(rows, n_rows, "rows")
        self._cols = None if cols is None else _index(cols, n_cols, "columns")
        self.n_kernels = M
        self.n_rows = n_rows if self._rows is None else len(self._rows)
        self.n_cols = n_cols if self._cols is None else len(self._cols)
        if n_rows != n_cols or (symmetric is None and isinstance(self.data, np.memmap)):
            symmetric = False
        self._data_symmetric = symmetric
        self._used = False
        # a combination made while the kernels were checked: (weights, K(weights)), for the first combine
        self._pending: tuple[np.ndarray, np.ndarray] | None = None

    @classmethod
    def checked(cls, K: np.ndarray, kernel_axis: int = 0, first_weights: np.ndarray | None = None
                ) -> DenseStack:
        """A stack of a user's precomputed training kernels, checked as :func:`check_kernel_matrices` does.

        The checks read the stack once and find whether the kernels are exactly symmetric on the way, so
        the stack is not read again for that.  With ``first_weights`` (the weights of a fit's first
        combination), the same read also forms that combination, which the stack's first :meth:`combine`
        at exactly these weights returns instead of reading the kernels again: a fit with fixed weights
        (``average``) then reads the user's array once.  A stack the library computed itself (from
        features, with a :class:`~multikernel.stack.KernelSet`) needs none of this.
        """
        arr, symmetric, combined = _check_kernels(K, True, kernel_axis, None, first_weights)
        if arr.ndim == 2:
            arr = arr[None]
        elif kernel_axis not in (0, -3):
            arr = np.moveaxis(arr, kernel_axis, 0)
        stack = cls(arr, symmetric=symmetric)
        if combined is not None:
            stack._pending = (np.array(first_weights, dtype=np.float64), combined)
        return stack

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype

    def _stored_symmetric(self) -> bool:
        """Whether every stored kernel (the whole ``data``) is exactly symmetric; checked once."""
        if self._data_symmetric is None:
            self._data_symmetric = all(np.array_equal(k, k.T) for k in self.data)
        return self._data_symmetric

    def _stream_symmetric(self) -> bool:
        """Whether an operation may stream the kernels' upper triangles only.

        A stack whose symmetry is not known yet is checked from its second operation on: the check reads
        the whole stack, which a single operation (the one combination of a fixed-weight fit) reads anyway.
        """
        if self._data_symmetric is None and not self._used:
            self._used = True
            return False
        return self.symmetric

    @property
    def symmetric(self) -> bool:
        """Whether every kernel of this stack is exactly symmetric (the stored kernels are checked once)."""
        if not self._stored_symmetric():
            return False
        return self._full or (self._rows is not None and self._cols is not None
                              and np.array_equal(self._rows, self._cols))

    @property
    def nbytes(self) -> int:
        return int(self.data.nbytes)

    @property
    def _full(self) -> bool:
        return self._rows is None and self._cols is None

    def _rc(self) -> tuple[np.ndarray, np.ndarray]:
        _, n_rows, n_cols = self.data.shape
        rows = np.arange(n_rows, dtype=np.intp) if self._rows is None else self._rows
        cols = np.arange(n_cols, dtype=np.intp) if self._cols is None else self._cols
        return rows, cols

    def combine(self, weights: np.ndarray, out: np.ndarray | None = None, accumulate: bool = False
                ) -> np.ndarray:
        weights, active = _weights(weights, self.n_kernels)
        pending, self._pending = self._pending, None
        if pending is not None and not accumulate and self._full and np.array_equal(pending[0], weights):
            self._used = True
            if out is None:
                return pending[1]
            out = _out(out, (self.n_rows, self.n_cols))
            out[...] = pending[1]
            return out
        out = _out(out, (self.n_rows, self.n_cols), accumulate)
        if self._full:
            _stack.combine_dense(self.data, weights, active, out, accumulate, self._stream_symmetric())
        else:
            rows, cols = self._rc()
            _stack.combine_gather(self.data, weights, active, rows, cols, out, accumulate)
        return out

    def quad_forms(self, v: np.ndarray, kernels: np.ndarray | None = None) -> np.ndarray:
        v = self._check_v(v)
        support = np.flatnonzero(v).astype(np.intp)
        if self._full:
            ks = np.arange(self.n_kernels, dtype=np.intp) if kernels is None else _kernel_index(kernels, self)
            out = np.empty(len(ks), dtype=np.float64)
            _stack.quad_forms_dense(self.data, v, support, ks, out, self._stream_symmetric())
            return out
        rows, cols = self._rc()
        out = np.empty(self.n_kernels, dtype=np.float64)
        _stack.quad_forms_gather(self.data, np.ascontiguousarray(v[support]), rows[support], cols[support], out)
        return out if kernels is None else out[_kernel_index(kernels, self)]

    def kernel(self, m: int) -> np.ndarray:
        if self._full:
            return self.data[m]
        rows, cols = self._rc()
        return self.data[m][np.ix_(rows, cols)]

    def diag(self) -> np.ndarray:
        self._check_square("diag")
        if self._full:
            return np.array(self.data.diagonal(axis1=1, axis2=2), dtype=np.float64)
        rows, cols = self._rc()
        out = np.empty((self.n_kernels, self.n_rows), dtype=np.float64)
        _stack.diag_gather(self.data, rows, cols, out)
        return out

    def subset(self, rows, cols=None) -> DenseStack:
        r, c = self._subset_index(rows, cols)
        base_rows, base_cols = self._rc()
        self._stored_symmetric()  # checked once here, not once per view
        return type(self)._view(self, base_rows[r], base_cols[c])

    def materialize(self) -> DenseStack:
        """A C-contiguous in-memory copy of this stack's kernels (a subset's only).

        Solvers stream a contiguous stack three to four times faster than a row/column subset view,
        which gathers every entry through index arrays: worth one copy when a subset serves many fits
        (the folds of a grid search).
        """
        if self._full and not isinstance(self.data, np.memmap):
            return self
        rows, cols = self._rc()
        out = np.empty((self.n_kernels, len(rows), len(cols)), dtype=self.data.dtype)
        for m in range(self.n_kernels):
            np.take(np.take(self.data[m], rows, axis=0), cols, axis=1, out=out[m])
        return DenseStack(out, symmetric=None if isinstance(self.data, np.memmap) else self.symmetric)

    def _view(self, rows: np.ndarray, cols: np.ndarray) -> DenseStack:
        view = DenseStack.__new__(type(self))
        view.__dict__.update(self.__dict__)
        view._rows, view._cols = rows, cols
        view._pending = None
        view.n_rows, view.n_cols = len(rows), len(cols)
        return view


class MemmapStack(DenseStack):
    """A dense stack stored in a file and memory-mapped read-only.

    Build it with :meth:`create` (a writable map filled kernel by kernel, then reopened read-only).  A
    file created in a temporary directory is deleted when the last stack using it is garbage-collected.
    """

    path: str

    @classmethod
    def create(cls, shape: tuple[int, int, int], dtype: np.dtype | str, directory: str | None = None
               ) -> tuple[np.memmap, str, bool]:
        """A writable memory map of ``shape`` in ``directory`` (a new temporary file); returns
        ``(array, path, temporary)``."""
        fd, path = tempfile.mkstemp(prefix="multikernel-stack-", suffix=".dat", dir=directory)
        os.close(fd)
        return np.memmap(path, dtype=dtype, mode="w+", shape=shape), path, True

    @classmethod
    def open(cls, path: str, shape: tuple[int, int, int], dtype: np.dtype | str, temporary: bool = False
             ) -> MemmapStack:
        """Map the finished file read-only; ``temporary`` files are deleted with the stack."""
        data = np.memmap(path, dtype=dtype, mode="r", shape=shape)
        stack = cls(data)
        stack.path = path
        if temporary:
            weakref.finalize(data, _remove_file, path)
        return stack


def _remove_file(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


class LazyStack(KernelStack):
    """A stack whose kernels are recomputed from the features when an operation needs them.

    Memory: the features, the fitted builders, the normalization constants (O(M n)), and one block of
    at most ``block_bytes`` of kernel values at a time, beside the outputs of the operations.  Each
    operation costs a recomputation of the kernels it touches: ``combine`` all active kernels,
    ``quad_forms`` only the support x support entries of every kernel.  Solvers never ``combine`` a
    square lazy stack: :meth:`column_provider` gives the SMO the columns of the combined kernel on
    demand (:class:`LazyColumns`), which it keeps in a cache of ``cache_size`` megabytes; a fit then
    needs ``cache_size + block_bytes`` beside O(M n), whatever ``n``.

    Parameters
    ----------
    builders : sequence of fitted KernelBuilder
        The kernels' builders, fitted on the training samples (the columns).
    X : ndarray of shape (n_samples, n_features)
        Features of the rows (the training features themselves for a training stack).
    normalization : Normalization
        Fitted constants, with row constants for the rows of ``X``.
    rows, cols : ndarray of int, optional
        Subset of the rows of ``X`` and of the training samples.
    block_bytes : int
        Budget for one float64 block of kernel values (and its base matrix).
    dtype : dtype
        Precision requested for stored copies (blocks are computed in float64).
    cache_size : float, default=200
        Megabytes of combined-kernel columns the SMO caches during an inner solve (libsvm's
        ``cache_size``).  A cache of ``8 n`` kB or more holds every column.
    """

    def __init__(self, builders: Sequence[KernelBuilder], X: np.ndarray, normalization: Normalization,
                 n_train: int, rows: np.ndarray | None = None, cols: np.ndarray | None = None,
                 block_bytes: int = 256 * 2**20, dtype: np.dtype | str = "float64",
                 cache_size: float = 200.0) -> None:
        self.builders = list(builders)
        self.X = X
        self.normalization = normalization
        self.n_train = n_train
        self._rows = np.arange(len(X), dtype=np.intp) if rows is None else rows
        self._cols = np.arange(n_train, dtype=np.intp) if cols is None else cols
        self._all_cols = cols is None
        self.block_bytes = int(block_bytes)
        self._dtype = np.dtype(dtype)
        self.cache_size = check_positive_real("cache_size (megabytes of kernel columns)", cache_size)
        self.n_kernels = len(self.builders)
        self.n_rows, self.n_cols = len(self._rows), len(self._cols)
        self._diag: np.ndarray | None = None

    @property
    def dtype(self) -> np.dtype:
        # Blocks are computed in float64; ``dtype`` is the precision requested for stored stacks.
        return self._dtype

    @property
    def nbytes(self) -> int:
        n = self.X.nbytes
        for name in ("scale", "row_diag", "col_diag", "row_mean", "col_mean", "grand"):
            arr = getattr(self.normalization, name)
            n += 0 if arr is None else arr.nbytes
        return int(n)

    def _block_rows(self, n_cols: int) -> int:
        # A base matrix and one kernel of the block are alive at once.
        return max(1, self.block_bytes // (2 * 8 * max(n_cols, 1)))

    def _blocks(self, ms: Sequence[int], rows: np.ndarray, cols: np.ndarray):
        """Yield ``(m, K)`` with the normalized float64 block ``K_m[rows, cols]``."""
        groups = group_builders(self.builders, ms)
        col_arg = None if (self._all_cols and len(cols) == self.n_train
                           and np.array_equal(cols, np.arange(self.n_train))) else cols
        Xr = self.X[rows]
        for m, K in raw_blocks(self.builders, groups, Xr, col_arg):
            yield m, self.normalization.apply(K, m, rows, cols)

    def combine(self, weights: np.ndarray, out: np.ndarray | None = None, accumulate: bool = False
                ) -> np.ndarray:
        weights, active = _weights(weights, self.n_kernels)
        out = _out(out, (self.n_rows, self.n_cols), accumulate)
        if not accumulate:
            out[...] = 0.0
        step = self._block_rows(self.n_cols)
        for start in range(0, self.n_rows, step):
            rows = self._rows[start:start + step]
            block = out[start:start + step]
            for m, K in self._blocks(active, rows, self._cols):
                _stack.axpy(block, np.ascontiguousarray(K), weights[m])
        return out

    def quad_forms(self, v: np.ndarray, kernels: np.ndarray | None = None) -> np.ndarray:
        if kernels is not None:
            return self.quad_forms(v)[_kernel_index(kernels, self)]
        v = self._check_v(v)
        support = np.flatnonzero(v)
        vs = v[support]
        rows, cols = self._rows[support], self._cols[support]
        out = np.zeros(self.n_kernels, dtype=np.float64)
        step = self._block_rows(len(support))
        for start in range(0, len(support), step):
            stop = start + step
            u = np.ascontiguousarray(vs[start:stop])
            for m, K in self._blocks(range(self.n_kernels), rows[start:stop], cols):
                out[m] += _stack.bilinear(np.ascontiguousarray(K), u, vs)
        return out

    def kernel(self, m: int) -> np.ndarray:
        out = np.empty((self.n_rows, self.n_cols), dtype=np.float64)
        step = self._block_rows(self.n_cols)
        for start in range(0, self.n_rows, step):
            for _, K in self._blocks([m], self._rows[start:start + step], self._cols):
                out[start:start + step] = K
        return out

    def column_provider(self, weights: np.ndarray) -> LazyColumns:
        return LazyColumns(self, weights)

    def kernel_rows(self, rows: Sequence[int] | np.ndarray) -> np.ndarray:
        r = _index(rows, self.n_rows, "rows")
        out = np.empty((self.n_kernels, len(r), self.n_cols), dtype=np.float64)
        for m, K in self._blocks(range(self.n_kernels), self._rows[r], self._cols):  # one pass per group
            out[m] = K
        return out

    def diag(self) -> np.ndarray:
        self._check_square("diag")
        if self._diag is None:
            self._diag = self._compute_diag()
        return self._diag.copy()

    def _compute_diag(self) -> np.ndarray:
        out = np.empty((self.n_kernels, self.n_rows), dtype=np.float64)
        # Square blocks along the diagonal: O(n * step) kernel values per kernel.
        step = max(1, min(1024, int(np.sqrt(self.block_bytes / 16))))
        for start in range(0, self.n_rows, step):
            stop = min(start + step, self.n_rows)
            rows, cols = self._rows[start:stop], self._cols[start:stop]
            for m, K in self._blocks(range(self.n_kernels), rows, cols):
                out[m, start:stop] = np.diagonal(K)
        return out

    def subset(self, rows, cols=None) -> LazyStack:
        r, c = self._subset_index(rows, cols)
        return LazyStack(self.builders, self.X, self.normalization, self.n_train, self._rows[r],
                         self._cols[c], self.block_bytes, self._dtype, self.cache_size)


class LazyColumns(KernelColumns):
    """The columns of ``sum_m weights[m] * K_m`` of a square lazy stack, computed when the SMO asks.

    A block of columns costs one pass of the kernel builders over the block's samples (base matrices
    shared within a group of builders, the normalization applied), in row blocks of the stack's
    ``block_bytes``; kernels at a zero weight are never computed.  The SMO keeps the columns in its cache
    of ``stack.cache_size`` megabytes.

    Parameters
    ----------
    stack : LazyStack
        A square stack over the same samples for its rows and columns (training samples or a fold).
    weights : array-like of shape (M,)
        Combination weights.
    """

    def __init__(self, stack: LazyStack, weights: np.ndarray) -> None:
        stack._check_square("a column provider")
        if not np.array_equal(stack._rows, stack._cols):
            raise ValueError("a column provider needs a stack whose rows are its columns (a training "
                             "stack or a fold of one, not a cross stack)")
        self.stack = stack
        self.weights, self._active = _weights(weights, stack.n_kernels)
        self.n = stack.n_rows
        self.cache_size = stack.cache_size

    def column(self, i: int, out: np.ndarray) -> None:
        self.columns(np.array([i], dtype=np.intp), out[None])

    def columns(self, idx: np.ndarray, out: np.ndarray) -> None:
        stack = self.stack
        idx = np.asarray(idx, dtype=np.intp)
        out[...] = 0.0
        step = stack._block_rows(self.n)
        for start in range(0, len(idx), step):
            # row i of the symmetric combined kernel is its column i
            block = out[start:start + step]
            for m, K in stack._blocks(self._active, stack._rows[idx[start:start + step]], stack._cols):
                _stack.axpy(block, np.ascontiguousarray(K), self.weights[m])

    def diagonal(self) -> np.ndarray:
        return self.weights @ self.stack.diag()
