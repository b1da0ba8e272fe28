"""IOKL for a fixed candidate set: the virtual input-output stack, the group regularizers and the group-sparse
MKL duals IOKL-HM (4.4) and IOKL-SM (4.8), against cvxpy + Clarabel."""

from __future__ import annotations

import math

import cvxpy as cp
import numpy as np
import pytest
from _iokl_testing import iokl_reference as _reference

from multikernel import DenseStack, MKLProblem, create
from multikernel.iokl import IOStack, SimplexRidge

# BCD on the pure l_{2,1} ball converges slowly (as l1-MKL does); the tests check the certified gap instead.
pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def _kernels(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    d2 = ((X[:, None] - X[None]) ** 2).sum(-1)
    return X, np.array([np.exp(-0.5 * d2), X @ X.T / 3.0, 1.0 / (1.0 + d2)])


def _solve(Ks, index, sign, C, theta, solver="bcd", offset=0.0, tol=1e-6):
    stack = IOStack(DenseStack(Ks), index, sign, offset=offset)
    reg = create("regularizer", "group_l21" if theta is None else "group_box_l21", group_size=len(Ks),
                 **({} if theta is None else {"theta": theta}))
    problem = MKLProblem(stack=stack, y=None, loss=None, inner=SimplexRidge(C), regularizer=reg, tol=tol,
                         max_iter=3000, inner_tol=1e-6)
    return create("solver", solver).solve(problem), stack


@pytest.mark.parametrize(("theta", "solver"), [(None, "bcd"), (None, "projected_gradient"), (0.5, "bcd"),
                                               (0.4, "projected_gradient"), (1.0 / 3.0, "bcd"), (2.0, "bcd")])
def test_output_ambiguity_matches_cvxpy(theta, solver):
    n, T = 12, 3
    _, Ks = _kernels(n)
    rng = np.random.default_rng(1)
    Y = rng.choice([-1.0, 1.0], size=(T, n))
    C = np.where(np.arange(n) < 4, 10.0, 1.0)  # labelled and unlabelled costs differ, as in SSL
    res, _ = _solve(Ks, np.tile(np.arange(n), (T, 1)), Y, C, theta, solver)
    assert res.dual_gap <= 1e-5
    ref = _reference([[K * np.outer(y, y) for K in Ks] for y in Y], C, theta)
    assert res.objective == pytest.approx(ref, rel=2e-5)


def test_input_ambiguity_matches_cvxpy():
    # 3 positive bags of 3 instances (units 0-2) and 4 negative instances (units 3-6); 3 key-instance choices.
    N = 13
    _, Ks = _kernels(N, seed=3)
    neg = np.arange(9, 13)
    index = np.array([np.r_[[0, 3, 6], neg], np.r_[[1, 4, 8], neg], np.r_[[2, 5, 7], neg]])
    y = np.r_[np.ones(3), -np.ones(4)]
    sign = np.tile(y, (3, 1))
    C = np.full(7, 5.0)
    for theta in (None, 0.5):
        res, stack = _solve(Ks, index, sign, C, theta, offset=1.0)
        ref = _reference([[(K + 1.0)[np.ix_(i, i)] * np.outer(y, y) for K in Ks] for i in index], C, theta)
        assert res.dual_gap <= 1e-5
        assert res.objective == pytest.approx(ref, rel=2e-5)


def test_virtual_stack_equals_explicit_kernels():
    n, T = 10, 4
    _, Ks = _kernels(n)
    rng = np.random.default_rng(2)
    index = rng.integers(0, n, size=(T, 7))
    sign = rng.choice([-1.0, 1.0], size=(T, 7))
    for idx in (index, np.tile(np.arange(n), (T, 1))):
        sg = sign if idx.shape[1] == 7 else rng.choice([-1.0, 1.0], size=(T, n))
        stack = IOStack(DenseStack(Ks), idx, sg, offset=0.5)
        explicit = np.array([(Ks[m] + 0.5)[np.ix_(idx[t], idx[t])] * np.outer(sg[t], sg[t])
                             for t in range(T) for m in range(len(Ks))])
        w = rng.random(stack.n_kernels) * (rng.random(stack.n_kernels) < 0.6)
        v = rng.normal(size=stack.n_rows)
        np.testing.assert_allclose(stack.combine(w), np.tensordot(w, explicit, 1), atol=1e-12)
        np.testing.assert_allclose(stack.quad_forms(v), np.einsum("i,kij,j->k", v, explicit, v), rtol=1e-10)
        np.testing.assert_allclose(stack.quad_forms(v, [5, 1]), np.einsum("i,kij,j->k", v, explicit[[5, 1]], v))
        np.testing.assert_allclose(stack.diag(), np.einsum("kii->ki", explicit))
        for k in range(stack.n_kernels):  # property 10: every input-output kernel is PSD
            assert np.allclose(stack.kernel(k), explicit[k])
            assert np.linalg.eigvalsh(explicit[k]).min() >= -1e-9


def test_one_candidate_is_the_square_hinge_svm():
    """T = 1, M = 1: the dual value equals min 1/2||w||^2 + C/2 sum xi^2 - rho s.t. y_i w'x_i >= rho - xi_i."""
    n = 15
    X, _ = _kernels(n, seed=5)
    y = np.where(X[:, 0] + 0.3 * X[:, 1] > 0, 1.0, -1.0)
    C = 3.0
    res, _ = _solve(np.array([X @ X.T]), np.arange(n)[None], y[None], np.full(n, C), None)
    w, rho, xi = cp.Variable(3), cp.Variable(), cp.Variable(n)
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) + C / 2 * cp.sum_squares(xi) - rho),
                      [cp.multiply(y, X @ w) >= rho - xi])
    prob.solve(solver=cp.CLARABEL)
    assert res.objective == pytest.approx(prob.value, rel=1e-5)
    np.testing.assert_allclose(res.weights, [1.0])


