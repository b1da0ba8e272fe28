"""EasyMKL against the same QP written in cvxpy, and its SVM against scikit-learn's on the combined kernel."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.svm import SVC

from multikernel import MKLClassifier, create
from multikernel.core.interfaces import MKLProblem
from multikernel.plugins.easymkl import easymkl_weights
from multikernel.stack.storage import DenseStack


def _data(n=50, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = np.where(X[:, 0] - 0.7 * X[:, 2] + 0.4 * rng.normal(size=n) > 0, 1.0, -1.0)
    d2 = ((X[:, None] - X[None]) ** 2).sum(-1)
    Ks = np.stack([X @ X.T, np.exp(-0.3 * d2), np.exp(-3.0 * d2), np.outer(X[:, 1], X[:, 1])])
    Ks = Ks * (n / np.trace(Ks, axis1=1, axis2=2))[:, None, None]
    return Ks, y


def _cvx_gamma(Ks: np.ndarray, y: np.ndarray, lam: float) -> np.ndarray:
    """argmin_{gamma in Gamma} (1 - lam) gamma'Y K Y gamma + lam ||gamma||^2 on the sum kernel."""
    K = Ks.sum(axis=0)
    w, V = np.linalg.eigh(K)
    L = V * np.sqrt(np.clip(w, 0, None))  # K = L L'
    g = cp.Variable(len(y))
    objective = (1 - lam) * cp.sum_squares(L.T @ cp.multiply(y, g)) + lam * cp.sum_squares(g)
    cons = [g >= 0, cp.sum(g[y > 0]) == 1, cp.sum(g[y < 0]) == 1]
    cp.Problem(cp.Minimize(objective), cons).solve(solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12,
                                                   tol_feas=1e-12)
    return np.asarray(g.value)


def _problem(Ks, y):
    return MKLProblem(stack=DenseStack(Ks), y=y, loss=create("loss", "csvc"),
                      regularizer=create("regularizer", "simplex"))


@pytest.mark.parametrize("lam", [0.0, 0.1, 0.5, 0.9])
def test_weights_match_the_qp_in_cvxpy(lam):
    Ks, y = _data()
    weights, gamma = easymkl_weights(_problem(Ks, y), lam)
    ref = _cvx_gamma(Ks, y, lam)
    Y = y * ref
    d = np.array([Y @ K @ Y for K in Ks])
    # the objective values agree tightly; gamma itself is unique only when lam > 0
    def obj(g):
        return (1 - lam) * (y * g) @ Ks.sum(0) @ (y * g) + lam * g @ g
    assert obj(gamma[0]) == pytest.approx(obj(ref), rel=1e-6, abs=1e-9)
    if lam > 0:
        np.testing.assert_allclose(gamma[0], ref, atol=1e-5)
        np.testing.assert_allclose(weights, d / d.sum(), atol=1e-5)
    assert weights.sum() == pytest.approx(1.0)
    assert (weights >= 0).all()


def test_classifier_is_the_svm_on_the_easymkl_kernel():
    Ks, y = _data()
    clf = MKLClassifier(kernels="precomputed", method="easymkl", C=5.0, tol=1e-7).fit(Ks, y)
    weights, _ = easymkl_weights(_problem(Ks, y), 0.1)
    np.testing.assert_allclose(clf.weights_, weights, atol=1e-9)
    assert clf.dual_gap_ <= 1e-7
    Kw = np.tensordot(weights, Ks, axes=1)
    svc = SVC(kernel="precomputed", C=5.0, tol=1e-10).fit(Kw, y)
    np.testing.assert_allclose(clf.decision_function(Ks), svc.decision_function(Kw), atol=1e-4)


def test_lam_is_a_parameter_and_is_checked():
    Ks, y = _data()
    clf = MKLClassifier(kernels="precomputed", method="easymkl", solver=create("solver", "easymkl", lam=0.5))
    np.testing.assert_allclose(clf.fit(Ks, y).weights_, easymkl_weights(_problem(Ks, y), 0.5)[0], atol=1e-8)
    for bad in (-0.1, 1.0, "x"):
        with pytest.raises(ValueError, match="lam must be"):
            MKLClassifier(kernels="precomputed", method="easymkl", solver=create("solver", "easymkl", lam=bad)
                          ).fit(Ks, y)


def test_multiclass_one_vs_rest_and_features():
    X, y = load_iris(return_X_y=True)
    clf = MKLClassifier(kernels="rbf_poly", method="easymkl", C=10.0).fit(X, y)
    assert clf.weights_.shape[0] == 3
    np.testing.assert_allclose(clf.weights_.sum(axis=1), 1.0)
    assert clf.score(X, y) > 0.9
