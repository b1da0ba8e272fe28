"""sMIL, stMIL and sbMIL (Bunescu and Mooney 2007) against independent references.

sMIL's primal is solved by cvxpy + Clarabel on explicit features (a linear kernel), for problems whose structure
hypothesis draws: bag sizes (singletons included), the class balance, C over five decades, duplicated instances
and features scaled by 10^-2 to 10^2.  Its special case of singleton positive bags is the C-SVC with class
weights (scikit-learn's SVC).  stMIL's concave-convex procedure may only lower stMIL's objective from its sMIL
start; sbMIL with every positive-bag instance labelled positive is the single-instance SVM (SVC again).
"""

from __future__ import annotations

import warnings

import cvxpy as cp
import numpy as np
import pytest
from _mkl_testing import scaled
from hypothesis import given
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import SVC

from multikernel import create
from multikernel.iokl.sparse_mil import sbMIL, sMIL, stMIL


@st.composite
def mil_problems(draw):
    """Bags of explicit features: (X, bag id per instance, label per instance)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    n_pos, n_neg = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    sizes = draw(st.lists(st.integers(1, 5), min_size=n_pos + n_neg, max_size=n_pos + n_neg))
    d = draw(st.integers(1, 4))
    X, bags, y = [], [], []
    for b, size in enumerate(sizes):
        label = 1 if b < n_pos else -1
        Xb = rng.normal(size=(size, d))
        if label > 0:
            Xb[0] += 2.0  # one witness
        X.append(Xb)
        bags += [b] * size
        y += [label] * size
    X, bags, y = np.vstack(X), np.array(bags), np.array(y)
    if draw(st.booleans()):  # a duplicated instance (within its bag or in another bag of the same label)
        i = int(rng.integers(len(X)))
        j = int(rng.choice(np.flatnonzero(y == y[i])))
        X[j] = X[i]
    X = X * 10.0 ** draw(st.integers(-2, 2))
    C = 10.0 ** draw(st.integers(-1, 3))
    return X, bags, y, C


def _groups(X, bags, y):
    neg = np.flatnonzero(y < 0)
    pos = [np.flatnonzero(bags == b) for b in np.unique(bags[y > 0])]
    return neg, pos


def smil_primal(w, b, X, bags, y, C):
    """Bunescu and Mooney's sMIL objective at (w, b), with the optimal slacks."""
    neg, pos = _groups(X, bags, y)
    xi_neg = np.maximum(0.0, 1.0 + X[neg] @ w + b)
    xi_pos = np.array([max(0.0, 2.0 / len(B) - 1.0 - (X[B].mean(axis=0) @ w + b)) for B in pos])
    return 0.5 * w @ w + C * xi_neg.mean() + C * xi_pos.mean()


def smil_reference(X, bags, y, C):
    neg, pos = _groups(X, bags, y)
    w, b = cp.Variable(X.shape[1]), cp.Variable()
    means = np.stack([X[B].mean(axis=0) for B in pos])
    targets = np.array([2.0 / len(B) - 1.0 for B in pos])
    objective = (0.5 * cp.sum_squares(w) + C * cp.sum(cp.pos(1 + X[neg] @ w + b)) / len(neg)
                 + C * cp.sum(cp.pos(targets - means @ w - b)) / len(pos))
    problem = cp.Problem(cp.Minimize(objective))
    problem.solve(solver=cp.CLARABEL)
    return w.value, problem.value


def _weights(model, X):
    """w of a model fitted with the linear kernel: the instance expansion."""
    return X[model.support_rows_].T @ model.dual_coef_


def _linear():
    return [create("kernel", "linear")]


@given(mil_problems())
@scaled(1.5)
def test_smil_is_the_primal_optimum(problem):
    X, bags, y, C = problem
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        model = sMIL(kernels=_linear(), C=C, tol=1e-6).fit(X, y, bags)
    w_ref, p_ref = smil_reference(X, bags, y, C)
    w = _weights(model, X)
    p = smil_primal(w, model.intercept_, X, bags, y, C)
    # the certified gap (1e-6, or a warning where rounding stops it first: tiny objectives of scaled features)
    assert model.dual_gap_ <= 1e-6 or (caught and model.dual_gap_ <= 1e-4)
    # our certificate bounds the optimum from below; Clarabel's value (an upper estimate) may not undercut it, and
    # ours may not exceed Clarabel's by more than the certified gap
    lower = p - model.dual_gap_ * abs(p) - 1e-12
    slack = max(model.dual_gap_, 1e-7) * abs(p) + 1e-9
    assert p_ref >= lower - 1e-9 * max(1.0, abs(p_ref))
    assert p <= p_ref + slack
    # strong convexity in w: 1/2 ||w - w*||^2 <= P(w) - P*, for ours and for Clarabel's
    radius = np.sqrt(2 * (p - lower)) + np.sqrt(2 * max(p_ref - lower, 0.0))
    assert np.linalg.norm(w - w_ref) <= radius + 1e-6 * np.linalg.norm(w_ref) + 1e-9


