"""The SMO solver family against independent references (cvxpy + Clarabel, scikit-learn's libsvm)."""

from __future__ import annotations

import sys
import warnings

import cvxpy as cp
import numpy as np
import pytest
from _mkl_testing import make_problem, mkl_problems, scaled
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import SVC

from multikernel.plugins.losses import CSVCLoss, SquareHingeLoss
from multikernel.solve.smo import StackColumns, default_max_iter, solve_qp
from multikernel.solve.svm import InnerQP, solve_inner, svm_problem
from multikernel.stack.storage import check_kernel_matrices

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TOL = 1e-7


def _svm(form, K, y, C=1.0, **kw):
    """Solve an SVM form through the one entry point."""
    return solve_inner(K, svm_problem(form, y, C), **kw)


def _problem(seed: int, n: int, d: int):
    """Linear kernel K = Z Z' of random features (rank d, so rank-deficient when d < n) and labels."""
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n, d))
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    y[0], y[1] = 1.0, -1.0  # both classes
    return rng, Z, Z @ Z.T, y


def _reference(Z, s, D, p, lo, up, y=None, y_sum=None, total=None):
    """min 1/2 ||Z'(s*a)||^2 + 1/2 sum D a^2 + p'a over the same feasible set, by Clarabel."""
    a = cp.Variable(len(p))
    obj = 0.5 * cp.sum_squares(Z.T @ cp.multiply(s, a)) + 0.5 * cp.sum(cp.multiply(D, cp.square(a))) + p @ a
    cons = [a >= lo]
    if np.isfinite(up).any():
        fin = np.isfinite(up)
        cons.append(a[np.flatnonzero(fin)] <= up[fin])
    if y_sum is not None:
        cons.append(y @ a == y_sum)
    if total is not None:
        cons.append(cp.sum(a) == total)
    prob = cp.Problem(cp.Minimize(obj), cons)
    prob.solve(solver=cp.CLARABEL)
    assert prob.status == cp.OPTIMAL
    return prob.value


def _objective(Z, s, D, p, a):
    v = Z.T @ (s * a)
    return 0.5 * v @ v + 0.5 * D @ a**2 + p @ a


def _assert_close(ours, ref):
    assert abs(ours - ref) <= 1e-5 * (1.0 + abs(ref)), (ours, ref)


def _assert_feasible(a, lo, up, y=None, y_sum=None, total=None):
    scale = 1.0 + np.abs(a).sum()
    assert (a >= lo - 1e-12 * scale).all() and (a <= up + 1e-12 * scale).all()
    # equalities to rounding: SMO's pair steps keep them exactly, so any drift is a bug (a polish that
    # left y'alpha = 4e-4, relative 1e-8, would pass a 1e-9 * scale test)
    if y_sum is not None:
        assert abs(y @ a - y_sum) <= 1e-12 * scale
    if total is not None:
        assert abs(a.sum() - total) <= 1e-12 * scale


def _kkt_gap(G, a, lo, up, c):
    """Independent KKT check: max over I_up of -cG minus min over I_low of -cG."""
    F = -c * G
    can_up = np.where(c > 0, a < up, a > lo)
    can_low = np.where(c > 0, a > lo, a < up)
    return max(F[can_up].max(initial=-np.inf) - F[can_low].min(initial=np.inf), 0.0)


# --------------------------------------------------------------------------------------------------
# Every form against cvxpy + Clarabel
# --------------------------------------------------------------------------------------------------
@SETTINGS
@given(seed=st.integers(0, 2**31), n=st.integers(2, 12), d=st.integers(1, 6),
       logC=st.floats(-2, 2), per_sample=st.booleans())
def test_csvc_with_bias_matches_clarabel(seed, n, d, logC, per_sample):
    rng, Z, K, y = _problem(seed, n, d)
    C = 10**logC * (rng.uniform(0.5, 2.0, n) if per_sample else 1.0)
    up = np.broadcast_to(C, (n,)).astype(float)
    res = solve_qp(K, y, p=-1.0, upper=C, y_sum=0.0, tol=TOL)
    ref = _reference(Z, y, np.zeros(n), -np.ones(n), np.zeros(n), up, y=y, y_sum=0.0)
    _assert_close(res.objective, ref)
    _assert_close(_objective(Z, y, np.zeros(n), -np.ones(n), res.alpha), ref)
    _assert_feasible(res.alpha, 0.0, up, y=y, y_sum=0.0)
    assert res.kkt_violation <= TOL
    assert _kkt_gap(y * (K @ (res.alpha * y)) - 1.0, res.alpha, 0.0, up, y) <= 10 * TOL


@SETTINGS
@given(seed=st.integers(0, 2**31), n=st.integers(1, 12), d=st.integers(1, 6), logC=st.floats(-2, 2))
def test_csvc_without_bias_matches_clarabel(seed, n, d, logC):
    rng, Z, K, y = _problem(seed, max(n, 2), d)
    n = len(y)
    C = 10**logC
    sol = _svm("csvc_nobias", K, y, C=C, tol=TOL)
    ref = _reference(Z, y, np.zeros(n), -np.ones(n), np.zeros(n), np.full(n, C))
    _assert_close(-sol.dual_objective, ref)
    _assert_feasible(sol.alpha, 0.0, C)
    assert sol.bias == 0.0
    assert sol.primal_objective >= sol.dual_objective - 1e-9 * (1 + abs(ref))


