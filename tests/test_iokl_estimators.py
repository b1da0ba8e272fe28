"""The IOKL estimators: semi-supervised, multiple-instance and clustering; special cases and bad input."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_blobs, make_moons
from sklearn.metrics import adjusted_rand_score

from multikernel import create
from multikernel.iokl import IOKLClustering, IOKLMultipleInstanceClassifier, IOKLSemiSupervisedClassifier

pytestmark = [pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning"),
              pytest.mark.filterwarnings("ignore:IOKL cutting plane stopped:RuntimeWarning")]


def _moons(n=80, n_labeled=6, seed=0):
    X, y = make_moons(n, noise=0.08, random_state=seed)
    rng = np.random.default_rng(seed)
    labeled = np.r_[rng.choice(np.flatnonzero(y == 0), n_labeled // 2, replace=False),
                    rng.choice(np.flatnonzero(y == 1), n_labeled // 2, replace=False)]
    mask = np.ones(n, bool)
    mask[labeled] = False
    return X, y, mask


def _mil(n_bags=16, seed=1):
    rng = np.random.default_rng(seed)
    X, bags, labels = [], [], []
    for b in range(n_bags):
        k = int(rng.integers(2, 5))
        pts = rng.normal(size=(k, 2))
        if b % 2 == 0:
            pts[0] += 3.0  # one positive instance per positive bag
        X.append(pts)
        bags += [b] * k
        labels += [1 if b % 2 == 0 else -1] * k
    return np.vstack(X), np.array(labels), np.array(bags), np.where(np.arange(n_bags) % 2 == 0, 1, -1)


def test_semi_supervised_follows_the_clusters_from_four_labels():
    # Two elongated clusters whose labelled points sit at the inner ends: a labelled-only SVM puts the
    # boundary between the labelled points, the cluster assumption moves it into the gap.
    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(size=(40, 2)) * [0.4, 2.0] + [-1.5, 0], rng.normal(size=(40, 2)) * [0.4, 2.0] + [1.5, 0]]
    y = np.r_[np.zeros(40, int), np.ones(40, int)]
    mask = np.ones(80, bool)
    mask[[np.argmax(X[:40, 1]), np.argmin(X[:40, 1]), 40 + np.argmax(X[40:, 1]), 40 + np.argmin(X[40:, 1])]] = False
    yy = np.where(mask, -1, y)
    clf = IOKLSemiSupervisedClassifier(max_iter=8).fit(X, yy)
    assert np.mean(clf.transduction_[mask] == y[mask]) >= 0.95
    np.testing.assert_array_equal(clf.transduction_[~mask], y[~mask])
    assert clf.predict(X[:5]).shape == (5,) and set(clf.classes_) == {0, 1}
    assert clf.n_iter_ >= 1 and clf.dual_gap_ <= 1e-3 * 1.01
    assert clf.weights_.shape[1] == 4  # the thesis's four input kernels


def test_semi_supervised_with_minus_one_plus_one_classes_needs_the_mask():
    X, y, mask = _moons(n=40)
    ypm = 2 * y - 1
    with pytest.raises(ValueError, match="pass unlabeled="):
        IOKLSemiSupervisedClassifier().fit(X, np.where(mask, -1, ypm))
    clf = IOKLSemiSupervisedClassifier(max_iter=3, theta=2.0).fit(X, ypm, unlabeled=mask)
    assert set(np.unique(clf.transduction_)) <= {-1, 1}
    with pytest.raises(ValueError, match="all samples are unlabelled"):
        IOKLSemiSupervisedClassifier().fit(X, -np.ones(40))
    with pytest.raises(ValueError, match="positive_fraction"):
        IOKLSemiSupervisedClassifier(positive_fraction=1.5).fit(X, np.where(mask, -1, y))
    assert clone(clf).get_params()["theta"] == 2.0


def test_mil_with_one_instance_per_bag_is_the_square_hinge_svm():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(14, 2))
    y = np.where(X[:, 0] - X[:, 1] > 0, 1, -1)
    C = 4.0
    clf = IOKLMultipleInstanceClassifier(kernels=[create("kernel", "linear")], C=C, offset=0.0, tol=1e-8,
                                         cp_tol=1e-8).fit(X, y, np.arange(14))
    w, rho, xi = cp.Variable(2), cp.Variable(), cp.Variable(14)
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) + C / 2 * cp.sum_squares(xi) - rho),
                      [cp.multiply(y, X @ w) >= rho - xi])
    prob.solve(solver=cp.CLARABEL)
    assert clf.objective_ == pytest.approx(prob.value, rel=1e-5)
    np.testing.assert_allclose(clf.decision_function_instances(X), X @ w.value, atol=1e-4)


@pytest.mark.parametrize("level", ["bag", "instance"])
def test_mil_separates_bags(level):
    X, labels, bags, bag_labels = _mil()
    clf = IOKLMultipleInstanceClassifier(level=level, C=100.0, max_iter=6).fit(X, labels, bags)
    assert np.mean(clf.predict(X, bags) == bag_labels) >= 0.85
    assert clf.predict_instances(X).shape == (len(X),)
    # y per bag gives the same model
    other = IOKLMultipleInstanceClassifier(level=level, C=100.0, max_iter=6).fit(X, bag_labels, bags)
    np.testing.assert_allclose(other.coef_, clf.coef_)


def test_mil_bad_input():
    X, labels, bags, _ = _mil()
    clf = IOKLMultipleInstanceClassifier()
    with pytest.raises(ValueError, match="bag id per instance"):
        clf.fit(X, labels, bags[:-1])
    with pytest.raises(ValueError, match="bag 1 has no instances"):
        clf.fit(X[:4], [1, 1, -1, -1], [np.array([0, 1]), np.array([], dtype=int), np.array([2, 3])])
    with pytest.raises(ValueError, match="constant within each bag"):
        clf.fit(X, np.r_[-labels[0], labels[1:]], bags)
    with pytest.raises(ValueError, match="positive and negative bags"):
        clf.fit(X, np.ones(len(X)), bags)
    with pytest.raises(ValueError, match="level must be"):
        IOKLMultipleInstanceClassifier(level="bags").fit(X, labels, bags)
    with pytest.raises(ValueError, match="one label per instance"):
        clf.fit(X, labels[:5], bags)


def test_clustering_separates_blobs_under_the_balance_constraint():
    X, y = make_blobs(60, centers=[[-3, 0], [3, 0]], random_state=2)
    model = IOKLClustering(max_iter=5)
    labels = model.fit_predict(X)
    assert adjusted_rand_score(y, labels) == pytest.approx(1.0)
    assert abs(2 * labels.sum() - len(X)) <= 0.1 * len(X)
    np.testing.assert_array_equal(model.predict(X) == labels, np.ones(len(X), bool))


def test_clustering_bad_input():
    X = np.random.default_rng(0).normal(size=(7, 2))
    with pytest.raises(ValueError, match="no labelling of 7 samples satisfies the balance"):
        IOKLClustering(balance=0.0).fit(X)
    with pytest.raises(ValueError, match="two clusters"):
        IOKLClustering(n_clusters=3).fit(X)
    with pytest.raises(ValueError, match="theta is the cap in units of 1/T"):
        IOKLClustering(theta=0.5).fit(np.r_[X, X[:1] + 1.0])


@pytest.mark.parametrize("path", ["columns", "combined", "labelled rows"])
def test_svm_start_equals_scikit_learn_svc(path):
    """The SVM that starts a fit (SIL-SVM, or SSL's labelled part), solved by the library's SMO without an n x n
    average kernel, gives scikit-learn's decision values (both stop at a KKT violation of 1e-3)."""
    from sklearn.svm import SVC

    from multikernel.iokl.estimators import _svm_scores
    from multikernel.stack.kernelset import KernelSet
    from multikernel.stack.products import supports_products

    rng = np.random.default_rng(4)
    X = rng.normal(size=(60, 3))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=60) > 0, 1.0, -1.0)
    inputs = KernelSet([create("kernel", "rbf"), create("kernel", "laplacian")]).fit_stack(X)
    K = inputs.combine(np.full(2, 0.5))
    rows = np.arange(60) if path != "labelled rows" else np.sort(rng.choice(60, 15, replace=False))
    stack = inputs.subset(np.arange(60)) if path == "combined" else inputs  # a view: no columns on demand
    scores = _svm_scores(stack, rows, y[rows], 2.0)
    svc = SVC(kernel="precomputed", C=2.0, tol=1e-8).fit(K[np.ix_(rows, rows)], y[rows])
    assert supports_products(stack) == (path != "combined")
    np.testing.assert_allclose(scores, svc.decision_function(K[:, rows]), atol=2e-3)
