"""MK-MLR without a dense combined kernel: lazy stacks give the dense fit, products by row blocks, warm starts."""

from __future__ import annotations

import numpy as np
import pytest

from multikernel import DenseStack, create
from multikernel.ranking import MultiLabelRanker
from multikernel.ranking import estimator as est_module
from multikernel.ranking.estimator import _combined_product
from multikernel.ranking.solver import _initial_scores, _RowCache
from multikernel.solve.smo import StackColumns
from multikernel.stack.storage import LazyStack


def _data(seed: int = 0, n: int = 80, m: int = 5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    Y = (X @ rng.normal(size=(4, m)) + 0.5 * rng.normal(size=(n, m)) > 0.3).astype(float)
    Y[:, 0], Y[:, 1] = 1.0, 0.0  # every sample has a pair
    return X, Y


def _builders():
    return [create("kernel", "rbf"), create("kernel", "linear"), create("kernel", "rbf", gamma_scale=4.0)]


def test_combined_product_by_row_blocks_equals_the_dense_product(monkeypatch):
    rng = np.random.default_rng(1)
    Ks = rng.normal(size=(3, 23, 17))
    coef = rng.normal(size=(17, 4))
    w = np.array([0.2, 0.0, 0.8])
    expected = np.tensordot(w, Ks, axes=1) @ coef
    monkeypatch.setattr(est_module, "_PRODUCT_BLOCK_BYTES", 8 * 17 * 5)  # blocks of 5 rows, the last one short
    np.testing.assert_allclose(_combined_product(DenseStack(Ks), w, coef), expected, atol=1e-12)
    monkeypatch.setattr(est_module, "_PRODUCT_BLOCK_BYTES", 1)  # one row at a time
    np.testing.assert_allclose(_combined_product(DenseStack(Ks), w, coef), expected, atol=1e-12)


def test_block_warm_start_scores_equal_the_dense_product():
    rng = np.random.default_rng(2)
    Z = rng.normal(size=(30, 3))
    K = Z @ Z.T
    S = rng.normal(size=(30, 4))
    S[rng.random(30) < 0.4] = 0.0  # rows outside the support are skipped
    for cache_mb in (1e-3, 8 * 30 * 7 / 2**20, 10.0):  # blocks of one row, of a few rows, of the whole support
        rows = _RowCache(StackColumns(K[None], np.ones(1)), cache_mb)
        np.testing.assert_allclose(_initial_scores(None, rows, S), K @ S, atol=1e-12)
        assert rows.misses == 0  # the blocks bypass the row cache


def test_mk_mlr_on_a_lazy_stack_never_forms_the_combined_kernel(monkeypatch):
    """The outer solver's inner solves read columns of the combined kernel (the core's column provider); the
    thresholds' training scores and the predictions are products by row blocks: no (n, n) combination."""
    X, Y = _data()
    n = len(X)
    kwargs = dict(kernels=_builders(), C=1.0, inner_tol=1e-6, tol=1e-4, random_state=0)
    dense = MultiLabelRanker(kernel_backend="dense", **kwargs).fit(X, Y)
    shapes = []
    original = LazyStack.combine

    def combine(self, weights, out=None, accumulate=False):
        result = original(self, weights, out=out, accumulate=accumulate)
        shapes.append(result.shape)
        return result

    monkeypatch.setattr(LazyStack, "combine", combine)
    monkeypatch.setattr(est_module, "_PRODUCT_BLOCK_BYTES", 8 * n * 16)  # products by blocks of 16 rows
    lazy = MultiLabelRanker(kernel_backend="lazy", cache_size=0.05, **kwargs).fit(X, Y)
    assert shapes and all(rows <= 16 for rows, _ in shapes)  # row blocks, never the combined kernel
    assert lazy.results_ is not None and lazy.dual_gap_ <= 1e-4
    # the same saddle point as the dense stack's fit (the same iterates up to rounding)
    np.testing.assert_allclose(lazy.weights_, dense.weights_, atol=1e-7)
    np.testing.assert_allclose(lazy.coef_, dense.coef_, atol=1e-6)
    assert lazy.objective_ == pytest.approx(dense.objective_, rel=1e-8)
    Xt = _data(seed=3, n=15)[0]
    np.testing.assert_allclose(lazy.decision_function(Xt), dense.decision_function(Xt), atol=1e-6)
    np.testing.assert_array_equal(lazy.threshold_["coef"].shape, dense.threshold_["coef"].shape)
    np.testing.assert_allclose(lazy.threshold_["coef"], dense.threshold_["coef"], atol=1e-5)


def test_mk_mlr_thresholds_use_the_leave_one_out_scores_of_the_learnt_kernel():
    """The training scores behind the thresholds are those of the dense combined kernel (the previous code)."""
    X, Y = _data(seed=4)
    sq = ((X[:, None] - X[None]) ** 2).sum(-1)
    Ks = np.array([np.exp(-sq / sq.mean()), X @ X.T / 4.0, np.exp(-4.0 * sq / sq.mean())])
    est = MultiLabelRanker(kernels="precomputed", C=1.0, inner_tol=1e-6, tol=1e-4).fit(Ks, Y)
    assert len(est.weights_) == 3
    K = np.tensordot(est.weights_, Ks, axes=1)
    scores = K @ est.coef_ - np.diagonal(K)[:, None] * est.coef_
    refit = est_module.learn_thresholds(scores, np.where(Y > 0, 1.0, -1.0), est.threshold)
    np.testing.assert_allclose(est.threshold_["coef"], refit["coef"], atol=1e-9)
    assert est.threshold_["intercept"] == pytest.approx(refit["intercept"], abs=1e-9)
    np.testing.assert_allclose(est.decision_function(Ks), K @ est.coef_, atol=1e-10)


@pytest.mark.parametrize("method", ["mlr_l1", "mlr_gl"])
def test_average_kernel_mlr_on_a_lazy_stack_equals_the_dense_fit(method, monkeypatch):
    """Fixed (uniform) weights on a lazy stack: the solve reads the stack's own column provider, never an
    (n, n) combination."""
    X, Y = _data(seed=3)
    kwargs = dict(kernels=_builders(), C=1.0, inner_tol=1e-8, regularizer="uniform", method=method)
    dense = MultiLabelRanker(kernel_backend="dense", **kwargs).fit(X, Y)
    original = LazyStack.combine

    def combine(self, weights, out=None, accumulate=False):
        result = original(self, weights, out=out, accumulate=accumulate)
        assert result.shape[0] < len(X) or result.shape[1] < len(X), "an (n, n) combined kernel was formed"
        return result

    monkeypatch.setattr(LazyStack, "combine", combine)
    monkeypatch.setattr(est_module, "_PRODUCT_BLOCK_BYTES", 8 * len(X) * 16)
    lazy = MultiLabelRanker(kernel_backend="lazy", cache_size=0.05, **kwargs).fit(X, Y)
    np.testing.assert_allclose(lazy.coef_, dense.coef_, atol=1e-6)
    assert lazy.objective_ == pytest.approx(dense.objective_, rel=1e-8)