@SETTINGS
@given(seed=st.integers(0, 2**31), n=st.integers(2, 12), d=st.integers(1, 6), slack=st.floats(1.0, 20.0))
def test_nu_form_matches_clarabel(seed, n, d, slack):
    rng, Z, K, y = _problem(seed, n, d)
    # the smallest C that keeps 1'a = 1, y'a = 0 feasible, times a slack factor
    C = slack * 0.5 / min((y > 0).sum(), (y < 0).sum())
    sol = _svm("nu", K, y, C=C, tol=TOL)
    ref = _reference(Z, y, np.zeros(n), np.zeros(n), np.zeros(n), np.full(n, C), y=y, y_sum=0.0, total=1.0)
    assert abs(-sol.dual_objective - ref) <= 1e-6 * (1 + abs(ref))
    _assert_feasible(sol.alpha, 0.0, C, y=y, y_sum=0.0, total=1.0)
    assert sol.primal_objective >= sol.dual_objective - 1e-9


@SETTINGS
@given(seed=st.integers(0, 2**31), n=st.integers(1, 12), d=st.integers(1, 6), signed=st.booleans(),
       logr=st.floats(-3, 1))
def test_simplex_with_ridge_matches_clarabel(seed, n, d, signed, logr):
    rng, Z, K, y = _problem(seed, max(n, 2), d)
    n = len(y)
    ridge = 10**logr * rng.uniform(0.5, 2.0, n)
    sol = solve_inner(K, InnerQP(y=y if signed else None, signed=signed, ridge=ridge, total=1.0), tol=TOL)
    s = y if signed else np.ones(n)
    ref = _reference(Z, s, ridge, np.zeros(n), np.zeros(n), np.full(n, np.inf), total=1.0)
    _assert_close(-sol.dual_objective, ref)
    _assert_feasible(sol.alpha, 0.0, np.inf, total=1.0)
    assert sol.primal_objective >= sol.dual_objective - 1e-9 * (1 + abs(ref))


@SETTINGS
@given(seed=st.integers(0, 2**31), n=st.integers(2, 12), d=st.integers(1, 6), logC=st.floats(-1, 2))
def test_square_hinge_matches_clarabel(seed, n, d, logC):
    rng, Z, K, y = _problem(seed, n, d)
    C = 10**logC
    sol = _svm("square_hinge", K, y, C=C, tol=TOL)
    ref = _reference(Z, y, np.full(n, 1.0 / C), -np.ones(n), np.zeros(n), np.full(n, np.inf), y=y, y_sum=0.0)
    _assert_close(-sol.dual_objective, ref)
    assert sol.primal_objective >= sol.dual_objective - 1e-9 * (1 + abs(ref))
    assert sol.primal_objective - sol.dual_objective <= 1e-4 * (1 + abs(ref))


def _general(seed, n, d, equality):
    """Random linear term, bounds (some negative, some equal, a few infinite with a ridge), ridge and
    right-hand sides taken from a point of the box."""
    rng, Z, K, y = _problem(seed, n, d)
    p = rng.normal(size=n)
    lo = rng.uniform(-1.0, 0.5, n)
    ridge = rng.uniform(0, 0.5, n) * (rng.random(n) < 0.5)
    up = lo + rng.uniform(0.0, 2.0, n) * (rng.random(n) < 0.9)
    up[(rng.random(n) < 0.2) & (ridge > 0)] = np.inf
    feasible = np.where(np.isinf(up), lo + 1.0, rng.uniform(lo, np.where(np.isinf(up), lo, up)))
    y_sum = float(y @ feasible) if equality in ("y", "both") else None
    total = float(feasible.sum()) if equality in ("ones", "both") else None
    return rng, Z, K, y, dict(p=p, lower=lo, upper=up, ridge=ridge, y_sum=y_sum, total=total)


GENERAL = given(seed=st.integers(0, 2**31), n=st.integers(2, 12), d=st.integers(1, 6),
                equality=st.sampled_from(["none", "y", "ones", "both"]), signed=st.booleans())


@SETTINGS
@GENERAL
def test_general_qp_matches_clarabel(seed, n, d, equality, signed):
    rng, Z, K, y, qp = _general(seed, n, d, equality)
    lo, up, eq = qp["lower"], qp["upper"], dict(y=y, y_sum=qp["y_sum"], total=qp["total"])
    res = solve_qp(K, y, signed=signed, tol=TOL, **qp)
    s = y if signed else np.ones(n)
    ref = _reference(Z, s, qp["ridge"], qp["p"], lo, up, **eq)
    _assert_close(res.objective, ref)
    _assert_feasible(res.alpha, lo, up, **eq)
    assert res.kkt_violation <= TOL
    # a warm start anywhere (infeasible too) is projected and reaches the same optimum
    warm = solve_qp(K, y, signed=signed, tol=TOL, alpha0=rng.normal(size=n) * 3, **qp)
    _assert_close(warm.objective, ref)
    _assert_feasible(warm.alpha, lo, up, **eq)


