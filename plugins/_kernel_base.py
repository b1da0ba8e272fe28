"""Shared machinery of the built-in kernel builders: input checks, bases, bandwidth statistics.

A built-in builder computes its kernel in two steps: a *base* matrix that depends only on the features
and the column subset (a Gram matrix, squared Euclidean or chi-square distances), then an element-wise
*map* with the fitted parameters.  Builders that share a base (ten Gaussian bandwidths on the same
columns) declare the same :meth:`FeatureKernel.base_key`, and :class:`multikernel.stack.kernelset.KernelSet`
computes that base once for all of them.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np
from sklearn.utils import check_array

from multikernel._ext import _kernels
from multikernel.core.interfaces import KernelBuilder
from multikernel.core.validation import check_positive_real

__all__ = ["FeatureKernel", "BandwidthKernel", "validate_features", "mean_offdiag", "cached_statistic",
           "apply_map", "map_coefficient", "resolve_gamma"]

MAPS = _kernels.MAPS


def validate_features(X: Any, who: str) -> np.ndarray:
    """Features as a finite, C-contiguous float64 2-D array (``ValueError`` naming ``who`` otherwise)."""
    try:
        return check_array(X, dtype=np.float64, order="C", ensure_min_samples=1, ensure_min_features=1)
    except ValueError as exc:
        raise ValueError(f"{who}: {exc}") from exc


def mean_offdiag(D: np.ndarray) -> float:
    """Mean of a square matrix over the pairs ``i != j`` (0 for a single sample)."""
    n = D.shape[0]
    if n < 2:
        return 0.0
    return float((D.sum(dtype=np.float64) - np.trace(D)) / (n * (n - 1)))


# Bandwidth statistics (mean chi-square distance, ...) cost a pass over all training pairs.  Every builder
# of a family with a relative bandwidth needs the same statistic of the same training features, so it is
# cached per (training array, column subset, statistic) and dropped when the training array is freed.
_STATS: dict[tuple[Hashable, ...], float] = {}


def cached_statistic(X: np.ndarray, key: tuple[Hashable, ...], compute: Callable[[], float]) -> float:
    """``compute()``, memoised for the lifetime of the array ``X``.

    The key holds two O(n d) checksums of ``X`` besides its identity, so that an array changed in place
    between two fits is not served a stale statistic.
    """
    checksum = (float(X.sum()), float(np.einsum("ij,ij->", X, X)))
    full_key = (id(X), X.shape, checksum, *key)
    if full_key not in _STATS:
        _STATS[full_key] = float(compute())
        weakref.finalize(X, _STATS.pop, full_key, None)
    return _STATS[full_key]


def resolve_gamma(who: str, gamma: float | None, gamma_scale: float, reference: Callable[[], float]) -> float:
    """``gamma`` if given, else ``gamma_scale / reference()`` (``reference`` is a mean training distance).

    A zero reference (all training points equal) falls back to ``gamma = gamma_scale``.
    """
    if gamma is not None:
        return check_positive_real(f"{who}: gamma", gamma)
    gamma_scale = check_positive_real(f"{who}: gamma_scale", gamma_scale)
    ref = reference()
    gamma = gamma_scale / ref if ref > 0 else gamma_scale
    if not np.isfinite(gamma):
        raise ValueError(f"{who}: the mean training distance ({ref:.3g}) is too small for a bandwidth "
                         f"gamma_scale / mean: the features are numerically constant at this scale; rescale "
                         f"them (standardize=True) or give gamma")
    return check_positive_real(f"{who}: gamma", gamma)


def map_coefficient(kind: str, gamma: float) -> float:
    """The ``a`` of :func:`apply_map` for a bandwidth ``gamma``: the maps of ``sqrt(x)`` take ``sqrt(gamma)``.

    ``exp(-sqrt(gamma) D)`` and ``1 / (sqrt(gamma) D + 1)`` are maps of ``D^2`` with ``a = sqrt(gamma)``,
    so ``gamma`` keeps the meaning it has for the maps of ``D^2`` (``exp(-gamma D^2)``, ...).
    """
    return float(np.sqrt(gamma)) if kind in ("exp_sqrt", "inv_sqrt") else float(gamma)


_MAP_BLOCK = 1 << 18  # entries of the float64 buffer of a float32 exp map (2 MB: stays in cache)


def _exp_map(base: np.ndarray, kind: str, a: float, tmp: np.ndarray, out: np.ndarray) -> None:
    """``out = exp(-a base)`` or ``exp(-a sqrt(base))`` through the float64 ``tmp`` (may be ``out``)."""
    if kind == "exp_sqrt":
        np.sqrt(base, out=tmp)
        np.multiply(tmp, -a, out=tmp)
    else:
        np.multiply(base, -a, out=tmp)
    np.exp(tmp, out=out, casting="same_kind")


def apply_map(base: np.ndarray, kind: str, out: np.ndarray, a: float = 1.0, b: float = 0.0,
              c: float = 1.0) -> np.ndarray:
    """Write ``f(base)`` into ``out`` (float32 or float64, same shape), ``f`` one of the maps below.

    ``exp`` maps go through numpy's vectorised ``exp`` (much faster than the C library's scalar one);
    the rational and polynomial maps run in the parallel Cython loop.  ``out`` may be ``base``.

    ============  =========================
    ``scale``     ``a x + b``
    ``exp``       ``exp(-a x)``
    ``exp_sqrt``  ``exp(-a sqrt(x))``
    ``inv``       ``1 / (a x + 1)``
    ``inv_sqrt``  ``1 / (a sqrt(x) + 1)``
    ``pow``       ``(a x + b) ** c``
    ============  =========================
    """
    if kind == "exp" or kind == "exp_sqrt":
        if out.dtype == np.float64:
            _exp_map(base, kind, a, out, out)
            return out
        # float32: through a float64 buffer of a few rows (exp in double, then rounded once, as before), not
        # one of the whole matrix: a fresh n x n float64 temporary cost its page faults on every kernel
        # (musk2, n = 6598: 0.07-0.43 s per map against 0.05-0.08 s in blocks; the same bits).
        rows = max(1, _MAP_BLOCK // max(base.shape[-1], 1)) if base.ndim == 2 else len(base)
        tmp = np.empty((min(rows, len(base)),) + base.shape[1:], dtype=np.float64)
        for i in range(0, len(base), rows):
            block = tmp[:len(base[i:i + rows])]
            _exp_map(base[i:i + rows], kind, a, block, out[i:i + rows])
        return out
    if kind == "scale" and a == 1.0 and b == 0.0:
        if out is not base:
            np.copyto(out, base, casting="same_kind")
        return out
    _kernels.elementwise_map(np.ascontiguousarray(base), MAPS[kind], a, b, c, out)
    return out


class FeatureKernel(KernelBuilder):
    """Base of the builders computed from (a subset of) the feature columns.

    ``columns`` is ``None`` for all features, or a sequence of column indices.  Subclasses define
    :meth:`_base` (features -> base matrix), :meth:`_apply` (base -> kernel with the fitted parameters;
    the identity by default), :meth:`_fit_parameters` when a parameter depends on the training data,
    and :meth:`_self_similarity` (the diagonal ``k(x, x)``, for the unit-diagonal normalization).

    The fitted ``X_fit_`` (the training features of the builder's columns) is derived from the whole
    training features, which every builder of a :class:`~multikernel.stack.kernelset.KernelSet` shares:
    :meth:`training_features` and :meth:`set_training_features` let a saved model store those once for
    all its builders instead of one ``X_fit_`` per builder (see :mod:`multikernel.estimators.persistence`).

    Parameters
    ----------
    columns : sequence of int, optional
        Feature subset (all features when ``None``).
    """

    columns: Sequence[int] | None
    #: Kernels of non-negative features (histograms) refuse negative values.
    nonnegative: bool = False
    #: The kernel is positive semi-definite for every input (checked by the tests).
    psd: bool = True
    #: Fitted attributes rebuilt by :meth:`set_training_features` (a saved model does not store them).
    derived_from_training_features: tuple[str, ...] = ("X_fit_",)

    def __init__(self, columns: Sequence[int] | None = None) -> None:
        self.columns = columns

    # ---------------------------------------------------------------------------------------------
    # Columns and input checks
    # ---------------------------------------------------------------------------------------------
    def _column_index(self, n_features: int) -> np.ndarray | None:
        if self.columns is None:
            return None
        cols = np.asarray(self.columns, dtype=np.intp).ravel()
        if cols.size == 0:
            raise ValueError(f"{self.name}: the feature subset 'columns' is empty")
        if cols.min() < -n_features or cols.max() >= n_features:
            raise ValueError(f"{self.name}: columns {cols.tolist()} out of range for {n_features} features")
        return cols

    def _select(self, X: np.ndarray) -> np.ndarray:
        """The builder's columns of already validated features (a view when all columns are used)."""
        cols = self._column_index(X.shape[1])
        A = X if cols is None else np.ascontiguousarray(X[:, cols])
        if self.nonnegative and A.size and A.min() < 0:
            raise ValueError(f"{self.name}: features must be non-negative (histograms); "
                             f"found the value {A.min():g}")
        return A

    # ---------------------------------------------------------------------------------------------
    # KernelBuilder API
    # ---------------------------------------------------------------------------------------------
    def fit(self, X: np.ndarray, y: np.ndarray | None = None) -> FeatureKernel:
        X = validate_features(X, self.name)
        self.n_features_in_ = X.shape[1]
        self.set_training_features(X)
        self._fit_parameters(self.X_fit_, X)
        return self

    def training_features(self) -> np.ndarray:
        """All the (validated) training features, every column, as given to :meth:`fit`."""
        return self._training_features

    def set_training_features(self, X: np.ndarray) -> None:
        """Keep ``X`` (validated training features, all columns) and derive ``X_fit_`` from it.

        :meth:`fit` calls this; so does loading a saved model, which stores the training features once.
        """
        if X.ndim != 2 or X.shape[1] != self.n_features_in_:
            raise ValueError(f"{self.name}: training features of shape {X.shape} for a builder fitted on "
                             f"{self.n_features_in_} features")
        self._training_features = X
        self.X_fit_ = self._select(X)

    def transform(self, X: np.ndarray) -> np.ndarray:
        A = self.select_rows(X)
        return self._kernel(A, self.X_fit_, symmetric=False)

    def fit_transform(self, X: np.ndarray, y: np.ndarray | None = None) -> np.ndarray:
        self.fit(X, y)
        return self._kernel(self.X_fit_, self.X_fit_, symmetric=True)

    def select_rows(self, X: np.ndarray) -> np.ndarray:
        """Validated test features reduced to the builder's columns (the input of :meth:`_base`)."""
        X = validate_features(X, self.name)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"{self.name}: expected {self.n_features_in_} features, got {X.shape[1]}")
        return self._select(X)

    def self_similarity(self, X: np.ndarray) -> np.ndarray:
        """``k(x_i, x_i)`` for every row of ``X``, shape (n,)."""
        return self._self_similarity(self.select_rows(X))

    def kernel_block(self, X: np.ndarray, cols: np.ndarray | None) -> np.ndarray:
        """The kernel between ``X`` and the training samples ``cols`` (all when ``None``), float64.

        The lazy stack computes its blocks through this, never holding a whole cross kernel.
        """
        B = self.X_fit_ if cols is None else self.X_fit_[cols]
        return self._kernel(self.select_rows(X), B, symmetric=False)

    # ---------------------------------------------------------------------------------------------
    # What subclasses define
    # ---------------------------------------------------------------------------------------------
    def base_key(self) -> tuple[Hashable, ...] | None:
        """Builders with equal keys share :meth:`_base`; ``None`` shares nothing."""
        cols = None if self.columns is None else tuple(int(c) for c in np.ravel(self.columns))
        return (self._base_kind, cols)

    _base_kind: str = ""

    def _fit_parameters(self, A: np.ndarray, X: np.ndarray) -> None:
        """Learn data-dependent parameters from the selected training features ``A`` (``X``: all)."""

    def _base(self, A: np.ndarray, B: np.ndarray, symmetric: bool) -> np.ndarray:
        raise NotImplementedError

    def _apply(self, base: np.ndarray, out: np.ndarray) -> np.ndarray:
        return apply_map(base, "scale", out)

    def _self_similarity(self, A: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _kernel(self, A: np.ndarray, B: np.ndarray, symmetric: bool = False) -> np.ndarray:
        """The kernel between selected features ``A`` and ``B`` as float64 (``symmetric``: B is A)."""
        base = self._base(A, B, symmetric)
        return self._apply(base, base)


class BandwidthKernel(FeatureKernel):
    """A map ``f(gamma * d)`` of a distance-like base ``d`` with ``k(x, x) = f(0) = 1``.

    ``gamma`` is given, or ``gamma_scale / A`` with ``A`` the mean base over distinct training pairs
    (computed once per training array and column subset, whatever the number of builders needing it).
    Subclasses set :attr:`_map` (an :func:`apply_map` kind) and define :meth:`_base` and
    :meth:`_mean_base`; :meth:`_given_gamma` may turn other parameters (``sigma``) into ``gamma``.

    Parameters
    ----------
    gamma : float, optional
        Given bandwidth.
    gamma_scale : float
        Multiplier of ``1 / A`` when ``gamma`` is not given.
    columns : sequence of int, optional
        Feature subset.
    """

    _map: str = "exp"

    def __init__(self, gamma: float | None = None, gamma_scale: float = 1.0,
                 columns: Sequence[int] | None = None) -> None:
        self.gamma = gamma
        self.gamma_scale = gamma_scale
        self.columns = columns

    def _given_gamma(self) -> float | None:
        return self.gamma

    def _mean_base(self, A: np.ndarray) -> float:
        """Mean of the base over the distinct pairs of the selected training features ``A``."""
        raise NotImplementedError

    def _fit_parameters(self, A: np.ndarray, X: np.ndarray) -> None:
        self.gamma_ = resolve_gamma(self.name, self._given_gamma(), self.gamma_scale,
                                    lambda: cached_statistic(X, self.base_key(), lambda: self._mean_base(A)))

    def _apply(self, base: np.ndarray, out: np.ndarray) -> np.ndarray:
        return apply_map(base, self._map, out, map_coefficient(self._map, self.gamma_))

    def _self_similarity(self, A: np.ndarray) -> np.ndarray:
        return np.ones(A.shape[0])
