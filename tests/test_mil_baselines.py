"""The SVMs of the MIL baselines against independent references: the shared-slack C-SVC of MI-SVM against
scikit-learn's SVC (every slack its own) and against its primal written in cvxpy; MI-SVM's and mi-SVM's final
labellings against the SVM those labellings define."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
from _iokl_testing import drawn_bags
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from multikernel import create
from multikernel.iokl.baselines import MISVM, bag_slack_svm, miSVM


@st.composite
def slack_problems(draw):
    """Features, labels and shared slacks of a drawn problem: sizes, C over decades, scaling, duplicated
    samples, rank deficiency (fewer features than samples), singleton and large groups."""
    n_pos = draw(st.integers(1, 6))
    n_groups = draw(st.integers(1, 5))
    sizes = [draw(st.integers(1, 5)) for _ in range(n_groups)]
    d = draw(st.integers(1, 4))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    n_neg = sum(sizes)
    X = np.vstack([rng.normal(1.0, 1.0, (n_pos, d)), rng.normal(-1.0, 1.0, (n_neg, d))])
    if draw(st.booleans()):  # an exact duplicate, in a group or not
        i, j = draw(st.integers(0, len(X) - 1)), draw(st.integers(0, len(X) - 1))
        X[j] = X[i]
    X *= 10.0 ** draw(st.integers(-1, 1))
    labels = np.r_[np.ones(n_pos), -np.ones(n_neg)]
    slack = np.r_[np.arange(n_pos), n_pos + np.repeat(np.arange(n_groups), sizes)]
    C = 10.0 ** draw(st.integers(-2, 3))
    return X, labels, slack, C


def primal_value(X: np.ndarray, labels: np.ndarray, slack: np.ndarray, C: float, coef: np.ndarray,
                 b: float) -> float:
    """``1/2 ||w||^2 + C sum_g max_{i in g} hinge_i`` at ``w = X' coef`` (a linear kernel)."""
    w = X.T @ coef
    hinge = np.maximum(0.0, 1.0 - labels * (X @ w + b))
    return 0.5 * w @ w + C * sum(hinge[slack == g].max() for g in np.unique(slack))


def primal_reference(X: np.ndarray, labels: np.ndarray, slack: np.ndarray, C: float) -> float:
    groups = np.unique(slack)
    w, b, xi = cp.Variable(X.shape[1]), cp.Variable(), cp.Variable(len(groups))
    where = np.searchsorted(groups, slack)
    cons = [xi >= 0, cp.multiply(labels, X @ w + b) >= 1 - xi[where]]
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) + C * cp.sum(xi)), cons)
    prob.solve(solver=cp.CLARABEL)
    return float(prob.value)


@settings(max_examples=25, deadline=None)
@given(slack_problems())
def test_shared_slack_svm_reaches_the_primal_optimum(problem):
    X, labels, slack, C = problem
    coef, b = bag_slack_svm(X @ X.T, labels, slack, C, tol=1e-8)
    ours = primal_value(X, labels, slack, C, coef, b)
    ref = primal_reference(X, labels, slack, C)
    # a KKT violation tol leaves each margin sample up to tol short of its margin: C tol per sample
    assert ours == pytest.approx(ref, rel=1e-5, abs=10 * C * 1e-8 * len(X))
    # a group's variables share its cap: the dual is feasible for the shared slacks
    alpha = coef * labels
    assert np.all(alpha >= 0) and np.isclose(alpha @ labels, 0.0, atol=1e-9 * max(1.0, C))
    for g in np.unique(slack):
        assert alpha[slack == g].sum() <= C * (1 + 1e-9)


@settings(max_examples=20, deadline=None)
@given(slack_problems())
def test_without_shared_slacks_it_is_scikit_learns_svc(problem):
    X, labels, _, C = problem
    K = np.exp(-0.5 * ((X[:, None] - X[None]) ** 2).sum(-1) / X.var() / max(X.shape[1], 1))
    coef, b = bag_slack_svm(K, labels, np.arange(len(labels)), C, tol=1e-6)
    svc = SVC(kernel="precomputed", C=C, tol=1e-6).fit(K, labels)
    f_svc = svc.decision_function(K)
    scale = max(1.0, np.abs(f_svc).max())
    assert np.allclose(K @ coef + b, f_svc, atol=1e-3 * scale)


