"""Projected gradient and ``bcd`` with ``level_after``: their own steps, then the level method's steps on the cuts
collected along the way (and their aggregate as a certificate) once their steps stall (``bcd``: or crawl) or after
``level_after`` iterations.  The optimum against cvxpy + Clarabel (C from 1e-2 to 1e4, duplicated kernels, a
float32 stack), against the level method and plain projected gradient, and the parameter checks."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _mkl_testing import make_problem, random_problem, reference, solve_mkl
from sklearn.exceptions import ConvergenceWarning

from multikernel.plugins.regularizers import BoxSimplex, ElasticNet, Simplex, SimplexL2
from multikernel.plugins.solvers import BlockCoordinateDescent, CuttingPlanes, LevelMethod, ProjectedGradient
from multikernel.solve.outer import Evaluator, OuterLoop


def _bcd(level_after: object = None) -> BlockCoordinateDescent:
    return BlockCoordinateDescent(level_after=level_after)


#: The solvers with ``level_after``.
SOLVERS = pytest.mark.parametrize("solver", [ProjectedGradient, _bcd], ids=["projected_gradient", "bcd"])

_REGULARIZERS = [SimplexL2(theta=0.1), SimplexL2(theta=10.0), SimplexL2(theta=1e4), Simplex(), BoxSimplex(nu=0.5)]


def _certified_match(res, ref, tol):
    """``res`` is certified to ``tol`` and its bounds bracket the reference optimum (up to its own error)."""
    assert res.converged and res.dual_gap <= tol
    slack = 1e-7 * max(abs(ref.value), 1.0) + ref.error
    assert res.lower_bound <= ref.upper + slack
    assert res.objective >= ref.lower - slack
    assert res.objective == pytest.approx(ref.value, rel=tol + 1e-6)


@SOLVERS
@pytest.mark.parametrize("C", [1e-2, 1.0, 1e2, 1e4])
@pytest.mark.parametrize("reg", _REGULARIZERS, ids=lambda r: f"{r.name}-{getattr(r, 'theta', '')}")
def test_optimum_equals_the_cvxpy_reference(reg, C, solver):
    Ks, y = random_problem(3, n=24, M=5)
    ref = reference(Ks, y, reg, C=C)
    tol = 1e-5
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        res = solve_mkl(Ks, y, reg, solver(level_after=5), C=C, tol=tol, max_iter=2000)
    _certified_match(res, ref, tol)
    assert res.weights.sum() == pytest.approx(1.0) and np.all(res.weights >= 0)


@SOLVERS
@pytest.mark.parametrize("C", [1e-2, 1.0, 1e4])
@pytest.mark.parametrize("reg", [SimplexL2(theta=10.0), Simplex()], ids=lambda r: r.name)
def test_duplicated_kernels(reg, C, solver):
    # Two copies of a kernel make the optimal weights non-unique and F flat along their difference: the gradient
    # steps stall there, and the certificate has to come from the model's aggregate.
    Ks, y = random_problem(11, n=24, M=4)
    Ks = np.concatenate([Ks, Ks[:2]])
    ref = reference(Ks, y, reg, C=C)
    tol = 1e-5
    res = solve_mkl(Ks, y, reg, solver(level_after=10), C=C, tol=tol, max_iter=2000)
    _certified_match(res, ref, tol)


@pytest.mark.parametrize("level_after", [1, 3, 50])
def test_same_optimum_as_the_level_method_and_plain_projected_gradient(level_after):
    Ks, y = random_problem(5, n=30, M=8)
    reg = SimplexL2(theta=100.0)
    tol = 1e-6
    ours = solve_mkl(Ks, y, reg, ProjectedGradient(level_after=level_after), C=10.0, tol=tol, max_iter=3000)
    level = solve_mkl(Ks, y, reg, LevelMethod(), C=10.0, tol=tol, max_iter=3000)
    assert ours.converged and level.converged
    assert ours.objective == pytest.approx(level.objective, rel=2 * tol)
    # each certificate holds the other's value: both bracket the one optimum
    assert ours.lower_bound <= level.objective and level.lower_bound <= ours.objective


def test_a_float32_stack_gives_the_float64_optimum_within_the_gaps():
    Ks, y = random_problem(8, n=30, M=6)
    reg = SimplexL2(theta=10.0)
    tol = 1e-5
    r64 = solve_mkl(Ks, y, reg, ProjectedGradient(level_after=5), C=1.0, tol=tol)
    r32 = solve_mkl(Ks.astype(np.float32), y, reg, ProjectedGradient(level_after=5), C=1.0, tol=tol)
    assert r64.converged and r32.converged
    # the float32 problem is the float64 one with kernels rounded by 2^-24: its optimum moves far less than tol
    assert r32.objective == pytest.approx(r64.objective, rel=2 * tol)
    assert r32.lower_bound <= r64.objective * (1 + 1e-6) and r64.lower_bound <= r32.objective * (1 + 1e-6)


@pytest.fixture
def level_steps(monkeypatch):
    """The outer iterations at which the level method stepped (a spy on ``LevelMethod.step``)."""
    calls = []
    original = LevelMethod.step

    def spy(self, evaluate, it):
        calls.append(evaluate.loop.n_iter)
        return original(self, evaluate, it)

    monkeypatch.setattr(LevelMethod, "step", spy)
    return calls


def test_the_switch_takes_level_steps_after_level_after_iterations(level_steps):
    Ks, y = random_problem(5, n=30, M=8)
    calls = level_steps
    res = solve_mkl(Ks, y, SimplexL2(theta=1e3), ProjectedGradient(level_after=2), C=10.0, tol=1e-7, max_iter=500)
    assert res.converged
    assert calls and min(calls) <= 2  # a level step from the second iteration (or an earlier stall) on
    assert calls == sorted(calls)  # and only level steps after it


def test_without_level_after_the_plain_solver_and_evaluator():
    Ks, y = random_problem(5, n=20, M=4)
    from multikernel.core.interfaces import MKLProblem
    from multikernel.plugins.losses import CSVCLoss
    from multikernel.stack.storage import DenseStack
    problem = MKLProblem(stack=DenseStack(Ks), y=y, loss=CSVCLoss(C=1.0), regularizer=Simplex())
    loop = OuterLoop(problem)
    assert type(ProjectedGradient().evaluator(problem, loop)) is Evaluator
    lazy = ProjectedGradient(level_after=4).evaluator(problem, loop)
    assert isinstance(lazy, CuttingPlanes) and lazy.lazy


@SOLVERS
@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "10"])
def test_bad_level_after(bad, solver):
    Ks, y = random_problem(0, n=12, M=3)
    with pytest.raises(ValueError, match="level_after must be None or a positive integer"):
        solve_mkl(Ks, y, Simplex(), solver(level_after=bad))


@SOLVERS
def test_level_after_needs_a_polyhedral_domain(solver):
    Ks, y = random_problem(0, n=12, M=3)
    name = "projected_gradient" if solver is ProjectedGradient else "bcd"
    with pytest.raises(ValueError, match=f"{name} with level_after needs a polyhedral domain"):
        solve_mkl(Ks, y, ElasticNet(v=0.5), solver(level_after=10))


def test_bcd_switches_when_its_steps_crawl(level_steps):
    """bcd's own steps until one lowers F by less than 1e-3 of the gap, then only level steps (level_after is far).
    Four linear kernels nearly tie at the optimum (the mkl_gl walk of test_mkl_reference): the extrapolated update
    reaches the optimal value, but its alpha certifies little; 110 iterations without the switch."""
    pr = make_problem(n=13, positives=3, kinds=["linear", "linear", "linear", "linear", "low_rank"], copies=[],
                      log10_scales=None, order=[0, 1, 2, 3, 4], C=1.0, seed=0)
    calls = level_steps
    solver = BlockCoordinateDescent(extrapolate=True, level_after=1000)
    res = solve_mkl(pr.Ks, pr.y, Simplex(), solver, C=100.0, tol=1e-3, inner_tol=1e-3, max_iter=300)
    assert res.converged and res.dual_gap <= 1e-3 and res.n_iter < 50
    assert calls and calls == list(range(calls[0], calls[0] + len(calls)))  # only level steps after the switch
    ref = reference(pr.Ks, pr.y, Simplex(), C=100.0)
    _certified_match(res, ref, 1e-3)
