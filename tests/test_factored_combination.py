"""The factored stack's combination ``K(mu)`` (per group: gathered from its points, by its factors, or, with many
groups of very few points, all of those by one signed rank update) against the dense kernels; and fits on the
factored stack that reach the dense stack's certified optimum on drawn problems with hidden structure (samples
sharing points, duplicated kernels, ties, C over decades, unnormalized kernels)."""

from __future__ import annotations

import warnings
from unittest import mock

import numpy as np
import pytest
from _mkl_testing import mkl_problems, scaled
from hypothesis import given
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning

from multikernel.core.interfaces import MKLProblem
from multikernel.core.registry import get_registry
from multikernel.plugins.kernels import simplemkl_family
from multikernel.plugins.losses import CSVCLoss
from multikernel.stack import KernelSet, factored
from multikernel.stack.factored import FactoredStack, KernelGroup
from multikernel.stack.storage import DenseStack


def _mixed_stack(n: int = 90, seed: int = 0, one_hot: int = 0) -> FactoredStack:
    """A factored stack with every kind of group: few points (binary, categorical), all samples (continuous), and
    ``one_hot`` more binary columns (with enough of them the combination adds the few-point groups by one rank
    update)."""
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.integers(0, 2, n), rng.integers(0, 5, n), rng.normal(size=n),
                         rng.normal(size=n) ** 2, rng.integers(0, 2, (n, one_hot))]).astype(float)
    stack = KernelSet(simplemkl_family(X.shape[1]), normalize="trace", backend="factored",
                      standardize=True).fit_stack(X)
    assert isinstance(stack, FactoredStack)
    return stack


def _exact(stack: FactoredStack) -> np.ndarray:
    return np.stack([stack.kernel(m) for m in range(stack.n_kernels)])


@pytest.mark.parametrize("one_hot", [0, factored._EIGEN_MIN_GROUPS])
@pytest.mark.parametrize("fold", [False, True])
def test_combination_matches_the_kernels(fold, one_hot):
    full = _mixed_stack(one_hot=one_hot)
    assert (full._few_point_groups >= factored._EIGEN_MIN_GROUPS) == bool(one_hot)
    kinds = {(g.identity, len(g.dense_ids) > 0, len(g.factor_ids) > 0) for g in full.groups}
    assert (False, True, False) in kinds and any(i and f for i, _, f in kinds)  # few-point and factored groups
    rng = np.random.default_rng(1)
    stack = full.subset(np.sort(rng.choice(full.n_rows, 70, replace=False))) if fold else full
    K, n = _exact(stack), stack.n_rows
    # non-negative weights (a fit's), and weights of both signs (the change of weights CombinedKernel adds)
    for mu in (rng.random(stack.n_kernels) * (rng.random(stack.n_kernels) < 0.5), rng.normal(size=stack.n_kernels)):
        Kmu = np.tensordot(mu, K, 1)
        tol = 1e-12 * np.abs(Kmu).max() * stack.n_kernels
        assert np.allclose(stack.combine(mu), Kmu, rtol=0, atol=tol)
        base = rng.normal(size=(n, n))
        base += base.T  # a combination accumulates onto a symmetric one (CombinedKernel's updates)
        assert np.allclose(stack.combine(mu, out=base.copy(), accumulate=True), base + Kmu, rtol=0, atol=tol)
    # a cross block (rows are not its columns) gathers every group
    cross = full.subset(np.arange(10), np.arange(10, 30))
    mu = rng.random(full.n_kernels)
    assert np.allclose(cross.combine(mu), np.tensordot(mu, _exact(cross), 1), rtol=0, atol=1e-9)


@st.composite
def grouped_problems(draw):
    """A drawn MKL problem whose ``n`` samples share the ``k`` points of its kernels (each point at least once,
    the rest drawn: ties of samples, duplicated points of one class), in two groups: the kernels on the points,
    and the same kernels on the samples (every sample its own point), each factored where its rank allows."""
    drawn = draw(mkl_problems(n=(6, 16), kernels=(1, 4), log10_C=(-2.0, 3.0)))
    k = len(drawn.y)
    extra = draw(st.lists(st.integers(0, k - 1), max_size=k + 6), label="repeated points")
    index = np.array(draw(st.permutations(list(range(k)) + extra), label="sample order"), dtype=np.intp)
    n, M = len(index), len(drawn.Ks)
    on_samples = draw(st.lists(st.integers(0, M - 1), min_size=1, max_size=3), label="kernels on the samples")
    tol = 10.0 ** draw(st.sampled_from([-12.0, -8.0]), label="log10 factor tol")
    kernels = [0.5 * (S + S.T) for S in drawn.Ks]
    samples = [kernels[m][np.ix_(index, index)] for m in on_samples]
    groups = [KernelGroup.build(index, list(range(M)), kernels, tol, np.dtype("float64"), min_points=2),
              KernelGroup.build(np.arange(n, dtype=np.intp), list(range(M, M + len(samples))), samples, tol,
                                np.dtype("float64"), min_points=2)]
    exact = np.array([K[np.ix_(index, index)] for K in kernels] + samples)
    return FactoredStack(groups, n), exact, drawn.y[index], drawn.C, drawn


def _fit(method: str, stack, y, C):
    registry = get_registry()
    preset = registry.get("method", method)
    problem = MKLProblem(stack=stack, y=y, loss=CSVCLoss(C=C),
                         regularizer=registry.create("regularizer", preset.regularizer, **preset.regularizer_params),
                         tol=1e-3, inner_tol=1e-3, max_iter=150)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return registry.create("solver", preset.solver, **preset.solver_params).solve(problem)


@pytest.mark.parametrize("method", ["simplemkl", "sm1mkl", "lpmkl", "sm2mkl"])
@scaled(0.5)
@given(problem=grouped_problems(), rank_update=st.booleans())
def test_factored_fits_reach_the_dense_certified_optimum(method, problem, rank_update):
    stack, exact, y, C, _ = problem
    dense = _fit(method, DenseStack(exact), y, C)
    # rank_update: the drawn group of points combined by its eigenvectors (as with many few-point groups)
    with mock.patch.multiple(factored, _EIGEN_MIN_GROUPS=1 if rank_update else 10**9, _EIGEN_POINTS=64):
        stack = FactoredStack(stack.groups, stack.n_samples)
        got = _fit(method, stack, y, C)
    # both certificates hold the optimum of the exact kernels: the bounds overlap
    slack = 1e-9 * max(abs(dense.objective), 1.0)
    assert got.lower_bound <= dense.objective + slack and dense.lower_bound <= got.objective + slack, (
        got.lower_bound, got.objective, dense.lower_bound, dense.objective)
    if got.dual_gap <= 1e-3 and dense.dual_gap <= 1e-3:
        assert abs(got.objective - dense.objective) <= 2e-3 * abs(dense.objective) + slack
