"""The level method (Xu, Jin, King and Lyu 2008): optimum, certified bounds, warm starts, and its two
subproblems (the cutting-plane LP and the level-set projection) against cvxpy.  What it shares with the other
solvers (interruption, max_iter, warm-started inner solves) is tested in test_solvers.py."""

from __future__ import annotations

import math

import cvxpy as cp
import numpy as np
import pytest
from _mkl_testing import CountingLoss, random_problem, reference_value, solve_mkl

from multikernel.core.interfaces import MKLProblem
from multikernel.core.registry import get_registry
from multikernel.plugins.losses import CSVCNoBiasLoss, NuLoss, SquareHingeLoss
from multikernel.plugins.regularizers import (
    BoxSimplex,
    ElasticNet,
    LpBall,
    Simplex,
    SimplexL2,
    SimplexPower,
)
from multikernel.plugins.solvers import LevelMethod, ProjectedGradient, ReducedGradient, _Bundle, _dual_newton
from multikernel.solve.outer import RESOLVABLE_GAP
from multikernel.stack.storage import DenseStack


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("reg", [Simplex(), BoxSimplex(nu=0.5), BoxSimplex(theta=0.3)], ids=lambda r: r.name)
def test_optimum_equals_the_cvxpy_reference(reg, seed):
    Ks, y = random_problem(seed, n=25, M=5)
    C = (0.3, 1.0, 10.0)[seed]
    ref = reference_value(Ks, y, reg, C=C)
    res = solve_mkl(Ks, y, reg, LevelMethod(), C=C, tol=1e-6)
    assert res.converged and res.dual_gap <= 1e-6
    assert res.lower_bound <= ref + 1e-7 * abs(ref)
    assert res.objective >= ref - 1e-7 * abs(ref)
    assert res.objective == pytest.approx(ref, rel=1e-5)
    assert res.weights.sum() == pytest.approx(1.0) and np.all(res.weights >= 0)
    if isinstance(reg, BoxSimplex):
        assert res.weights.max() <= reg.cap(5) + 1e-12
    assert res.n_iter == len(res.history)


@pytest.mark.parametrize("loss", [CSVCNoBiasLoss(C=1.0), NuLoss(C=0.1), SquareHingeLoss(C=1.0)],
                         ids=lambda loss: loss.name)
def test_every_loss_agrees_with_simplemkl(loss):
    # alpha_bar certifies for every loss: their domains are convex, L concave and coef = alpha * y linear.
    Ks, y = random_problem(7, n=25, M=5)
    results = []
    for solver in (LevelMethod(), ReducedGradient()):
        problem = MKLProblem(stack=DenseStack(Ks), y=y, loss=loss, regularizer=Simplex(), tol=1e-6,
                             inner_tol=1e-9, max_iter=3000)
        res = solver.solve(problem)
        assert res.converged and res.dual_gap <= 1e-6
        results.append(res)
    level, simplemkl = results
    assert level.objective == pytest.approx(simplemkl.objective, rel=2e-6)
    assert level.lower_bound <= simplemkl.objective and simplemkl.lower_bound <= level.objective


def test_fewer_svm_solves_than_simplemkl():
    # The point of the method: every past subgradient is kept, so far fewer SVM solves reach the gap.
    Ks, y = random_problem(5, n=30, M=8)
    solves = {}
    for solver in (LevelMethod(), ReducedGradient()):
        loss = CountingLoss(C=10.0)
        problem = MKLProblem(stack=DenseStack(Ks), y=y, loss=loss, regularizer=Simplex(), tol=1e-4,
                             inner_tol=1e-8, max_iter=1000)
        assert solver.solve(problem).converged
        solves[solver.name] = len(loss.calls)
    assert solves["level"] < solves["reduced_gradient"]


def test_the_aggregated_alpha_certifies_more_than_any_single_cut():
    Ks, y = random_problem(3, n=25, M=6)
    res = solve_mkl(Ks, y, Simplex(), LevelMethod(), C=10.0, tol=1e-5)
    assert res.converged
    # history["lower"] is the bound of each iterate's own alpha; the loop's bound comes from alpha_bar.
    assert res.lower_bound > max(h["lower"] for h in res.history)