def test_smil_with_singleton_positive_bags_is_the_class_weighted_svc():
    rng = np.random.default_rng(3)
    X = np.vstack([rng.normal(size=(6, 2)) + 1.0, rng.normal(size=(9, 2)) - 1.0])
    bags = np.r_[np.arange(6), 6, 6, 6, 7, 7, 7, 8, 8, 8]
    y = np.r_[np.ones(6), -np.ones(9)]
    C = 20.0
    model = sMIL(kernels=_linear(), C=C, tol=1e-8).fit(X, y, bags)
    svc = SVC(kernel="linear", C=1.0, class_weight={-1: C / 9, 1: C / 6}, tol=1e-10).fit(X, y)
    np.testing.assert_allclose(_weights(model, X), svc.coef_[0], rtol=1e-4, atol=1e-6)
    # singleton bags score by the SVM's own decision value (the midpoint of sMIL's targets is 0 for |B| = 1)
    Z = rng.normal(size=(5, 2))
    np.testing.assert_allclose(model.decision_function(Z, np.arange(5)), svc.decision_function(Z),
                               rtol=1e-4, atol=1e-5)


def test_smil_bag_score_is_the_mean_against_the_targets_midpoint():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 2))
    bags = np.repeat(np.arange(4), 3)
    y = np.repeat([1, -1, 1, -1], 3)
    model = sMIL(kernels=_linear(), C=10.0).fit(X, y, bags)
    f = X @ _weights(model, X) + model.intercept_
    expected = [f[bags == b].mean() + 1 - 1 / 3 for b in range(4)]
    np.testing.assert_allclose(model.decision_function(X, bags), expected, rtol=1e-12)


def stmil_objective(w, b, X, bags, y, C):
    """stMIL's objective: sMIL's plus C/L_p times the mean of max(0, 1 - |f(x)|) over positive-bag instances."""
    pos_inst = np.flatnonzero(y > 0)
    return smil_primal(w, b, X, bags, y, C) + C * np.maximum(0.0, 1.0 - np.abs(X[pos_inst] @ w + b)).mean()


@given(mil_problems())
@scaled(1.0)
def test_stmil_only_lowers_its_objective_from_the_smil_start(problem):
    X, bags, y, C = problem
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        start = sMIL(kernels=_linear(), C=C, tol=1e-8).fit(X, y, bags)
        model = stMIL(kernels=_linear(), C=C, tol=1e-8).fit(X, y, bags)
    j0 = stmil_objective(_weights(start, X), start.intercept_, X, bags, y, C)
    j = stmil_objective(_weights(model, X), model.intercept_, X, bags, y, C)
    assert j <= j0 + 1e-6 * max(1.0, abs(j0))
    assert 2 <= model.n_iter_ <= 50


def test_stmil_fixed_point_is_the_svm_of_its_own_signs():
    """At convergence the last QP is the SVM whose pos-instance labels are the signs of its own scores: refitting
    that QP by cvxpy gives the same objective."""
    rng = np.random.default_rng(5)
    X = np.vstack([rng.normal(size=(9, 2)) + [1.5, 0], rng.normal(size=(9, 2)) - [1.5, 0]])
    bags = np.repeat(np.arange(6), 3)
    y = np.repeat([1, 1, 1, -1, -1, -1], 3)
    C = 10.0
    model = stMIL(kernels=_linear(), C=C, tol=1e-9).fit(X, y, bags)
    w, b = _weights(model, X), model.intercept_
    pos_inst = np.flatnonzero(y > 0)
    signs = np.where(X[pos_inst] @ w + b >= 0, 1.0, -1.0)
    neg, pos = _groups(X, bags, y)
    wv, bv = cp.Variable(2), cp.Variable()
    means = np.stack([X[B].mean(axis=0) for B in pos])
    obj = (0.5 * cp.sum_squares(wv) + C * cp.sum(cp.pos(1 + X[neg] @ wv + bv)) / len(neg)
           + C * cp.sum(cp.pos(1 - cp.multiply(signs, X[pos_inst] @ wv + bv))) / len(pos_inst)
           + C * cp.sum(cp.pos(2 / 3 - 1 - means @ wv - bv)) / len(pos))
    ref = cp.Problem(cp.Minimize(obj))
    ref.solve(solver=cp.CLARABEL)
    assert stmil_objective(w, b, X, bags, y, C) == pytest.approx(ref.value, rel=1e-5, abs=1e-7)


