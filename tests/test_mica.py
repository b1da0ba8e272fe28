"""MICA (Mangasarian and Wild 2008): the linear programme of a step is the 1-norm SVM's optimum (cvxpy + Clarabel),
the combinations' step is its linear programme's optimum, the alternation does not increase the objective, and
with singleton positive bags MICA is the 1-norm SVM (l1, cvxpy) or scikit-learn's SVC (l2)."""

from __future__ import annotations

import warnings

import cvxpy as cp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import SVC

from multikernel import create
from multikernel.iokl import MICA
from multikernel.iokl.mica import l1_svm_lp
from tests._mil_cccp_testing import fit_linear, l1_svm_optimum, mil_problems, relative, shifted_bags, svm_allowance

FAST = settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _coef(est: MICA, n: int) -> np.ndarray:
    return np.bincount(est.support_rows_, est.dual_coef_, n)


@FAST
@given(p=mil_problems(), data=st.data())
def test_the_linear_programme_is_the_one_norm_svm_of_cvxpy(p, data):
    """The l1 step at drawn convex combinations (units: the negative instances and each positive bag's
    combination) reaches cvxpy's optimum of the 1-norm SVM."""
    K, n = p.K, len(p.y)
    pos = [np.flatnonzero(p.bags == b) for b in np.unique(p.bags[p.y > 0])]
    rows = [K[p.y < 0]]
    for bag in pos:
        v = np.asarray(data.draw(st.lists(st.floats(0.01, 1), min_size=len(bag), max_size=len(bag))))
        rows.append((v / v.sum()) @ K[bag])
    KV = np.vstack(rows)
    labels = np.r_[-np.ones(int(np.sum(p.y < 0))), np.ones(len(pos))]
    u, b = l1_svm_lp(KV, labels, p.C)
    ours = np.abs(u).sum() + p.C * np.maximum(0.0, 1.0 - labels * (KV @ u + b)).sum()
    assert relative(ours, l1_svm_optimum(KV, labels, p.C)) < 1e-6
    assert np.isfinite(u).all() and u.shape == (n,)


@FAST
@given(f=st.lists(st.floats(-3, 3), min_size=1, max_size=6), gamma=st.floats(-2, 2))
def test_the_combinations_step_is_its_linear_programme(f, gamma):
    """For fixed decision values, min over the simplex of h(sum_j v_j f_j - gamma) (cvxpy) is h at the bag's largest
    value: the vertex the alternation takes."""
    f = np.asarray(f)
    v = cp.Variable(len(f))
    prob = cp.Problem(cp.Minimize(cp.pos(1 - (f @ v - gamma))), [v >= 0, cp.sum(v) == 1])
    prob.solve(solver=cp.CLARABEL)
    assert prob.value == pytest.approx(max(0.0, 1.0 - (f.max() - gamma)), abs=1e-7)


@FAST
@given(p=mil_problems(), regularizer=st.sampled_from(["l1", "l2"]))
def test_the_alternation_does_not_increase_the_objective(p, regularizer):
    est = fit_linear(MICA, p, regularizer=regularizer, max_iter=100)
    J = est.objectives_
    n_units = int(np.sum(p.y < 0)) + len(np.unique(p.bags[p.y > 0]))
    for earlier, later in zip(J, J[1:], strict=False):  # the LP is exact; the SVM to its KKT tolerance
        assert later - earlier <= (1e-9 * max(1.0, later) if regularizer == "l1" else
                                   svm_allowance(later, p.C * n_units))
    assert est.objective_ == J.min()
    # the objective is the model's: its penalty plus C times the hinges of the negatives and the bags' maxima
    coef, K = _coef(est, len(p.y)), p.K
    f = K @ coef + est.intercept_
    bag_max = [f[p.bags == b].max() for b in np.unique(p.bags[p.y > 0])]
    margins = np.r_[-f[p.y < 0], bag_max]
    penalty = np.abs(coef).sum() if regularizer == "l1" else 0.5 * coef @ K @ coef
    assert relative(est.objective_, penalty + p.C * np.maximum(0.0, 1.0 - margins).sum()) < 1e-9


@FAST
@given(p=mil_problems(singletons=True))
def test_singleton_positive_bags_are_the_one_norm_svm(p):
    """Every bag one instance: the combinations are fixed, one linear programme is the fit, and its objective is the
    1-norm SVM's on the instances (cvxpy)."""
    est = fit_linear(MICA, p)
    assert est.n_iter_ == 1
    labels = np.where(p.y > 0, 1.0, -1.0)
    assert relative(est.objective_, l1_svm_optimum(p.K, labels, p.C)) < 1e-6


@FAST
@given(p=mil_problems(singletons=True))
def test_singleton_positive_bags_with_l2_are_the_svm(p):
    """Every bag one instance, regularizer l2: scikit-learn's SVC on the instances (same objective; the same
    decision values where the SVM's solution is unique)."""
    est = fit_linear(MICA, p, regularizer="l2")
    assert est.n_iter_ == 1
    labels = np.where(p.y > 0, 1.0, -1.0)
    K = p.K
    ref = SVC(kernel="precomputed", C=p.C, tol=1e-10).fit(K, labels)
    ref_coef = np.bincount(ref.support_, ref.dual_coef_[0], len(labels))
    ref_J = 0.5 * ref_coef @ K @ ref_coef + p.C * np.maximum(0, 1 - labels * ref.decision_function(K)).sum()
    # libsvm's single-precision kernel cache: its own objective is the looser of the two
    assert est.objective_ <= ref_J + svm_allowance(ref_J, p.C * len(labels))


def test_a_capped_fit_warns_with_its_criterion():
    X, y, bags = shifted_bags()
    with pytest.warns(ConvergenceWarning, match="MICA stopped at max_iter=1 .*convex combinations"):
        est = MICA(kernels=[create("kernel", "rbf")], C=1.0, max_iter=1).fit(X, y, bags)
    assert est.n_iter_ == 1


def test_the_l1_model_is_sparse_in_the_training_instances():
    X, y, bags = shifted_bags(30, 2.5, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        l1 = MICA(kernels=[create("kernel", "rbf")], C=1.0).fit(X, y, bags)
        l2 = MICA(kernels=[create("kernel", "rbf")], C=1.0, regularizer="l2").fit(X, y, bags)
    assert len(l1.support_rows_) < len(l2.support_rows_)
    assert l1.score(X, y, bags) >= 0.8


def test_bad_parameters_are_named():
    X = np.random.default_rng(0).normal(size=(6, 2))
    with pytest.raises(ValueError, match="regularizer.*'l1', 'l2'"):
        MICA(regularizer="l3").fit(X, [1, 1, 1, 0, 0, 0], [0, 0, 1, 1, 2, 2])
