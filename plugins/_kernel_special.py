"""Builders that are not maps of feature vectors: given distances, precomputed kernels, products."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.base import clone

from multikernel.core.interfaces import KernelBuilder

from ._kernel_base import apply_map, map_coefficient, mean_offdiag, resolve_gamma, validate_features

__all__ = ["DistanceKernel", "PrecomputedKernel", "ProductKernel", "DISTANCE_KINDS"]

# kind -> (map, the power of D that the map takes, whose mean over training pairs is the reference A)
DISTANCE_KINDS: dict[str, tuple[str, int]] = {
    "gaussian": ("exp", 2),                 # exp(-gamma D^2)
    "laplacian": ("exp_sqrt", 2),           # exp(-sqrt(gamma) D)
    "inverse_square_distance": ("inv", 2),  # 1 / (gamma D^2 + 1)
    "inverse_distance": ("inv_sqrt", 2),    # 1 / (sqrt(gamma) D + 1)
    "exponential": ("exp", 1),              # exp(-gamma D)   (chi-square distance matrices)
}


def _square_matrix(M: np.ndarray, who: str) -> np.ndarray:
    M = np.asarray(M, dtype=np.float64)
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise ValueError(f"{who}: expected a square matrix over all samples; got shape {M.shape}")
    if not np.all(np.isfinite(M)):
        raise ValueError(f"{who}: the matrix contains NaN or infinity")
    return M


def _sample_indices(X: np.ndarray, index_column: int, n_all: int, who: str) -> np.ndarray:
    """The integer sample indices held in column ``index_column`` of the features."""
    X = validate_features(X, who)
    if not -X.shape[1] <= index_column < X.shape[1]:
        raise ValueError(f"{who}: index_column {index_column} out of range for {X.shape[1]} features")
    col = X[:, index_column]
    idx = col.astype(np.intp)
    if not np.array_equal(idx, col) or idx.min() < 0 or idx.max() >= n_all:
        raise ValueError(f"{who}: column {index_column} must hold integer sample indices in [0, {n_all})")
    return idx


class _IndexedKernel(KernelBuilder):
    """A kernel looked up in a matrix over all samples; the features carry each sample's index.

    Subclasses name the parameter holding the matrix (:attr:`_matrix_param`) and check it in
    :meth:`_check_matrix`; the checked float64 copy is kept until that parameter is replaced.
    """

    index_column: int
    _matrix_param: str = ""

    def _check_matrix(self, M: np.ndarray) -> np.ndarray:
        return _square_matrix(M, self.name)

    def _matrix(self) -> np.ndarray:
        given = getattr(self, self._matrix_param)
        if given is None:
            raise ValueError(f"{self.name}: the {self._matrix_param!r} matrix is required")
        if getattr(self, "_checked", None) is not given:
            self._M, self._checked = self._check_matrix(given), given
        return self._M

    def _values(self, block: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def fit(self, X, y=None):
        M = self._matrix()
        self.train_index_ = _sample_indices(X, self.index_column, M.shape[0], self.name)
        self._fit_parameters(M[np.ix_(self.train_index_, self.train_index_)])
        return self

    def _fit_parameters(self, train_block: np.ndarray) -> None:
        """Learn parameters from the train x train block of the matrix."""

    def transform(self, X):
        return self.kernel_block(X, None)

    def kernel_block(self, X: np.ndarray, cols: np.ndarray | None) -> np.ndarray:
        """The kernel between the samples ``X`` and the training samples ``cols`` (all when ``None``)."""
        M = self._matrix()
        rows = _sample_indices(X, self.index_column, M.shape[0], self.name)
        train = self.train_index_ if cols is None else self.train_index_[cols]
        return self._values(M[np.ix_(rows, train)])

    def self_similarity(self, X):
        M = self._matrix()
        rows = _sample_indices(X, self.index_column, M.shape[0], self.name)
        return self._values(M[rows, rows][:, None])[:, 0]


class DistanceKernel(_IndexedKernel):
    """A kernel from a user-supplied distance matrix ``D`` over all samples (train and test).

    The features carry each sample's index into ``D`` in column ``index_column``; fitting uses only the
    train x train block (for the bandwidth), and the cross kernel reads the test x train block.

    ========================== ==========================  =================================
    ``kind``                   kernel                      reference ``A`` (mean over pairs)
    ========================== ==========================  =================================
    ``gaussian``               ``exp(-gamma D^2)``         mean ``D^2``
    ``laplacian``              ``exp(-sqrt(gamma) D)``     mean ``D^2``
    ``inverse_square_distance`` ``1 / (gamma D^2 + 1)``    mean ``D^2``
    ``inverse_distance``       ``1 / (sqrt(gamma) D + 1)`` mean ``D^2``
    ``exponential``            ``exp(-gamma D)``           mean ``D`` (chi-square distances)
    ========================== ==========================  =================================

    Parameters
    ----------
    distances : ndarray of shape (n_samples, n_samples)
        Non-negative distances between all samples.
    kind : str
        One of the kinds above.
    gamma : float, optional
        Given bandwidth; otherwise ``gamma_scale / A`` (Xu's ``gamma_0 = 1 / A``).
    gamma_scale : float
        Multiplier of ``1 / A``.
    index_column : int
        Feature column holding the sample indices.
    """

    name = "distance"

    def __init__(self, distances: np.ndarray | None = None, kind: str = "gaussian",
                 gamma: float | None = None, gamma_scale: float = 1.0, index_column: int = 0) -> None:
        self.distances = distances
        self.kind = kind
        self.gamma = gamma
        self.gamma_scale = gamma_scale
        self.index_column = index_column

    _matrix_param = "distances"

    def _check_matrix(self, M):
        D = super()._check_matrix(M)
        if D.min() < 0:
            raise ValueError(f"distance: distances must be non-negative; found {D.min():g}")
        return D

    def _matrix(self):
        if self.kind not in DISTANCE_KINDS:
            raise ValueError(f"distance: kind must be one of {sorted(DISTANCE_KINDS)}; got {self.kind!r}")
        return super()._matrix()

    def _fit_parameters(self, train_block):
        power = DISTANCE_KINDS[self.kind][1]
        self.gamma_ = resolve_gamma(self.name, self.gamma, self.gamma_scale,
                                    lambda: mean_offdiag(train_block**power))

    def _values(self, block):
        kind, power = DISTANCE_KINDS[self.kind]
        # The sqrt maps take D^2; the exponential kind maps D itself.
        base = block**2 if power == 2 else block.copy()
        return apply_map(base, kind, base, map_coefficient(kind, self.gamma_))

    def describe(self):
        return f"distance(kind={self.kind!r}, gamma={getattr(self, 'gamma_', self.gamma)!r})"


class PrecomputedKernel(_IndexedKernel):
    """A precomputed kernel.

    With ``matrix`` (a kernel over all samples, train and test), the features carry each sample's
    index into it in column ``index_column``, as for :class:`DistanceKernel`: this works beside other
    builders in a :class:`~multikernel.stack.kernelset.KernelSet`.  Without ``matrix`` the input *is* the
    kernel, as in scikit-learn's ``kernel="precomputed"``: ``fit`` takes the train x train kernel and
    ``transform`` a test x train kernel.

    Parameters
    ----------
    matrix : ndarray of shape (n_samples, n_samples), optional
        The kernel over all samples.
    index_column : int
        Feature column holding the sample indices (with ``matrix``).
    """

    name = "precomputed"

    def __init__(self, matrix: np.ndarray | None = None, index_column: int = 0) -> None:
        self.matrix = matrix
        self.index_column = index_column

    _matrix_param = "matrix"

    def _values(self, block):
        return np.array(block, dtype=np.float64)

    def fit(self, X, y=None):
        if self.matrix is not None:
            return super().fit(X, y)
        K = validate_features(X, self.name)
        if K.shape[0] != K.shape[1]:
            raise ValueError(f"precomputed: fit needs the square train x train kernel; got {K.shape}")
        self.n_train_ = K.shape[0]
        return self

    def kernel_block(self, X, cols):
        if self.matrix is not None:
            return super().kernel_block(X, cols)
        K = validate_features(X, self.name)
        if K.shape[1] != self.n_train_:
            raise ValueError(f"precomputed: expected a kernel with {self.n_train_} columns (the training "
                             f"samples); got shape {K.shape}")
        return np.array(K if cols is None else K[:, cols], dtype=np.float64)

    def self_similarity(self, X):
        if self.matrix is None:
            raise ValueError("precomputed: k(x, x) of new samples is unknown without 'matrix'; "
                             "the unit_diagonal normalization needs it")
        return super().self_similarity(X)


class ProductKernel(KernelBuilder):
    """Element-wise product of kernels ``k(x, x') = prod_f k_f(x, x')`` (PSD when every factor is, by
    the Schur product theorem); Bucak's product kernels of Caltech 101.

    Parameters
    ----------
    factors : sequence of KernelBuilder
        The factor builders (cloned when fitted).
    """

    name = "product"

    def __init__(self, factors: Sequence[KernelBuilder] = ()) -> None:
        self.factors = factors

    @property
    def psd(self) -> bool:
        return all(getattr(f, "psd", True) for f in self.factors)

    def fit(self, X, y=None):
        if len(self.factors) == 0:
            raise ValueError("product: at least one factor kernel is needed")
        self.factors_ = [clone(f).fit(X, y) for f in self.factors]
        return self

    def transform(self, X):
        return self.kernel_block(X, None)

    def kernel_block(self, X, cols):
        out = None
        for f in self.factors_:
            if hasattr(f, "kernel_block"):
                K = f.kernel_block(X, cols)
            else:
                K = f.transform(X)
                K = K if cols is None else K[:, cols]
            out = K if out is None else np.multiply(out, K, out=out)
        return out

    def self_similarity(self, X):
        out = np.ones(len(X))
        for f in self.factors_:
            out *= f.self_similarity(X)
        return out

    def describe(self):
        return "product(" + ", ".join(f.describe() for f in self.factors) + ")"