def test_warm_start_from_the_solution_stops_at_once():
    # The level method certifies through alpha_bar, not through the returned alpha, so the returned point
    # certifies itself only once it is close to the optimum: the cold solve is run to RESOLVABLE_GAP here.
    # (At tol 1e-9, below what the certificates resolve, the box-simplex solve hovered at 2.3e-9 for 500
    # iterations: 40-200 s.)  At a kink of F the point's own alpha may need one more step to certify.
    Ks, y = random_problem(2, n=25, M=4)
    for reg in (Simplex(), BoxSimplex(nu=0.5)):
        cold = solve_mkl(Ks, y, reg, LevelMethod(), tol=RESOLVABLE_GAP, inner_tol=1e-10)
        assert cold.converged
        warm = solve_mkl(Ks, y, reg, LevelMethod(), tol=1e-4, warm_start=cold)
        assert warm.n_iter <= 2 and 8 * warm.n_iter < cold.n_iter
        assert warm.objective == pytest.approx(cold.objective, rel=1e-4)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("reg", [SimplexL2(theta=0.05), SimplexL2(theta=1.0), SimplexL2(theta=5.0),
                                 SimplexPower(theta=1.0, p=3.0)], ids=lambda r: f"{r.name}-{r.theta:g}")
def test_penalised_simplex_equals_the_reference_and_projected_gradient(reg, seed):
    # The cuts of F = J + Omega add the penalty's tangent to the cut of J (SM2MKL is the `sm2mkl` preset).
    Ks, y = random_problem(seed, n=25, M=5)
    C = (0.3, 1.0, 10.0, 3.0)[seed]
    ref = reference_value(Ks, y, reg, C=C)
    res = solve_mkl(Ks, y, reg, LevelMethod(), C=C, tol=1e-8, inner_tol=1e-10, max_iter=1000)
    assert res.converged and res.dual_gap <= 1e-8
    assert res.lower_bound <= ref + 1e-7 * abs(ref) and res.objective >= ref - 1e-7 * abs(ref)
    assert res.objective == pytest.approx(ref, rel=1e-6)
    assert res.weights.sum() == pytest.approx(1.0) and np.all(res.weights >= 0)
    # The same weights as Algorithm 2: F is strongly convex (modulus 1/theta for SM2MKL), so a gap of 1e-8
    # pins them down.
    pg = solve_mkl(Ks, y, reg, ProjectedGradient(), C=C, tol=1e-8, inner_tol=1e-10, max_iter=5000)
    assert pg.converged
    np.testing.assert_allclose(res.weights, pg.weights, atol=1e-3)
    assert res.n_iter == len(res.history)


@pytest.mark.parametrize("theta", [0.1, 1.0])
def test_penalised_simplex_warm_starts(theta):
    Ks, y = random_problem(5, n=25, M=5)
    reg = SimplexL2(theta=theta)
    cold = solve_mkl(Ks, y, reg, LevelMethod(), tol=1e-9, inner_tol=1e-10)
    warm = solve_mkl(Ks, y, reg, LevelMethod(), tol=1e-4, warm_start=cold)
    assert warm.n_iter == 1 < cold.n_iter
    assert warm.objective == pytest.approx(cold.objective, rel=1e-4)
    # A warm start from a neighbouring theta (the next point of a grid) converges to the new optimum.
    other = SimplexL2(theta=2.0 * theta)
    fresh = solve_mkl(Ks, y, other, LevelMethod(), tol=1e-7)
    moved = solve_mkl(Ks, y, other, LevelMethod(), tol=1e-7, warm_start=cold)
    assert moved.converged and moved.objective == pytest.approx(fresh.objective, rel=1e-6)
    np.testing.assert_allclose(moved.weights, fresh.weights, atol=1e-2)


def test_sm2mkl_preset_uses_the_level_method():
    method = get_registry().get("method", "sm2mkl")
    assert (method.regularizer, method.solver) == ("simplex_l2", "level")


def test_few_cuts_still_converge():
    # Pruning keeps the newest cut and the active ones; the aggregate cut summarises the dropped ones.
    Ks, y = random_problem(6, n=25, M=6)
    ref = reference_value(Ks, y, Simplex(), C=1.0)
    res = solve_mkl(Ks, y, Simplex(), LevelMethod(max_cuts=4), tol=1e-5)
    assert res.converged and res.objective == pytest.approx(ref, rel=1e-4)


@pytest.mark.parametrize("reg", [LpBall(p=2.0), ElasticNet(v=0.5)], ids=lambda r: r.name)
def test_needs_a_polyhedral_domain(reg):
    Ks, y = random_problem(0, n=15, M=3)
    with pytest.raises(ValueError, match="'level' cannot run with regularizer .*lacks: polyhedral"):
        solve_mkl(Ks, y, reg, LevelMethod())


@pytest.mark.parametrize("params", [{"level": 0.0}, {"level": 1.0}, {"max_cuts": 1}])
def test_invalid_parameters(params):
    Ks, y = random_problem(0, n=15, M=3)
    with pytest.raises(ValueError, match="0 < level < 1"):
        solve_mkl(Ks, y, Simplex(), LevelMethod(**params))


