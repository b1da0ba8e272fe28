"""Outer solvers: agreement, warm starts, stopping rules, warnings and interruption."""

from __future__ import annotations

import warnings

import attrs
import numpy as np
import pytest
from _mkl_testing import random_problem, solve_mkl
from sklearn.exceptions import ConvergenceWarning

from multikernel.core.interfaces import MKLProblem
from multikernel.core.registry import get_registry
from multikernel.plugins.losses import CSVCLoss
from multikernel.plugins.regularizers import BoxSimplex, ElasticNet, LpBall, Simplex, SimplexL2, Uniform
from multikernel.plugins.solvers import (
    BlockCoordinateDescent,
    ProjectedGradient,
    ReducedGradient,
    _spectral_step,
)
from multikernel.stack.storage import DenseStack

SOLVERS = [BlockCoordinateDescent(), ProjectedGradient(), ReducedGradient()]


def test_registered_by_name():
    assert {"bcd", "projected_gradient", "reduced_gradient"} <= set(get_registry().names("solver"))
    assert get_registry().create("solver", "projected_gradient", sigma=0.01).sigma == 0.01


@pytest.mark.parametrize("reg", [Simplex(), SimplexL2(theta=0.5)], ids=lambda r: r.name)
def test_solvers_agree_and_certify_their_gap(reg):
    Ks, y = random_problem(11, n=25, M=4)
    results = [solve_mkl(Ks, y, reg, s, C=1.0, tol=1e-5, max_iter=2000) for s in SOLVERS]
    for res in results:
        assert res.converged and res.dual_gap <= 1e-5
        assert res.lower_bound <= res.objective
        assert res.weights.sum() == pytest.approx(1.0) and np.all(res.weights >= 0)
        assert res.n_iter == len(res.history)
    objectives = [r.objective for r in results]
    assert max(objectives) - min(objectives) <= 2e-5 * abs(objectives[0])


def test_warm_start_from_the_solution_stops_at_once():
    Ks, y = random_problem(2, n=25, M=4)
    for solver, reg in [(BlockCoordinateDescent(), BoxSimplex(nu=0.5)), (ProjectedGradient(), SimplexL2()),
                        (ReducedGradient(), Simplex())]:
        cold = solve_mkl(Ks, y, reg, solver, tol=1e-4)
        warm = solve_mkl(Ks, y, reg, solver, tol=1e-4, warm_start=cold)
        assert warm.n_iter <= 2 < cold.n_iter
        assert warm.objective == pytest.approx(cold.objective, rel=1e-4)


def test_warm_start_is_made_feasible_for_the_new_domain():
    Ks, y = random_problem(4, n=20, M=4)
    l1 = solve_mkl(Ks, y, Simplex(), ReducedGradient(), tol=1e-5)
    assert l1.weights.max() > 0.4  # so that a cap of 0.3 cuts it
    for solver in (BlockCoordinateDescent(), ProjectedGradient()):
        res = solve_mkl(Ks, y, BoxSimplex(theta=0.3), solver, tol=1e-5, warm_start=l1)
        assert res.converged and res.weights.max() <= 0.3 + 1e-12
        assert res.weights.sum() == pytest.approx(1.0)
    # BCD revives zero weights of a warm start (its multiplicative step could never move them).
    sparse = attrs.evolve(l1, weights=np.array([1.0, 0.0, 0.0, 0.0]))
    res = solve_mkl(Ks, y, BoxSimplex(theta=0.4), BlockCoordinateDescent(), tol=1e-5, warm_start=sparse)
    assert res.converged and np.count_nonzero(res.weights) >= 3


def test_max_iter_warns_with_the_gap():
    Ks, y = random_problem(1, n=20, M=4)
    with pytest.warns(ConvergenceWarning, match=r"max_iter=2 with a relative duality gap of [0-9.e-]+"):
        res = solve_mkl(Ks, y, Simplex(), BlockCoordinateDescent(), tol=1e-12, max_iter=2)
    assert not res.converged and res.n_iter == 2 and res.dual_gap > 1e-12


def test_stalled_line_search_warns_instead_of_looping():
    Ks, y = random_problem(1, n=20, M=4)
    # A loose inner solver cannot certify 1e-12: the solvers must stop on their own and say why.
    for solver in (ProjectedGradient(), ReducedGradient()):
        with pytest.warns(ConvergenceWarning, match="relative duality gap"):
            res = solve_mkl(Ks, y, Simplex(), solver, tol=1e-12, inner_tol=1e-2, max_iter=40)
        assert not res.converged and np.isfinite(res.dual_gap)


