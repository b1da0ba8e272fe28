"""Built-in kernel builders and kernel families."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.metrics.pairwise import euclidean_distances

from multikernel.hookspecs import hookimpl
from multikernel.interfaces import KernelBuilder


class FeatureKernel(KernelBuilder):
    """Base of the builders computed from (a subset of) the feature columns.

    ``columns`` is ``None`` for all features, or a sequence of column indices.
    """

    columns: Sequence[int] | None

    def _select(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2:
            raise ValueError(f"features must be a 2-D array; got shape {X.shape}")
        if self.columns is None:
            return X
        cols = np.asarray(self.columns, dtype=np.intp).ravel()
        if cols.size == 0:
            raise ValueError(f"{self.name}: the feature subset 'columns' is empty")
        if cols.min() < -X.shape[1] or cols.max() >= X.shape[1]:
            raise ValueError(f"{self.name}: columns {list(cols)} out of range for {X.shape[1]} features")
        return X[:, cols]

    def fit(self, X: np.ndarray, y: np.ndarray | None = None) -> FeatureKernel:
        self.X_fit_ = self._select(X)
        self._fit_parameters(self.X_fit_)
        return self

    def transform(self, X: np.ndarray) -> np.ndarray:
        Z = self._select(X)
        if Z.shape[1] != self.X_fit_.shape[1]:
            raise ValueError(f"{self.name}: expected {self.X_fit_.shape[1]} features, got {Z.shape[1]}")
        return self._kernel(Z, self.X_fit_)

    def _fit_parameters(self, X: np.ndarray) -> None:
        """Learn data-dependent parameters (bandwidths) from the training features."""

    def _kernel(self, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        raise NotImplementedError


class LinearKernel(FeatureKernel):
    """``k(x, x') = <x, x'>``."""

    name = "linear"

    def __init__(self, columns: Sequence[int] | None = None) -> None:
        self.columns = columns

    def _kernel(self, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        return A @ B.T


class PolynomialKernel(FeatureKernel):
    """``k(x, x') = (gamma <x, x'> + coef0) ** degree`` (SimpleMKL's form with the defaults)."""

    name = "poly"

    def __init__(self, degree: int = 2, gamma: float = 1.0, coef0: float = 1.0,
                 columns: Sequence[int] | None = None) -> None:
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.columns = columns

    def _kernel(self, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        return (self.gamma * (A @ B.T) + self.coef0) ** self.degree


class RBFKernel(FeatureKernel):
    """Gaussian kernel ``exp(-gamma ||x - x'||^2)``.

    Give ``gamma``, or ``sigma`` (``gamma = 1 / (2 sigma^2)``), or neither: then
    ``gamma = gamma_scale / A`` with ``A`` the mean squared distance between training points.
    """

    name = "rbf"

    def __init__(self, gamma: float | None = None, sigma: float | None = None, gamma_scale: float = 1.0,
                 columns: Sequence[int] | None = None) -> None:
        self.gamma = gamma
        self.sigma = sigma
        self.gamma_scale = gamma_scale
        self.columns = columns

    def _fit_parameters(self, X: np.ndarray) -> None:
        if self.gamma is not None and self.sigma is not None:
            raise ValueError("rbf: give gamma or sigma, not both")
        if self.gamma is not None:
            self.gamma_ = float(self.gamma)
        elif self.sigma is not None:
            self.gamma_ = 1.0 / (2.0 * float(self.sigma) ** 2)
        else:
            mean_sq = float(np.mean(euclidean_distances(X, squared=True)))
            self.gamma_ = self.gamma_scale / mean_sq if mean_sq > 0 else self.gamma_scale
        if not (np.isfinite(self.gamma_) and self.gamma_ > 0):
            raise ValueError(f"rbf: gamma must be positive and finite; got {self.gamma_!r}")

    def _kernel(self, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        D = euclidean_distances(A, B, squared=True)
        return np.exp(-self.gamma_ * D)


def simplemkl_family(n_features: int, sigmas: Sequence[float] = tuple(2.0**k for k in range(-3, 7)),
                     degrees: Sequence[int] = (1, 2, 3), single_features: bool = True) -> list[KernelBuilder]:
    """SimpleMKL's kernels: Gaussian (each sigma) and polynomial (each degree), on all features and on
    each single feature: ``(len(sigmas) + len(degrees)) * (n_features + 1)`` kernels."""
    subsets: list[list[int] | None] = [None]
    if single_features:
        subsets += [[j] for j in range(n_features)]
    out: list[KernelBuilder] = []
    for cols in subsets:
        out += [RBFKernel(sigma=s, columns=cols) for s in sigmas]
        out += [PolynomialKernel(degree=d, columns=cols) for d in degrees]
    return out


def rbf_poly_family(n_features: int) -> list[KernelBuilder]:
    """A small default: Gaussian kernels at 5 multiples of the mean-distance bandwidth, linear, and
    polynomial of degree 2 and 3, on all features."""
    out: list[KernelBuilder] = [RBFKernel(gamma_scale=s) for s in (0.25, 0.5, 1.0, 2.0, 4.0)]
    out += [LinearKernel(), PolynomialKernel(degree=2, gamma=1.0 / n_features),
            PolynomialKernel(degree=3, gamma=1.0 / n_features)]
    return out


@hookimpl
def multikernel_kernel_builders() -> dict[str, type[KernelBuilder]]:
    return {"linear": LinearKernel, "poly": PolynomialKernel, "rbf": RBFKernel}


@hookimpl
def multikernel_kernel_families() -> dict[str, object]:
    return {"simplemkl": simplemkl_family, "rbf_poly": rbf_poly_family}
