"""A fitted set of kernel builders with a normalization: features -> train stack and cross stacks."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.preprocessing import StandardScaler
from sklearn.utils import check_array

from multikernel._pages import small_pages
from multikernel.core.interfaces import KernelBuilder
from multikernel.core.validation import check_positive_real
from multikernel.stack.blocks import group_builders, raw_blocks, symmetric_path
from multikernel.stack.factored import DEFAULT_FACTOR_TOL, build_factored, estimate_factored_memory
from multikernel.stack.memory import (
    BACKENDS,
    StackMemoryEstimate,
    available_memory,
    check_budget,
    estimate_stack_memory,
    parse_bytes,
)
from multikernel.stack.normalization import NORMALIZATIONS, Normalization
from multikernel.stack.storage import DenseStack, KernelStack, LazyStack, MemmapStack

__all__ = ["KernelSet", "NORMALIZATIONS", "BACKENDS"]


class KernelSet:
    """Builds the training stack and, with the same fitted parameters, the cross stacks.

    Parameters
    ----------
    builders : sequence of KernelBuilder
        Unfitted builders; they are fitted on the training features in :meth:`fit_stack`.
    normalize : {"none", "trace", "unit_diagonal", "center"}
        ``"trace"`` scales each kernel so that its training trace equals n (mean diagonal 1);
        ``"unit_diagonal"`` is the cosine normalization ``K_ij / sqrt(K_ii K_jj)``; ``"center"`` centres
        the kernel in feature space on the training mean.  The constants are fitted on the training
        kernels and applied to the cross kernels (see :mod:`multikernel.stack.normalization`).
    dtype : {"float64", "float32"}
        Storage precision of the stacks (operations always return float64).
    backend : {"dense", "memmap", "lazy", "factored", "auto"}
        Storage: in memory, in a memory-mapped file (``memmap_dir``, a temporary directory by default),
        recomputed from the features by blocks, or factored (each kernel dense or ``L L'`` on the distinct
        points of its features, :mod:`multikernel.stack.factored`; cross stacks are computed from the
        builders, by blocks).  ``"auto"`` is ``"factored"`` when its memory estimate is at most half of the
        dense one and fits the budget, else ``"dense"`` when that fits, else ``"lazy"``.
    memory_budget : int or str, optional
        Bytes a stack may use (``"4GB"``); by default the memory available now.  A stack that would
        not fit raises :class:`~multikernel.errors.MemoryBudgetError` before anything is allocated.
    memmap_dir : str, optional
        Directory of the memory-mapped files.
    block_size : int or str
        The lazy backend's budget for one block of kernel values.
    standardize : bool, default=False
        Standardize each feature with the training mean and standard deviation before the kernels are
        built (constant features are only centred), and apply the same transform to the features of every
        cross stack.  This is the library's one place for standardization: the estimator and the
        experiment runner both use it.
    cache_size : float, default=200
        The lazy backend's column cache, in megabytes: the inner SMO solver keeps the columns of the
        combined kernel it computes there (libsvm's ``cache_size``); no ``n x n`` matrix is formed.
    factor_tol : float, default=1e-10
        The factored backend's truncation: pivoted Cholesky stops when every residual diagonal entry is at
        most this fraction of the kernel's largest diagonal entry.  The residual enters every certified
        duality gap, so a looser ``factor_tol`` saves memory and time at the price of a looser certificate.
    """

    def __init__(self, builders: Sequence[KernelBuilder], normalize: str = "none", dtype: str = "float64",
                 backend: str = "dense", memory_budget: int | str | None = None,
                 memmap_dir: str | None = None, block_size: int | str = "256MB",
                 cache_size: float = 200.0, standardize: bool = False,
                 factor_tol: float = DEFAULT_FACTOR_TOL) -> None:
        if normalize not in NORMALIZATIONS:
            raise ValueError(f"normalize must be one of {NORMALIZATIONS}; got {normalize!r}")
        if backend not in (*BACKENDS, "auto"):
            raise ValueError(f"backend must be one of {(*BACKENDS, 'auto')}; got {backend!r}")
        if not builders:
            raise ValueError("at least one kernel builder is needed")
        self.dtype = np.dtype(dtype)
        if self.dtype not in (np.float32, np.float64):
            raise ValueError(f"dtype must be float32 or float64; got {dtype!r}")
        self.builders = list(builders)
        self.normalize = normalize
        self.backend = backend
        self.memory_budget = memory_budget
        self.memmap_dir = memmap_dir
        self.block_size = block_size
        check_positive_real("cache_size (megabytes of kernel columns)", cache_size)
        self.cache_size = cache_size
        self.standardize = standardize
        check_positive_real("factor_tol (the factors' relative truncation)", factor_tol)
        self.factor_tol = factor_tol

    # ---------------------------------------------------------------------------------------------
    # Memory
    # ---------------------------------------------------------------------------------------------
    def estimate_memory(self, n_rows: int, n_cols: int | None = None, n_features: int = 0,
                        backend: str | None = None) -> StackMemoryEstimate:
        """Memory of a stack with this set's kernels over ``n_rows`` x ``n_cols`` samples.

        ``n_cols = None`` means the training stack (``n_rows`` x ``n_rows``): the lazy backend then serves
        the solver by columns within ``cache_size`` instead of combining it densely.
        """
        backend = backend or self.backend
        if backend == "auto":
            backend = self._choose_backend(n_rows, n_cols, n_features)
        cache = self.cache_size if n_cols is None else None
        return estimate_stack_memory(len(self.builders), n_rows, n_cols, str(self.dtype), backend,
                                     n_features, self.block_size, cache)

    def _budget(self) -> int:
        return available_memory() if self.memory_budget is None else parse_bytes(self.memory_budget)

    def _choose_backend(self, n_rows: int, n_cols: int | None, n_features: int) -> str:
        if self.backend != "auto":
            return self.backend
        dense = self.estimate_memory(n_rows, n_cols, n_features, backend="dense")
        return "dense" if dense.resident <= self._budget() else "lazy"

    # ---------------------------------------------------------------------------------------------
    # Stacks
    # ---------------------------------------------------------------------------------------------
    def fit_stack(self, X: np.ndarray) -> KernelStack:
        """Fit every builder on ``X`` and return the train x train stack."""
        # One private copy shared by all builders (they keep their training features; a caller
        # changing X afterwards must not change the fitted kernels).
        X = check_array(X, dtype=np.float64, order="C", copy=True)
        if self.standardize:
            scaler = StandardScaler().fit(X)
            self.feature_mean_, self.feature_scale_ = scaler.mean_, scaler.scale_
            X = self._standardized(X)
        n = len(X)
        factored = (estimate_factored_memory(self.builders, X, str(self.dtype))
                    if self.backend in ("factored", "auto") else None)
        if self.backend == "auto" and factored is not None and (
                factored.resident <= 0.5 * self.estimate_memory(n, None, X.shape[1], "dense").resident
                and factored.resident <= self._budget()):
            self.backend_ = "factored"
        else:
            self.backend_ = self._choose_backend(n, n, X.shape[1])
        estimate = factored if self.backend_ == "factored" else self.estimate_memory(n, None, X.shape[1],
                                                                                      self.backend_)
        check_budget(estimate, self._budget())
        for b in self.builders:
            b.fit(X)
        self.n_train_ = n
        if self.backend_ == "lazy":
            return self._fit_lazy(X)
        if self.backend_ == "factored":
            stack, norm = build_factored(self.builders, X, self.normalize, self.dtype, self.factor_tol)
            self._store_normalization(norm)
            return stack
        with small_pages():  # written once: huge-page faults cost more than the build (multikernel._pages)
            return self._fit_dense(X, n)

    def _fit_dense(self, X: np.ndarray, n: int) -> KernelStack:
        norm_all = Normalization.empty(self.normalize, len(self.builders), n)
        # Kernels built by their symmetric paths, normalized symmetrically, are exactly symmetric: the stack
        # says so, and the solvers' first operation need not check it (a read of the whole stack).
        symmetric = True if all(symmetric_path(b) for b in self.builders) else None
        data, finish = self._allocate((len(self.builders), n, n), symmetric)
        # float64 kernels sharing a base are mapped straight into the stack (no temporary, no copy)
        direct = data if data.dtype == np.float64 else None
        for m, K in raw_blocks(self.builders, group_builders(self.builders), X, None, symmetric=True,
                               out=direct):
            # Every normalization's constants of kernel m depend on kernel m only: fit them on the raw
            # float64 kernel, normalize, store.  (K may be reused by the next kernel of its group.)
            col_mean = [K.mean(axis=0)] if self.normalize == "center" else None
            norm = Normalization.fit(self.normalize, [np.diagonal(K).copy()], col_mean)
            for name in ("scale", "col_diag", "col_mean", "grand"):
                value = getattr(norm, name)
                if value is not None:
                    getattr(norm_all, name)[m] = value[0]
            norm.apply(K, 0)  # in place
            if not (direct is not None and np.may_share_memory(K, data)):
                data[m] = K
        self._store_normalization(norm_all)
        return finish()

    def _allocate(self, shape: tuple[int, int, int], symmetric: bool | None = None):
        if self.backend_ == "memmap":
            data, path, temporary = MemmapStack.create(shape, self.dtype, self.memmap_dir)

            def finish() -> KernelStack:
                data.flush()
                return MemmapStack.open(path, shape, self.dtype, temporary)

            return data, finish
        data = np.empty(shape, dtype=self.dtype)
        return data, lambda: DenseStack(data, symmetric=symmetric)

    def _fit_lazy(self, X: np.ndarray) -> LazyStack:
        M, n = len(self.builders), len(X)
        block = parse_bytes(self.block_size)
        raw = LazyStack(self.builders, X, Normalization("none"), n, block_bytes=block, dtype=self.dtype)
        diags = list(raw.diag()) if self.normalize in ("trace", "unit_diagonal") else None
        col_means = None
        if self.normalize == "center":
            # One pass over all kernels by row blocks: the training kernels' column means.
            sums = np.zeros((M, n))
            step = raw._block_rows(n)
            for start in range(0, n, step):
                for m, K in raw._blocks(range(M), raw._rows[start:start + step], raw._cols):
                    sums[m] += K.sum(axis=0)
            col_means = list(sums / n)
        self._store_normalization(Normalization.fit(self.normalize, diags or [], col_means))
        return LazyStack(self.builders, X, self.normalization_, n, block_bytes=block, dtype=self.dtype,
                         cache_size=self.cache_size)

    # The fitted constants are kept as plain array attributes (``scale_``, ``col_diag_``,
    # ``col_mean_``, ``grand_``), so that generic persistence of fitted attributes can save and restore a
    # kernel set; ``normalization_`` is rebuilt from them.
    _NORM_FIELDS = ("scale", "col_diag", "col_mean", "grand")

    def _store_normalization(self, norm: Normalization) -> None:
        for name in self._NORM_FIELDS:
            value = getattr(norm, name)
            if value is not None:
                setattr(self, f"{name}_", value)
            elif hasattr(self, f"{name}_"):
                delattr(self, f"{name}_")

    @property
    def normalization_(self) -> Normalization:
        """The fitted normalization constants (training rows and columns)."""
        if not hasattr(self, "n_train_"):
            raise AttributeError("normalization_: the kernel set is not fitted")
        fields = {name: getattr(self, f"{name}_", None) for name in self._NORM_FIELDS}
        return Normalization(self.normalize, row_diag=fields["col_diag"], row_mean=fields["col_mean"],
                             **fields)

    def cross_stack(self, X: np.ndarray) -> KernelStack:
        """The cross stack between ``X`` and the training features, shape (M, len(X), n_train)."""
        if not hasattr(self, "n_train_"):
            raise ValueError("call fit_stack before cross_stack")
        X = self._standardized(check_array(X, dtype=np.float64, order="C"))
        M, n, n_train = len(self.builders), len(X), self.n_train_
        # a factored training stack's cross stacks are the exact kernels from the builders, computed by blocks
        lazy = self.backend_ in ("lazy", "factored")
        check_budget(self.estimate_memory(n, n_train, X.shape[1], "lazy" if lazy else self.backend_),
                     self._budget())
        fitted = self.normalization_
        row_diag = self._row_diag(X) if fitted.needs_row_diag else None
        if lazy:
            row_mean = None
            if fitted.needs_row_mean:
                raw = LazyStack(self.builders, X, Normalization("none"), n_train,
                                block_bytes=parse_bytes(self.block_size))
                row_mean = np.empty((M, n))
                step = raw._block_rows(n_train)
                for start in range(0, n, step):
                    for m, K in raw._blocks(range(M), raw._rows[start:start + step], raw._cols):
                        row_mean[m, start:start + step] = K.mean(axis=1)
            norm = fitted.for_rows(row_diag, row_mean)
            return LazyStack(self.builders, X, norm, n_train, block_bytes=parse_bytes(self.block_size),
                             dtype=self.dtype, cache_size=self.cache_size)
        data, finish = self._allocate((M, n, n_train))
        row_mean = np.empty((M, n)) if fitted.needs_row_mean else None
        norm = fitted.for_rows(row_diag, row_mean)
        for m, K in raw_blocks(self.builders, group_builders(self.builders), X, None):
            if row_mean is not None:
                row_mean[m] = K.mean(axis=1)
            data[m] = norm.apply(K, m)
        return finish()

    def _standardized(self, X: np.ndarray) -> np.ndarray:
        if not self.standardize:
            return X
        return (X - self.feature_mean_) / self.feature_scale_

    def _row_diag(self, X: np.ndarray) -> np.ndarray:
        out = np.empty((len(self.builders), len(X)))
        for m, b in enumerate(self.builders):
            if not hasattr(b, "self_similarity"):
                raise ValueError(f"the unit_diagonal normalization needs k(x, x) of new samples, which the "
                                 f"builder {b.describe()} does not provide (no self_similarity method)")
            out[m] = b.self_similarity(X)
        return out

    def describe(self) -> list[str]:
        return [b.describe() for b in self.builders]