def test_theta_limits():
    n, T = 12, 3
    _, Ks = _kernels(n, seed=4)
    Y = np.random.default_rng(4).choice([-1.0, 1.0], size=(T, n))
    idx, C = np.tile(np.arange(n), (T, 1)), np.full(n, 2.0)
    hard, _ = _solve(Ks, idx, Y, C, None)
    values = []
    for theta in (1.0 / T, 0.4, 0.6, 1.0, 5.0):
        res, _ = _solve(Ks, idx, Y, C, theta)
        values.append(res.objective)
        norms = np.linalg.norm(res.weights.reshape(T, -1), axis=1)
        assert norms.sum() == pytest.approx(1.0) and np.all(norms <= theta + 1e-9)
        if theta == 1.0 / T:  # property 12: equal group norms
            np.testing.assert_allclose(norms, 1.0 / T)
    # property 11: theta >= 1 is IOKL-HM; the optimum is non-increasing in theta
    assert values[-1] == pytest.approx(hard.objective, rel=1e-5)
    assert values[-2] == pytest.approx(hard.objective, rel=1e-5)
    assert all(b <= a + 1e-6 * abs(a) for a, b in zip(values[:-1], values[1:], strict=True))
    with pytest.raises(ValueError, match="theta=0.2 < 1/T"):
        _solve(Ks, idx, Y, C, 0.2)


def test_group_regularizer_parts_against_cvxpy():
    rng = np.random.default_rng(6)
    M, T, theta = 3, 4, 0.35
    reg = create("regularizer", "group_box_l21", group_size=M, theta=theta)
    for _ in range(5):
        mu, q, g, v = rng.random(M * T), rng.random(M * T) * 3, rng.normal(size=M * T), rng.normal(size=M * T)
        D = cp.Variable((T, M), nonneg=True)
        cons = [cp.sum(cp.norm(D, 2, axis=1)) <= 1, cp.norm(D, 2, axis=1) <= theta]
        # dual_bound: the support function of the domain
        lp = cp.Problem(cp.Maximize(cp.sum(cp.multiply(D, g.reshape(T, M)))), cons)
        lp.solve(solver=cp.CLARABEL)
        assert reg.dual_bound(g) == pytest.approx(lp.value, rel=1e-6, abs=1e-8)
        # projection
        pr = cp.Problem(cp.Minimize(cp.sum_squares(D - v.reshape(T, M))), cons)
        pr.solve(solver=cp.CLARABEL)
        np.testing.assert_allclose(reg.project(v), D.value.ravel(), atol=2e-5)
        # Proposition 10: the D step (4.14) in closed form
        w2 = (mu**2 * q).reshape(T, M)
        step = cp.Problem(cp.Minimize(0.5 * cp.sum(cp.multiply(w2, cp.inv_pos(D)))), cons)
        step.solve(solver=cp.CLARABEL)
        d = reg.closed_form_update(mu, q)
        norms = np.linalg.norm(d.reshape(T, M), axis=1)
        assert norms.sum() == pytest.approx(1.0) and np.all(norms <= theta + 1e-12)
        assert 0.5 * np.sum(w2 / d.reshape(T, M)) == pytest.approx(step.value, rel=1e-5)


def test_group_regularizer_bad_parameters():
    with pytest.raises(ValueError, match="do not form groups"):
        create("regularizer", "group_l21", group_size=3).check(7)
    with pytest.raises(ValueError, match="positive integer"):
        create("regularizer", "group_l21", group_size=0).check(3)
    with pytest.raises(ValueError, match="positive number"):
        create("regularizer", "group_box_l21", theta=-1.0).check(3)
    assert create("regularizer", "group_l21", group_size=2).theta == math.inf


def test_per_kernel_candidates_and_shared_units():
    """Groups with one candidate per input kernel (Algorithm 3), and units shared by all candidates at the end."""
    N, T, M = 10, 3, 3
    _, Ks = _kernels(N, seed=7)
    rng = np.random.default_rng(7)
    shared = np.array([7, 8, 9])
    index = np.concatenate([rng.integers(0, 7, size=(T, M, 4)), np.broadcast_to(shared, (T, M, 3))], axis=2)
    sign = np.concatenate([rng.choice([-1.0, 1.0], size=(T, M, 4)), -np.ones((T, M, 3))], axis=2)
    stack = IOStack(DenseStack(Ks), index, sign, offset=0.3)
    explicit = np.array([(Ks[m] + 0.3)[np.ix_(index[t, m], index[t, m])] * np.outer(sign[t, m], sign[t, m])
                         for t in range(T) for m in range(M)])
    w = rng.random(stack.n_kernels)
    v = rng.random(7)
    np.testing.assert_allclose(stack.combine(w), np.tensordot(w, explicit, 1), atol=1e-12)
    np.testing.assert_allclose(stack.quad_forms(v), np.einsum("i,kij,j->k", v, explicit, v), rtol=1e-10)
    bigger = stack.with_group(index[0], sign[0])
    assert bigger.n_candidates == T + 1 and np.allclose(bigger.kernel(T * M + 2), explicit[2])
