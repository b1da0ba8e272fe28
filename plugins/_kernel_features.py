"""Built-in kernel builders computed from feature vectors."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from multikernel._ext import _kernels
from multikernel.core.validation import check_nonnegative_real, check_positive_integer, check_positive_real

from ._kernel_base import BandwidthKernel, FeatureKernel, apply_map, mean_offdiag

__all__ = [
    "LinearKernel", "PolynomialKernel", "CosineKernel", "RBFKernel", "LaplacianKernel",
    "InverseSquareDistanceKernel", "InverseDistanceKernel", "ExpChi2Kernel", "IntersectionKernel",
    "ModifiedChi2Kernel", "gram", "squared_distances", "chi2_distances", "modified_chi2_distances",
    "mean_squared_distance",
]


# -------------------------------------------------------------------------------------------------
# Bases
# -------------------------------------------------------------------------------------------------
def gram(A: np.ndarray, B: np.ndarray, symmetric: bool = False, out: np.ndarray | None = None) -> np.ndarray:
    """``A B'`` (numpy calls BLAS syrk for ``A A'``, half the work of a general product), into the
    C-contiguous float64 ``out`` when given.

    A single column (SimpleMKL's per-feature kernels) is an outer product: numpy's own loop, without
    waking BLAS's thread pool for a rank-one product.
    """
    if A.shape[1] == 1:
        return np.multiply.outer(A[:, 0], (A if symmetric else B)[:, 0], out=out)
    return np.matmul(A, A.T if symmetric else B.T, out=out)


def squared_distances(A: np.ndarray, B: np.ndarray, symmetric: bool = False,
                      scale: float = 1.0, out: np.ndarray | None = None) -> np.ndarray:
    """``scale * ||a_i - b_j||^2`` through the Gram matrix, clipped at 0, exact 0 on a symmetric diagonal;
    into the C-contiguous float64 ``out`` when given."""
    G = np.ascontiguousarray(gram(A, B, symmetric, out=out))
    na = np.einsum("ij,ij->i", A, A)
    nb = na if symmetric else np.einsum("ij,ij->i", B, B)
    _kernels.sqdist_from_gram(G, na, nb, symmetric, scale)
    return G


def chi2_distances(A: np.ndarray, B: np.ndarray, symmetric: bool = False) -> np.ndarray:
    """``sum_k (a_k - b_k)^2 / (a_k + b_k)`` for non-negative features (0/0 terms count 0)."""
    out = np.empty((A.shape[0], B.shape[0]), dtype=np.float64)
    _kernels.chi2_distances(A, A if symmetric else B, symmetric, out)
    return out


def modified_chi2_distances(A: np.ndarray, B: np.ndarray, symmetric: bool = False) -> np.ndarray:
    """Bucak's "modified chi-square" ``||a - b||^2 / ||a + b||^2`` (0 when a = b = 0)."""
    G = np.ascontiguousarray(gram(A, B, symmetric))
    na = np.einsum("ij,ij->i", A, A)
    nb = na if symmetric else np.einsum("ij,ij->i", B, B)
    den = na[:, None] + nb[None, :] + 2.0 * G
    # The numerator with the cancellation-noise cut of squared_distances (equal points give exactly 0).
    _kernels.sqdist_from_gram(G, na, nb, symmetric, 1.0)
    return np.divide(G, den, out=np.zeros_like(G), where=den > 0)


def mean_squared_distance(A: np.ndarray) -> float:
    """Mean of ``||a_i - a_j||^2`` over the pairs ``i != j``, in O(n d).

    ``sum_{i,j} ||a_i - a_j||^2 = 2 n sum_k var_k`` (population variances), and the n diagonal terms
    are 0, so the off-diagonal mean is ``2 n / (n - 1) * sum_k var_k``.
    """
    n = A.shape[0]
    if n < 2:
        return 0.0
    total_var = float(A.var(axis=0).sum())
    # Equal points leave a rounding residue of about (eps |x|)^2 in the variance: that is a zero distance.
    if total_var <= 1e-24 * float(np.einsum("ij,ij->", A, A)) / n:
        return 0.0
    return 2.0 * n / (n - 1) * total_var


# -------------------------------------------------------------------------------------------------
# Dot-product kernels
# -------------------------------------------------------------------------------------------------
class _DotProductKernel(FeatureKernel):
    """A map of the Gram matrix ``<x, x'>``."""

    _base_kind = "dot"

    def _base(self, A, B, symmetric):
        return gram(A, B, symmetric)

    def _self_similarity(self, A):
        return np.einsum("ij,ij->i", A, A)


class LinearKernel(_DotProductKernel):
    """``k(x, x') = <x, x'>``.

    Parameters
    ----------
    columns : sequence of int, optional
        Feature subset (all features when ``None``).
    """

    name = "linear"


class PolynomialKernel(_DotProductKernel):
    """``k(x, x') = (gamma <x, x'> + coef0) ** degree`` (SimpleMKL's ``(<x, x'> + 1)^d`` by default).

    Parameters
    ----------
    degree : int
        Positive integer degree (the kernel is PSD for integer degrees and ``coef0 >= 0``).
    gamma : float
        Scale of the inner product.
    coef0 : float
        Offset, ``>= 0``.
    columns : sequence of int, optional
        Feature subset.
    """

    name = "poly"

    def __init__(self, degree: int = 2, gamma: float = 1.0, coef0: float = 1.0,
                 columns: Sequence[int] | None = None) -> None:
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.columns = columns

    def _fit_parameters(self, A, X):
        check_positive_integer("poly: degree", self.degree)
        check_positive_real("poly: gamma", self.gamma)
        check_nonnegative_real("poly: coef0", self.coef0)

    def _apply(self, base, out):
        return apply_map(base, "pow", out, float(self.gamma), float(self.coef0), float(self.degree))

    def _self_similarity(self, A):
        return (self.gamma * super()._self_similarity(A) + self.coef0) ** int(self.degree)


def _unit_rows(A: np.ndarray) -> np.ndarray:
    """Rows scaled to unit Euclidean norm; zero rows stay zero (their kernel row is 0, as in scikit-learn).

    Each row is first divided by its largest magnitude, so that the squared norm neither underflows (rows
    of tiny values, whose cosine would exceed 1) nor overflows.
    """
    scale = np.max(np.abs(A), axis=1, keepdims=True) if A.shape[1] else np.zeros((len(A), 1))
    scale = np.where(scale > 0, scale, 1.0)
    S = A / scale
    norm = np.sqrt(np.einsum("ij,ij->i", S, S))[:, None]
    return S / np.where(norm > 0, norm, np.inf)


class CosineKernel(FeatureKernel):
    """``k(x, x') = <x, x'> / (||x|| ||x'||)``; 0 when either vector is 0.

    Parameters
    ----------
    columns : sequence of int, optional
        Feature subset.
    """

    name = "cosine"
    _base_kind = "cosine"

    def _base(self, A, B, symmetric):
        Au = _unit_rows(A)
        return gram(Au, Au if symmetric else _unit_rows(B), symmetric)

    def _self_similarity(self, A):
        return (np.abs(A) > 0).any(axis=1).astype(np.float64)  # 1 for any non-zero row, however small


# -------------------------------------------------------------------------------------------------
# Maps of the squared Euclidean distance
# -------------------------------------------------------------------------------------------------
class _DistanceMapKernel(BandwidthKernel):
    """A map of the squared Euclidean distance with ``gamma`` given, from ``sigma`` (``gamma = 1 /
    (_sigma_factor sigma^2)``), or relative to the mean squared training distance ``A``: ``gamma =
    gamma_scale / A`` (Xu's ``gamma_0 = 1 / A``)."""

    _base_kind = "sqeuclidean"
    _sigma_factor = 1.0

    def __init__(self, gamma: float | None = None, sigma: float | None = None, gamma_scale: float = 1.0,
                 columns: Sequence[int] | None = None) -> None:
        self.gamma = gamma
        self.sigma = sigma
        self.gamma_scale = gamma_scale
        self.columns = columns

    def _given_gamma(self):
        if self.sigma is None:
            return self.gamma
        if self.gamma is not None:
            raise ValueError(f"{self.name}: give gamma or sigma, not both")
        return 1.0 / (self._sigma_factor * check_positive_real(f"{self.name}: sigma", self.sigma) ** 2)

    def _mean_base(self, A):
        return mean_squared_distance(A)

    def _base(self, A, B, symmetric, out=None):
        return squared_distances(A, B, symmetric, out=out)

    def _kernel(self, A, B, symmetric=False):
        if self._map == "exp":
            # Fold -gamma into the distance pass: one pass fewer over the matrix.
            D = squared_distances(A, B, symmetric, scale=-self.gamma_)
            return np.exp(D, out=D)
        return super()._kernel(A, B, symmetric)


class RBFKernel(_DistanceMapKernel):
    """Gaussian kernel ``exp(-gamma ||x - x'||^2)``.

    Parameters
    ----------
    gamma : float, optional
        The bandwidth parameter.
    sigma : float, optional
        Alternative to ``gamma``: ``gamma = 1 / (2 sigma^2)`` (SimpleMKL's parameterisation).
    gamma_scale : float
        With neither ``gamma`` nor ``sigma``: ``gamma = gamma_scale / A``, ``A`` the mean squared
        distance between distinct training points.
    columns : sequence of int, optional
        Feature subset.
    """

    name = "rbf"
    _map = "exp"
    _sigma_factor = 2.0


class LaplacianKernel(_DistanceMapKernel):
    """Laplacian kernel ``exp(-sqrt(gamma) ||x - x'||)`` (Xu's Event6 form).

    Parameters are those of :class:`RBFKernel`; ``sigma`` gives ``gamma = 1 / sigma^2``.
    """

    name = "laplacian"
    _map = "exp_sqrt"


class InverseSquareDistanceKernel(_DistanceMapKernel):
    """Inverse square distance kernel ``1 / (gamma ||x - x'||^2 + 1)`` (PSD: a Cauchy kernel).

    Parameters are those of :class:`RBFKernel`; ``sigma`` gives ``gamma = 1 / sigma^2``.
    """

    name = "inverse_square_distance"
    _map = "inv"


class InverseDistanceKernel(_DistanceMapKernel):
    """Inverse distance kernel ``1 / (sqrt(gamma) ||x - x'|| + 1)``.

    PSD: ``1 / (1 + sqrt(s))`` is completely monotone in ``s = ||x - x'||^2`` (Schoenberg).
    Parameters are those of :class:`RBFKernel`; ``sigma`` gives ``gamma = 1 / sigma^2``.
    """

    name = "inverse_distance"
    _map = "inv_sqrt"


# -------------------------------------------------------------------------------------------------
# Histogram kernels (non-negative features)
# -------------------------------------------------------------------------------------------------
class ExpChi2Kernel(BandwidthKernel):
    """Exponential chi-square kernel ``exp(-gamma D_chi2(x, x'))``, ``D_chi2 = sum_k (x_k - x'_k)^2 /
    (x_k + x'_k)``, for non-negative features (histograms).

    Parameters
    ----------
    gamma : float, optional
        Given bandwidth.  Otherwise ``gamma = gamma_scale / A``, ``A`` the mean chi-square distance
        (not squared) between distinct training points (Xu's YouTube kernels: ``gamma_scale = 4^(n-1)``).
    gamma_scale : float
        Multiplier of ``1 / A``.
    columns : sequence of int, optional
        Feature subset.
    """

    name = "exp_chi2"
    _base_kind = "chi2"
    nonnegative = True

    def _mean_base(self, A):
        n = A.shape[0]
        return 0.0 if n < 2 else _kernels.chi2_sum_offdiag(A) / (n * (n - 1) / 2)

    def _base(self, A, B, symmetric):
        return chi2_distances(A, B, symmetric)

    def _kernel(self, A, B, symmetric=False):
        if symmetric:
            # Fused distance + exp over the upper triangle: the train kernel in one pass.
            out = np.empty((A.shape[0], A.shape[0]), dtype=np.float64)
            _kernels.chi2_exp_symmetric(A, self.gamma_, out)
            return out
        return super()._kernel(A, B, symmetric)


class IntersectionKernel(FeatureKernel):
    """Histogram intersection ``k(x, x') = sum_k min(x_k, x'_k)`` for non-negative features.

    Parameters
    ----------
    columns : sequence of int, optional
        Feature subset.
    """

    name = "intersection"
    _base_kind = "intersection"
    nonnegative = True

    def _base(self, A, B, symmetric):
        out = np.empty((A.shape[0], B.shape[0]), dtype=np.float64)
        _kernels.intersection(A, A if symmetric else B, symmetric, out)
        return out

    def _self_similarity(self, A):
        return A.sum(axis=1)


class ModifiedChi2Kernel(BandwidthKernel):
    """Bucak's "modified chi-square" kernel ``exp(-gamma d(x, x'))``, ``d = ||x - x'||^2 / ||x + x'||^2``
    (Bucak thesis Ch. 5, as printed), for non-negative features.

    ``d`` is a distance-like quantity in [0, 1]; the kernel is its exponential map with ``gamma = 1 /
    sigma``, ``sigma`` the mean training ``d`` (times ``1 / gamma_scale``).  Unlike the other
    exponential kernels it is not guaranteed PSD.

    Parameters
    ----------
    gamma : float, optional
        Given bandwidth.  Otherwise ``gamma = gamma_scale / A``, ``A`` the mean ``d`` between distinct
        training points.
    gamma_scale : float
        Multiplier of ``1 / A``.
    columns : sequence of int, optional
        Feature subset.
    """

    name = "chi2_modified"
    _base_kind = "chi2_modified"
    nonnegative = True
    psd = False

    def _mean_base(self, A):
        return mean_offdiag(modified_chi2_distances(A, A, True))

    def _base(self, A, B, symmetric):
        return modified_chi2_distances(A, B, symmetric)