def test_sbmil_with_every_positive_bag_instance_positive_is_the_single_instance_svm():
    rng = np.random.default_rng(1)
    X = np.vstack([rng.normal(size=(8, 2)) + 1.0, rng.normal(size=(10, 2)) - 1.0])
    bags = np.r_[np.repeat(np.arange(4), 2), np.repeat(np.arange(4, 9), 2)]
    y = np.r_[np.ones(8), -np.ones(10)]
    C = 50.0
    model = sbMIL(kernels=_linear(), C=C, eta=1.0, tol=1e-8).fit(X, y, bags)
    np.testing.assert_array_equal(model.instance_labels_, y)
    svc = SVC(kernel="linear", C=C / len(X), tol=1e-10).fit(X, y)
    np.testing.assert_allclose(_weights(model, X), svc.coef_[0], rtol=1e-4, atol=1e-6)
    best = [max(svc.decision_function(X[bags == b])) for b in range(9)]
    np.testing.assert_allclose(model.decision_function(X, bags), best, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("eta", [0.0, 0.3, 0.6])
def test_sbmil_labels_the_top_eta_fraction_by_the_smil_scores(eta):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(30, 3))
    bags = np.repeat(np.arange(10), 3)
    y = np.repeat([1, -1] * 5, 3)
    model = sbMIL(kernels=_linear(), C=10.0, eta=eta).fit(X, y, bags)
    smil = sMIL(kernels=_linear(), C=10.0).fit(X, y, bags)
    pos_inst = np.flatnonzero(y > 0)
    f = X[pos_inst] @ _weights(smil, X) + smil.intercept_
    n = max(5, round(eta * 15))  # at least one per positive bag on average
    top = pos_inst[np.argsort(-f)[:n]]
    np.testing.assert_array_equal(np.flatnonzero(model.instance_labels_ > 0), np.sort(top))
    assert (model.instance_labels_[y < 0] == -1).all()


def test_parameters_are_checked_with_a_clear_message():
    X = np.random.default_rng(0).normal(size=(6, 2))
    bags, y = np.repeat(np.arange(3), 2), np.repeat([1, 0, 1], 2)
    with pytest.raises(ValueError, match="eta must be a number in"):
        sbMIL(eta=1.5).fit(X, y, bags)
    with pytest.raises(ValueError, match="tol must be a positive"):
        sMIL(tol=0).fit(X, y, bags)
    with pytest.raises(ValueError, match="MIL needs positive and negative bags"):
        stMIL().fit(X, np.ones(6), bags)


def test_stmil_warns_when_the_signs_still_change_at_max_iter():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 2))
    bags = np.repeat(np.arange(10), 4)
    y = np.repeat([1, -1] * 5, 4)
    assert stMIL(kernels=[create("kernel", "rbf")], C=100.0).fit(X, y, bags).n_iter_ == 4  # three CCCP steps
    with pytest.warns(ConvergenceWarning, match="max_iter=3 with the instance labels still changing"):
        stMIL(kernels=[create("kernel", "rbf")], C=100.0, max_iter=3).fit(X, y, bags)


MIL_CONFIG = """
[experiment]
name = "sparse-mil"
output = "out"
repeats = 1
cv_folds = 2

[task]
kind = "mil"
folds = 2

[[datasets]]
name = "bags"
source = "mil.csv"

[[estimators]]
name = "smil"
grid = { C = [10.0, 1000.0] }

[[estimators]]
name = "stmil"
params = { kernels = [{ name = "rbf" }], max_iter = 5 }

[[estimators]]
name = "sbmil"
params = { eta = 0.3 }

[[estimators]]
name = "nsk"
params = { normalization = "averaging" }

[[estimators]]
name = "stk"
"""


def test_every_method_runs_by_name_from_a_config(tmp_path):
    """The five by their registered names in a ``[task] kind = "mil"`` experiment run by the CLI."""
    import json

    from multikernel.cli import main

    rng = np.random.default_rng(0)
    rows = []
    for b in range(16):
        label = 1 if b % 2 == 0 else -1
        Xb = rng.normal(size=(3, 2))
        if label > 0:
            Xb[0] += 4.0
        rows += [f"{b},{x[0]},{x[1]},{label}" for x in Xb]
    (tmp_path / "mil.csv").write_text("bag,x0,x1,label\n" + "\n".join(rows) + "\n")
    (tmp_path / "mil.toml").write_text(MIL_CONFIG)
    assert main(["experiment", str(tmp_path / "mil.toml"), "-q", "--json", str(tmp_path / "s.json")]) == 0
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["errors"] == []
    row = summary["tasks"]["table"]["bags"]["-"]
    assert set(row) == {"smil", "stmil", "sbmil", "nsk", "stk"}
    assert all(0.5 <= r["accuracy"] <= 1.0 for r in row.values())  # one far witness per positive bag: learnable
