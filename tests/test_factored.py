"""The factored kernel stack: exact factorizations where the rank is known, every operation against the dense
stack, the truncation bound, and certified fits on the exact kernels' optimum (cvxpy + Clarabel, and the
dense stack's certified fits)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _mkl_testing import make_problem, mkl_problems, reference, scaled
from hypothesis import given
from hypothesis import strategies as st
from sklearn.datasets import load_breast_cancer
from sklearn.exceptions import ConvergenceWarning

from multikernel import MKLClassifier
from multikernel.core.interfaces import MKLProblem
from multikernel.core.registry import get_registry
from multikernel.errors import MemoryBudgetError
from multikernel.plugins.kernels import LinearKernel, PolynomialKernel, RBFKernel, simplemkl_family
from multikernel.plugins.losses import CSVCLoss
from multikernel.stack import KernelSet
from multikernel.stack.factored import FactoredStack, estimate_factored_memory, pivoted_cholesky
from multikernel.stack.storage import DenseStack


def _mixed_features(n: int, seed: int = 0) -> np.ndarray:
    """Binary, categorical (4 levels) and continuous features, the structure of the UCI credit sets."""
    rng = np.random.default_rng(seed)
    return np.column_stack([rng.integers(0, 2, n), rng.integers(0, 4, n), rng.normal(size=n),
                            rng.normal(size=n) ** 2]).astype(float)


def _pair(builders, X, dtype="float64", normalize="trace", **kw):
    dense = KernelSet([b for b in builders], normalize=normalize, dtype=dtype).fit_stack(X)
    ks = KernelSet([type(b)(**b.get_params()) for b in builders], normalize=normalize, dtype=dtype,
                   backend="factored", **kw)
    return dense, ks.fit_stack(X), ks


# --------------------------------------------------------------------------------------------------
# Factorizations
# --------------------------------------------------------------------------------------------------
def test_known_ranks_are_exact():
    X = _mixed_features(120)
    builders = [LinearKernel(columns=[2, 3]), PolynomialKernel(degree=3, columns=[2]), LinearKernel(),
                RBFKernel(sigma=1.0, columns=[0]), RBFKernel(sigma=0.5, columns=[1]),
                PolynomialKernel(degree=2, columns=[1])]
    dense, fac, _ = _pair(builders, X, normalize="none")
    ranks, factored = fac.ranks, fac.factored
    # linear on 2 features: rank 2; polynomial of degree 3 on one feature: rank 4; linear on all four: rank 4
    assert factored[:3].all() and list(ranks[:3]) == [2, 4, 4]
    # a binary feature has 2 points, a categorical one 4: those kernels are kept exactly on their points
    assert not factored[3:].any() and list(ranks[3:]) == [2, 4, 4]
    K, Kf = dense.to_array(), fac.to_array()
    assert np.abs(K - Kf).max() <= 1e-12 * np.abs(K).max()
    assert np.all(fac.truncation_bound(np.ones(120))[3:] == 0)


@pytest.mark.parametrize("tol", [1e-2, 1e-6, 1e-12])
def test_pivoted_cholesky_residual_is_bounded_by_its_diagonal(tol):
    rng = np.random.default_rng(1)
    Z = rng.normal(size=(60, 2))
    S = np.exp(-((Z[:, None] - Z[None]) ** 2).sum(-1) / 2)
    L, d = pivoted_cholesky(S, tol)
    E = S - L @ L.T
    assert np.linalg.eigvalsh(E).min() >= -1e-12  # a Schur complement: positive semi-definite
    assert np.all(np.diagonal(E) <= d + 1e-15) and d.max() <= tol * S.diagonal().max() + 1e-13
    assert L.shape[1] < 60 or tol == 1e-12


@scaled(1.0)
@given(problem=mkl_problems(n=(6, 30)), log10_tol=st.floats(-12, -1), seed=st.integers(0, 2**31))
def test_truncation_bound_holds_the_exact_forms(problem, log10_tol, seed):
    fac = FactoredStack.from_kernels(problem.Ks, tol=10.0**log10_tol, min_points=0)
    rng = np.random.default_rng(seed)
    v = rng.normal(size=len(problem.y)) * (rng.random(len(problem.y)) < 0.7)
    exact = np.einsum("i,mij,j->m", v, problem.Ks, v)
    approx = fac.quad_forms(v)
    bound = fac.truncation_bound(v)
    scale = np.abs(problem.Ks).max(axis=(1, 2)) * np.abs(v).sum() ** 2
    # K_m - K~_m is PSD, and the bound holds it (up to rounding)
    assert np.all(exact - approx >= -1e-11 * scale)
    assert np.all(exact - approx <= bound + 1e-11 * scale), (exact - approx, bound)


# --------------------------------------------------------------------------------------------------
# Operations against the dense stack
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("normalize", ["trace", "unit_diagonal", "center", "none"])
def test_operations_equal_the_dense_stack(dtype, normalize):
    X = _mixed_features(90, seed=2)
    dense, fac, _ = _pair(simplemkl_family(X.shape[1], sigmas=(0.5, 4.0), degrees=(1, 2)), X, dtype, normalize)
    assert fac.factored.any() and (~fac.factored).any()
    rtol = 1e-9 if dtype == "float64" else 2e-6
    rng = np.random.default_rng(3)
    K = dense.to_array()
    scale = np.abs(K).max()
    w = rng.random(dense.n_kernels) * (rng.random(dense.n_kernels) < 0.6)
    v = rng.normal(size=90) * (rng.random(90) < 0.5)
    assert np.abs(fac.combine(w) - dense.combine(w)).max() <= rtol * scale * w.sum()
    out = fac.combine(w)
    fac.combine(-w, out=out, accumulate=True)
    assert np.abs(out).max() <= rtol * scale * w.sum()
    assert np.allclose(fac.quad_forms(v), dense.quad_forms(v), rtol=rtol, atol=rtol * scale * (v @ v))
    assert np.allclose(fac.quad_forms(v, [3, 0]), dense.quad_forms(v)[[3, 0]], rtol=rtol, atol=rtol * scale * (v @ v))
    assert np.allclose(fac.diag(), dense.diag(), atol=rtol * scale)
    assert np.allclose(fac.kernel(5), K[5], atol=rtol * scale)
    rows, cols = rng.permutation(90)[:40], rng.permutation(90)[:25]
    sub = fac.subset(rows, cols)
    assert sub.shape == (dense.n_kernels, 40, 25)
    assert np.abs(sub.combine(w) - dense.subset(rows, cols).combine(w)).max() <= rtol * scale * w.sum()
    fold = fac.subset(rows)
    assert np.allclose(fold.quad_forms(v[rows]), dense.subset(rows).quad_forms(v[rows]), rtol=rtol,
                       atol=rtol * scale * (v @ v))
    assert np.allclose(fold.diag(), dense.subset(rows).diag(), atol=rtol * scale)
    assert np.allclose(fold.subset(np.arange(10)).to_array(), K[:, rows[:10]][:, :, rows[:10]], atol=rtol * scale)
    assert fac.nbytes < dense.nbytes


def test_memory_estimate_bounds_the_stack_and_auto_takes_it():
    X = np.column_stack([np.random.default_rng(4).integers(0, 2, (300, 6)), np.arange(300) % 7]).astype(float)
    builders = simplemkl_family(X.shape[1])
    estimate = estimate_factored_memory(builders, X, "float32")
    ks = KernelSet(simplemkl_family(X.shape[1]), dtype="float32", backend="auto")
    stack = ks.fit_stack(X)
    assert ks.backend_ == "factored" and isinstance(stack, FactoredStack)
    assert stack.nbytes <= estimate.storage
    dense = KernelSet(simplemkl_family(X.shape[1]), dtype="float32").fit_stack(X)
    assert stack.nbytes <= 0.1 * dense.nbytes
    with pytest.raises(MemoryBudgetError, match="factor_tol"):
        KernelSet(simplemkl_family(X.shape[1]), backend="factored", memory_budget="10KB").fit_stack(X)
    # continuous features: no points shared, the estimate is the dense one and auto stays dense
    Xc = np.random.default_rng(5).normal(size=(40, 2))
    assert KernelSet(simplemkl_family(2), backend="auto").fit_stack(Xc).__class__ is DenseStack


# --------------------------------------------------------------------------------------------------
# Certified fits
# --------------------------------------------------------------------------------------------------
def _solve(method: str, stack, y, C, max_iter=100):
    registry = get_registry()
    preset = registry.get("method", method)
    problem = MKLProblem(stack=stack, y=y, loss=CSVCLoss(C=C),
                         regularizer=registry.create("regularizer", preset.regularizer, **preset.regularizer_params),
                         tol=1e-3, inner_tol=1e-3, max_iter=max_iter)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return registry.create("solver", preset.solver, **preset.solver_params).solve(problem)


@pytest.mark.parametrize("method", ["simplemkl", "sm1mkl", "l2mkl", "average"])
@scaled(1.0)
@given(problem=mkl_problems(n=(8, 30), kernels=(1, 5), log10_C=(-2.0, 3.0)),
       log10_tol=st.sampled_from([-12.0, -6.0, -3.0, -1.0]))
def test_certified_bounds_hold_the_exact_optimum(method, problem, log10_tol):
    # Every kernel with more than 2 points and a rank below half of them is factored, truncated at the drawn tol:
    # the certified bounds must hold the optimum on the exact kernels whatever the truncation.
    fac = FactoredStack.from_kernels(problem.Ks, tol=10.0**log10_tol, min_points=2)
    res = _solve(method, fac, problem.y, problem.C, max_iter=60)
    preset = get_registry().get("method", method)
    reg = get_registry().create("regularizer", preset.regularizer, **preset.regularizer_params)
    ref = reference(problem.Ks, problem.y, reg, C=problem.C, certify=2.5e-4)
    assert ref.brackets(res), (res.lower_bound, res.objective, ref, fac.factored)
    if res.dual_gap <= 1e-3:
        assert abs(res.objective - ref.value) <= 1e-3 * abs(res.objective) + ref.error


@pytest.mark.parametrize("C", [0.1, 10.0, 1000.0])
def test_factored_fits_reach_the_dense_optimum(C):
    # Exact duplicates, a tie and unnormalized kernels (scaled by 10^-2 .. 10^2), on 60 points: factored
    # at the default truncation, each fit's certificate brackets the dense stack's certified optimum.
    problem = make_problem(n=60, positives=25, kinds=["linear", "flat_rbf", "low_rank", "rbf", "poly"],
                           copies=[0, 2], log10_scales=[-2.0, 0.0, 1.0, 2.0, 0.5], C=C, seed=7)
    fac = FactoredStack.from_kernels(problem.Ks)
    assert fac.factored.sum() >= 4
    for method in ("simplemkl", "sm1mkl", "lpmkl"):
        dense = _solve(method, DenseStack(problem.Ks), problem.y, C)
        got = _solve(method, fac, problem.y, C)
        assert dense.dual_gap <= 1e-3 and got.dual_gap <= 1e-3, (method, dense.dual_gap, got.dual_gap)
        assert got.lower_bound <= dense.objective * (1 + 1e-9) and dense.lower_bound <= got.objective * (1 + 1e-9)
        assert abs(got.objective - dense.objective) <= 1e-3 * abs(dense.objective)


def test_estimator_on_a_uci_set_matches_the_dense_backend(tmp_path):
    X, y = load_breast_cancer(return_X_y=True)
    X = np.column_stack([X[:, :4], (X[:, 4:8] > np.median(X[:, 4:8], axis=0)).astype(float)])[:200]
    y = y[:200]
    params = dict(kernels="simplemkl", kernel_params={"sigmas": [0.5, 2.0, 8.0], "degrees": [1, 2]},
                  method="sm1mkl", C=10.0, standardize=True)
    dense = MKLClassifier(**params).fit(X, y)
    fac = MKLClassifier(kernel_backend="factored", **params).fit(X, y)
    assert isinstance(fac.kernel_set_.fit_stack(X), FactoredStack)
    assert dense.dual_gap_ <= 1e-3 and fac.dual_gap_ <= 1e-3
    obj_d, obj_f = dense.results_[0].objective, fac.results_[0].objective
    assert fac.results_[0].lower_bound <= obj_d * (1 + 1e-9) and abs(obj_f - obj_d) <= 1e-3 * obj_d
    Xt = load_breast_cancer().data[300:360]
    Xt = np.column_stack([Xt[:, :4], (Xt[:, 4:8] > np.median(X[:, 4:8], axis=0)).astype(float)])
    assert np.mean(fac.predict(Xt) == dense.predict(Xt)) >= 0.95
    fac.save(tmp_path / "m.npz")
    loaded = MKLClassifier.load(tmp_path / "m.npz")
    assert np.array_equal(loaded.decision_function(Xt), fac.decision_function(Xt))


def test_a_truncation_that_keeps_the_gap_above_tol_is_named():
    drawn = make_problem(n=60, positives=25, kinds=["rbf", "flat_rbf", "linear"], C=100.0, seed=3)
    fac = FactoredStack.from_kernels(drawn.Ks, tol=1e-2, min_points=2)
    assert fac.factored.all()
    registry = get_registry()
    problem = MKLProblem(stack=fac, y=drawn.y, loss=CSVCLoss(C=100.0),
                         regularizer=registry.create("regularizer", "simplex"), tol=1e-3, inner_tol=1e-3, max_iter=200)
    with pytest.warns(ConvergenceWarning, match="smaller factor_tol"):
        res = registry.create("solver", "level").solve(problem)
    assert res.dual_gap > 1e-3


def test_cross_blocks_refuse_square_operations_and_smo_mkl_reads_rows():
    problem = make_problem(n=40, positives=15, kinds=["linear", "flat_rbf", "rbf"], C=1.0, seed=2)
    fac = FactoredStack.from_kernels(problem.Ks, min_points=2)
    cross = fac.subset(np.arange(10), np.arange(10, 20))
    with pytest.raises(ValueError, match="rows are its columns"):
        cross.quad_forms(np.ones(10))
    with pytest.raises(ValueError, match="rows are its columns"):
        cross.diag()
    assert np.allclose(fac.kernel_rows([3, 7]), problem.Ks[:, [3, 7]], atol=1e-9)
    dense = _solve("smo_mkl", DenseStack(problem.Ks), problem.y, 1.0)
    got = _solve("smo_mkl", fac, problem.y, 1.0)
    assert got.dual_gap <= 1e-3 and abs(got.objective - dense.objective) <= 1e-3 * dense.objective
