"""MKL regression: the epsilon-SVR and kernel ridge inner problems against scikit-learn (fixed weights) and every
MKL preset against cvxpy + Clarabel, on drawn structures (sizes, C and epsilon over decades, target scales,
duplicated, unnormalized and rank-deficient kernels), and the special cases the formulations imply."""

from __future__ import annotations

import attrs
import numpy as np
import pytest
from _mkl_testing import scaled
from _task_testing import TASK_PRESETS, check_against_reference, check_preset, make_task, solve_task, tasks
from hypothesis import given
from hypothesis import strategies as st
from sklearn.kernel_ridge import KernelRidge
from sklearn.svm import SVR

from multikernel import DenseStack, MKLProblem, create
from multikernel.solve.regression import DoubledColumns, doubled, solve_ridge, solve_svr
from multikernel.solve.smo import StackColumns


def _svr_primal(K: np.ndarray, y: np.ndarray, c: np.ndarray, b: float, C: float, epsilon: float) -> float:
    return float(0.5 * c @ K @ c + C * np.maximum(0.0, np.abs(y - K @ c - b) - epsilon).sum())


@scaled(2.0)
@given(task=tasks("epsilon_insensitive", kernels=(1, 1)))
def test_svr_inner_problem_is_scikit_learn_svr(task):
    K, y, C, eps = task.Ks[0], task.y, task.params["C"], task.params["epsilon"]
    ours = solve_svr(K, y, C, eps, tol=1e-9)
    ref = SVR(kernel="precomputed", C=C, epsilon=eps, tol=1e-9, max_iter=10**7).fit(K, y)
    c = np.zeros(len(y))
    c[ref.support_] = ref.dual_coef_[0]
    theirs = _svr_primal(K, y, c, float(ref.intercept_[0]), C, eps)
    scale = max(abs(theirs), 1e-8 * float(y @ y))
    # our primal is the SVR primal at our solution, and both solvers reach the same optimum
    assert ours.primal_objective == pytest.approx(_svr_primal(K, y, ours.coef, ours.bias, C, eps), rel=1e-9, abs=1e-12)
    # libsvm's primal bounds the optimum from above, so it bounds our dual (weak duality across the solvers); ours
    # is certified within 1e-6 and at least as low as libsvm's; libsvm's (a KKT tolerance, no gap) within 1e-3
    assert ours.dual_objective <= theirs + 1e-9 * scale
    assert ours.primal_objective - ours.dual_objective <= 1e-6 * scale
    assert ours.primal_objective <= theirs + 1e-7 * scale
    assert theirs - ours.dual_objective <= 1e-3 * scale
    # the function part is unique (the primal is strictly convex in f), the offset need not be
    f_ours, f_theirs = K @ ours.coef, K @ c
    assert np.abs(f_ours - f_theirs).max() <= 1e-3 * max(np.abs(y).max(), 1e-12)
    assert abs(ours.coef.sum()) <= 1e-9 * max(C, 1.0) * len(y)


@scaled(2.0)
@given(task=tasks("squared", kernels=(1, 1)))
def test_ridge_inner_problem_is_scikit_learn_kernel_ridge(task):
    K, y, C = task.Ks[0], task.y, task.params["C"]
    ours = solve_ridge(K, y, C, fit_intercept=False)
    ref = KernelRidge(alpha=1.0 / C, kernel="precomputed").fit(K, y)
    assert np.allclose(K @ ours.coef, ref.predict(K), rtol=1e-7, atol=1e-9 * np.abs(y).max())
    assert ours.bias == 0.0
    scale = float(y @ y) * C
    assert abs(ours.primal_objective - ours.dual_objective) <= 1e-9 * max(scale, 1.0)


def test_ridge_with_intercept_solves_its_optimality_system():
    task = make_task("squared", {"C": 3.0}, n=20, positives=7, kinds=["rbf", "linear"], seed=3)
    K = task.Ks.sum(0) / 2
    sol = solve_ridge(K, task.y, 3.0)
    # (K + I/C) alpha + b 1 = y and 1'alpha = 0: the least-squares SVM, independently of the Cholesky path
    system = np.block([[K + np.eye(20) / 3.0, np.ones((20, 1))], [np.ones((1, 20)), np.zeros((1, 1))]])
    expected = np.linalg.solve(system, np.append(task.y, 0.0))
    assert np.allclose(sol.coef, expected[:20], atol=1e-10) and sol.bias == pytest.approx(expected[20])


