"""Trace-norm bilinear classification (Kobayashi 2014): against cvxpy, the spec's special cases, the estimators."""

import warnings

import numpy as np
import pytest
from _bilinear_reference import nuclear_norm_svm_cvxpy, sdp_svm_cvxpy
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.datasets import load_digits
from sklearn.svm import SVC

from multikernel.bilinear import (
    BilinearClassifier,
    BilinearSVMClassifier,
    fit_trace_norm,
    make_toy_bilinear,
    second_difference_laplacian,
)
from multikernel.bilinear.smoothing import check_laplacian, smoothing_transform
from multikernel.bilinear.solver import best_bias


def _problem(seed, n, h, w, noise=0.5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, h, w))
    u, v = rng.normal(size=h), rng.normal(size=w)
    y = np.sign(np.einsum("nhw,h,w->n", X, u, v) + noise * rng.normal(size=n))
    y[:2] = [-1, 1]  # both classes present
    return X, y


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(10, 24), h=st.integers(2, 5), w=st.integers(1, 3),
       C=st.sampled_from([0.05, 0.3, 1.0, 4.0]))
def test_optimum_matches_cvxpy_nuclear_norm(seed, n, h, w, C):
    X, y = _problem(seed, n, max(h, w), w)
    ref, _, _ = nuclear_norm_svm_cvxpy(X, y, C)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = fit_trace_norm(X, y, C, tol=1e-6, max_iter=400)
    # the certificate brackets the optimum (weak duality) and its gap bounds the sub-optimality
    assert fit.dual <= ref * (1 + 1e-6) + 1e-7
    assert fit.primal >= ref * (1 - 1e-6) - 1e-7
    assert fit.primal - ref <= fit.gap * fit.primal + 1e-6 * ref + 1e-7
    # projected gradient can stall near a non-smooth optimum (small, separable draws): ~2e-3 seen at worst
    assert fit.primal == pytest.approx(ref, rel=5e-3, abs=1e-6)
    # W = G S is the classifier whose value is certified
    scores = np.tensordot(X, fit.coef, axes=([1, 2], [0, 1])) + fit.bias
    hinge = np.maximum(0, 1 - y * scores).sum()
    assert fit.primal == pytest.approx(np.linalg.svd(fit.coef, compute_uv=False).sum() + C * hinge)


def test_sdp_formulation_has_the_same_optimum():
    # P3: min (2) = min (4)
    X, y = _problem(1, 16, 4, 3)
    a, _, _ = nuclear_norm_svm_cvxpy(X, y, 0.7)
    b, _, _ = sdp_svm_cvxpy(X, y, 0.7, solver="CLARABEL")
    assert a == pytest.approx(b, rel=1e-5)


def test_optimality_conditions_at_convergence():
    # P4-P6: sigma(W*) = eig(S*) (nonzero), ||W*||_* = tr S*, ||G*||_2 ~ 1 on range(S*), J = 1'alpha
    X, y = make_toy_bilinear(n_per_class=20, size=10, block=2, random_state=1)
    fit = fit_trace_norm(X, y, 0.3, tol=1e-4, max_iter=500)
    assert fit.converged
    lam = np.sort(np.linalg.eigvalsh(fit.sigma))[::-1]
    s = np.linalg.svd(fit.coef, compute_uv=False)
    r = int((lam > 1e-3 * lam[0]).sum())
    np.testing.assert_allclose(s[:r], lam[:r], rtol=2e-2)
    assert s.sum() == pytest.approx(np.trace(fit.sigma), rel=2e-2)
    assert fit.objective == pytest.approx(fit.alpha.sum(), rel=1e-2)


def test_identity_start_is_the_linear_svm():
    # P1: at S = I the sub-problem is the linear SVM on vec(X) (scikit-learn's SVC as the reference)
    X, y = _problem(5, 30, 5, 3)
    C = 0.5
    fit = fit_trace_norm(X, y, C, max_iter=0, inner_tol=1e-8)
    svc = SVC(kernel="linear", C=C, tol=1e-8).fit(X.reshape(30, -1), y)
    np.testing.assert_allclose(np.tensordot(fit.alpha * y, X, axes=1).ravel(), svc.coef_.ravel(), atol=1e-5)
    # and the rank=None baseline estimator is the same linear SVM
    est = BilinearSVMClassifier(C=C, inner_tol=1e-8).fit(X, y)
    np.testing.assert_allclose(est.coef_[0].ravel(), svc.coef_.ravel(), atol=1e-5)


