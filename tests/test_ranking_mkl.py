"""MK-MLR (thesis ch. 6) through the fit core's outer solvers: cvxpy optimum, certified gap, spec 9.24."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
from _mkl_testing import cvx_dual_bound

from multikernel import DenseStack, MKLProblem, create
from multikernel.ranking import solve_mlr
from multikernel.ranking.inner import RankingInner


def _kernels(seed: int, n: int, M: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    Ks = []
    for m in range(M):
        if m % 3 == 0:
            d2 = ((X[:, None] - X[None]) ** 2).sum(-1)
            K = np.exp(-(0.3 + m) * d2 / d2.mean())
        elif m % 3 == 1:
            K = X[:, :2] @ X[:, :2].T
        else:
            Z = rng.normal(size=(n, 2))
            K = Z @ Z.T
        Ks.append(K * n / np.trace(K))
    return np.array(Ks)


def _labels(seed: int, n: int, m: int) -> np.ndarray:
    rng = np.random.default_rng(seed + 1)
    Y = np.where(rng.random((n, m)) < 0.4, 1.0, -1.0)
    Y[rng.random((n, m)) < 0.1] = 0.0
    return Y


def _mk_mlr(Ks: np.ndarray, Y: np.ndarray, C: float, regularizer: str, solver: str = "level", tol: float = 1e-6,
            **reg_params):
    problem = MKLProblem(stack=DenseStack(Ks), y=None, loss=None, inner=RankingInner(Y, C),
                         regularizer=create("regularizer", regularizer, **reg_params), tol=tol, inner_tol=1e-8,
                         max_iter=500)
    return create("solver", solver).solve(problem), problem


def _reference(Ks: np.ndarray, Y: np.ndarray, C: float, regularizer) -> float:
    n, m = Y.shape
    S, t = cp.Variable((n, m)), cp.Variable(len(Ks))
    cons = [S >= np.where(Y < 0, -C, 0.0), S <= np.where(Y > 0, C, 0.0), cp.sum(S, axis=1) == 0]
    for k, K in enumerate(Ks):
        w, V = np.linalg.eigh(K)
        keep = w > 1e-12 * w.max()
        cons.append(0.5 * cp.sum_squares((V[:, keep] * np.sqrt(w[keep])).T @ S) <= t[k])
    bound, extra = cvx_dual_bound(regularizer, t, len(Ks))
    problem = cp.Problem(cp.Maximize(cp.sum(cp.multiply(Y, S)) - bound), cons + extra)
    problem.solve(solver=cp.CLARABEL)
    return float(problem.value)


@pytest.mark.parametrize(("regularizer", "solver", "params"), [
    ("simplex", "level", {}), ("simplex", "bcd", {}), ("lp_ball", "bcd", {"p": 2.0}), ("uniform", "bcd", {})])
@pytest.mark.parametrize("seed", [0, 1])
def test_mk_mlr_equals_the_cvxpy_reference(regularizer, solver, params, seed):
    Ks, Y = _kernels(seed, 14, 3), _labels(seed, 14, 4)
    result, problem = _mk_mlr(Ks, Y, 1.0, regularizer, solver, **params)
    assert result.converged and result.dual_gap <= 1e-6
    assert result.coef.shape == (4, 14) and result.alpha.shape == (4, 14)
    assert result.objective == pytest.approx(_reference(Ks, Y, 1.0, problem.regularizer), rel=1e-5)


def test_one_kernel_is_mlr_l1():
    """Spec 9.24: with one kernel MK-MLR is MLR-L1 on that kernel."""
    Ks, Y = _kernels(2, 20, 1), _labels(2, 20, 5)
    result, _ = _mk_mlr(Ks, Y, 2.0, "simplex", tol=1e-7)
    single = solve_mlr(Ks[0], Y, 2.0, tol=1e-9)
    np.testing.assert_allclose(result.weights, [1.0])
    assert result.dual_gap <= 1e-7
    assert result.objective == pytest.approx(single.dual_objective, rel=1e-7)
    np.testing.assert_allclose(result.coef.T, single.coef, atol=1e-6)


def test_uniform_weights_are_the_average_kernel():
    """Spec 9.24: beta frozen at 1/M is MLR-L1 on the average kernel (AVG-MLR)."""
    Ks, Y = _kernels(3, 16, 3), _labels(3, 16, 4)
    result, _ = _mk_mlr(Ks, Y, 1.0, "uniform", "bcd", tol=1e-8)
    average = solve_mlr(Ks.mean(axis=0), Y, 1.0, tol=1e-9)
    assert result.objective == pytest.approx(average.dual_objective, rel=1e-7)


def test_two_complementary_labels_are_binary_l1_mkl_without_bias():
    """Spec 9.24: m = 2 with y_2 = -y_1 is binary L1-MKL without bias, its objective doubled."""
    Ks = _kernels(4, 18, 3)
    y = np.where(np.random.default_rng(4).random(18) < 0.5, 1.0, -1.0)
    ranking, _ = _mk_mlr(Ks, np.column_stack([y, -y]), 1.0, "simplex", tol=1e-8)
    binary = create("solver", "level").solve(MKLProblem(
        stack=DenseStack(Ks), y=y, loss=create("loss", "csvc_nobias", C=1.0),
        regularizer=create("regularizer", "simplex"), tol=1e-8, inner_tol=1e-9, max_iter=500))
    assert ranking.objective == pytest.approx(2.0 * binary.objective, rel=1e-6)
    np.testing.assert_allclose(ranking.weights, binary.weights, atol=1e-3)
