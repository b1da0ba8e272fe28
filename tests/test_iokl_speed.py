"""The speed paths of a whole IOKL fit leave the results as the plain paths give them.

* the input kernels of a shared base are mapped straight into the stack (``raw_blocks(out=...)``),
* large fresh arrays are allocated on small pages (:func:`multikernel._pages.small_pages`),
* the bag-level rounding reuses the cutting plane's last solve when it is that very problem
  (``solve_candidates(solved=...)``).
"""

from __future__ import annotations

import numpy as np
import pytest
from test_iokl_mil import _mil  # the drawn MIL bags of the MIL tests

from multikernel import create
from multikernel._pages import _SET, small_pages
from multikernel.iokl import IOKLMultipleInstanceClassifier, KeyInstanceSet, default_kernels, solve_candidates
from multikernel.iokl.cutting_plane import cutting_plane
from multikernel.stack.blocks import group_builders, raw_blocks
from multikernel.stack.kernelset import KernelSet

pytestmark = [pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning"),
              pytest.mark.filterwarnings("ignore:IOKL cutting plane stopped:RuntimeWarning")]


def _features(n: int = 70, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, 5))


def test_raw_blocks_into_the_stack_equal_the_kernels_through_a_temporary():
    X = _features()
    builders = default_kernels() + [create("kernel", "poly", degree=2)]
    for b in builders:
        b.fit(X)
    groups = group_builders(builders)
    assert [len(g) for g in groups] == [4, 1]  # the thesis's four share the squared distances
    kept = {m: K.copy() for m, K in raw_blocks(builders, groups, X, None, symmetric=True)}
    out = np.full((len(builders), len(X), len(X)), np.nan)
    for m, K in raw_blocks(builders, groups, X, None, symmetric=True, out=out):
        if m in groups[0]:  # mapped straight into out: nothing left to copy
            assert np.shares_memory(K, out[m])
        out[m] = K
    for m, K in kept.items():
        np.testing.assert_array_equal(out[m], K)
        np.testing.assert_array_equal(out[m], builders[m].transform(X))  # the builder on its own


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_row_block_maps_on_threads_equal_each_builders_own_kernel(threads, monkeypatch):
    """The path of large bases (``map_rows``): blocks of a few rows, split among threads, the distances
    computed into the last kernel's slice (which its map then overwrites) or, for a base without ``out=``
    (the Gram matrix of two polynomial kernels), into a base of its own; the bits are the builders' own."""
    import multikernel.stack.blocks as blocks

    monkeypatch.setattr(blocks, "MAP_MIN_ENTRIES", 1)
    monkeypatch.setattr(blocks, "_BLOCK_ENTRIES", 3 * 70)  # 3 rows a block: many blocks, a ragged last one
    monkeypatch.setattr(blocks, "max_threads", lambda: threads)
    X = _features()
    builders = default_kernels() + [create("kernel", "poly", degree=2), create("kernel", "poly", degree=3)]
    for b in builders:
        b.fit(X)
    groups = group_builders(builders)
    assert [len(g) for g in groups] == [4, 2]
    out = np.full((len(builders), len(X), len(X)), np.nan)
    for m, K in raw_blocks(builders, groups, X, None, symmetric=True, out=out):
        assert np.shares_memory(K, out[m])
    for m, b in enumerate(builders):
        np.testing.assert_array_equal(out[m], b.transform(X))



def test_fit_stack_of_a_large_base_takes_the_row_block_path_and_keeps_the_kernels(monkeypatch):
    import multikernel.stack.blocks as blocks

    X = _features(50, seed=4)
    reference = KernelSet(default_kernels()).fit_stack(X).to_array()
    mapped = []
    original = blocks.map_rows
    monkeypatch.setattr(blocks, "MAP_MIN_ENTRIES", 1)
    monkeypatch.setattr(blocks, "map_rows", lambda *args: mapped.append(len(args[0])) or original(*args))
    np.testing.assert_array_equal(KernelSet(default_kernels()).fit_stack(X).to_array(), reference)
    assert mapped == [4]