def test_null_solution_for_small_C():
    # P12: balanced classes and C < 1/||sum_i y_i X_i||_2  =>  S* = 0, W* = 0, optimum n C
    X, y = _problem(7, 20, 4, 3)
    y = np.repeat([-1.0, 1.0], 10)
    C = 0.9 / np.linalg.norm(np.tensordot(y, X, axes=1), 2)
    fit = fit_trace_norm(X, y, C, tol=1e-8, max_iter=200)
    assert np.allclose(fit.sigma, 0) and np.allclose(fit.coef, 0)
    assert fit.primal == pytest.approx(20 * C)
    est = BilinearClassifier(C=C).fit(X, y)
    assert est.rank_[0] == 0


def test_trace_norm_path_is_monotone():
    # P13: ||W*||_* grows and the hinge loss shrinks with C
    X, y = _problem(11, 30, 5, 3)
    norms, losses = [], []
    for C in (0.1, 0.5, 2.0):
        fit = fit_trace_norm(X, y, C, tol=1e-4, max_iter=500)
        scores = np.tensordot(X, fit.coef, axes=([1, 2], [0, 1])) + fit.bias
        norms.append(np.linalg.svd(fit.coef, compute_uv=False).sum())
        losses.append(np.maximum(0, 1 - y * scores).sum())
    assert norms[0] <= norms[1] * (1 + 1e-3) <= norms[2] * (1 + 1e-3)
    assert losses[0] >= losses[1] * (1 - 1e-3) >= losses[2] * (1 - 1e-3)


def test_rank_recovery_on_the_toy_set():
    # P14: rank-1 class patterns + block noise: trace norm gives a low rank, the linear SVM a high one
    X, y = make_toy_bilinear(n_per_class=30, size=20, noise=0.15, random_state=0)
    ours = BilinearClassifier(C=0.1, tol=1e-3).fit(X, y)
    svm = BilinearSVMClassifier(C=0.1).fit(X, y)
    assert ours.rank_[0] <= 2 < svm.rank_[0]
    assert ours.dual_gap_[0] <= 1e-3


def test_low_rank_decision_equals_full_W():
    X, y = _problem(13, 30, 6, 4)
    est = BilinearClassifier(C=1.0).fit(X, y)
    full = np.tensordot(X, est.coef_[0], axes=([1, 2], [0, 1])) + est.intercept_[0]
    np.testing.assert_allclose(est.decision_function(X), full, atol=1e-10)
    assert est.row_factors_[0].shape == (6, est.col_factors_[0].shape[1])


def test_wide_matrices_are_transposed_consistently():
    X, y = _problem(17, 30, 6, 3)
    wide = BilinearClassifier(C=1.0, tol=1e-5).fit(X.transpose(0, 2, 1), y)
    tall = BilinearClassifier(C=1.0, tol=1e-5).fit(X, y)
    assert wide.coef_.shape == (1, 3, 6)
    np.testing.assert_allclose(wide.coef_[0].T, tall.coef_[0], atol=1e-6)
    np.testing.assert_allclose(wide.decision_function(X.transpose(0, 2, 1)), tall.decision_function(X), atol=1e-6)


def test_multiclass_one_vs_rest_on_digits():
    X, y = load_digits(return_X_y=True)
    X = X[:300].reshape(-1, 8, 8) / 16
    y = y[:300]
    est = BilinearClassifier(C=1.0, tol=1e-2, max_iter=50)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X[:200], y[:200])
    scores = est.decision_function(X[200:])
    assert scores.shape == (100, 10)
    np.testing.assert_array_equal(est.predict(X[200:]), est.classes_[scores.argmax(1)])
    assert (est.predict(X[200:]) == y[200:]).mean() > 0.8
    assert len(est.row_factors_) == 10 and (est.rank_ <= 8).all()
    assert clone(est).get_params()["C"] == 1.0


def test_alternating_bilinear_svm():
    X, y = _problem(19, 40, 5, 4)
    full = BilinearSVMClassifier(C=1.0, inner_tol=1e-6).fit(X, y)
    k1 = BilinearSVMClassifier(rank=1, C=1.0, inner_tol=1e-6).fit(X, y)
    k4 = BilinearSVMClassifier(rank=4, C=1.0, inner_tol=1e-6, tol=1e-8, max_iter=200).fit(X, y)
    assert k1.rank_[0] == 1
    obj = [info["objective"] for info in (full.fit_info_[0], k1.fit_info_[0], k4.fit_info_[0])]
    # P2: the Frobenius bilinear SVM at full rank reaches the linear SVM's objective; rank 1 cannot beat it
    assert obj[2] == pytest.approx(obj[0], rel=1e-2)
    assert obj[1] >= obj[0] * (1 - 1e-6)
    with pytest.raises(ValueError, match="rank=5 exceeds"):
        BilinearSVMClassifier(rank=5).fit(X, y)


def test_best_bias_is_the_exact_minimiser():
    rng = np.random.default_rng(0)
    scores, y = rng.normal(size=25), np.where(rng.random(25) < 0.4, -1.0, 1.0)
    b = best_bias(scores, y)
    grid = np.linspace(-5, 5, 20001)
    values = np.maximum(0, 1 - y[None] * (scores[None] + grid[:, None])).sum(1)
    assert np.maximum(0, 1 - y * (scores + b)).sum() <= values.min() + 1e-9


