"""Baselines of the ranking chapters: one-vs-rest SVMs (plain and Platt-scaled) and ML-kNN."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_multilabel_classification
from sklearn.svm import SVC

from multikernel import create
from multikernel.ranking.baselines import MLkNN, OneVsRestRanker


@pytest.fixture(scope="module")
def data():
    X, Y = make_multilabel_classification(n_samples=80, n_features=5, n_classes=4, n_labels=2, random_state=1)
    X = (X - X.mean(0)) / X.std(0)
    return X[:60], Y[:60], X[60:], Y[60:]


def _rbf(A: np.ndarray, B: np.ndarray, gamma: float = 0.2) -> np.ndarray:
    return np.exp(-gamma * ((A[:, None] - B[None]) ** 2).sum(-1))


def test_mlknn_by_hand():
    # 1-D points; with k = 1 each training point's neighbour: 0->1, 1->0, 3->1, 10->12, 12->10
    X = np.array([[0.0], [1.0], [3.0], [10.0], [12.0]])
    Y = np.array([[1, 0], [1, 0], [0, 1], [0, 1], [0, 1]])
    est = MLkNN(k=1, s=1.0).fit(X, Y)
    np.testing.assert_allclose(est.prior_, [3 / 7, 4 / 7])
    np.testing.assert_allclose(est.likelihood_[0], [1 / 4, 3 / 4])
    np.testing.assert_allclose(est.likelihood_not_[0], [3 / 5, 2 / 5])
    np.testing.assert_allclose(est.likelihood_[1], [2 / 5, 3 / 5])
    np.testing.assert_allclose(est.likelihood_not_[1], [3 / 4, 1 / 4])
    # x = 0.4: its neighbour (0) has label 0 and not label 1
    np.testing.assert_allclose(est.decision_function([[0.4]]), [[45 / 77, 32 / 77]])
    np.testing.assert_array_equal(est.predict([[0.4]]), [[1, 0]])


def test_mlknn_unknown_labels_are_skipped():
    X = np.array([[0.0], [1.0], [3.0], [10.0], [12.0], [20.0]])
    Y = np.array([[1, 0], [1, 0], [0, 1], [0, 1], [0, 1], [np.nan, np.nan]])
    full = MLkNN(k=1).fit(X[:5], Y[:5])
    with_unknown = MLkNN(k=1).fit(X, Y)     # sample 5's neighbour is 4; its own labels are unknown
    np.testing.assert_allclose(with_unknown.prior_, full.prior_)
    np.testing.assert_allclose(with_unknown.likelihood_, full.likelihood_)


def test_one_vs_rest_is_one_svc_per_label(data):
    X, Y, Xt, _ = data
    est = OneVsRestRanker(kernels="rbf", kernel_params={"gamma": 0.2}, normalize="none", C=2.0).fit(X, Y)
    for k in range(Y.shape[1]):
        svc = SVC(kernel="precomputed", C=2.0).fit(_rbf(X, X), Y[:, k])
        np.testing.assert_allclose(est.decision_function(Xt)[:, k], svc.decision_function(_rbf(Xt, X)), atol=1e-8)
    platt = OneVsRestRanker(kernels="rbf", kernel_params={"gamma": 0.2}, normalize="none", platt=True).fit(X, Y)
    proba = platt.decision_function(Xt)
    assert np.all((proba >= 0) & (proba <= 1))
    np.testing.assert_array_equal(platt.predict(Xt), (proba > 0.5).astype(int))


def test_one_vs_rest_unknown_constant_labels_and_several_kernels(data):
    X, Y, Xt, _ = data
    Yn = Y.astype(float)
    Yn[:10, 0] = np.nan
    Yn[:, 3] = 0.0                                   # never relevant: a constant score
    est = OneVsRestRanker(kernels="rbf", kernel_params={"gamma": 0.2}, normalize="none").fit(X, Yn)
    svc = SVC(kernel="precomputed").fit(_rbf(X[10:], X[10:]), Y[10:, 0])
    np.testing.assert_allclose(est.decision_function(Xt)[:, 0], svc.decision_function(_rbf(Xt, X[10:])),
                               atol=1e-8)
    assert est.constant_[3] == -1.0 and np.all(est.decision_function(Xt)[:, 3] == -1.0)
    builders = [create("kernel", "rbf", gamma=g) for g in (0.1, 1.0)]
    avg = OneVsRestRanker(kernels=builders, normalize="none").fit(X, Y)
    pre = OneVsRestRanker(kernels="precomputed").fit(0.5 * (_rbf(X, X, 0.1) + _rbf(X, X, 1.0)), Y)
    np.testing.assert_allclose(avg.decision_function(Xt),
                               pre.decision_function(0.5 * (_rbf(Xt, X, 0.1) + _rbf(Xt, X, 1.0))), atol=1e-8)


def test_bad_inputs(data):
    X, Y, _, _ = data
    with pytest.raises(ValueError, match="k must be"):
        MLkNN(k=0).fit(X, Y)
    with pytest.raises(ValueError, match="more than 60"):
        MLkNN(k=60).fit(X, Y)
    with pytest.raises(ValueError, match="only 0"):
        OneVsRestRanker().fit(X, 3 * Y)
    with pytest.raises(ValueError, match="requires y"):
        MLkNN().fit(X, None)
