"""Heterogeneous MKL (Kobayashi 2014, section 4): training identities, the average kernel at S = I, cvxpy optima."""

import warnings

import numpy as np
import pytest
from _bilinear_reference import nuclear_norm_svm_cvxpy
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import SVC
from sklearn.utils.estimator_checks import parametrize_with_checks

from multikernel.bilinear import HMKLClassifier, kernel_transforms


def _views(seed, n=18, dims=(2, 3, 2)):
    rng = np.random.default_rng(seed)
    views = [rng.normal(size=(n, d)) for d in dims]
    y = np.sign(views[0][:, 0] + views[1][:, 1] + 0.3 * rng.normal(size=n))
    y[:2] = [-1, 1]
    return views, y


def _rbf(A, B, gamma=0.5):
    d = ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)
    return np.exp(-gamma * d)


def _feature_matrices(T):
    """The (n, n, w) training feature matrices: column c of sample i is T_c e_i."""
    return np.stack([np.stack([Tc[:, i] for Tc in T], axis=1) for i in range(T[0].shape[0])])


def _fit(est, K, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(K, y)


def test_training_identities():
    # P18, P19, P23 on RBF kernels
    views, _ = _views(0)
    Ks = [_rbf(v, v) for v in views]
    root = []
    for K in Ks:
        e, U = np.linalg.eigh(K)
        root.append((U * np.sqrt(np.clip(e, 0, None))) @ U.T)
    T, _ = kernel_transforms(Ks, "proposed")
    for c in range(3):
        np.testing.assert_allclose(T[c].T @ T[c], Ks[c], atol=1e-8)  # intra kernel = k_c on training
        for d in range(3):
            np.testing.assert_allclose(T[c].T @ T[d], root[c] @ root[d], atol=1e-6)
    T, _ = kernel_transforms(Ks, "product")
    np.testing.assert_allclose(T[0].T @ T[1], Ks[0] @ Ks[1], atol=1e-10)
    T, _ = kernel_transforms(Ks, "pca")
    np.testing.assert_allclose(T[2].T @ T[2], Ks[2], atol=1e-8)
    T, _ = kernel_transforms(Ks, "inverse")  # full-rank RBF kernels: R_cd = delta_ij
    np.testing.assert_allclose(T[0].T @ T[1], np.eye(18), atol=1e-6)


def test_proposed_inter_kernel_is_weighted_cca():
    # P20: with explicit features (linear kernels), R_cd = phi_c' V_c P Gamma Q' V_d' phi_d, U_c'U_d = P Gamma Q'
    views, _ = _views(1, n=12, dims=(3, 4))
    Ks = [v @ v.T for v in views]
    T, _ = kernel_transforms(Ks, "proposed")
    (Vc, Lc, Uct), (Vd, Ld, Udt) = (np.linalg.svd(v.T, full_matrices=False) for v in views)
    Uc, Ud = Uct.T[:, :3], Udt.T[:, :4]
    P, gamma, Qt = np.linalg.svd(Uc.T @ Ud, full_matrices=False)
    explicit = views[0] @ Vc[:, :3] @ P @ np.diag(gamma) @ Qt @ Vd[:, :4].T @ views[1].T
    np.testing.assert_allclose(T[0].T @ T[1], explicit, atol=1e-8)


@pytest.mark.parametrize("transformation", ["proposed", "diagonal"])
def test_identity_start_is_the_average_kernel_svm(transformation):
    # spec 4.1 / P1: at S = I, K(S) = sum_c K_c: the SVM on the average kernel with C scaled by w
    views, y = _views(2, n=30)
    Ks = np.stack([_rbf(v, v) for v in views])
    est = _fit(HMKLClassifier(kernels="precomputed", normalize="none", transformation=transformation, C=0.4,
                              max_iter=0, inner_tol=1e-9), Ks, y)
    svc = SVC(kernel="precomputed", C=3 * 0.4, tol=1e-9).fit(Ks.mean(0), y)
    # decision values agree up to the bias rule (ours: the best bias for W, sklearn: the KKT multiplier)
    ours = est.decision_function(Ks) - est.intercept_[0]
    np.testing.assert_allclose(ours, svc.decision_function(Ks.mean(0)) - svc.intercept_[0], atol=1e-5)
    np.testing.assert_allclose(est.sigma_[0], np.eye(3))


@pytest.mark.parametrize("transformation", ["proposed", "product", "inverse"])
def test_optimum_equals_nuclear_norm_svm_on_the_feature_matrices(transformation):
    # hMKL is the trace-norm bilinear classifier on X_i = [T_1 e_i, ..., T_w e_i]: cvxpy on those matrices
    views, y = _views(3)
    Ks = np.stack([v @ v.T for v in views])
    T, _ = kernel_transforms(list(Ks), transformation)
    ref, _, _ = nuclear_norm_svm_cvxpy(_feature_matrices(T), y, 0.5)
    est = _fit(HMKLClassifier(kernels="precomputed", normalize="none", transformation=transformation, C=0.5,
                              tol=1e-6, max_iter=2000), Ks, y)
    info = est.fit_info_[0]
    assert info["dual"] <= ref * (1 + 1e-6) + 1e-8 <= info["primal"] * (1 + 2e-6) + 2e-8
    assert info["primal"] == pytest.approx(ref, rel=1e-4)
    # the scores on the training set are those of W = G S on the feature matrices
    assert est.sigma_.shape == (1, 3, 3)


def test_diagonal_is_group_lasso_mkl():
    # P21: Z = I keeps S diagonal; with linear kernels the problem is min sum_c ||w_c|| + C hinge (Varma-Ray)
    import cvxpy as cp

    views, y = _views(4)
    Ks = np.stack([v @ v.T for v in views])
    C = 0.5
    est = _fit(HMKLClassifier(kernels="precomputed", normalize="none", transformation="diagonal", C=C,
                              tol=1e-6, max_iter=2000), Ks, y)
    ws = [cp.Variable(v.shape[1]) for v in views]
    b = cp.Variable()
    scores = sum(v @ wc for v, wc in zip(views, ws, strict=True)) + b
    prob = cp.Problem(cp.Minimize(sum(cp.norm(wc, 2) for wc in ws) + C * cp.sum(cp.pos(1 - cp.multiply(y, scores)))))
    prob.solve(solver="CLARABEL")
    assert est.fit_info_[0]["primal"] == pytest.approx(prob.value, rel=1e-4)
    off = est.sigma_[0] - np.diag(np.diag(est.sigma_[0]))
    assert np.abs(off).max() == 0.0


def test_out_of_sample_scores_follow_the_feature_map():
    # a test sample's matrix is X(x) = [B_c k_c(x)]: the scores through beta_c equal tr(W' X(x)) + b, W = G S
    views, y = _views(5, n=24)
    test = [v[:6] + 0.1 for v in views]
    Ks = np.stack([_rbf(v, v) for v in views])
    Kx = np.stack([_rbf(t, v) for t, v in zip(test, views, strict=True)])
    for transformation in ("proposed", "pca", "product", "inverse"):
        est = _fit(HMKLClassifier(kernels="precomputed", normalize="none", transformation=transformation, C=1.0,
                                  tol=1e-4), Ks, y)
        _, B = kernel_transforms(list(Ks), transformation)
        Xt = np.stack([Kx[c] @ (np.eye(24) if B[c] is None else B[c].T) for c in range(3)], axis=2)  # (6, n, w)
        expected = np.einsum("inw,nw->i", Xt, est.coef_[0]) + est.intercept_[0]
        np.testing.assert_allclose(est.decision_function(Kx), expected, atol=1e-8)


def test_features_input_and_multiclass():
    from multikernel.plugins.kernels import LinearKernel, RBFKernel

    rng = np.random.default_rng(6)
    X = rng.normal(size=(60, 4))
    y = np.argmax(X[:, :3], axis=1)
    est = HMKLClassifier(kernels=[LinearKernel(), RBFKernel(gamma=0.5)], C=1.0, tol=1e-2, max_iter=100)
    _fit(est, X, y)
    assert est.sigma_.shape == (3, 2, 2) and est.decision_function(X).shape == (60, 3)
    assert (est.predict(X) == y).mean() > 0.8
    assert clone(est).get_params()["transformation"] == "proposed"


def test_bad_input():
    views, y = _views(7)
    Ks = np.stack([v @ v.T for v in views])
    with pytest.raises(ValueError, match="transformation must be one of"):
        HMKLClassifier(kernels="precomputed", transformation="sum").fit(Ks, y)
    with pytest.raises(ValueError, match=r"y has one class \(1.0\); a classifier needs at least two"):
        HMKLClassifier(kernels="precomputed").fit(Ks, np.ones(18))
    with pytest.raises(ValueError, match="requires y"):
        HMKLClassifier(kernels="precomputed").fit(Ks, None)
    with pytest.raises(ValueError, match="max_iter"):
        HMKLClassifier(kernels="precomputed", max_iter=-1).fit(Ks, y)


def test_single_kernel_is_the_kernel_svm_with_a_plain_norm():
    # P24 / P11: w = 1 => min ||beta||_K + C hinge, the SVM with the non-squared RKHS norm (cvxpy on K^(1/2))
    import cvxpy as cp

    views, y = _views(8, n=20)
    K = _rbf(views[0], views[0])
    est = _fit(HMKLClassifier(kernels="precomputed", normalize="none", C=0.7, tol=1e-7, max_iter=500), K, y)
    e, U = np.linalg.eigh(K)
    root = (U * np.sqrt(np.clip(e, 0, None))) @ U.T
    v, b = cp.Variable(20), cp.Variable()
    prob = cp.Problem(cp.Minimize(cp.norm(v, 2) + 0.7 * cp.sum(cp.pos(1 - cp.multiply(y, root @ v + b)))))
    prob.solve(solver="CLARABEL")
    assert est.fit_info_[0]["primal"] == pytest.approx(prob.value, rel=1e-5)
    assert est.sigma_.shape == (1, 1, 1) and est.rank_[0] == 1


@parametrize_with_checks([HMKLClassifier(max_iter=5, tol=1e-2),
                          HMKLClassifier(kernels="precomputed", max_iter=5, tol=1e-2)])
def test_sklearn_conformance(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=ConvergenceWarning)
        check(estimator)