def _random_bundle(seed: int, k: int = 6, M: int = 8) -> _Bundle:
    rng = np.random.default_rng(seed)
    bundle = _Bundle(max_cuts=50)
    for _ in range(k):
        q = rng.uniform(1.0, 5.0, size=M)
        bundle.add(float(rng.uniform(5.0, 8.0)), q, rng.uniform(size=3), rng.uniform(size=3))
    return bundle


@pytest.mark.parametrize("cap", [1.0, 0.3])
def test_model_minimum_is_the_lp_optimum_with_its_multipliers(cap):
    bundle = _random_bundle(1)
    value, lam, mu = bundle.model_minimum(cap)
    M = bundle.Q.shape[1]
    x = cp.Variable(M)
    prob = cp.Problem(cp.Minimize(cp.max(bundle.L - 0.5 * bundle.Q @ x)), [x >= 0, x <= cap, cp.sum(x) == 1])
    prob.solve(solver=cp.CLARABEL)
    assert value == pytest.approx(prob.value, rel=1e-7)
    assert mu.sum() == pytest.approx(1.0) and np.all(mu >= -1e-12) and np.all(mu <= cap + 1e-12)
    # LP duality: the multipliers are a distribution on the cuts whose combination has the same minimum.
    assert lam.sum() == pytest.approx(1.0) and np.all(lam >= 0)
    g = 0.5 * (lam @ bundle.Q)
    k = int(np.floor(1.0 / cap))
    greedy = np.sort(g)[::-1]
    combined_max = cap * greedy[:k].sum() + (1.0 - k * cap) * (greedy[k] if k < M else 0.0)
    assert lam @ bundle.L - combined_max == pytest.approx(value, rel=1e-7)


@pytest.mark.parametrize("reg", [Simplex(), BoxSimplex(theta=0.25)], ids=lambda r: r.name)
def test_level_set_projection_equals_the_qp_solution(reg):
    bundle = _random_bundle(2)
    M = bundle.Q.shape[1]
    cap = reg.cap(M) if isinstance(reg, BoxSimplex) else 1.0
    low, _, _ = bundle.model_minimum(cap)
    center = reg.project(np.random.default_rng(3).uniform(size=M))
    level = low + 0.3 * (float(np.max(bundle.L - 0.5 * bundle.Q @ center)) - low)
    got = bundle.project(center, level, reg.project, None)
    x = cp.Variable(M)
    cons = [x >= 0, x <= cap, cp.sum(x) == 1, bundle.L - 0.5 * bundle.Q @ x <= level]
    cp.Problem(cp.Minimize(cp.sum_squares(x - center)), cons).solve(solver=cp.CLARABEL)
    np.testing.assert_allclose(got, x.value, atol=1e-6)
    assert np.max(bundle.L - 0.5 * bundle.Q @ got) <= level + 1e-6
    # A center already in the level set is its own projection.
    np.testing.assert_array_equal(bundle.project(got, level + 1.0, reg.project, None), got)


@pytest.mark.parametrize("seed", [0, 3, 7])
def test_projection_reaches_the_nearest_point_with_nearly_parallel_cuts(seed):
    # Late in a solve the cuts are nearly parallel (pima's L1-MKL: 114 cuts over 117 kernels); the dual's
    # Hessian is then nearly singular and the ridge-regularised Newton steps ran far along its null space,
    # each damped by 25-40 halvings, until the ascent stalled at a feasible point up to 3x farther than the
    # projection (found by this construction, checked against Clarabel).  The adaptive ridge reaches it.
    rng = np.random.default_rng(seed)
    M, k = 60, 40
    A = rng.random(M) + 1e-3 * rng.standard_normal((k, M))
    A -= A.mean(axis=1, keepdims=True)
    A /= np.linalg.norm(A, axis=1, keepdims=True)
    project = Simplex().project
    center = project(rng.random(M) * (rng.random(M) < 0.3))
    b = A @ project(rng.random(M)) - 1e-4 * rng.random(k)
    calls = []
    _, mu = _dual_newton(A, b, center, lambda z: calls.append(1) or project(z), math.inf, np.zeros(0))
    x = cp.Variable(M)
    cp.Problem(cp.Minimize(0.5 * cp.sum_squares(x - center)), [x >= 0, cp.sum(x) == 1, A @ x >= b]).solve(
        solver=cp.CLARABEL)
    assert np.max(b - A @ mu) <= 1e-9
    ours, clarabel = 0.5 * np.sum((mu - center) ** 2), 0.5 * np.sum((x.value - center) ** 2)
    assert ours <= clarabel * (1 + 1e-6) and ours == pytest.approx(clarabel, rel=1e-4)  # Clarabel: ~1e-5 rel
    assert len(calls) < 250  # the dual evaluations (a count, not a time): 323-366 before, 138-179 now