def test_the_doubled_kernel_is_the_same_by_columns_and_dense():
    rng = np.random.default_rng(0)
    Ks = rng.normal(size=(2, 7, 7))
    Ks = Ks @ Ks.transpose(0, 2, 1)
    w = np.array([0.3, 0.7])
    K = np.tensordot(w, Ks, axes=1)
    expected = np.block([[K, K], [K, K]])
    for source in (K, StackColumns(Ks, w)):
        cols = DoubledColumns(source)
        out = np.empty((3, 14))
        cols.columns(np.array([0, 9, 13]), out)
        assert np.allclose(out, expected[[0, 9, 13]]) and np.allclose(cols.diagonal(), np.diag(expected))
    assert np.array_equal(doubled(K), expected)
    # a lazy stack's columns give the same SVR as the dense kernel
    y = rng.normal(size=7)
    a, b = solve_svr(K, y, 2.0, 0.1, tol=1e-10), solve_svr(StackColumns(Ks, w), y, 2.0, 0.1, tol=1e-10)
    assert np.allclose(a.coef, b.coef, atol=1e-8) and a.bias == pytest.approx(b.bias, abs=1e-8)


@pytest.mark.parametrize("loss", ["epsilon_insensitive", "squared"])
@pytest.mark.parametrize("method", TASK_PRESETS)
@scaled(0.3)
@given(data=st.data())
def test_every_preset_reaches_the_regression_optimum(loss, method, data):
    check_preset(data.draw(tasks(loss), label="task"), method)


@pytest.mark.parametrize(("regularizer", "params", "solver"), [
    ("simplex", {}, "level"), ("lp_ball", {"p": 1.5}, "bcd"), ("elastic_net", {"v": 0.5}, "bcd"),
    ("box_simplex", {"nu": 0.5}, "level")])
def test_tight_optimum_of_each_regularizer_family(regularizer, params, solver):
    for loss, loss_params in (("epsilon_insensitive", {"C": 10.0, "epsilon": 0.1}), ("squared", {"C": 10.0})):
        task = make_task(loss, loss_params, n=25, positives=10, kinds=["rbf", "poly", "linear", "flat_rbf"], seed=5)
        reg = create("regularizer", regularizer, **params)
        problem = MKLProblem(stack=DenseStack(task.Ks), y=task.y, loss=task.make_loss(), regularizer=reg,
                             tol=1e-6, inner_tol=1e-8, max_iter=3000)
        res = create("solver", solver).solve(problem)
        assert res.dual_gap <= 1e-6
        check_against_reference(task, reg, res, 1e-6)


@pytest.mark.parametrize("method", ["average", "l1mkl", "lpmkl", "sgmkl", "sm1mkl"])
def test_fixed_weights_are_svr_and_kernel_ridge_on_the_combined_kernel(method):
    """One kernel: every domain of these presets holds the single weight 1 (the average holds 1/M), and the model
    is scikit-learn's on that kernel."""
    task = make_task("epsilon_insensitive", {"C": 5.0, "epsilon": 0.2}, n=30, positives=12, kinds=["rbf"], seed=1)
    K, y = task.Ks[0], task.y
    res, _ = solve_task(task, method, tol=1e-9, inner_tol=1e-10)
    assert res.weights == pytest.approx([1.0])
    svr = SVR(kernel="precomputed", C=5.0, epsilon=0.2, tol=1e-10).fit(K, y)
    assert np.allclose(K @ res.coef + res.bias, svr.predict(K), atol=1e-5 * np.abs(y).max())
    ridge = make_task("squared", {"C": 5.0, "fit_intercept": False}, n=30, positives=12, kinds=["rbf"], seed=1)
    res, _ = solve_task(ridge, method, tol=1e-9)
    assert np.allclose(K @ res.coef, KernelRidge(alpha=0.2, kernel="precomputed").fit(K, y).predict(K), rtol=1e-7)


