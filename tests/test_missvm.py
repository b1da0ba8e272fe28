"""MissSVM (Zhou and Xu 2007): every CCCP step is the C-SVC over its units (checked against cvxpy + Clarabel), the
linearisation is a majorant tight at the current decision values, the objective does not increase, the fit ends
at a fixed point (the SVM of its own linearisation, checked against cvxpy), and with singleton bags the SVM with
the positives' two costs added is a fixed point (checked against scikit-learn's SVC)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import SVC

from multikernel import create
from multikernel.iokl import MissSVM
from multikernel.iokl.estimators import bag_labels
from multikernel.iokl.missvm import _MissProblem
from multikernel.iokl.unit_svm import unit_svm
from tests._mil_cccp_testing import (
    fit_linear,
    mil_problems,
    relative,
    shifted_bags,
    svm_allowance,
    units_svm_objective,
    units_svm_optimum,
)

FAST = settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _problem(p) -> _MissProblem:
    lists, yb = bag_labels(p.y, p.bags, len(p.y))
    return _MissProblem(p.K, lists, np.where(yb > 0, 1.0, -1.0), p.C)


@FAST
@given(p=mil_problems(), first=st.booleans(), data=st.data())
def test_a_cccp_step_is_the_units_svm_of_cvxpy(p, first, data):
    """One step's SVM over units (bag means or witnesses, signed or half-labelled instances) reaches the optimum
    of the primal written in cvxpy."""
    prob = _problem(p)
    if first:
        units = prob.units(None, None)
    else:
        f = np.asarray(data.draw(st.lists(st.floats(-2, 2), min_size=len(p.y), max_size=len(p.y))))
        units = prob.units(*prob.linearise(f))
    coef, b = unit_svm(p.K, *units)
    ours = units_svm_objective(p.K, *units, coef, b)
    optimum = units_svm_optimum(p.K, *units)
    assert abs(ours - optimum) <= svm_allowance(optimum, units[2].sum())


@FAST
@given(p=mil_problems(), data=st.data())
def test_the_linearisation_is_a_majorant_tight_at_its_point(p, data):
    """The convex step's objective at a linearisation equals J at the point linearised and bounds J elsewhere."""
    prob = _problem(p)
    n = len(p.y)
    draw = st.lists(st.floats(-3, 3), min_size=n, max_size=n)
    c0, c1 = (np.asarray(data.draw(draw)) / max(1.0, np.abs(p.K).max()) for _ in range(2))
    b0, b1 = data.draw(st.floats(-2, 2)), data.draw(st.floats(-2, 2))
    f0, f1 = p.K @ c0 + b0, p.K @ c1 + b1
    units = prob.units(*prob.linearise(f0))
    assert relative(units_svm_objective(p.K, *units, c0, b0), prob.objective(c0, f0)) < 1e-9
    assert units_svm_objective(p.K, *units, c1, b1) >= prob.objective(c1, f1) * (1 - 1e-9) - 1e-9
    first = prob.units(None, None)  # the first step's units majorise every linearisation
    assert units_svm_objective(p.K, *first, c1, b1) >= prob.objective(c1, f1) * (1 - 1e-9) - 1e-9


@FAST
@given(p=mil_problems())
def test_the_objective_does_not_increase_and_the_fit_is_a_fixed_point(p):
    """CCCP descent (up to the SVM's tolerance), and the model minimises the convex step at its own linearisation
    (cvxpy's optimum of that step is the model's objective): a fixed point of the procedure."""
    est = fit_linear(MissSVM, p, tol=0.0, max_iter=100)
    J = est.objectives_
    prob = _problem(p)
    bounds_sum = prob.units(None, None)[2].sum()  # every step's units have the same total bound
    assert all(later - earlier <= svm_allowance(later, bounds_sum) for earlier, later in zip(J, J[1:], strict=False))
    coef = np.bincount(est.support_rows_, est.dual_coef_, len(p.y))
    f = p.K @ coef + est.intercept_
    assert relative(est.objective_, prob.objective(coef, f)) < 1e-9
    assert est.objective_ == J.min()
    optimum = units_svm_optimum(p.K, *prob.units(*prob.linearise(f)))
    assert abs(est.objective_ - optimum) <= svm_allowance(optimum, bounds_sum)


def test_with_singleton_bags_the_svm_is_a_fixed_point():
    """Every bag one instance: a positive instance is its own witness, so where the SVM with the positives' two
    costs added (``C_b + C_u``) puts every positive on the positive side, its linearisation's step is that SVM
    (scikit-learn's SVC): a fixed point of the CCCP, at which J is the SVM's objective.  (A fit need not end
    there: J is lower where a positive sits at f = -1, its bag's loss 2 C_b replacing the instance's hinge.)"""
    rng = np.random.default_rng(3)
    for C in (0.1, 0.3, 1.0, 3.0, 10.0):
        n = 24
        X = rng.normal(size=(n, 2))
        y = np.where(np.arange(n) < n // 2, 1, -1)
        X[y > 0] += 3.0
        n_pos, n_neg = int(np.sum(y > 0)), int(np.sum(y < 0))
        weights = np.where(y > 0, 2 * n_neg / n_pos, 1.0)
        ref = SVC(kernel="linear", C=C, tol=1e-8).fit(X, y, sample_weight=weights)
        ref_f = ref.decision_function(X)
        assert (ref_f[y > 0] > 0).all()  # the drawn problem is in the case the statement covers
        K = X @ X.T
        prob = _MissProblem(K, [np.array([i]) for i in range(n)], y.astype(float), C)
        coef, b = unit_svm(K, *prob.units(*prob.linearise(ref_f)))
        np.testing.assert_allclose(K @ coef + b, ref_f, atol=1e-4 * max(1.0, np.abs(ref_f).max()))
        ref_coef = np.bincount(ref.support_, ref.dual_coef_[0], n)
        svm_objective = 0.5 * ref_coef @ K @ ref_coef + C * weights @ np.maximum(0.0, 1.0 - y * ref_f)
        assert relative(prob.objective(ref_coef, ref_f), svm_objective) < 1e-9


def test_a_capped_fit_warns_with_its_criterion_and_keeps_the_best_step():
    X, y, bags = shifted_bags()
    with pytest.warns(ConvergenceWarning, match="MissSVM stopped at max_iter=1 .*linearisation"):
        est = MissSVM(kernels=[create("kernel", "rbf")], C=1.0, max_iter=1).fit(X, y, bags)
    assert est.n_iter_ == 1 and est.objective_ == est.objectives_.min()


def test_bad_parameters_and_inputs_are_named():
    X = np.random.default_rng(0).normal(size=(6, 2))
    with pytest.raises(ValueError, match="tol"):
        MissSVM(tol=-1.0).fit(X, [1, 1, 1, 0, 0, 0], [0, 0, 1, 1, 2, 2])
    with pytest.raises(ValueError, match="constant within each bag"):
        MissSVM().fit(X, [1, 0, 1, 0, 0, 0], [0, 0, 1, 1, 2, 2])
    with pytest.raises(ValueError, match="positive and negative bags"):
        MissSVM().fit(X, [1] * 6, [0, 0, 1, 1, 2, 2])
