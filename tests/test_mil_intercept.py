"""The bias rules of the MIL baselines (``intercept``): ``"optimal"`` is the b of the SVM's optimum (checked
against the primal solved by cvxpy, and scikit-learn's SVC when no slack is shared); ``"support_mean"`` is the mean
of ``y_i - g(x_i)`` over the support vectors (misvm's rule), computed here from the fitted arrays with numpy, and
mi-SVM relabels with it (its final labels are ``sign(f)`` under that bias)."""

from __future__ import annotations

import warnings

import cvxpy as cp
import numpy as np
import pytest
from _iokl_testing import drawn_bags
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from multikernel import create
from multikernel.iokl.baselines import MISVM, SILSVM, MIKernelSVM, bag_slack_svm, miSVM

LINEAR = [create("kernel", "linear")]


@st.composite
def bag_problems(draw):
    """Bags of a drawn structure: how many positive and negative bags, each bag's size (singletons too), the
    dimension, how far a positive bag's witness stands out, the features' scale, and C over decades."""
    n_pos, n_neg = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    sizes = [draw(st.integers(1, 5)) for _ in range(n_pos + n_neg)]
    d = draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    shift = draw(st.sampled_from([0.5, 1.5, 3.0]))
    X, y, bags = [], [], []
    for k, m in enumerate(sizes):
        label = 1.0 if k < n_pos else -1.0
        pts = rng.normal(size=(m, d))
        if label > 0:
            pts[rng.integers(m)] += shift
        X.append(pts)
        y += [label] * m
        bags += [10 * k + 3] * m
    scale = 10.0 ** draw(st.integers(-1, 1))
    C = 10.0 ** draw(st.integers(-2, 2))
    return np.vstack(X) * scale, np.array(y), np.array(bags), C


def primal_b(X: np.ndarray, labels: np.ndarray, slack: np.ndarray, C: float) -> float:
    """The b of the shared-slack SVM's primal, ``min 1/2 ||w||^2 + C sum_g xi_g``, solved by cvxpy (Clarabel)."""
    groups = np.unique(slack)
    w, b, xi = cp.Variable(X.shape[1]), cp.Variable(), cp.Variable(len(groups))
    where = np.searchsorted(groups, slack)
    cons = [xi >= 0, cp.multiply(labels, X @ w + b) >= 1 - xi[where]]
    cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) + C * cp.sum(xi)), cons).solve(solver=cp.CLARABEL)
    return float(b.value)


def has_free_vector(alpha: np.ndarray, slack: np.ndarray, C: float) -> bool:
    """A support vector strictly inside its cap (its bag's, for a shared slack): then b is unique."""
    room = {g: C - alpha[slack == g].sum() for g in np.unique(slack)}
    return any(a > 1e-6 * C and room[g] > 1e-6 * C for a, g in zip(alpha, slack, strict=True))


def support_mean(K: np.ndarray, labels: np.ndarray, coef: np.ndarray) -> float:
    """``mean_{i: coef_i != 0} (y_i - sum_j coef_j K_ij)``, written out."""
    total, count = 0.0, 0
    for i in range(len(coef)):
        if coef[i] != 0.0:
            total += labels[i] - sum(coef[j] * K[i, j] for j in range(len(coef)))
            count += 1
    return total / count


def mi_svm_problem(X: np.ndarray, y: np.ndarray, bags: np.ndarray, rows: np.ndarray):
    """The labels and slacks of MI-SVM's final SVM on ``rows`` (the witnesses, then the negative instances)."""
    ids = np.unique(bags)
    n_pos = sum(y[bags == b][0] > 0 for b in ids)
    labels = np.r_[np.ones(n_pos), -np.ones(len(rows) - n_pos)]
    slack = np.r_[np.arange(n_pos), n_pos + np.searchsorted(ids, bags[rows[n_pos:]])]
    return labels, slack


@settings(max_examples=25, deadline=None)
@given(bag_problems())
def test_optimal_intercept_is_the_primal_b(problem):
    """MI-SVM's final SVM, and the shared-slack SVM on its own: b is the primal optimum's whenever that is unique."""
    X, y, bags, C = problem
    clf = MISVM(kernels=LINEAR, C=C).fit(X, y, bags)
    rows = clf.support_rows_
    labels, slack = mi_svm_problem(X, y, bags, rows)
    alpha = clf.dual_coef_ * labels
    if has_free_vector(alpha, slack, C):
        b_ref = primal_b(X[rows], labels, slack, C)
        assert clf.intercept_ == pytest.approx(b_ref, abs=5e-3 * max(1.0, abs(b_ref)))
    Xr = X[rows]
    coef, b = bag_slack_svm(Xr @ Xr.T, labels, slack, C, tol=1e-8)
    if has_free_vector(coef * labels, slack, C):
        b_ref = primal_b(Xr, labels, slack, C)
        assert b == pytest.approx(b_ref, abs=1e-5 * max(1.0, abs(b_ref)))


@settings(max_examples=15, deadline=None)
@given(bag_problems())
def test_optimal_intercept_is_scikit_learns_without_alternation(problem):
    """SIL-SVM (one SVM, a slack per instance) keeps SVC's intercept."""
    X, y, bags, C = problem
    clf = SILSVM(kernels=LINEAR, C=C).fit(X, y, bags)
    assert clf.intercept_ == pytest.approx(float(SVC(kernel="linear", C=C).fit(X, y).intercept_[0]), abs=1e-8)