# ---------------------------------------------------------------------------------------------- smoothing
def test_smoothing_equals_weighted_trace_norm_in_cvxpy():
    # DERIVED (spec 4): the regularizer is ||(I + C_h L_h)^(1/2) W (I + C_w L_w)^(1/2)||_*
    import cvxpy as cp

    X, y = _problem(23, 20, 5, 4)
    L = second_difference_laplacian(5)
    est = BilinearClassifier(C=0.8, tol=1e-5, max_iter=500, row_laplacian=L).fit(X, y)
    A_h, _ = smoothing_transform(L, None, (5, 4))
    B = np.linalg.inv(A_h)
    W, b = cp.Variable((5, 4)), cp.Variable()
    scores = X.reshape(20, -1) @ cp.vec(W, order="C") + b
    prob = cp.Problem(cp.Minimize(cp.normNuc(B @ W) + 0.8 * cp.sum(cp.pos(1 - cp.multiply(y, scores)))))
    prob.solve(solver="CLARABEL")
    Wx = est.coef_[0]
    ours = np.linalg.svd(B @ Wx, compute_uv=False).sum() + 0.8 * np.maximum(
        0, 1 - y * (est.decision_function(X))).sum()
    assert ours == pytest.approx(prob.value, rel=2e-3)


def test_zero_laplacian_is_the_base_method():
    X, y = make_toy_bilinear(n_per_class=10, size=6, block=2, random_state=2)
    base = BilinearClassifier(C=0.3, tol=1e-4).fit(X, y)
    smooth = BilinearClassifier(C=0.3, tol=1e-4, row_laplacian=np.zeros((6, 6)),
                                col_laplacian=np.zeros((6, 6))).fit(X, y)
    np.testing.assert_allclose(smooth.coef_, base.coef_, atol=1e-8)


def test_second_difference_laplacian():
    L = second_difference_laplacian(6)
    rng = np.random.default_rng(0)
    W = rng.normal(size=(6, 2))
    direct = sum(((-W[t - 1] + 2 * W[t] - W[t + 1]) ** 2).sum() for t in range(1, 5))
    assert np.trace(W.T @ L @ W) == pytest.approx(direct)
    t = np.arange(6.0)
    np.testing.assert_allclose(L @ np.c_[np.ones(6), t], 0, atol=1e-12)


def test_bad_laplacians():
    X, y = _problem(31, 20, 4, 3)
    with pytest.raises(ValueError, match=r"shape \(4, 4\)"):
        BilinearClassifier(row_laplacian=np.eye(3)).fit(X, y)
    with pytest.raises(ValueError, match="positive semi-definite"):
        BilinearClassifier(col_laplacian=-np.eye(3)).fit(X, y)
    with pytest.raises(ValueError, match="symmetric"):
        check_laplacian(np.triu(np.ones((3, 3))), 3, "L")
    with pytest.raises(ValueError, match="row_weight"):
        BilinearClassifier(row_laplacian=np.eye(4), row_weight=-1.0).fit(X, y)


# ---------------------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("X, match", [
    (np.zeros((10, 12)), "3-D.*reshape each row"),
    (np.zeros((10, 2, 3, 2)), "3-D"),
    (np.full((10, 3, 2), np.nan), "NaN"),
    (np.array([[["a"]]] * 10), "numeric"),
])
def test_bad_X(X, match):
    with pytest.raises(ValueError, match=match):
        BilinearClassifier().fit(X, np.arange(10) % 2)


def test_bad_y_and_predict_shape():
    X, y = _problem(37, 20, 4, 3)
    with pytest.raises(ValueError, match="one class"):
        BilinearClassifier().fit(X, np.ones(20))
    with pytest.raises(ValueError, match="one label per sample"):
        BilinearClassifier().fit(X, y[:5])
    with pytest.raises(ValueError, match="C must be a positive"):
        BilinearClassifier(C=0).fit(X, y)
    est = BilinearClassifier().fit(X, y)
    with pytest.raises(ValueError, match=r"fitted on \(4, 3\)"):
        est.predict(np.zeros((2, 3, 4)))


def test_toy_generator():
    X, y = make_toy_bilinear(n_per_class=5, size=10, random_state=3)
    X2, _ = make_toy_bilinear(n_per_class=5, size=10, random_state=3)
    assert X.shape == (10, 10, 10) and set(np.unique(X)) <= {0.0, 1.0} and (X == X2).all()
    assert (y == np.repeat([-1, 1], 5)).all()
    with pytest.raises(ValueError, match="multiple of block"):
        make_toy_bilinear(size=12, block=5)