def test_relative_change_rule_stops_early():
    Ks, y = random_problem(6, n=25, M=5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        res = solve_mkl(Ks, y, Simplex(), BlockCoordinateDescent(), tol=1e-3, max_iter=30,
                        stopping="relative_change")
    assert res.converged and res.n_iter <= 30
    objs = [h["objective"] for h in res.history]
    assert abs(objs[-1] - objs[-2]) <= 1e-3 * abs(objs[-2])
    # The rule may stop before the certified gap is small, and the result says so.
    assert res.dual_gap == pytest.approx((res.objective - res.lower_bound) / abs(res.objective))


def test_reduced_gradient_needs_the_simplex():
    Ks, y = random_problem(0, n=15, M=3)
    for reg in (BoxSimplex(nu=0.5), LpBall(p=2), ElasticNet()):
        with pytest.raises(ValueError, match="reduced_gradient needs a regularizer on the simplex"):
            solve_mkl(Ks, y, reg, ReducedGradient())


def test_interrupt_returns_the_best_iterate():
    Ks, y = random_problem(3, n=20, M=4)

    def stop_after_three(entry):
        if entry["iteration"] == 3:
            raise KeyboardInterrupt

    for solver in SOLVERS:
        with pytest.warns(RuntimeWarning, match="interrupted after 3 outer iterations"):
            res = solve_mkl(Ks, y, Simplex(), solver, tol=1e-12, callback=stop_after_three)
        assert not res.converged and res.n_iter == 3
        # The best point seen (line-search trials included) is returned.
        assert res.objective <= min(h["upper"] for h in res.history)


def test_callback_sees_every_iteration():
    Ks, y = random_problem(8, n=20, M=3)
    seen = []
    res = solve_mkl(Ks, y, SimplexL2(theta=1.0), ProjectedGradient(), tol=1e-5, callback=seen.append)
    assert [e["iteration"] for e in seen] == list(range(1, res.n_iter + 1))
    assert {"objective", "upper", "lower", "gap", "n_selected"} <= set(seen[0])
    assert seen[-1]["gap"] <= 1e-5


def test_uniform_needs_one_svm_solve():
    Ks, y = random_problem(9, n=20, M=3)
    calls = []

    class CountingLoss(CSVCLoss):
        def solve(self, K, y, alpha0=None, tol=1e-3):
            calls.append(alpha0)
            return super().solve(K, y, alpha0=alpha0, tol=tol)

    for solver in (BlockCoordinateDescent(), ProjectedGradient()):
        calls.clear()
        problem = MKLProblem(stack=DenseStack(Ks), y=y, loss=CountingLoss(C=1.0), regularizer=Uniform(),
                             inner_tol=1e-8)
        res = solver.solve(problem)
        assert res.converged and len(calls) == 1
        np.testing.assert_array_equal(res.weights, np.full(3, 1.0 / 3))


def test_every_inner_solve_after_the_first_is_warm_started():
    Ks, y = random_problem(10, n=20, M=4)
    calls = []

    class CountingLoss(CSVCLoss):
        def solve(self, K, y, alpha0=None, tol=1e-3):
            calls.append(alpha0)
            return super().solve(K, y, alpha0=alpha0, tol=tol)

    for solver in SOLVERS:
        calls.clear()
        problem = MKLProblem(stack=DenseStack(Ks), y=y, loss=CountingLoss(C=1.0), regularizer=Simplex(),
                             tol=1e-4, inner_tol=1e-8, max_iter=500)
        solver.solve(problem)
        assert calls[0] is None and len(calls) > 2
        assert all(a is not None and a.shape == (20,) for a in calls[1:])


def test_spectral_step_is_bounded():
    s, r = np.array([1.0, -1.0]), np.array([2.0, -2.0])
    assert _spectral_step(s, r, 1.0) == pytest.approx(0.5)
    assert _spectral_step(s, -r, 3.0) == 6.0  # non-positive curvature: grow
    assert _spectral_step(s * 1e-20, r * 1e-40, 1.0) <= 1e10


def test_bcd_certifies_every_few_iterations_without_changing_the_iterates():
    # Many kernels, a small cap: most weights become zero, so the partial quadratic forms are used.
    Ks, y = random_problem(5, n=30, M=40)
    reg = BoxSimplex(theta=0.5)  # exact zeros (the closed form thresholds)
    every = solve_mkl(Ks, y, reg, BlockCoordinateDescent(certify_every=1), C=1.0, tol=1e-6, max_iter=3000)
    sparse = solve_mkl(Ks, y, reg, BlockCoordinateDescent(certify_every=5), C=1.0, tol=1e-6, max_iter=3000)
    assert every.converged and sparse.converged and sparse.dual_gap <= 1e-6
    assert every.n_iter <= sparse.n_iter <= every.n_iter + 4
    # The same iterates (the update never needs the forms of zero weights), so the same optimum.
    np.testing.assert_allclose(sparse.weights, every.weights, atol=1e-6)
    assert np.count_nonzero(sparse.weights) <= 20  # the partial forms are used
    assert sum(np.isinf(h["lower"]) for h in sparse.history) > 0
    with pytest.raises(ValueError, match="certify_every"):
        solve_mkl(Ks, y, reg, BlockCoordinateDescent(certify_every=0), C=1.0)
