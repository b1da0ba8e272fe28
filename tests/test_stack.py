"""The kernel stack: fused operations, subsets, backends, normalizations and the memory budget."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from multikernel.errors import MemoryBudgetError
from multikernel.plugins.kernels import (
    ExpChi2Kernel,
    LinearKernel,
    PolynomialKernel,
    ProductKernel,
    RBFKernel,
    simplemkl_family,
)
from multikernel.stack.combination import CombinedKernel
from multikernel.stack.kernelset import KernelSet
from multikernel.stack.memory import estimate_stack_memory, parse_bytes
from multikernel.stack.storage import DenseStack, LazyColumns, LazyStack, MemmapStack, check_kernel_matrices

BACKENDS = ("dense", "memmap", "lazy")
NORMS = ("none", "trace", "unit_diagonal", "center")


def _builders():
    # Shared bases (three RBFs, two dot-product kernels), a histogram kernel and a product: every path
    # of the block computation.
    return [RBFKernel(gamma_scale=s) for s in (0.5, 1.0, 2.0)] + [
        LinearKernel(columns=[0, 2]), PolynomialKernel(degree=2, columns=[0, 2]),
        ExpChi2Kernel(gamma_scale=1.0), ProductKernel(factors=[RBFKernel(gamma=1.0), LinearKernel()])]


def _data(seed=0, n=23, n_test=9, d=4):
    rng = np.random.default_rng(seed)
    return rng.random((n, d)), rng.random((n_test, d))


# -------------------------------------------------------------------------------------------------
# Fused operations on dense stacks, float32 and float64, full and subset
# -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**31), M=st.integers(1, 6), n=st.integers(1, 30),
       density=st.floats(0.0, 1.0))
def test_dense_ops_match_numpy(dtype, seed, M, n, density):
    rng = np.random.default_rng(seed)
    K = rng.standard_normal((M, n, n)).astype(dtype)
    K = K + K.transpose(0, 2, 1)
    w = rng.random(M) * (rng.random(M) < 0.7)
    v = rng.standard_normal(n) * (rng.random(n) < density)
    S = DenseStack(K)
    K64 = K.astype(np.float64)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(S.combine(w), np.einsum("m,mij->ij", w, K64), rtol=tol, atol=tol)
    np.testing.assert_allclose(S.quad_forms(v), np.einsum("i,mij,j->m", v, K64, v), rtol=tol, atol=tol)
    np.testing.assert_allclose(S.diag(), np.diagonal(K64, axis1=1, axis2=2))
    np.testing.assert_allclose(S.trace(), np.trace(K64, axis1=1, axis2=2), rtol=tol)
    assert S.combine(w).dtype == np.float64 and S.dtype == dtype

    rows = rng.permutation(n)[: max(1, n // 2)]
    cols = rng.integers(0, n, size=max(1, n // 3))
    sub = S.subset(rows, cols)
    ref = K64[:, rows][:, :, cols]
    np.testing.assert_allclose(sub.combine(w), np.einsum("m,mij->ij", w, ref), rtol=tol, atol=tol)
    np.testing.assert_allclose(sub.kernel(M - 1), ref[M - 1])
    sq = S.subset(rows)
    ref = K64[:, rows][:, :, rows]
    vs = v[rows]
    np.testing.assert_allclose(sq.quad_forms(vs), np.einsum("i,mij,j->m", vs, ref, vs), rtol=tol, atol=tol)
    np.testing.assert_allclose(sq.diag(), np.diagonal(ref, axis1=1, axis2=2))
    # A subset of a subset indexes the subset's rows.
    np.testing.assert_allclose(sq.subset([0]).kernel(0), ref[0][:1, :1])
    assert np.shares_memory(sub.data, K)


def test_quad_forms_reads_only_the_support_when_it_is_sparse():
    # Under a quarter of the columns in the support: only support x support entries are read.
    K = np.full((2, 12, 12), np.nan)
    K[:, 1:3, 1:3] = [[2.0, 1.0], [1.0, 3.0]]
    v = np.zeros(12)
    v[1:3] = [1.0, -1.0]
    np.testing.assert_allclose(DenseStack(K).quad_forms(v), [3.0, 3.0])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n_support", [1, 3, 5, 9, 16])
def test_quad_forms_dense_and_sparse_supports_agree_with_numpy(dtype, n_support):
    rng = np.random.default_rng(n_support)
    A = rng.standard_normal((3, 16, 4))
    K = np.einsum("mik,mjk->mij", A, A).astype(dtype)
    v = np.zeros(16)
    v[rng.choice(16, n_support, replace=False)] = rng.standard_normal(n_support)
    ref = np.einsum("i,mij,j->m", v, K.astype(np.float64), v)
    np.testing.assert_allclose(DenseStack(K).quad_forms(v), ref, rtol=1e-12, atol=1e-12)


def test_combine_accumulates_and_materialize_copies_a_subset():
    rng = np.random.default_rng(3)
    K = rng.standard_normal((4, 7, 7))
    S = DenseStack(K)
    out = S.combine([1.0, 0.0, 0.5, 0.0])
    S.combine([0.0, 2.0, -0.5, 0.0], out=out, accumulate=True)
    np.testing.assert_allclose(out, K[0] + 2.0 * K[1], atol=1e-14)
    with pytest.raises(ValueError, match="accumulate"):
        S.combine(np.ones(4), accumulate=True)
    rows, cols = np.array([5, 1, 3]), np.array([0, 6])
    view = S.subset(rows, cols)
    dense = view.materialize()
    assert dense.data.flags.c_contiguous and not np.shares_memory(dense.data, K)
    np.testing.assert_array_equal(dense.to_array(), K[:, rows][:, :, cols])
    w = rng.random(4)
    np.testing.assert_allclose(dense.combine(w), view.combine(w), atol=1e-14)
    view.combine(w, out=(acc := view.combine(w)), accumulate=True)
    np.testing.assert_allclose(acc, 2 * dense.combine(w), atol=1e-13)
    assert S.materialize() is S


def test_combined_kernel_follows_any_sequence_of_weights():
    rng = np.random.default_rng(4)
    K = rng.standard_normal((6, 5, 5))
    S = DenseStack(K)
    combined = CombinedKernel(S, refresh_every=3)
    mu = np.array([0.2, 0.0, 0.3, 0.5, 0.0, 0.0])
    for _ in range(12):
        mu = mu.copy()
        changed = rng.choice(6, rng.integers(0, 4), replace=False)
        mu[changed] = np.where(rng.random(len(changed)) < 0.3, 0.0, rng.random(len(changed)))
        np.testing.assert_allclose(combined(mu), np.tensordot(mu, K, 1), atol=1e-13)


def test_combine_skips_zero_weights_and_validates():
    K = np.ones((3, 4, 4))
    K[1] = np.nan  # a kernel with weight 0 is not read
    S = DenseStack(K)
    np.testing.assert_allclose(S.combine([1.0, 0.0, 2.0]), np.full((4, 4), 3.0))
    with pytest.raises(ValueError, match="3 weights"):
        S.combine([1.0, 2.0])
    with pytest.raises(ValueError, match="square"):
        DenseStack(np.ones((1, 3, 4))).quad_forms(np.ones(3))
    with pytest.raises(ValueError, match="out of range"):
        S.subset([7])


# -------------------------------------------------------------------------------------------------
# Backends agree with dense
# -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("normalize", NORMS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_backends_give_the_same_results(normalize, dtype, tmp_path):
    X, Z = _data()
    rng = np.random.default_rng(1)
    results = {}
    for backend in BACKENDS:
        ks = KernelSet(_builders(), normalize=normalize, dtype=dtype, backend=backend,
                       memmap_dir=str(tmp_path), block_size=3000)  # a few rows per block
        S, C = ks.fit_stack(X), ks.cross_stack(Z)
        w = rng.random(S.n_kernels) if backend == "dense" else results["dense"]["w"]
        v = (rng.standard_normal(len(X)) * (rng.random(len(X)) < 0.6) if backend == "dense"
             else results["dense"]["v"])
        fold = np.arange(0, len(X), 2)
        results[backend] = {
            "w": w, "v": v, "train": S.to_array(), "cross": C.to_array(), "combine": S.combine(w),
            "cross_combine": C.combine(w), "quad": S.quad_forms(v), "diag": S.diag(), "trace": S.trace(),
            "fold_quad": S.subset(fold).quad_forms(v[fold]),
            "fold_cross": S.subset(fold + 1 if fold[-1] + 1 < len(X) else fold[:-1] + 1, fold).combine(w),
        }
        assert isinstance(S, {"dense": DenseStack, "memmap": MemmapStack, "lazy": LazyStack}[backend])
    tol = 2e-6 if dtype == "float32" else 1e-9
    for backend in ("memmap", "lazy"):
        for key, ref in results["dense"].items():
            np.testing.assert_allclose(results[backend][key], ref, rtol=tol, atol=tol,
                                       err_msg=f"{backend} {key}")


def test_memmap_file_is_removed_with_the_stack(tmp_path):
    X, _ = _data()
    S = KernelSet(_builders(), backend="memmap", memmap_dir=str(tmp_path)).fit_stack(X)
    assert isinstance(S.data, np.memmap) and not S.data.flags.writeable
    assert len(os.listdir(tmp_path)) == 1
    del S
    import gc

    gc.collect()
    assert os.listdir(tmp_path) == []


# -------------------------------------------------------------------------------------------------
# Normalizations: invariants, and the same constants for cross kernels
# -------------------------------------------------------------------------------------------------
def _raw(builders, X, Z):
    K = np.stack([b.fit_transform(X) for b in builders])
    C = np.stack([b.transform(Z) for b in builders])
    Dz = np.stack([b.self_similarity(Z) for b in builders])
    return K, C, Dz


@pytest.mark.parametrize("backend", BACKENDS)
def test_normalization_invariants(backend):
    X, Z = _data(3)
    K, C, Dz = _raw(_builders(), X, Z)
    n = len(X)
    kw = dict(backend=backend, block_size=3000)

    ks = KernelSet(_builders(), normalize="trace", **kw)
    S, Cs = ks.fit_stack(X).to_array(), ks.cross_stack(Z).to_array()
    np.testing.assert_allclose(np.trace(S, axis1=1, axis2=2), n, rtol=1e-10)
    s = n / np.trace(K, axis1=1, axis2=2)
    np.testing.assert_allclose(Cs, C * s[:, None, None], rtol=1e-10)

    ks = KernelSet(_builders(), normalize="unit_diagonal", **kw)
    S, Cs = ks.fit_stack(X).to_array(), ks.cross_stack(Z).to_array()
    np.testing.assert_allclose(np.diagonal(S, axis1=1, axis2=2), 1.0, rtol=1e-10)
    dX = np.diagonal(K, axis1=1, axis2=2)
    np.testing.assert_allclose(Cs, C / np.sqrt(Dz[:, :, None] * dX[:, None, :]), rtol=1e-9)

    ks = KernelSet(_builders(), normalize="center", **kw)
    S, Cs = ks.fit_stack(X).to_array(), ks.cross_stack(Z).to_array()
    np.testing.assert_allclose(S.sum(axis=1), 0.0, atol=1e-9)
    np.testing.assert_allclose(S.sum(axis=2), 0.0, atol=1e-9)
    H = np.eye(n) - 1.0 / n
    np.testing.assert_allclose(S, H @ K @ H, atol=1e-10)
    # Cross kernel = the kernel of features centred by the *training* mean (for the linear kernel: a
    # closed form).
    lin = 3
    mu = X[:, [0, 2]].mean(axis=0)
    np.testing.assert_allclose(Cs[lin], (Z[:, [0, 2]] - mu) @ (X[:, [0, 2]] - mu).T, atol=1e-10)
    # Centring keeps PSD kernels PSD.
    assert np.linalg.eigvalsh(S[0]).min() > -1e-9


def test_cross_stack_on_training_rows_equals_train_stack():
    X, _ = _data(4)
    for normalize in NORMS:
        ks = KernelSet(_builders(), normalize=normalize)
        train = ks.fit_stack(X).to_array()
        np.testing.assert_allclose(ks.cross_stack(X).to_array(), train, atol=1e-10)


# -------------------------------------------------------------------------------------------------
# Memory estimate and budget
# -------------------------------------------------------------------------------------------------
def test_memory_estimate_and_budget_error():
    est = estimate_stack_memory(273, 5000, dtype="float32")
    assert est.storage == 273 * 5000 * 5000 * 4  # 27.3 GB: the simplemkl family for n = 5000, d = 20
    lazy = estimate_stack_memory(273, 5000, dtype="float32", backend="lazy", n_features=20)
    assert lazy.resident < parse_bytes("2GB")
    mm = estimate_stack_memory(273, 5000, dtype="float32", backend="memmap")
    assert mm.disk == est.storage and mm.resident < parse_bytes("2GB")

    X = np.random.default_rng(5).random((30, 2))
    ks = KernelSet(simplemkl_family(2), memory_budget="100KB")
    with pytest.raises(MemoryBudgetError) as err:
        ks.fit_stack(X)
    msg = str(err.value)
    for alternative in ("float32", "memmap", "lazy", "fewer kernels"):
        assert alternative in msg
    assert not hasattr(ks, "normalization_")  # refused before fitting or allocating
    auto = KernelSet(simplemkl_family(2), backend="auto", memory_budget="300KB", block_size=4000)
    assert isinstance(auto.fit_stack(X), LazyStack)
    assert isinstance(KernelSet(simplemkl_family(2), backend="auto").fit_stack(X), DenseStack)


def test_lazy_simplemkl_large_n_estimate_fits_a_few_gb():
    ks = KernelSet(simplemkl_family(20), dtype="float32", backend="lazy")
    assert ks.estimate_memory(5000, 5000, n_features=20).resident < parse_bytes("1GB")
    assert ks.estimate_memory(5000, 5000, n_features=20, backend="dense").resident > parse_bytes("25GB")


def test_parse_bytes():
    assert parse_bytes("4GB") == 4 * 2**30
    assert parse_bytes("1.5 KiB") == 1536
    assert parse_bytes(100) == 100
    with pytest.raises(ValueError, match="memory size"):
        parse_bytes("lots")


def test_kernelset_validation():
    with pytest.raises(ValueError, match="normalize"):
        KernelSet([LinearKernel()], normalize="spherical")
    with pytest.raises(ValueError, match="backend"):
        KernelSet([LinearKernel()], backend="gpu")
    with pytest.raises(ValueError, match="fit_stack"):
        KernelSet([LinearKernel()]).cross_stack(np.ones((2, 2)))
    with pytest.raises(ValueError, match="NaN|infinity"):
        KernelSet([LinearKernel()]).fit_stack(np.array([[np.nan, 1.0]]))
    assert KernelSet([LinearKernel(), RBFKernel(gamma=1.0)]).describe()[1].startswith("rbf(")


@pytest.mark.parametrize("normalize", NORMS)
def test_fitted_state_is_plain_attributes(normalize):
    # Generic persistence saves the array/number attributes ending in "_" and sets them on a new object:
    # that must be enough to rebuild the cross stacks.
    X, Z = _data(6)
    builders = [RBFKernel(gamma_scale=1.0), PolynomialKernel(degree=2)]
    ks = KernelSet(builders, normalize=normalize)
    ks.fit_stack(X)
    state = {k: v for k, v in vars(ks).items()
             if k.endswith("_") and not k.startswith("_") and isinstance(v, (np.ndarray, int, float, str))}
    restored = KernelSet(builders, normalize=normalize)
    for key, value in state.items():
        setattr(restored, key, value)
    np.testing.assert_allclose(restored.cross_stack(Z).to_array(), ks.cross_stack(Z).to_array())


@pytest.mark.parametrize("normalize", NORMS)
def test_indexed_builders_in_every_backend(normalize):
    # Event6-style kernels of a given distance matrix beside a precomputed kernel: the features are
    # sample indices into matrices over all samples.
    from multikernel.plugins.kernels import PrecomputedKernel, event6_family

    rng = np.random.default_rng(7)
    P = rng.random((30, 3))
    D = np.sqrt(((P[:, None] - P[None]) ** 2).sum(-1))
    builders = event6_family(1, distances=[D], exponents=(-1, 1)) + [PrecomputedKernel(matrix=P @ P.T)]
    idx = np.arange(30, dtype=float)[:, None]
    out = {}
    for backend in BACKENDS:
        ks = KernelSet(builders, normalize=normalize, backend=backend, block_size=2000)
        S, C = ks.fit_stack(idx[:20]), ks.cross_stack(idx[20:])
        out[backend] = (S.to_array(), C.to_array(), S.quad_forms(np.linspace(-1, 1, 20)))
    for backend in ("memmap", "lazy"):
        for a, b in zip(out[backend], out["dense"], strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)
    if normalize == "none":
        np.testing.assert_allclose(out["dense"][1][-1], (P @ P.T)[20:, :20])


def test_unit_diagonal_needs_self_similarity_of_new_samples():
    from multikernel.plugins.kernels import PrecomputedKernel

    K = np.eye(5) + 1.0
    ks = KernelSet([PrecomputedKernel()], normalize="unit_diagonal")
    ks.fit_stack(K)
    with pytest.raises(ValueError, match="k\\(x, x\\)"):
        ks.cross_stack(K[:2])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n_support", [1, 4, 7, 13, 31])
def test_symmetric_stacks_stream_their_upper_triangles_exactly(dtype, n_support):
    rng = np.random.default_rng(n_support)
    A = rng.standard_normal((5, 31, 31))
    sym = ((A + A.transpose(0, 2, 1)) / 2).astype(dtype)
    asym = A.astype(dtype)
    v = np.zeros(31)
    v[np.sort(rng.choice(31, n_support, replace=False))] = rng.standard_normal(n_support)
    w = np.where(rng.random(5) < 0.3, 0.0, rng.random(5))
    for K, expected in ((sym, True), (asym, False)):
        S = DenseStack(K)
        assert S.symmetric is expected
        K64 = K.astype(np.float64)
        np.testing.assert_allclose(S.quad_forms(v), np.einsum("i,mij,j->m", v, K64, v), rtol=1e-11, atol=1e-11)
        out = S.combine(w)
        np.testing.assert_allclose(out, np.tensordot(w, K64, 1), atol=1e-12)
        S.combine(w, out=out, accumulate=True)
        np.testing.assert_allclose(out, 2 * np.tensordot(w, K64, 1), atol=1e-12)
    S = DenseStack(sym)
    idx = np.array([3, 0, 7, 8])
    assert S.subset(idx).symmetric and not S.subset(idx, idx[::-1]).symmetric
    assert S.subset(idx).materialize().symmetric


@pytest.mark.parametrize("view", [False, True])
def test_quad_forms_of_a_kernel_subset(view):
    rng = np.random.default_rng(7)
    A = rng.standard_normal((6, 9, 9))
    S = DenseStack((A + A.transpose(0, 2, 1)) / 2)
    if view:
        S = S.subset([0, 2, 3, 5, 8])
    v = rng.standard_normal(S.n_rows)
    ks = np.array([4, 0, 2])
    np.testing.assert_allclose(S.quad_forms(v, ks), S.quad_forms(v)[ks], rtol=1e-13)
    with pytest.raises(ValueError, match="out of range"):
        S.quad_forms(v, [6])


# -------------------------------------------------------------------------------------------------
# The lazy backend serves the solver by columns: no n x n matrix in a fit
# -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("normalize", NORMS)
def test_lazy_column_provider_gives_the_combined_kernel(normalize):
    X, _ = _data(6)
    w = np.random.default_rng(6).random(len(_builders())) * np.array([1, 0, 1, 1, 0, 1, 1])
    dense = KernelSet(_builders(), normalize=normalize).fit_stack(X)
    lazy = KernelSet(_builders(), normalize=normalize, backend="lazy", block_size=3000, cache_size=3).fit_stack(X)
    ref = dense.combine(w)
    columns = CombinedKernel(lazy)(w)
    assert isinstance(columns, LazyColumns) and columns.n == len(X) and columns.cache_size == 3
    idx = np.array([4, 0, 17, 9])
    out = np.empty((len(idx), len(X)))
    columns.columns(idx, out)
    np.testing.assert_allclose(out, ref[idx], atol=1e-10)
    one = np.empty(len(X))
    columns.column(5, one)
    np.testing.assert_allclose(one, ref[:, 5], atol=1e-10)
    np.testing.assert_allclose(columns.diagonal(), np.diagonal(ref), atol=1e-10)
    # a fold of the training stack keeps the cache size and serves its own columns
    fold = np.arange(1, len(X), 3)
    sub = lazy.subset(fold)
    assert sub.cache_size == 3
    sub.column_provider(w).columns(np.arange(len(fold)), out := np.empty((len(fold), len(fold))))
    np.testing.assert_allclose(out, ref[np.ix_(fold, fold)], atol=1e-10)
    with pytest.raises(ValueError, match="rows are its columns"):
        lazy.subset(fold, fold - 1).column_provider(w)
    assert isinstance(CombinedKernel(dense)(w), np.ndarray)


def test_cache_size_is_validated():
    for bad in (0, -1.0, np.nan, "200"):
        with pytest.raises(ValueError, match="cache_size"):
            KernelSet(_builders(), backend="lazy", cache_size=bad)


@pytest.mark.parametrize("solver", ["bcd", "reduced_gradient", "level"])
def test_lazy_fit_matches_dense_and_never_combines(solver, monkeypatch):
    from multikernel.core.interfaces import MKLProblem
    from multikernel.core.registry import get_registry
    from multikernel.plugins.losses import CSVCLoss

    reg = get_registry()
    rng = np.random.default_rng(7)
    X = rng.random((80, 4))
    y = np.where(X[:, 0] + X[:, 1] ** 2 + 0.2 * rng.normal(size=80) > 0.8, 1.0, -1.0)
    results = {}
    for backend in ("dense", "lazy"):
        # a cache of 20 columns: columns are evicted and recomputed during the solves
        stack = KernelSet(_builders(), normalize="trace", backend=backend, cache_size=20 * 80 * 8 / 2**20,
                          block_size=3000).fit_stack(X)
        if backend == "lazy":
            monkeypatch.setattr(LazyStack, "combine", _refuse_combine)
        problem = MKLProblem(stack=stack, y=y, loss=CSVCLoss(C=10.0), regularizer=reg.create("regularizer", "simplex"),
                             tol=1e-4, max_iter=300, inner_tol=1e-6)
        results[backend] = reg.create("solver", solver).solve(problem)
    dense, lazy = results["dense"], results["lazy"]
    assert dense.converged and lazy.converged
    assert lazy.objective == pytest.approx(dense.objective, rel=1e-4)
    np.testing.assert_allclose(lazy.weights, dense.weights, atol=5e-3)


def _refuse_combine(self, *args, **kwargs):
    raise AssertionError("a fit combined a lazy stack densely")


@pytest.mark.parametrize("multiclass", ["ovr", "shared"])
def test_lazy_estimator_fit_never_combines(multiclass, monkeypatch):
    from multikernel import MKLClassifier

    rng = np.random.default_rng(8)
    X = rng.random((60, 3))
    y = (X[:, 0] * 3).astype(int)  # three classes
    kw = dict(kernels=_builders()[:4], method="l1mkl", C=5.0, multiclass=multiclass, tol=1e-4)
    dense = MKLClassifier(**kw).fit(X, y)
    with monkeypatch.context() as patch:
        patch.setattr(LazyStack, "combine", _refuse_combine)
        lazy = MKLClassifier(kernel_backend="lazy", **kw).fit(X, y)
    np.testing.assert_allclose(lazy.weights_, dense.weights_, atol=5e-3)
    assert np.mean(lazy.predict(X) == dense.predict(X)) >= 0.95


def test_lazy_fit_memory_is_bounded_by_the_cache():
    """One outer iteration at n = 3000 (an inner solve on the combined kernel, then the quadratic forms)
    allocates a small fraction of the n x n float64 matrix (72 MB) that a dense combination would need."""
    import threading
    import tracemalloc

    from multikernel.plugins.losses import CSVCLoss

    rng = np.random.default_rng(9)
    n = 3000
    X = rng.normal(size=(n, 4))
    y = np.where(X[:, 0] * X[:, 1] + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    stack = KernelSet([RBFKernel(gamma_scale=s) for s in (0.5, 2.0)] + [LinearKernel()], normalize="trace",
                      backend="lazy", cache_size=4, block_size="2MB").fit_stack(X)
    peak = {}

    def one_iteration():  # in a fresh thread: no solver scratch buffer from earlier tests to reuse
        tracemalloc.start()
        sol = CSVCLoss(C=1.0).solve(CombinedKernel(stack)(np.full(3, 1 / 3)), y, tol=1e-2)
        q = stack.quad_forms(sol.coef)
        peak["bytes"] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        peak["gap"] = sol.primal_objective - sol.dual_objective
        peak["q"] = q

    thread = threading.Thread(target=one_iteration)
    thread.start()
    thread.join()
    assert np.all(peak["q"] > 0) and peak["gap"] >= -1e-9
    assert peak["bytes"] < n * n * 8 / 4, peak["bytes"] / 2**20


# -------------------------------------------------------------------------------------------------
# Precomputed kernels from users
# -------------------------------------------------------------------------------------------------
def _psd_stack(n=30, seed=10):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return np.stack([X @ X.T, np.exp(-((X[:, None] - X[None]) ** 2).sum(-1))])


def test_check_kernel_matrices_passes_good_kernels_unchanged():
    import warnings

    S = _psd_stack()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check_kernel_matrices(S) is S
        K0 = S[0]
        assert check_kernel_matrices(K0) is K0
        S32 = S.astype(np.float32)
        assert check_kernel_matrices(S32) is S32
        # rounding-level asymmetry is tolerated (no copy)
        R = S + 1e-13 * np.random.default_rng(0).random(S.shape)
        assert check_kernel_matrices(R) is R
        # cross kernels: only finiteness
        C = np.random.default_rng(1).random((2, 30, 30))
        assert check_kernel_matrices(C, training=False) is C
        assert check_kernel_matrices(S[:, :5], training=False).shape == (2, 5, 30)
    assert check_kernel_matrices(np.eye(3, dtype=int)).dtype == np.float64


def test_check_kernel_matrices_refuses_non_finite_values():
    S = _psd_stack()
    for bad in (np.nan, np.inf, -np.inf):
        T = S.copy()
        T[1, 4, 7] = bad
        with pytest.raises(ValueError, match=r"kernel 1 has NaN or infinite entries \(the first at row 4, column 7"):
            check_kernel_matrices(T)
        with pytest.raises(ValueError, match="the kernel has NaN"):
            check_kernel_matrices(T[1], training=False)
    with pytest.raises(ValueError, match="2-D.*3-D"):
        check_kernel_matrices(np.ones(4))


def test_check_kernel_matrices_symmetrizes_with_a_warning():
    S = _psd_stack()
    A = S.copy()
    A[1, 2, 5] += 0.1
    with pytest.warns(UserWarning, match=r"kernels \[1\] are not symmetric.*\(K \+ K'\)/2"):
        out = check_kernel_matrices(A)
    np.testing.assert_array_equal(out[0], S[0])
    np.testing.assert_allclose(out[1], (A[1] + A[1].T) / 2)
    assert A[1, 2, 5] != A[1, 5, 2]  # the input is not modified
    # the same stack with the kernels on the last axis (the layout scikit-learn's splitters keep)
    with pytest.warns(UserWarning, match="not symmetric"):
        last = check_kernel_matrices(np.moveaxis(A, 0, -1), kernel_axis=-1)
    np.testing.assert_allclose(np.moveaxis(last, -1, 0), out)


def test_check_kernel_matrices_hints_at_indefinite_kernels():
    S = _psd_stack()
    neg = S.copy()
    neg[0, 3, 3] = -1.0
    with pytest.warns(UserWarning, match=r"kernel 0 is not positive semi-definite \(negative diagonal entry K\[3, 3\]"):
        check_kernel_matrices(neg)
    minor = S[1].copy()
    minor[2, 6] = minor[6, 2] = 1.5  # above sqrt(K_22 K_66) = 1
    with pytest.warns(UserWarning, match=r"not positive semi-definite \(K\[2, 6\]\^2"):
        check_kernel_matrices(minor)