@pytest.mark.parametrize("method", ["l1mkl", "simplemkl", "mkl_silp"])
def test_a_tube_wider_than_the_targets_gives_the_constant_model(method):
    # epsilon >= (max y - min y)/2: the constant (max + min)/2 is inside the tube, a - a* = 0 is optimal
    task = make_task("epsilon_insensitive", {"C": 10.0, "epsilon": 10.0}, n=20, positives=8, kinds=["rbf", "poly"])
    res, warned = solve_task(task, method)
    assert not warned and res.converged and res.objective == pytest.approx(0.0, abs=1e-12)
    assert np.abs(res.coef).max() == 0.0


@pytest.mark.parametrize("method", ["l1mkl", "lpmkl"])
@scaled(0.5)
@given(task=tasks("epsilon_insensitive", log10_C=(-1.0, 2.0)), s=st.floats(-2.0, 2.0))
def test_scaling_the_targets_scales_the_optimum(method, task, s):
    """``(s y, s epsilon, C)`` is ``(y, epsilon, C / s)`` with ``f`` scaled by ``s``: the optimum times ``s^2``,
    the same weights (an independent consequence of the formulation, no reference solver)."""
    s = 10.0**s
    C, eps = task.params["C"], task.params["epsilon"]
    scaled_task = attrs.evolve(task, params={"C": C, "epsilon": s * eps}, y=s * task.y)
    base = attrs.evolve(task, params={"C": C / s, "epsilon": eps})
    a, _ = solve_task(scaled_task, method, tol=1e-6, inner_tol=1e-7)
    b, _ = solve_task(base, method, tol=1e-6, inner_tol=1e-7)
    assert a.objective == pytest.approx(s**2 * b.objective, rel=1e-5, abs=1e-12 * s**2 * float(task.y @ task.y))


def test_duplicating_a_kernel_leaves_the_l1_optimum():
    one = make_task("epsilon_insensitive", {"C": 3.0, "epsilon": 0.1}, n=20, positives=6, kinds=["rbf", "linear"])
    two = make_task("epsilon_insensitive", {"C": 3.0, "epsilon": 0.1}, n=20, positives=6, kinds=["rbf", "linear"],
                    copies=[0, 0])
    a, _ = solve_task(one, "l1mkl", tol=1e-7, inner_tol=1e-8)
    b, _ = solve_task(two, "l1mkl", tol=1e-7, inner_tol=1e-8)
    assert b.objective == pytest.approx(a.objective, rel=1e-6)
    assert b.weights[[0, 2, 3]].sum() == pytest.approx(a.weights[0], abs=1e-3)


def test_the_dual_has_two_variables_per_sample_and_warm_starts_use_them():
    task = make_task("epsilon_insensitive", {"C": 1.0, "epsilon": 0.1}, n=15, positives=5, kinds=["rbf", "poly"])
    first, _ = solve_task(task, "l1mkl")
    assert first.alpha.shape == (30,) and first.coef.shape == (15,)
    calls = []
    loss = task.make_loss()
    solve = loss.solve
    loss.solve = lambda K, y, alpha0=None, tol=1e-3: calls.append(alpha0) or solve(K, y, alpha0, tol)
    problem = MKLProblem(stack=DenseStack(task.Ks), y=task.y, loss=loss, regularizer=create("regularizer", "simplex"),
                         warm_start=first)
    assert problem.block_shape == (30,)
    res = create("solver", "level").solve(problem)
    assert calls[0] is first.alpha and res.dual_gap <= 1e-3


def test_bad_regression_parameters_are_named():
    task = make_task("epsilon_insensitive", {"C": 1.0, "epsilon": -1.0}, n=10, positives=3, kinds=["rbf"])
    with pytest.raises(ValueError, match="epsilon"):
        solve_task(task, "l1mkl")
    with pytest.raises(ValueError, match="finite"):
        solve_svr(task.Ks[0], np.full(10, np.nan), 1.0, 0.1)
    with pytest.raises(ValueError, match="C must be"):
        solve_ridge(task.Ks[0], task.y, 0.0)
    with pytest.raises(ValueError, match="positive definite"):
        solve_ridge(-np.eye(10) * 5, task.y, 1.0)
