"""Built-in kernel builders and kernel families (registered through the ``multikernel`` entry points).

The builders live in ``_kernel_features`` (maps of feature vectors) and ``_kernel_special`` (given
distances, precomputed kernels, products); this module names them and builds the families of the papers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from multikernel.core.hookspecs import hookimpl
from multikernel.core.interfaces import KernelBuilder

from ._kernel_base import BandwidthKernel, FeatureKernel
from ._kernel_features import (
    CosineKernel,
    ExpChi2Kernel,
    IntersectionKernel,
    InverseDistanceKernel,
    InverseSquareDistanceKernel,
    LaplacianKernel,
    LinearKernel,
    ModifiedChi2Kernel,
    PolynomialKernel,
    RBFKernel,
)
from ._kernel_special import DistanceKernel, PrecomputedKernel, ProductKernel

__all__ = [
    "FeatureKernel", "BandwidthKernel", "LinearKernel", "PolynomialKernel", "CosineKernel", "RBFKernel",
    "LaplacianKernel",
    "InverseSquareDistanceKernel", "InverseDistanceKernel", "ExpChi2Kernel", "IntersectionKernel",
    "ModifiedChi2Kernel", "DistanceKernel", "PrecomputedKernel", "ProductKernel", "BUILDERS", "FAMILIES",
    "simplemkl_family", "rbf_poly_family", "event6_family", "chi2_family", "iokl_family",
]

BUILDERS: dict[str, type[KernelBuilder]] = {
    cls.name: cls
    for cls in (LinearKernel, PolynomialKernel, CosineKernel, RBFKernel, LaplacianKernel,
                InverseSquareDistanceKernel, InverseDistanceKernel, ExpChi2Kernel, IntersectionKernel,
                ModifiedChi2Kernel, DistanceKernel, PrecomputedKernel, ProductKernel)
}

# Xu's Event6 kernel types, as feature builders and as kinds of a given distance matrix.
_EVENT6_TYPES: tuple[tuple[type[FeatureKernel], str], ...] = (
    (RBFKernel, "gaussian"),
    (LaplacianKernel, "laplacian"),
    (InverseSquareDistanceKernel, "inverse_square_distance"),
    (InverseDistanceKernel, "inverse_distance"),
)


def _groups(n_features: int, feature_groups: Sequence[Sequence[int]] | None) -> list[list[int] | None]:
    if feature_groups is None:
        return [None]
    groups = [list(g) for g in feature_groups]
    for g in groups:
        if not g:
            raise ValueError("a feature group is empty")
        if min(g) < 0 or max(g) >= n_features:
            raise ValueError(f"feature group {g} out of range for {n_features} features")
    return groups


def simplemkl_family(n_features: int, sigmas: Sequence[float] = tuple(2.0**k for k in range(-3, 7)),
                     degrees: Sequence[int] = (1, 2, 3), single_features: bool = True) -> list[KernelBuilder]:
    """SimpleMKL's kernels (Rakotomamonjy et al. 2008; Xu's benchmarks): Gaussian ``exp(-||x - x'||^2 /
    (2 sigma^2))`` for each sigma and polynomial ``(<x, x'> + 1)^d`` for each degree, on all features
    and on each single feature: ``(len(sigmas) + len(degrees)) * (n_features + 1)`` kernels."""
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


def iokl_family(n_features: int) -> list[KernelBuilder]:
    """The four input kernels of Xu's semi-supervised and multiple-instance IOKL experiments (thesis ch. 4):
    Gaussian, Laplacian, inverse square distance and inverse distance, each with ``gamma = 1/A``, ``A`` the mean
    squared distance between distinct training points."""
    return [RBFKernel(), LaplacianKernel(), InverseSquareDistanceKernel(), InverseDistanceKernel()]


def event6_family(n_features: int, distances: Sequence[np.ndarray] | None = None,
                  feature_groups: Sequence[Sequence[int]] | None = None,
                  exponents: Sequence[float] = (-2, -1, 0, 1, 2),
                  index_column: int = 0) -> list[KernelBuilder]:
    """Xu's Event6 kernels: for each distance, Gaussian ``exp(-gamma D^2)``, Laplacian ``exp(-sqrt(gamma)
    D)``, inverse square distance ``1 / (gamma D^2 + 1)`` and inverse distance ``1 / (sqrt(gamma) D +
    1)``, with ``gamma = 4^(n-1) gamma_0``, ``gamma_0 = 1 / (mean squared training distance)``.

    The distances are the given matrices over all samples (``distances``; the features then hold sample
    indices in ``index_column``), or else the Euclidean distances of each feature group (all features by
    default).  ``4 * len(exponents)`` kernels per distance (80 for the paper's 4 distances).
    """
    scales = [4.0 ** (n - 1) for n in exponents]
    out: list[KernelBuilder] = []
    if distances is not None:
        for D in distances:
            for _, kind in _EVENT6_TYPES:
                out += [DistanceKernel(distances=D, kind=kind, gamma_scale=s, index_column=index_column)
                        for s in scales]
        return out
    for cols in _groups(n_features, feature_groups):
        for cls, _ in _EVENT6_TYPES:
            out += [cls(gamma_scale=s, columns=cols) for s in scales]
    return out


def chi2_family(n_features: int, feature_groups: Sequence[Sequence[int]] | None = None,
                distances: Sequence[np.ndarray] | None = None,
                exponents: Sequence[float] = (-1, -0.5, 0, 0.5, 1),
                index_column: int = 0) -> list[KernelBuilder]:
    """Xu's YouTube kernels: exponential chi-square ``exp(-gamma D_chi2)`` with ``gamma = 4^(n-1) / A``,
    ``A`` the mean chi-square distance between training samples, for each feature group (a histogram:
    Trajectory, HOG, HOF, MBH in the paper) or each given chi-square distance matrix.

    ``len(exponents)`` kernels per group (20 for the paper's 4 descriptors).
    """
    scales = [4.0 ** (n - 1) for n in exponents]
    if distances is not None:
        return [DistanceKernel(distances=D, kind="exponential", gamma_scale=s, index_column=index_column)
                for D in distances for s in scales]
    return [ExpChi2Kernel(gamma_scale=s, columns=cols)
            for cols in _groups(n_features, feature_groups) for s in scales]


FAMILIES: dict[str, Callable[..., list[KernelBuilder]]] = {
    "simplemkl": simplemkl_family,
    "rbf_poly": rbf_poly_family,
    "iokl": iokl_family,
    "event6": event6_family,
    "chi2": chi2_family,
    "youtube": chi2_family,
}


@hookimpl
def multikernel_kernel_builders() -> dict[str, type[KernelBuilder]]:
    return dict(BUILDERS)


@hookimpl
def multikernel_kernel_families() -> dict[str, Callable[..., list[KernelBuilder]]]:
    return dict(FAMILIES)