def test_shared_slack_labels_must_agree_and_a_capped_solve_warns():
    K = np.eye(3)
    with pytest.raises(ValueError, match="share a slack must share their label"):
        bag_slack_svm(K, np.array([1.0, -1.0, -1.0]), np.array([0, 0, 1]), 1.0)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    labels = np.where(X[:, 0] > 0, 1.0, -1.0)
    with pytest.warns(ConvergenceWarning, match="shared-slack SVM stopped at its iteration limit with a KKT"):
        bag_slack_svm(X @ X.T, labels, np.where(labels < 0, np.arange(30) // 3, 100 + np.arange(30)), 10.0,
                      max_iter=2)


def _linear_bags(seed: int):
    X, y, bags = drawn_bags(n_bags=16, seed=seed)
    return StandardScaler().fit_transform(X), y, bags


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("C", [0.1, 10.0])
def test_mi_svm_ends_at_the_optimum_of_its_final_witnesses(seed, C):
    """The final SVM is the optimum of the paper's SVM for its witnesses (one slack per bag), and the witnesses
    are the highest-scoring instances of their bags under it (the criterion held)."""
    X, y, bags = _linear_bags(seed)
    clf = MISVM(kernels=[create("kernel", "linear")], C=C).fit(X, y, bags)
    ids = np.unique(bags)
    pos = [np.flatnonzero(bags == b) for b in ids if y[bags == b][0] > 0]
    neg_bags = [np.flatnonzero(bags == b) for b in ids if y[bags == b][0] < 0]
    rows = clf.support_rows_
    witness = rows[:len(pos)]
    f = X @ (X[rows].T @ clf.dual_coef_) + clf.intercept_
    assert all(f[b].max() == pytest.approx(f[w]) for b, w in zip(pos, witness, strict=True))
    labels = np.r_[np.ones(len(pos)), -np.ones(len(rows) - len(pos))]
    slack = np.r_[np.arange(len(pos)), len(pos) + np.concatenate([np.full(len(b), k) for k, b in
                                                                    enumerate(neg_bags)])]
    assert np.array_equal(rows[len(pos):], np.concatenate(neg_bags))
    ours = primal_value(X[rows], labels, slack, C, clf.dual_coef_, clf.intercept_)
    assert ours == pytest.approx(primal_reference(X[rows], labels, slack, C), rel=2e-3, abs=1e-5)


def test_mi_svm_weighs_a_negative_bag_the_same_whatever_its_size():
    """One slack per bag: repeating a negative bag's instances inside it changes neither the constraints nor
    the objective, so the classifier stays (per-instance slacks would weigh the bag twice)."""
    X, y, bags = _linear_bags(3)
    neg = np.flatnonzero(y < 0)
    X2, y2, bags2 = np.vstack([X, X[neg]]), np.r_[y, y[neg]], np.r_[bags, bags[neg]]
    kw = dict(kernels=[create("kernel", "linear")], C=1.0)
    a, b = MISVM(**kw).fit(X, y, bags), MISVM(**kw).fit(X2, y2, bags2)
    fa, fb = a.decision_function(X, bags), b.decision_function(X, bags)
    assert np.allclose(fa, fb, atol=2e-3 * max(1.0, np.abs(fa).max()))


@pytest.mark.parametrize("seed", [0, 1])
def test_mi_svm_ends_at_scikit_learns_svc_on_its_final_labels(seed):
    """mi-SVM's last step is the C-SVC on the labels it converged to: sign(f) in the positive bags (their best
    instance positive), -1 in the negative ones."""
    X, y, bags = _linear_bags(seed)
    clf = miSVM(kernels=[create("kernel", "rbf")], C=10.0).fit(X, y, bags)
    K = clf._cross(X)
    f = K @ clf.dual_coef_ + clf.intercept_
    labels = np.where(y > 0, np.where(f > 0, 1.0, -1.0), -1.0)
    for b in np.unique(bags[y > 0]):
        idx = np.flatnonzero(bags == b)
        labels[idx[np.argmax(f[idx])]] = 1.0
    svc = SVC(kernel="precomputed", C=10.0).fit(K, labels)
    assert np.allclose(svc.decision_function(K), f, atol=1e-6)