@settings(max_examples=25, deadline=None)
@given(bag_problems())
def test_support_mean_intercept_of_mi_svm(problem):
    """The same witnesses and dual coefficients as the optimal rule (the witnesses do not depend on b); b is the
    mean over the support vectors, which is the optimal b plus their mean signed slack."""
    X, y, bags, C = problem
    opt = MISVM(kernels=LINEAR, C=C).fit(X, y, bags)
    sm = MISVM(kernels=LINEAR, C=C, intercept="support_mean").fit(X, y, bags)
    assert np.array_equal(sm.support_rows_, opt.support_rows_) and np.array_equal(sm.dual_coef_, opt.dual_coef_)
    rows = sm.support_rows_
    labels, _ = mi_svm_problem(X, y, bags, rows)
    K = X[rows] @ X[rows].T
    assert sm.intercept_ == pytest.approx(support_mean(K, labels, sm.dual_coef_), abs=1e-9)
    sv = sm.dual_coef_ != 0
    f = K[sv] @ opt.dual_coef_ + opt.intercept_
    # a support vector is on its margin up to the solver's tolerance: y_i f_i = 1 - xi_i
    signed_slack = labels[sv] * np.maximum(0.0, 1.0 - labels[sv] * f)
    assert sm.intercept_ == pytest.approx(opt.intercept_ + signed_slack.mean(), abs=5e-3 * max(1.0, C))


def relabelled(clf: miSVM, X: np.ndarray, y: np.ndarray, bags: np.ndarray) -> tuple[np.ndarray, bool]:
    """mi-SVM's relabelling under a fitted linear ``clf``: sign(f) in the positive bags (each one's best instance
    positive), -1 in the negative ones; and whether it is resolved (no score within 1e-3 of 0, nor of its bag's
    best when that is not positive), where mi-SVM keeps the labels it had."""
    f = X @ X.T @ clf.dual_coef_ + clf.intercept_
    labels = np.where(y > 0, np.where(f > 0, 1.0, -1.0), -1.0)
    resolved = True
    for b in np.unique(bags[y > 0]):
        idx = np.flatnonzero(bags == b)
        labels[idx[np.argmax(f[idx])]] = 1.0
        fb = np.sort(f[idx])
        resolved &= bool(np.all(np.abs(fb) > 1e-3) and (len(fb) == 1 or fb[-1] > 0 or fb[-1] - fb[-2] > 1e-3))
    return labels, resolved


def assert_support_mean_fixed_point(clf: miSVM, X: np.ndarray, labels: np.ndarray) -> None:
    """The SVM is the C-SVC on ``labels`` (its own relabelling) with its bias replaced by their support-vector
    mean."""
    svc = SVC(kernel="linear", C=clf.C).fit(X, labels)
    coef = np.zeros(len(X))
    coef[svc.support_] = svc.dual_coef_[0]
    g = X @ X.T @ clf.dual_coef_
    scale = max(1.0, np.abs(g + clf.intercept_).max())
    assert np.allclose(X @ X.T @ coef, g, atol=1e-6 * scale)
    assert clf.intercept_ == pytest.approx(support_mean(X @ X.T, labels, coef), abs=1e-6 * scale)


@settings(max_examples=30, deadline=None)
@given(bag_problems())
def test_mi_svm_relabels_under_the_support_mean(problem):
    """mi-SVM with the support-mean bias ends at a fixed point of its own relabelling: its labels are sign(f) with
    f under that bias."""
    X, y, bags, C = problem
    clf = miSVM(kernels=LINEAR, C=C, intercept="support_mean").fit(X, y, bags)
    labels, resolved = relabelled(clf, X, y, bags)
    assume(resolved)
    assert_support_mean_fixed_point(clf, X, labels)


@pytest.mark.parametrize("seed", [1, 4])
def test_mi_svm_support_mean_shapes_the_labels(seed):
    """On bags where the two rules relabel differently, the support-mean fit is a fixed point of its own
    relabelling, not of the optimal rule's: the rule acts inside the loop, not only on the final SVM."""
    X, y, bags = drawn_bags(n_bags=16, seed=seed)
    X = StandardScaler().fit_transform(X)
    sm = miSVM(kernels=LINEAR, C=1.0, intercept="support_mean").fit(X, y, bags)
    labels, resolved = relabelled(sm, X, y, bags)
    assert resolved
    assert_support_mean_fixed_point(sm, X, labels)
    opt_labels, _ = relabelled(miSVM(kernels=LINEAR, C=1.0).fit(X, y, bags), X, y, bags)
    assert np.any(labels != opt_labels)


@pytest.mark.parametrize("cls", [SILSVM, miSVM, MISVM, MIKernelSVM])
def test_intercept_is_validated_and_kept_in_the_params(cls):
    rng = np.random.default_rng(0)
    X, y, bags = rng.normal(size=(8, 2)), np.r_[np.ones(4), -np.ones(4)], np.repeat(np.arange(4), 2)
    with pytest.raises(ValueError, match="intercept must be one of 'optimal', 'support_mean'; got 'mean'"):
        cls(kernels=LINEAR, intercept="mean").fit(X, y, bags)
    assert cls(intercept="support_mean").get_params()["intercept"] == "support_mean"
    assert cls(kernels=LINEAR, intercept="support_mean").fit(X, y, bags).predict(X, bags).shape == (4,)


@settings(max_examples=60, deadline=None)
@given(bag_problems(), st.sampled_from(["optimal", "support_mean"]))
def test_alternations_stop_on_their_criterion(problem, intercept):
    """No cycle within misvm's 50 fits on the drawn bags, ties included (an optimal w of 0 leaves every score of a
    bag equal up to rounding, which a strict argmax would follow round a cycle)."""
    X, y, bags, C = problem
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        for cls in (MISVM, miSVM):
            assert cls(kernels=LINEAR, C=C, intercept=intercept).fit(X, y, bags).n_iter_ < 50