@SETTINGS
@GENERAL
def test_general_inner_problem_is_certified(seed, n, d, equality, signed):
    """solve_inner on random general data (the form later inner problems use): its dual objective is the
    optimum of Clarabel, and its generic primal bound is above it and closes the gap."""
    rng, Z, K, y, qp = _general(seed, n, d, equality)
    problem = InnerQP(y=y, signed=signed, **qp)
    sol = solve_inner(K, problem, tol=TOL)
    s = y if signed else np.ones(n)
    optimum = -_reference(Z, s, qp["ridge"], qp["p"], qp["lower"], qp["upper"], y=y, y_sum=qp["y_sum"],
                          total=qp["total"])
    _assert_close(sol.dual_objective, optimum)
    assert sol.primal_objective >= optimum - 1e-7 * (1 + abs(optimum))
    assert sol.primal_objective - sol.dual_objective <= 1e-5 * (1 + abs(optimum))
    np.testing.assert_allclose(sol.coef, s * sol.alpha)
    assert sol.dual_objective == pytest.approx(problem.linear_term(sol.alpha) - 0.5 * sol.coef @ K @ sol.coef,
                                               rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("form", ["csvc", "csvc_nobias", "nu", "square_hinge"])
def test_svm_forms_certify_with_their_primal_objective(form):
    """The generic bound of solve_inner is, for each SVM form, that form's primal objective at the returned
    classifier, written here from the kernel independently."""
    K, y = _rbf(50, seed=11)
    C = 0.3 if form == "nu" else 2.0
    sol = _svm(form, K, y, C=C, tol=1e-6)
    f = K @ sol.coef + sol.bias
    q = sol.coef @ K @ sol.coef
    if form == "nu":
        # the margin rho is the one of the solver: the mean of y f over the free variables
        free = (sol.alpha > 1e-12) & (sol.alpha < C - 1e-12)
        rho = float(np.mean(y[free] * f[free]))
        primal = 0.5 * q - rho + C * np.maximum(0, rho - y * f).sum()
        tol = 1e-6
    elif form == "square_hinge":
        primal = 0.5 * q + 0.5 * C * (np.maximum(0, 1 - y * f) ** 2).sum()
        tol = 1e-9
    else:
        primal = 0.5 * q + C * np.maximum(0, 1 - y * f).sum()
        tol = 1e-9
    assert sol.primal_objective == pytest.approx(primal, rel=tol)
    assert sol.bias == 0.0 if form == "csvc_nobias" else sol.bias != 0.0


# --------------------------------------------------------------------------------------------------
# C-SVC against scikit-learn's libsvm
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("C", [0.1, 1.0, 100.0])
@pytest.mark.parametrize("n", [40, 150])
def test_csvc_matches_sklearn(C, n):
    rng = np.random.default_rng(n)
    X = rng.normal(size=(n + 50, 4))
    y = np.where(X[:, 0] + X[:, 1] ** 2 - 1 + 0.3 * rng.normal(size=n + 50) > 0, 1.0, -1.0)
    sq = ((X[:, None] - X[None]) ** 2).sum(-1)
    Kall = np.exp(-sq / 4.0)
    K, Kt, ytr = Kall[:n, :n], Kall[n:, :n], y[:n]
    sol = _svm("csvc", K, ytr, C=C, tol=1e-6)
    svc = SVC(C=C, kernel="precomputed", tol=1e-6).fit(K, ytr)
    a = np.zeros(n)
    a[svc.support_] = np.abs(svc.dual_coef_[0])
    ref_dual = a.sum() - 0.5 * (a * ytr) @ K @ (a * ytr)
    assert abs(sol.dual_objective - ref_dual) <= 1e-5 * (1 + abs(ref_dual))
    assert abs(sol.bias - svc.intercept_[0]) <= 1e-3 * (1 + abs(svc.intercept_[0]))
    for Kx in (K, Kt):
        ours = Kx @ sol.coef + sol.bias
        theirs = svc.decision_function(Kx)
        clear = np.abs(theirs) > 1e-3
        assert np.array_equal(np.sign(ours[clear]), np.sign(theirs[clear]))
    assert sol.primal_objective >= sol.dual_objective - 1e-9


# --------------------------------------------------------------------------------------------------
# Degenerate cases
# --------------------------------------------------------------------------------------------------
def _rbf(n, seed=0, d=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    K = np.exp(-((X[:, None] - X[None]) ** 2).sum(-1) / d)
    return K, y


@pytest.mark.parametrize("form", ["csvc", "nu", "square_hinge"])
def test_single_class_is_an_error(form):
    K, _ = _rbf(10)
    with pytest.raises(ValueError, match="one class"):
        _svm(form, K, np.ones(10))


def test_unknown_form_and_bad_C_are_errors():
    K, y = _rbf(10)
    with pytest.raises(ValueError, match="unknown SVM form 'hinge'.*csvc"):
        svm_problem("hinge", y, 1.0)
    for C in (0.0, -1.0, np.inf, np.ones(3)):
        with pytest.raises(ValueError, match="C must be a positive"):
            svm_problem("csvc", y, C)
    # every real number type is a valid C
    for C in (np.float32(2.0), np.int64(2), 2):
        assert svm_problem("csvc", y, C).upper == 2.0


def test_single_class_without_bias_is_solved():
    K, _ = _rbf(10)
    sol = _svm("csvc_nobias", K, np.ones(10), C=1.0, tol=1e-8)
    assert (sol.alpha > 0).any()
    assert abs(sol.primal_objective - sol.dual_objective) <= 1e-5


def test_duplicate_points():
    K, y = _rbf(30)
    idx = np.r_[np.arange(30), np.arange(10)]
    Kd, yd = K[np.ix_(idx, idx)], y[idx]
    sol = _svm("csvc", Kd, yd, C=1.0, tol=1e-7)
    ref = _svm("csvc", K, y, C=1.0, tol=1e-7)
    assert sol.primal_objective - sol.dual_objective <= 1e-4 * (1 + abs(sol.dual_objective))
    # duplicating points is duplicating their loss terms: not the same problem, but bounded by it
    assert sol.dual_objective >= ref.dual_objective - 1e-6


def test_rank_one_and_zero_kernels():
    n, C = 12, 0.7
    y = np.array([1.0, -1.0] * 6)
    v = np.linspace(-1, 1, n)
    sol = _svm("csvc", np.outer(v, v), y, C=C, tol=1e-8)
    assert sol.primal_objective - sol.dual_objective <= 1e-5
    zero = _svm("csvc", np.zeros((n, n)), y, C=C, tol=1e-8)
    # with a zero kernel the dual is linear: sum(alpha) is maximal under y'alpha = 0
    assert zero.dual_objective == pytest.approx(2 * C * 6)


def test_non_psd_kernel_terminates_and_warns():
    rng = np.random.default_rng(1)
    A = rng.normal(size=(20, 20))
    K = (A + A.T) / 2
    y = np.where(rng.random(20) < 0.5, 1.0, -1.0)
    y[:2] = [1, -1]
    with pytest.warns(RuntimeWarning, match="positive semi-definite"):
        sol = _svm("csvc", K, y, C=1.0)
    assert np.isfinite(sol.dual_objective) and (sol.alpha >= 0).all() and (sol.alpha <= 1.0).all()


@pytest.mark.parametrize("C", [1e-8, 1e8])
def test_extreme_C(C):
    K, y = _rbf(40)
    sol = _svm("csvc", K, y, C=C, tol=1e-6)
    svc = SVC(C=C, kernel="precomputed", tol=1e-6).fit(K, y)
    a = np.zeros(len(y))
    a[svc.support_] = np.abs(svc.dual_coef_[0])
    ref = a.sum() - 0.5 * (a * y) @ K @ (a * y)
    assert abs(sol.dual_objective - ref) <= 1e-4 * (1 + abs(ref))


def test_infeasible_settings_raise():
    K, y = _rbf(10)
    with pytest.raises(ValueError, match="infeasible"):
        _svm("nu", K, y, C=1e-3)
    with pytest.raises(ValueError, match="infeasible"):
        solve_qp(K, p=0.0, upper=0.05, total=1.0)
    with pytest.raises(ValueError, match="infeasible"):
        solve_qp(K, y, p=0.0, upper=1.0, y_sum=100.0)


def test_float32_and_fortran_order_give_the_float64_result():
    K, y = _rbf(80)
    ref = _svm("csvc", K, y, C=2.0, tol=1e-6)
    fort = _svm("csvc", np.asfortranarray(K), y, C=2.0, tol=1e-6)
    np.testing.assert_array_equal(fort.alpha, ref.alpha)
    K32 = K.astype(np.float32)
    low = _svm("csvc", K32, y, C=2.0, tol=1e-6)
    low_f = _svm("csvc", np.asfortranarray(K32), y, C=2.0, tol=1e-6)
    np.testing.assert_array_equal(low.alpha, low_f.alpha)
    assert abs(low.dual_objective - ref.dual_objective) <= 1e-5 * abs(ref.dual_objective)


def test_column_provider_with_tiny_cache_matches_dense():
    K1, y = _rbf(60, seed=2)
    K2, _ = _rbf(60, seed=3)
    stack = np.stack([K1, K2])
    w = np.array([0.3, 0.7])
    dense = solve_qp(w[0] * K1 + w[1] * K2, y, p=-1.0, upper=1.0, y_sum=0.0, tol=1e-6)
    lazy = solve_qp(StackColumns(stack, w), y, p=-1.0, upper=1.0, y_sum=0.0, tol=1e-6,
                    cache_size=2 * 60 * 8 / 2**20)
    assert lazy.objective == pytest.approx(dense.objective, rel=1e-10)
    np.testing.assert_allclose(lazy.alpha, dense.alpha, atol=1e-10)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_stack_columns_of_an_array_and_of_a_list_agree(dtype):
    """A 3-D array takes the stack's fused row combination, a list numpy's loop: the same columns."""
    rng = np.random.default_rng(4)
    A = rng.normal(size=(5, 30, 30))
    Ks = np.einsum("mij,mkj->mik", A, A).astype(dtype)
    w = np.array([0.5, 0.0, 1.5, 0.2, 0.0])
    idx = np.array([3, 7, 7, 0, 29])
    fused, looped = np.empty((5, 30)), np.empty((5, 30))
    StackColumns(Ks, w).columns(idx, fused)
    StackColumns(list(Ks), w).columns(idx, looped)
    combined = np.tensordot(w, Ks.astype(np.float64), axes=1)
    np.testing.assert_allclose(fused, combined[idx], rtol=1e-13, atol=1e-12)
    np.testing.assert_allclose(looped, combined[idx], rtol=1e-13, atol=1e-12)
    np.testing.assert_allclose(StackColumns(Ks, w).diagonal(), np.diagonal(combined), rtol=1e-13)
    with pytest.raises(ValueError, match="expected 5 weights"):
        StackColumns(Ks, w[:4])


def test_warm_start_same_optimum_fewer_iterations():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 5))
    y = np.where(X[:, 0] * X[:, 1] + 0.2 * rng.normal(size=400) > 0, 1.0, -1.0)
    sq = ((X[:, None] - X[None]) ** 2).sum(-1)
    K1, K2 = np.exp(-sq / 5.0), np.exp(-sq / 10.0)
    first = _svm("csvc", 0.5 * K1 + 0.5 * K2, y, C=10.0, tol=1e-5)
    Kn = 0.52 * K1 + 0.48 * K2  # the kernel drifts a little, as in an MKL outer loop
    cold = _svm("csvc", Kn, y, C=10.0, tol=1e-5)
    warm = _svm("csvc", Kn, y, C=10.0, alpha0=first.alpha, tol=1e-5)
    assert warm.dual_objective == pytest.approx(cold.dual_objective, rel=1e-5)
    assert warm.n_iter < cold.n_iter
    # an infeasible warm start is projected first and still reaches the optimum
    bad = _svm("csvc", Kn, y, C=10.0, alpha0=rng.uniform(-5, 20, 400), tol=1e-5)
    assert bad.dual_objective == pytest.approx(cold.dual_objective, rel=1e-5)