@pytest.mark.parametrize("normalize", ["none", "trace", "unit_diagonal", "center"])
def test_fit_stack_keeps_every_normalization_and_precision(normalize):
    X = _features(60, seed=3)
    s64 = KernelSet(default_kernels(), normalize=normalize).fit_stack(X)
    s32 = KernelSet(default_kernels(), normalize=normalize, dtype="float32").fit_stack(X)
    for m in range(4):
        K = create("kernel", ["rbf", "laplacian", "inverse_square_distance", "inverse_distance"][m]).fit_transform(X)
        if normalize == "trace":
            K = K * (len(X) / np.trace(K))
        elif normalize == "unit_diagonal":
            d = np.sqrt(np.diag(K))
            K = K / np.outer(d, d)
        elif normalize == "center":
            K = K - K.mean(axis=0) - K.mean(axis=1)[:, None] + K.mean()
        np.testing.assert_allclose(np.asarray(s64.kernel(m)), K, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(np.asarray(s32.kernel(m)), K, rtol=1e-6, atol=1e-6)
        assert np.asarray(s32.kernel(m)).dtype == np.float32


def test_small_pages_switches_numpys_huge_pages_off_inside_and_restores_them():
    if _SET is None:
        pytest.skip("this numpy has no huge-page switch")
    before = _SET(True)  # read (and set) the switch
    try:
        with small_pages():
            with small_pages():  # nested: still off
                assert _SET(False) is False
            assert _SET(False) is False
            a = np.ones((600, 600))  # allocations work as usual
        assert _SET(True) is True
        with pytest.raises(RuntimeError), small_pages():
            raise RuntimeError
        assert _SET(True) is True  # restored after an exception too
        assert a.sum() == 600 * 600
    finally:
        _SET(before)


def _one_group(theta):
    X, labels, bags = _mil(12, seed=5)
    stack = KernelSet([create("kernel", "rbf"), create("kernel", "laplacian")]).fit_stack(X)
    lists = [np.flatnonzero(bags == b) for b in np.unique(bags)]
    cset = KeyInstanceSet(lists, np.where(np.unique(bags) % 2 == 0, 1.0, -1.0))
    index, sign = cset.from_scores(X[:, 0] + X[:, 1])
    C = np.full(cset.n_units, 10.0)
    return stack, cset, index, sign, C


@pytest.mark.parametrize("theta", [None, 2.0])
def test_solve_candidates_reuses_the_solve_of_the_same_problem_only(theta):
    stack, cset, index, sign, C = _one_group(theta)
    done = solve_candidates(stack, index[None], sign[None], C, theta=theta, offset=0.5, tol=1e-6)
    assert done.history[0]["time_mkl"] > 0 and done.mkl.dual_gap <= 1e-6
    # the same problem, certified within tol: returned without a solve
    again = solve_candidates(stack, index[None], sign[None], C, theta=theta, offset=0.5, tol=1e-4, solved=done)
    assert again.mkl is done.mkl and again.history[0]["reused"] and again.stop_reason == "fixed candidates"
    fresh = solve_candidates(stack, index[None], sign[None], C, theta=theta, offset=0.5, tol=1e-4)
    assert again.mkl.objective == pytest.approx(fresh.mkl.objective, rel=2e-4)
    # a tighter tol than the solve's gap, or other keys: solved again
    loose = solve_candidates(stack, index[None], sign[None], C, theta=theta, offset=0.5, tol=1e-2)
    tight = solve_candidates(stack, index[None], sign[None], C, theta=theta, offset=0.5, tol=1e-7, solved=loose)
    assert tight.mkl is not loose.mkl and tight.mkl.dual_gap <= 1e-7
    j = next(i for i, b in enumerate(cset.positive) if len(b) > 1)  # unit j is positive bag j's key
    bag, other = cset.positive[j], index.copy()
    other[j] = bag[1] if index[j] == bag[0] else bag[0]
    moved = solve_candidates(stack, other[None], sign[None], C, theta=theta, offset=0.5, tol=1e-4, solved=done)
    assert moved.mkl is not done.mkl and "reused" not in moved.history[0]


def test_solve_candidates_reuses_a_whole_solved_cutting_plane_set_only():
    stack, cset, index, sign, C = _one_group(2.0)
    start = cset.from_scores(np.random.default_rng(0).normal(size=cset.n_instances))
    kw = dict(theta=2.0, offset=0.5, tol=1e-6, cp_tol=1e-9, n_starts=0)  # the searched path of two groups
    res = cutting_plane(stack, cset, C, start, max_iter=3, **kw)
    assert res.index.shape[0] == 2 and res.pending is None  # two groups, both solved
    again = solve_candidates(stack, res.index, res.sign, C, theta=2.0, offset=0.5, tol=1e-3, solved=res)
    assert again.mkl is res.mkl
    single = solve_candidates(stack, res.index[:1], res.sign[:1], C, theta=2.0, offset=0.5, tol=1e-3, solved=res)
    assert single.mkl is not res.mkl  # one of the groups alone is another problem
    # stopped by max_iter with a group found and not solved: its groups are the solved set, at a loose gap
    stopped = cutting_plane(stack, cset, C, start, max_iter=1, **kw)
    assert stopped.pending is not None and stopped.history[-1]["mkl_tol"] >= 1e-2  # the first, loose solve
    finer = stopped.mkl.dual_gap / 10  # whatever gap the loose solve reached: a tolerance it does not meet
    tight = solve_candidates(stack, stopped.index, stopped.sign, C, theta=2.0, offset=0.5, tol=finer,
                             solved=stopped)
    assert tight.mkl is not stopped.mkl and tight.mkl.dual_gap <= finer
    loose = solve_candidates(stack, stopped.index, stopped.sign, C, theta=2.0, offset=0.5,
                             tol=stopped.mkl.dual_gap, solved=stopped)
    assert loose.mkl is stopped.mkl


@pytest.mark.parametrize("theta", [None, 2.0])
def test_bag_level_fit_with_the_reused_rounding_equals_a_fresh_rounding_solve(theta):
    X, labels, bags = _mil()
    kernels = [create("kernel", "rbf"), create("kernel", "inverse_distance")]
    tol = 1e-5
    clf = IOKLMultipleInstanceClassifier(kernels=kernels, C=10.0, theta=theta, max_iter=8, offset=1.0,
                                         tol=tol, bag_cost="unit").fit(X, labels, bags)  # every unit at C = 10
    inputs = clf.kernel_set_.fit_stack(X)
    rounded = clf.rounded_
    fresh = solve_candidates(inputs, rounded.index, rounded.sign, np.full(rounded.index.shape[2], 10.0),
                             theta=theta, offset=1.0, tol=tol)
    assert clf.objective_ == pytest.approx(fresh.mkl.objective, rel=3 * tol)
    assert rounded.mkl.dual_gap <= tol
    # the same bag predictions from the fresh solve's classifier
    scores = sum(np.asarray(inputs.kernel(m)) @ c for m, c in enumerate(fresh.coefficients(inputs)))
    scores = scores + fresh.bias(1.0)
    ids = np.unique(bags)
    fresh_pred = np.where([scores[bags == b].max() > 0 for b in ids], 1, -1)
    np.testing.assert_array_equal(clf.predict(X, bags), fresh_pred)


@pytest.mark.parametrize("offset", [0.0, 0.7])
def test_key_instance_evaluator_forms_from_the_support_rows_equal_the_direct_forms(offset):
    X, labels, bags = _mil(14, seed=2)
    stack = KernelSet(default_kernels()).fit_stack(X)
    Ks = [np.asarray(stack.kernel(m)) for m in range(4)]
    lists = [np.flatnonzero(bags == b) for b in np.unique(bags)]
    cset = KeyInstanceSet(lists, np.where(np.unique(bags) % 2 == 0, 1.0, -1.0))
    rng = np.random.default_rng(1)
    alpha = rng.random(cset.n_units) * (rng.random(cset.n_units) < 0.4)  # a sparse alpha, as an SVM's
    alpha /= alpha.sum()
    evaluate = cset._evaluator(Ks, alpha, offset)
    for seed in range(3):
        index, sign = cset.from_scores(np.random.default_rng(seed).normal(size=len(X)))
        q, linear = evaluate(index, sign)
        u = cset.lift(alpha, index, sign)[0]
        np.testing.assert_allclose(q, [u @ K @ u + offset * u.sum() ** 2 for K in Ks], rtol=1e-12, atol=1e-15)
        w = rng.random(4)
        rows = cset.scored_instances()
        direct = sum(wm * (K @ u + offset * u.sum()) for wm, K in zip(w, Ks, strict=True))
        np.testing.assert_allclose(linear(w)[rows], direct[rows], rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("uniform", [True, False])
def test_io_columns_of_shared_units_only_equal_the_dense_combination(uniform):
    """Requests of shared units only (the SMO's usual block) take the view path; one sign or mixed signs."""
    from multikernel.iokl import IOColumns, IOStack

    X = np.random.default_rng(7).normal(size=(16, 3))
    inputs = KernelSet([create("kernel", "rbf"), create("kernel", "laplacian")]).fit_stack(X)
    shared = np.arange(5, 16)
    shared_sign = -np.ones(11) if uniform else np.where(np.arange(11) % 3 == 0, 1.0, -1.0)
    index = np.array([np.r_[[0, 3], shared], np.r_[[1, 4], shared]])
    sign = np.tile(np.r_[np.ones(2), shared_sign], (2, 1))
    stack = IOStack(inputs, index, sign, offset=0.3)
    w = np.array([0.4, 0.0, 0.9, 0.2])
    cols = stack.column_provider(w)
    assert isinstance(cols, IOColumns)
    dense = stack.combine(w)
    for idx in (np.array([2, 5, 12]), np.array([12, 3, 4, 9]), np.array([0, 7, 1])):
        out = np.full((len(idx), stack.n_rows), np.nan)
        cols.columns(idx, out)
        np.testing.assert_allclose(out, dense[idx], rtol=1e-12, atol=1e-12)


def _two_group_stack(offset: float):
    from multikernel.iokl import IOStack

    X = np.random.default_rng(11).normal(size=(18, 3))
    inputs = KernelSet([create("kernel", "rbf"), create("kernel", "laplacian")]).fit_stack(X)
    shared = np.arange(6, 18)
    sign = np.r_[np.ones(3), -np.ones(12)]
    index = np.array([np.r_[[0, 3, 5], shared], np.r_[[1, 3, 4], shared]])
    return IOStack(inputs, index, np.tile(sign, (2, 1)), offset=offset)


@pytest.mark.parametrize("offset", [0.0, 0.4])
def test_io_columns_warm_products_are_the_combined_kernel_times_the_last_forms_vector(offset):
    stack = _two_group_stack(offset)
    rng = np.random.default_rng(2)
    v = rng.random(stack.n_rows) * (rng.random(stack.n_rows) < 0.5)
    w = np.array([0.3, 0.0, 0.8, 0.5])
    assert stack.column_provider(w).warm_products() is None  # no forms yet
    q = stack.quad_forms(v)
    dense = [stack.kernel(k) for k in range(stack.n_kernels)]
    np.testing.assert_allclose(q, [v @ K @ v for K in dense], rtol=1e-12)
    alpha, coef, bound, kv_bound, kv_free = stack.column_provider(w).warm_products()
    np.testing.assert_array_equal(alpha, v)
    np.testing.assert_array_equal(bound, v == 0)
    np.testing.assert_array_equal(kv_bound, 0.0)
    np.testing.assert_allclose(kv_free, stack.combine(w) @ v, rtol=1e-12, atol=1e-14)
    stack.quad_forms(rng.random(stack.n_rows), kernels=[0, 1])  # forms of some kernels only: products kept
    np.testing.assert_array_equal(stack.column_provider(w).warm_products()[0], v)


@pytest.mark.parametrize("offset", [0.0, 0.4])
def test_svm_step_started_from_the_warm_products_equals_the_step_that_reads_the_columns(offset, monkeypatch):
    import multikernel.solve.smo as smo
    from multikernel.iokl.inner import SimplexRidge

    given = []
    original = smo._given_gradient
    monkeypatch.setattr(smo, "_given_gradient", lambda *a: given.append(original(*a)) or given[-1])

    stack = _two_group_stack(offset)
    inner = SimplexRidge(np.full(stack.n_rows, 10.0))
    w0, w1 = np.array([0.5, 0.5, 0.2, 0.3]), np.array([0.6, 0.1, 0.3, 0.4])
    first = inner.solve(stack.column_provider(w0), None, 1e-10)
    stack.quad_forms(first.alpha)
    cols = stack.column_provider(w1)
    assert cols.warm_products() is not None
    warm = inner.solve(cols, first.alpha, 1e-10)
    assert given[-1] is not None  # the start's gradient came from the products
    stack._products = None  # the same solve reading the support's columns
    cold = inner.solve(stack.column_provider(w1), first.alpha, 1e-10)
    assert given[-1] is None
    ref = inner.solve(stack.combine(w1), None, 1e-10)
    for sol in (warm, cold):
        assert sol.dual_objective == pytest.approx(ref.dual_objective, rel=1e-8)
        np.testing.assert_allclose(sol.alpha, ref.alpha, atol=1e-6)


def test_simplex_ridge_returns_an_alpha_that_sums_to_one_exactly():
    from multikernel.iokl.inner import SimplexRidge

    stack = _two_group_stack(0.4)
    inner = SimplexRidge(np.full(stack.n_rows, 10.0))
    ref = inner.solve(stack.combine(np.ones(4)), None, 1e-10)
    for w in (np.array([0.5, 0.5, 0.2, 0.3]), np.array([0.6, 0.1, 0.3, 0.4]), np.ones(4)):
        sol = inner.solve(stack.column_provider(w), None, 1e-10)
        assert sol.alpha.sum() == 1.0 and np.all(sol.alpha >= 0)
        np.testing.assert_array_equal(sol.coef, sol.alpha)
        np.testing.assert_array_equal(sol.at_bound, sol.alpha <= 0)
    assert ref.alpha.sum() == 1.0
