"""MKLRegressor and MKLOneClass: scikit-learn's checks (check_outlier_* included), the average kernel against
scikit-learn's SVR / KernelRidge / OneClassSVM on the same combined kernel, R^2 as score, save/load, and the
loss's kind of targets checked."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_diabetes, make_blobs
from sklearn.kernel_ridge import KernelRidge
from sklearn.metrics import r2_score
from sklearn.svm import SVR, OneClassSVM
from sklearn.utils.estimator_checks import parametrize_with_checks

from multikernel import MKLOneClass, MKLRegressor, create


@parametrize_with_checks([MKLRegressor(), MKLOneClass()])
def test_scikit_learn_checks(estimator, check):
    check(estimator)


@pytest.fixture(scope="module")
def diabetes():
    X, y = load_diabetes(return_X_y=True)
    X, y = X[:120], y[:120]
    return (X - X.mean(0)) / X.std(0), (y - y.mean()) / y.std()


def _stack(X):
    d2 = ((X[:, None] - X[None]) ** 2).sum(-1)
    Ks = np.array([X @ X.T, np.exp(-d2 / np.median(d2)), np.exp(-4 * d2 / np.median(d2))])
    return Ks * (len(X) / np.trace(Ks, axis1=1, axis2=2))[:, None, None]


def test_the_average_kernel_is_svr_and_kernel_ridge(diabetes):
    X, y = diabetes
    Ks = _stack(X)
    K = Ks.mean(0)
    reg = MKLRegressor(kernels="precomputed", method="average", C=3.0, epsilon=0.2, tol=1e-8, inner_tol=1e-9)
    reg.fit(Ks, y)
    svr = SVR(kernel="precomputed", C=3.0, epsilon=0.2, tol=1e-9).fit(K, y)
    assert np.allclose(reg.predict(Ks), svr.predict(K), atol=1e-4)
    assert reg.score(Ks, y) == pytest.approx(r2_score(y, reg.predict(Ks)))
    ridge = MKLRegressor(kernels="precomputed", method="average", loss=create("loss", "squared", C=3.0,
                                                                                 fit_intercept=False)).fit(Ks, y)
    assert np.allclose(ridge.predict(Ks), KernelRidge(alpha=1 / 3.0, kernel="precomputed").fit(K, y).predict(K))


def test_the_average_kernel_is_one_class_svm():
    X, _ = make_blobs(80, random_state=1)
    Ks = _stack(X)
    K = Ks.mean(0)
    oc = MKLOneClass(kernels="precomputed", method="average", nu=0.2, tol=1e-8, inner_tol=1e-9).fit(Ks)
    ref = OneClassSVM(kernel="precomputed", nu=0.2, tol=1e-9).fit(K)
    scale = 0.2 * 80  # libsvm's scaling of the same problem
    assert np.allclose(scale * oc.score_samples(Ks), ref.score_samples(K), atol=1e-4)
    # the free support vectors lie on the boundary (decision 0 up to rounding): compare the others
    clear = np.abs(oc.decision_function(Ks)) > 1e-6
    assert clear.sum() >= 60 and np.array_equal(oc.predict(Ks)[clear], ref.predict(K)[clear])
    assert np.allclose(oc.decision_function(Ks), oc.score_samples(Ks) - oc.offset_)


def test_mkl_fits_and_round_trips(diabetes, tmp_path):
    X, y = diabetes
    reg = MKLRegressor(C=10.0).fit(X, y)
    assert reg.dual_gap_ <= 1e-3 and reg.score(X, y) > 0.5 and reg.weights_.sum() == pytest.approx(1.0)
    reg.save(tmp_path / "r.npz")
    assert np.array_equal(MKLRegressor.load(tmp_path / "r.npz").predict(X), reg.predict(X))
    Y = np.column_stack([y, -y])
    multi = MKLRegressor(C=10.0, multiclass="shared").fit(X, Y)
    assert multi.predict(X).shape == Y.shape and multi.weights_.ndim == 1
    oc = MKLOneClass(nu=0.1).fit(X)
    assert oc.dual_gap_ <= 1e-3 and 0.8 <= np.mean(oc.predict(X) == 1) <= 1.0
    oc.save(tmp_path / "o.npz")
    assert np.array_equal(MKLOneClass.load(tmp_path / "o.npz").decision_function(X), oc.decision_function(X))


def test_a_loss_of_another_task_is_refused(diabetes):
    X, y = diabetes
    with pytest.raises(ValueError, match="continuous targets.*epsilon_insensitive.*squared"):
        MKLRegressor(loss="csvc").fit(X, y)
    with pytest.raises(ValueError, match="one_class targets"):
        MKLOneClass(loss="squared").fit(X)
    with pytest.raises(ValueError, match="epsilon is not a parameter of loss 'squared'"):
        MKLRegressor(loss="squared", epsilon=0.1).fit(X, y)
    with pytest.raises(ValueError, match="nu"):
        MKLOneClass(nu=1.5).fit(X)
    with pytest.raises(ValueError, match="real numbers"):
        MKLRegressor().fit(X, np.array(["a"] * len(y)))