def test_deterministic_and_max_iter_warning():
    K, y = _rbf(100)
    a = solve_qp(K, y, p=-1.0, upper=1.0, y_sum=0.0)
    b = solve_qp(K, y, p=-1.0, upper=1.0, y_sum=0.0)
    np.testing.assert_array_equal(a.alpha, b.alpha)
    with pytest.warns(ConvergenceWarning):
        short = solve_qp(K, y, p=-1.0, upper=1.0, y_sum=0.0, max_iter=3)
    assert not short.converged and short.n_iter == 3


def test_shrinking_does_not_change_the_optimum():
    K, y = _rbf(300, seed=5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        on = solve_qp(K, y, p=-1.0, upper=5.0, y_sum=0.0, tol=1e-6)
        off = solve_qp(K, y, p=-1.0, upper=5.0, y_sum=0.0, tol=1e-6, shrinking=False)
        nob = solve_qp(K, y, p=-1.0, upper=5.0, tol=1e-6)
        nob_off = solve_qp(K, y, p=-1.0, upper=5.0, tol=1e-6, shrinking=False)
        nu = solve_qp(K, y, upper=0.01, y_sum=0.0, total=1.0, tol=1e-8)
        nu_off = solve_qp(K, y, upper=0.01, y_sum=0.0, total=1.0, tol=1e-8, shrinking=False)
        simplex = solve_qp(K, p=-np.diag(K), ridge=0.01, total=1.0, tol=1e-8)
        simplex_off = solve_qp(K, p=-np.diag(K), ridge=0.01, total=1.0, tol=1e-8, shrinking=False)
    assert on.objective == pytest.approx(off.objective, rel=1e-6)
    assert nob.objective == pytest.approx(nob_off.objective, rel=1e-6)
    assert nu.objective == pytest.approx(nu_off.objective, rel=1e-6)
    assert simplex.objective == pytest.approx(simplex_off.objective, rel=1e-6)
    assert max(on.kkt_violation, nob.kkt_violation) <= 1e-6
    assert max(nu.kkt_violation, simplex.kkt_violation) <= 1e-8


# --------------------------------------------------------------------------------------------------
# Termination on kernels that break the assumptions (user defect: fit ran forever)
# --------------------------------------------------------------------------------------------------
def _asymmetric(n=8, seed=0):
    """A kernel far from symmetric, on which SMO cycles (checked: it never converges)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    y[:2] = [1.0, -1.0]
    K = np.exp(-((X[:, None] - X[None]) ** 2).sum(-1))
    return K + 0.5 * rng.normal(size=(n, n)), y


def test_default_iteration_limit_is_libsvms():
    assert default_max_iter(20) == 10_000_000
    assert default_max_iter(10**6) == 100 * 10**6
    K, y = _rbf(10)
    for bad in (0, -2, 2.5, "10"):
        with pytest.raises(ValueError, match="max_iter must be"):
            solve_qp(K, y, p=-1.0, upper=1.0, y_sum=0.0, max_iter=bad)


def test_asymmetric_kernel_stops_at_the_default_limit_with_advice():
    A, y = _asymmetric()
    advice = r"iteration limit \(max_iter=10000000\).*not symmetric.*check_kernel_matrices"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the asymmetric matrix is also indefinite
        with pytest.warns(ConvergenceWarning, match=advice):
            res = solve_qp(A, y, p=-1.0, upper=10.0, y_sum=0.0)
        assert not res.converged and res.n_iter == default_max_iter(len(y))
        with pytest.warns(ConvergenceWarning, match=advice):
            sol = CSVCLoss(C=10.0).solve(A, y)
        assert np.isfinite(sol.dual_objective) and (0 <= sol.alpha).all() and (sol.alpha <= 10.0).all()
        # the check for precomputed kernels symmetrizes it, and the same problem then converges
        with pytest.warns(UserWarning) as record:
            As = check_kernel_matrices(A)
        assert any("not symmetric" in str(w.message) for w in record)
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            assert solve_qp(As, y, p=-1.0, upper=10.0, y_sum=0.0).converged


def test_indefinite_kernel_terminates():
    A, y = _asymmetric(n=20)
    S = (A + A.T) / 2
    assert np.linalg.eigvalsh(S).min() < -1.0
    # bounded variables: the curvature floor keeps every step finite, the solve converges
    with pytest.warns(RuntimeWarning, match="not positive semi-definite"):
        res = solve_qp(S, y, p=-1.0, upper=10.0, y_sum=0.0)
    assert res.converged and res.kkt_violation <= 1e-3
    with pytest.warns(RuntimeWarning, match="not positive semi-definite"):
        sol = CSVCLoss(C=10.0).solve(S, y)
    assert np.isfinite(sol.primal_objective)
    # unbounded variables (the square hinge): the objective has no minimum; the solver says so at once
    with pytest.raises(ValueError, match="unbounded below.*indefinite"):
        solve_qp(S, y, p=-1.0, upper=np.inf, ridge=0.01, y_sum=0.0)
    with pytest.raises(ValueError, match="unbounded below"):
        SquareHingeLoss(C=100.0).solve(S, y)


# --------------------------------------------------------------------------------------------------
# The loss plugins and the outer loop
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["csvc", "csvc_nobias", "nu", "square_hinge"])
def test_loss_plugins_certify_their_solve(name):
    from multikernel.core.registry import get_registry

    loss = get_registry().create("loss", name, C=1.0)
    K, y = _rbf(60, seed=7)
    sol = loss.solve(K, y, tol=1e-6)
    gap = sol.primal_objective - sol.dual_objective
    assert -1e-9 <= gap <= 1e-3 * (1 + abs(sol.dual_objective))
    # the dual objective is L(alpha) - 1/2 coef'K coef, the convention of the outer loops
    expected = loss.linear_term(sol.alpha, y) - 0.5 * sol.coef @ K @ sol.coef
    assert sol.dual_objective == pytest.approx(expected, rel=1e-9, abs=1e-12)
    warm = loss.solve(K, y, alpha0=sol.alpha, tol=1e-6)
    assert warm.n_iter <= 1 and warm.dual_objective == pytest.approx(sol.dual_objective, rel=1e-9)


def test_block_coordinate_descent_runs_on_the_smo_inner_solver():
    from multikernel.core.interfaces import MKLProblem
    from multikernel.core.registry import get_registry
    from multikernel.stack.storage import DenseStack

    reg = get_registry()

    rng = np.random.default_rng(3)
    X = rng.normal(size=(80, 4))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=80) > 0, 1.0, -1.0)
    kernels = [np.exp(-g * ((X[:, None] - X[None]) ** 2).sum(-1)) for g in (0.1, 1.0)] + [X @ X.T]
    problem = MKLProblem(stack=DenseStack(np.stack(kernels)), y=y, loss=reg.create("loss", "csvc", C=1.0),
                         regularizer=reg.create("regularizer", "simplex"), tol=1e-3, max_iter=200,
                         inner_tol=1e-5)
    result = reg.create("solver", "bcd").solve(problem)
    assert result.converged and result.dual_gap <= 1e-3
    assert result.weights.sum() == pytest.approx(1.0)


def test_fortran_input_is_read_in_place_and_threads_agree():
    from concurrent.futures import ThreadPoolExecutor

    from multikernel.solve.smo import as_symmetric_rows

    K, y = _rbf(120, seed=9)
    KF = np.asfortranarray(K)
    assert np.shares_memory(as_symmetric_rows(KF), KF)
    assert as_symmetric_rows(K) is K
    # the solver releases the GIL and keeps its scratch buffers per thread: concurrent solves agree
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda C: _svm("csvc", KF, y, C=C, tol=1e-6), [0.5, 5.0, 0.5, 5.0]))
    np.testing.assert_array_equal(results[0].alpha, results[2].alpha)
    np.testing.assert_array_equal(results[1].alpha, results[3].alpha)
    assert results[0].alpha.max() <= 0.5 < results[1].alpha.max()


@pytest.mark.skipif(sys.platform == "win32", reason="os.kill(SIGINT) ends the process on Windows")
def test_ctrl_c_stops_a_long_solve():
    # tol below any reachable violation: only the interrupt can end this solve before max_iter.
    import os
    import signal
    import threading

    rng = np.random.default_rng(0)
    A = rng.standard_normal((600, 20))
    y = np.where(rng.random(600) < 0.5, -1.0, 1.0)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.2, lambda: os.kill(os.getpid(), signal.SIGINT))
    try:
        timer.start()
        with pytest.raises(KeyboardInterrupt, match="SMO solve interrupted after"):
            solve_qp(A @ A.T, y, p=-1.0, lower=0.0, upper=1e4, y_sum=0.0, tol=1e-300, max_iter=10**9)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)


# The defect found by the drawn hard-structure tests of tests/test_bucak_solvers.py: on a rank-deficient kernel
# (rank 10 of 16) with C = 100 and one positive sample, the pair steps kept the KKT violation at 5.1e-7 for millions
# of steps (the face of free variables has eigenvalues from 5e-8 to 2.3; the gradient was exact), so a tight inner
# tolerance ended at the iteration cap.  The solver now detects the stall and takes a Newton step on that face.
def test_smo_reaches_a_tight_tolerance_on_a_rank_deficient_kernel_at_large_C():
    pr = make_problem(n=16, positives=1, kinds=["linear", "linear", "flat_rbf", "linear", "linear"], copies=[],
                      log10_scales=None, order=[0, 3, 1, 2, 4], C=100.0, seed=0)
    K = pr.Ks.mean(axis=0)
    assert np.linalg.matrix_rank(K, tol=1e-9 * np.linalg.norm(K, 2)) < len(pr.y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        res = solve_qp(K, pr.y, p=-np.ones(len(pr.y)), lower=0.0, upper=pr.C, y_sum=0.0, tol=1e-7,
                       max_iter=1_000_000)
    assert res.converged and res.kkt_violation <= 1e-7
    assert res.stats["polish_steps"] >= 1  # the stall was met and resolved, not avoided by chance


# --------------------------------------------------------------------------------------------------
# The property test that would have caught the stall: drawn hard structures at tight relative tolerances
# --------------------------------------------------------------------------------------------------
@st.composite
def _hard_qps(draw):
    """A drawn QP of one of the three modes on a hard kernel: ``(problem, duplicated points, mode, rtol)``.

    The kernel is the mean of a drawn MKL stack (``_mkl_testing.mkl_problems``: mostly rank-deficient kinds, exact
    copies, kernels unnormalized by 10^[-3, 3], C in [1e-2, 1e4]), with some points duplicated (tied rows, pairs
    of zero curvature).
    """
    pr = draw(mkl_problems(n=(6, 24), kernels=(1, 4)), label="problem")
    dup = draw(st.lists(st.integers(0, len(pr.y) - 1), max_size=4), label="duplicated points")
    mode = draw(st.sampled_from(["bias", "nobias", "nu"]), label="mode")
    rtol = draw(st.sampled_from([1e-7, 1e-9]), label="relative tol")
    return pr, dup, mode, rtol


def _hard_qp_arguments(K, y, C, mode):
    n = len(y)
    if mode == "nu":
        # a feasible total: each class sums to total / 2 <= C * (its size)
        total = C * min((y > 0).sum(), (y < 0).sum())
        return {"p": np.zeros(n), "lower": 0.0, "upper": C, "y_sum": 0.0, "total": total}
    kw = {"p": -np.ones(n), "lower": 0.0, "upper": C}
    if mode == "bias":
        kw["y_sum"] = 0.0
    return kw


def _clarabel_value(Q, kw, y):
    """The optimum of the same QP by cvxpy + Clarabel, and its precision.

    Clarabel solves it in units where the variables and the objective's terms are O(1) (``u = alpha / C``, the
    objective divided by ``scale``): its absolute precision is then about ``1e-9 scale``.
    """
    C = kw["upper"]
    w, V = np.linalg.eigh(Q)
    L = V * np.sqrt(np.clip(w, 0.0, None))
    scale = max(1.0, C * float(np.abs(w).max()))  # objective units: C^2 |Q| / scale and C |p|
    u = cp.Variable(len(y))
    obj = 0.5 * C * C / scale * cp.sum_squares(L.T @ u) + C / scale * (kw["p"] @ u)
    cons = [u >= 0, u <= 1]
    if "y_sum" in kw:
        cons.append(y @ u == 0)
    if "total" in kw:
        cons.append(cp.sum(u) == kw["total"] / C)
    prob = cp.Problem(cp.Minimize(obj), cons)
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-9, tol_gap_rel=1e-9, tol_feas=1e-9)
    assert prob.status == cp.OPTIMAL, prob.status
    return prob.value * scale, 1e-9 * scale


class TestWouldHaveCaughtTheSMOStall:
    """The stall of the SMO on nearly singular faces (rank-deficient, duplicated, unnormalized kernels at large C).

    The old suite solved such problems only at loose tolerances; these draw them at relative KKT tolerances
    1e-7 and 1e-9 (relative to ``max(1, C * max_i K_ii)``, the scale of the gradient's terms) and check what a
    converged solve promises: the optimum (against Clarabel) and a reported KKT violation that is the one of the
    returned alpha, below tol, without reaching the iteration limit.
    """

    @scaled(3.0)
    @given(qp=_hard_qps())
    # the stalls met while fixing it, each of which the old solver took to its iteration limit: the issue's
    # reproduction, a slide along a flat direction of duplicated points (the gap stayed at 2.6 while alpha crept
    # to C), and slow faces of the other two modes
    @example(qp=(make_problem(n=16, positives=1, kinds=["linear", "linear", "flat_rbf", "linear", "linear"],
                              order=[0, 3, 1, 2, 4], C=100.0, seed=0), [], "bias", 1e-9))
    @example(qp=(make_problem(n=23, positives=20, kinds=["linear"], log10_scales=[2.5645435717473593],
                              C=6420.32687338903, seed=63163098), [], "bias", 1e-9))
    @example(qp=(make_problem(n=19, positives=7, kinds=["flat_rbf", "flat_rbf", "low_rank"], C=57.559942453343766,
                              seed=3448368657), [], "nu", 1e-9))
    @example(qp=(make_problem(n=18, positives=10, kinds=["flat_rbf", "low_rank", "low_rank"],
                              log10_scales=[0.10144880164440995, 2.3338839481160782, -0.7994931994342314],
                              C=1125.8879184046416, seed=1860094807), [], "nobias", 1e-9))
    @example(qp=(make_problem(n=38, positives=11, kinds=["linear", "low_rank", "flat_rbf"], copies=[0, 0, 0],
                              log10_scales=[3.0, 0.0, -2.0], C=1e4, seed=5904592), [], "bias", 1e-9))
    def test_reaches_a_tight_relative_tolerance_at_the_optimum(self, qp):
        pr, dup, mode, rtol = qp
        idx = np.r_[np.arange(len(pr.y)), np.asarray(dup, dtype=int)]
        K, y, C = pr.Ks.mean(axis=0)[np.ix_(idx, idx)], pr.y[idx], pr.C
        kw = _hard_qp_arguments(K, y, C, mode)
        tol = rtol * max(1.0, C * float(np.diag(K).max()))
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            res = solve_qp(K, y, tol=tol, max_iter=200_000, **kw)
        assert res.converged and res.kkt_violation <= tol
        _assert_feasible(res.alpha, 0.0, C, y, kw.get("y_sum"), kw.get("total"))
        # the violation of the returned alpha, from a gradient recomputed from scratch
        Q = (y[:, None] * y[None, :]) * K
        G = Q @ res.alpha + kw["p"]
        c = y if mode == "bias" else np.ones(len(y))
        if mode == "nu":
            true = max(_kkt_gap(G[g], res.alpha[g], 0.0, C, c[g]) for g in (y > 0, y < 0))
        elif mode == "bias":
            true = _kkt_gap(G, res.alpha, 0.0, C, c)
        else:
            proj = np.where(res.alpha < C, np.maximum(-G, 0), 0) + np.where(res.alpha > 0, np.maximum(G, 0), 0)
            true = float(proj.max())
        floor = 1e-12 * max(1.0, float(np.abs(Q).sum(axis=1).max()) * C)  # rounding of G's sums
        assert abs(true - res.kkt_violation) <= floor, (true, res.kkt_violation)
        # convexity: f(alpha) - f* <= (gradient less multipliers)'(alpha - alpha*) <= violation ||alpha - alpha*||_1
        ref, precision = _clarabel_value(Q, kw, y)
        slack = 1e-7 * max(1.0, abs(ref)) + 10.0 * precision
        assert ref - slack <= res.objective <= ref + res.kkt_violation * len(y) * C + slack, (res.objective, ref)


def test_polish_keeps_the_equality_on_a_face_of_rounding_level_curvature():
    # A face whose flat directions are eigenvector noise (a rank-1 kernel at scale 10^2.8 beside a linear one
    # at 10^-2.2, C = 1e4): the old polish slid along such a direction of norm 1e-18 by a step of 4e20 and
    # left y'alpha = -1.8e-4; every MKL certificate built on that alpha then sat above the optimum.
    pr = make_problem(n=25, positives=23, kinds=["low_rank", "linear"], copies=[0], log10_scales=[2.83, -2.23],
                      order=[0, 1, 2], C=1e4, seed=78332)
    K, y = pr.Ks.mean(axis=0), pr.y
    res = solve_qp(K, y, p=-np.ones(len(y)), lower=0.0, upper=pr.C, y_sum=0.0, tol=1e-8, max_iter=200_000)
    assert res.converged and res.stats["polish_steps"] >= 1
    _assert_feasible(res.alpha, 0.0, pr.C, y, 0.0)


def test_stall_polish_reads_the_face_from_a_column_provider():
    # the same stall with the kernel served by columns (the polish then reads its face block by block)
    pr = make_problem(n=16, positives=1, kinds=["linear", "linear", "flat_rbf", "linear", "linear"], copies=[],
                      log10_scales=None, order=[0, 3, 1, 2, 4], C=100.0, seed=0)
    kw = {"p": -np.ones(len(pr.y)), "lower": 0.0, "upper": pr.C, "y_sum": 0.0, "tol": 1e-9}
    dense = solve_qp(pr.Ks.mean(axis=0), pr.y, **kw)
    lazy = solve_qp(StackColumns(pr.Ks, np.full(len(pr.Ks), 1.0 / len(pr.Ks))), pr.y, cache_size=1e-3, **kw)
    assert dense.converged and lazy.converged and lazy.stats["polish_steps"] >= 1
    assert lazy.kkt_violation <= 1e-9
    assert lazy.objective == pytest.approx(dense.objective, rel=1e-12)


@pytest.mark.parametrize("mu", [[0.05, 0.19, 0.40, 0.21, 0.0, 0.15], [0.1, 0.3, 0.1, 0.3, 0.1, 0.1]])
def test_polish_walks_across_faces_at_large_C_on_a_triplicated_scaled_kernel(mu):
    # The structure a warm-started sm1mkl walk drew: a linear kernel scaled by 1e3 and three exact copies of it
    # beside a low-rank one and one scaled by 1e-2 (combined: rank 5, eigenvalues 5e-8 ... 9e3), C = 1e4.  SMO
    # crawled from face to face: every polish of one face helped, the next stall came 10^4 steps later, and after
    # 20 polishes the solve ran to max_iter at a violation of 0.1 for tol 1e-4.  The polish now releases, at each
    # face optimum, the bound variable that violates its KKT condition most (an active-set method).
    pr = make_problem(n=38, positives=11, kinds=["linear", "low_rank", "flat_rbf"], copies=[0, 0, 0],
                      log10_scales=[3.0, 0.0, -2.0], seed=5904592)
    K, y, C = np.tensordot(np.asarray(mu), pr.Ks, 1), pr.y, 1e4
    kw = {"p": -np.ones(len(y)), "lower": 0.0, "upper": C, "y_sum": 0.0}
    tol = 1e-11 * C * float(np.diag(K).max())
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        res = solve_qp(K, y, tol=tol, max_iter=1_000_000, **kw)
    assert res.converged and res.kkt_violation <= tol and res.stats["polish_steps"] >= 1
    _assert_feasible(res.alpha, 0.0, C, y, 0.0)
    ref, precision = _clarabel_value((y[:, None] * y[None, :]) * K, kw, y)
    assert abs(res.objective - ref) <= 1e-7 * abs(ref) + 10.0 * precision, (res.objective, ref)
