"""The level method's warm subproblems: the model LP kept in one HiGHS model across cuts
(``MasterLP``) against a cold ``scipy.optimize.linprog``, the Newton projection against cvxpy + Clarabel, and
the whole method against cvxpy and SimpleMKL on problems with duplicate kernels, unnormalized kernels and C over
six decades."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
from _mkl_testing import random_problem, reference_value, solve_mkl
from scipy.optimize import linprog

from multikernel.plugins._master_lp import MasterLP
from multikernel.plugins.regularizers import BoxSimplex, Simplex
from multikernel.plugins.solvers import LevelMethod, ReducedGradient, _Bundle


def _cold_lp(L: np.ndarray, Q: np.ndarray, cap: float) -> float:
    k, M = Q.shape
    res = linprog(np.r_[np.zeros(M), 1.0], A_ub=np.hstack([-0.5 * Q, -np.ones((k, 1))]), b_ub=-L,
                  A_eq=np.r_[np.ones(M), 0.0][None], b_eq=[1.0], bounds=[(0.0, cap)] * M + [(None, None)],
                  method="highs")
    assert res.status == 0
    return float(res.fun)


@pytest.mark.parametrize("cap", [1.0, 0.1])
def test_warm_model_lp_equals_a_cold_linprog_after_every_cut_and_deletion(cap):
    # Cuts of a random concave function on 30 weights: 150 cuts added one by one, every 10th step 5 rows
    # deleted; after each change the warm LP's value equals linprog's on the kept cuts, and its multipliers
    # form a distribution whose combined cut attains the value (LP duality).
    rng = np.random.default_rng(0)
    M = 30
    lp = MasterLP(M, cap)
    L, Q = np.zeros(0), np.zeros((0, M))
    for step in range(150):
        q = rng.uniform(0.5, 2.0, size=M) * rng.uniform(0.2, 1.0)
        Lj = float(rng.uniform(1.0, 3.0))
        lp.add_cut(Lj, q)
        L, Q = np.append(L, Lj), np.vstack([Q, q])
        if step % 10 == 9:
            drop = rng.choice(len(L), size=5, replace=False)
            lp.delete_cuts(np.sort(drop))
            keep = np.ones(len(L), dtype=bool)
            keep[drop] = False
            L, Q = L[keep], Q[keep]
        value, duals, mu = lp.solve()
        assert lp.n_cuts == len(L)
        assert value == pytest.approx(_cold_lp(L, Q, cap), rel=1e-9, abs=1e-9)
        lam = np.maximum(-duals, 0.0)
        assert lam.sum() == pytest.approx(1.0, rel=1e-9)
        assert np.all(mu >= -1e-12) and np.all(mu <= cap + 1e-12) and mu.sum() == pytest.approx(1.0)
        assert np.max(L - 0.5 * Q @ mu) == pytest.approx(value, rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("reg", [Simplex(), BoxSimplex(theta=0.1)], ids=lambda r: r.name)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_newton_projection_equals_clarabel_with_many_and_duplicate_cuts(reg, seed):
    rng = np.random.default_rng(seed)
    M, k = 40, 60
    cap = reg.cap(M) if isinstance(reg, BoxSimplex) else 1.0
    bundle = _Bundle(max_cuts=500)
    for _ in range(k):
        q = rng.uniform(0.5, 2.0, size=M)
        L = float(rng.uniform(5.0, 8.0))
        bundle.add(L, q, rng.uniform(size=3), rng.uniform(size=3))
        if rng.uniform() < 0.2:  # a duplicate cut (duplicate kernels give parallel rows)
            bundle.add(L, q, rng.uniform(size=3), rng.uniform(size=3))
    low, _, _ = bundle.model_minimum(cap)
    center = reg.project(rng.uniform(size=M))
    for frac in (0.2, 0.6):
        level = low + frac * (float(np.max(bundle.L - 0.5 * bundle.Q @ center)) - low)
        got = bundle.project(center, level, reg.project, None)
        x = cp.Variable(M)
        cons = [x >= 0, x <= cap, cp.sum(x) == 1, bundle.L - 0.5 * bundle.Q @ x <= level]
        cp.Problem(cp.Minimize(cp.sum_squares(x - center)), cons).solve(solver=cp.CLARABEL)
        # feasible, and no farther from the center than Clarabel's point (itself feasible only to ~1e-8): by
        # strong convexity ||got - x*||^2 <= ||got - c||^2 - ||x* - c||^2, so got is the projection
        assert np.max(bundle.L - 0.5 * bundle.Q @ got) <= level + 1e-7
        assert np.all(got >= 0) and np.all(got <= cap + 1e-12) and got.sum() == pytest.approx(1.0)
        assert np.sum((got - center) ** 2) <= np.sum((x.value - center) ** 2) + 1e-8
        np.testing.assert_allclose(got, x.value, atol=1e-5)


@pytest.mark.parametrize("C", [1e-2, 1.0, 1e2, 1e4])
@pytest.mark.parametrize("case", ["duplicates", "unnormalized"])
def test_level_equals_cvxpy_and_simplemkl(C, case):
    Ks, y = random_problem(11, n=25, M=4)
    if case == "duplicates":
        Ks = np.concatenate([Ks, Ks[:2]])  # two kernels twice
    else:
        Ks = Ks * np.array([0.05, 1.0, 7.0, 40.0])[:, None, None]  # traces over three decades
    ref = reference_value(Ks, y, Simplex(), C=C)
    level = solve_mkl(Ks, y, Simplex(), LevelMethod(), C=C, tol=1e-6)
    simplemkl = solve_mkl(Ks, y, Simplex(), ReducedGradient(), C=C, tol=1e-6)
    assert level.converged and level.dual_gap <= 1e-6
    # the certified bounds bracket the independent optimum
    assert level.lower_bound <= ref + 1e-7 * abs(ref)
    assert level.objective >= ref - 1e-7 * abs(ref)
    assert level.objective == pytest.approx(ref, rel=1e-5)
    assert level.objective == pytest.approx(simplemkl.objective, rel=2e-6)
