"""Outer solvers: the loop they share (warm starts, stopping rules, stalls, warnings, interruption), their
agreement, and the reduced-gradient defects reproduced on the data that showed them."""

from __future__ import annotations

import math
import warnings

import attrs
import numpy as np
import pytest
from _mkl_testing import (
    CountingLoss,
    cancer_kernels,
    make_problem,
    random_problem,
    reference,
    solve_mkl,
    solve_preset,
)
from sklearn.exceptions import ConvergenceWarning

import multikernel
from multikernel.core.interfaces import InnerSolution, MKLProblem
from multikernel.core.registry import get_registry
from multikernel.errors import FitInterruptedWarning
from multikernel.plugins.losses import CSVCLoss
from multikernel.plugins.regularizers import BoxSimplex, ElasticNet, LpBall, Simplex, SimplexL2, Uniform
from multikernel.plugins.solvers import (
    BlockCoordinateDescent,
    LevelMethod,
    ProjectedGradient,
    ReducedGradient,
    _spectral_step,
)
from multikernel.solve.outer import (
    FLOAT32_INNER_TOL_FLOOR,
    INNER_TOL_FLOOR,
    Iterate,
    OuterLoop,
    Stalled,
    inner_tol_floor,
)
from multikernel.stack.storage import DenseStack

SOLVERS = [BlockCoordinateDescent(), ProjectedGradient(), ReducedGradient(), LevelMethod()]
ids = [s.name for s in SOLVERS]


def test_registered_by_name():
    assert {"bcd", "projected_gradient", "reduced_gradient", "level"} <= set(get_registry().names("solver"))
    assert get_registry().create("solver", "projected_gradient", sigma=0.01).sigma == 0.01
    assert get_registry().create("solver", "level", level=0.5).level == 0.5


@pytest.mark.parametrize("reg", [Simplex(), SimplexL2(theta=0.5)], ids=lambda r: r.name)
def test_solvers_agree_and_certify_their_gap(reg):
    Ks, y = random_problem(11, n=25, M=4)
    results = [solve_mkl(Ks, y, reg, s, C=1.0, tol=1e-5, max_iter=2000) for s in SOLVERS]
    for res in results:
        assert res.converged and res.dual_gap <= 1e-5 and not res.interrupted
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
    ref = reference(Ks, y, BoxSimplex(theta=0.3))
    for solver in (BlockCoordinateDescent(), ProjectedGradient(), LevelMethod()):
        res = solve_mkl(Ks, y, BoxSimplex(theta=0.3), solver, tol=1e-5, warm_start=l1)
        assert res.converged and res.weights.max() <= 0.3 + 1e-12
        assert res.weights.sum() == pytest.approx(1.0) and ref.brackets(res)
    # BCD revives zero weights of a warm start (its multiplicative step could never move them).
    sparse = attrs.evolve(l1, weights=np.array([1.0, 0.0, 0.0, 0.0]))
    res = solve_mkl(Ks, y, BoxSimplex(theta=0.4), BlockCoordinateDescent(), tol=1e-5, warm_start=sparse)
    assert res.converged and np.count_nonzero(res.weights) >= 3


@pytest.mark.parametrize("solver", SOLVERS, ids=ids)
def test_max_iter_warns_with_the_gap(solver):
    Ks, y = random_problem(1, n=20, M=4)
    with pytest.warns(ConvergenceWarning, match=r"max_iter=2 with a relative duality gap of [0-9.e-]+"):
        res = solve_mkl(Ks, y, Simplex(), solver, tol=1e-12, max_iter=2)
    assert not res.converged and res.n_iter == 2 and res.dual_gap > 1e-12


def test_stalled_line_search_warns_instead_of_looping():
    Ks, y = random_problem(1, n=20, M=4)
    # A tolerance no inner solver can certify: the solvers must stop on their own and say why.
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
        with pytest.raises(ValueError, match="'reduced_gradient' cannot run with regularizer .*lacks: simplex"):
            solve_mkl(Ks, y, reg, ReducedGradient())
    for params in ({"sigma": 0.0}, {"max_backtracks": 0}, {"line_search_refinements": -1}):
        with pytest.raises(ValueError, match="sigma|line_search_refinements"):
            solve_mkl(Ks, y, Simplex(), ReducedGradient(**params))


# --------------------------------------------------------------------------------------------------
# Interruption: an exception type, a flag on the result
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("reg", [Simplex(), SimplexL2(theta=1.0)], ids=lambda r: r.name)
@pytest.mark.parametrize("solver", SOLVERS, ids=ids)
def test_interrupt_returns_the_best_iterate(solver, reg):
    Ks, y = random_problem(3, n=20, M=4)

    def stop_after_three(entry):
        if entry["iteration"] == 3:
            raise KeyboardInterrupt

    with pytest.warns(FitInterruptedWarning, match="interrupted after 3 outer iterations") as caught:
        res = solve_mkl(Ks, y, reg, solver, tol=1e-12, callback=stop_after_three)
    assert all(issubclass(w.category, FitInterruptedWarning) for w in caught)
    assert res.interrupted and not res.converged and res.n_iter == 3
    # The best point seen (line-search trials included) is returned.
    assert res.objective <= min(h["upper"] for h in res.history)


def test_interrupt_is_a_runtime_warning_exported_by_the_package():
    assert multikernel.FitInterruptedWarning is FitInterruptedWarning
    assert issubclass(FitInterruptedWarning, RuntimeWarning)  # filters written for RuntimeWarning still apply


def test_interrupt_before_any_weights_propagates():
    class InterruptedLoss(CSVCLoss):
        def solve(self, K, y, alpha0=None, tol=1e-3):
            raise KeyboardInterrupt

    Ks, y = random_problem(3, n=15, M=3)
    for solver in SOLVERS:
        problem = MKLProblem(stack=DenseStack(Ks), y=y, loss=InterruptedLoss(), regularizer=Simplex())
        with pytest.raises(KeyboardInterrupt, match="no weights to return yet"):
            solver.solve(problem)


# --------------------------------------------------------------------------------------------------
# What the warning advises
# --------------------------------------------------------------------------------------------------
def test_inner_tol_is_advised_only_when_the_inner_gap_is_the_limit():
    Ks, y = random_problem(1, n=20, M=4)
    # The average kernel has nothing to learn: its certified gap is the inner solve's own gap.
    with pytest.warns(ConvergenceWarning, match=r"the inner solves' own gap \([0-9.e-]+\) keeps it above tol: "
                                                 r"a smaller inner_tol helps") as caught:
        solve_mkl(Ks, y, Uniform(), BlockCoordinateDescent(), tol=1e-9, inner_tol=0.5, max_iter=1)
    assert "max_iter" not in str(caught[0].message).split(";")[-1]
    # L1-MKL after two block coordinate steps: the weights, not the inner solves, are far from optimal.
    with pytest.warns(ConvergenceWarning, match=r"max_iter=2 .*; increase max_iter or tol; another outer "
                                                 r"solver than 'bcd' may need fewer iterations") as caught:
        solve_mkl(Ks, y, Simplex(), BlockCoordinateDescent(), tol=1e-6, inner_tol=1e-9, max_iter=2)
    assert "inner_tol" not in str(caught[0].message)


def _loop_with(gap: float, inner: float, inner_tol: float, tol: float) -> OuterLoop:
    """A loop at upper bound 1 with a certified gap ``gap`` whose best iterate had the inner gap ``inner``."""
    Ks, y = random_problem(0, n=10, M=2)
    problem = MKLProblem(stack=DenseStack(Ks), y=y, loss=CSVCLoss(), regularizer=Simplex(), tol=tol)
    loop = OuterLoop(problem)
    sol = InnerSolution(alpha=np.zeros(10), coef=np.zeros(10), bias=0.0, dual_objective=1.0 - inner,
                        primal_objective=1.0)
    loop.record(np.array([0.5, 0.5]), sol, None)
    loop.lower, loop.inner_tol = 1.0 - gap, inner_tol
    return loop


@pytest.mark.parametrize(
    ("gap", "inner", "inner_tol", "tol", "advice"),
    [(2e-3, 1.5e-3, 1e-4, 1e-3, "a smaller inner_tol helps"),
     (2e-3, 1.5e-3, INNER_TOL_FLOOR, 1e-3, "even at the finest inner tolerance (1e-11): increase tol"),
     (5e-2, 1e-4, 1e-4, 1e-3, "neither more iterations nor a smaller inner_tol will help here: another outer "
                              "solver than 'reduced_gradient' may get further"),
     (5e-9, 1e-12, INNER_TOL_FLOOR, 1e-12, "a certified gap below 1e-08 is beyond what inner solves at the "
                                           "finest tolerance resolve: increase tol")],
    ids=["inner-limited", "inner-limited-at-the-floor", "outer-limited", "below-the-resolution"])
def test_stall_advice_says_what_would_help(gap, inner, inner_tol, tol, advice):
    loop = _loop_with(gap, inner, inner_tol, tol)
    with pytest.warns(ConvergenceWarning, match=r"the line search stalled; certified relative duality gap") as w:
        res = loop.result(False, reason="the line search stalled", solver="reduced_gradient")
    assert advice in str(w[0].message) and not res.interrupted
    if "inner_tol" not in advice:
        assert "inner_tol helps" not in str(w[0].message)


# --------------------------------------------------------------------------------------------------
# Every solver: callbacks, one solve for the average kernel, warm-started inner solves
# --------------------------------------------------------------------------------------------------
def test_callback_sees_every_iteration():
    Ks, y = random_problem(8, n=20, M=3)
    seen = []
    res = solve_mkl(Ks, y, SimplexL2(theta=1.0), ProjectedGradient(), tol=1e-5, callback=seen.append)
    assert [e["iteration"] for e in seen] == list(range(1, res.n_iter + 1))
    assert {"objective", "upper", "lower", "gap", "n_selected"} <= set(seen[0])
    assert seen[-1]["gap"] <= 1e-5


@pytest.mark.parametrize("solver", [s for s in SOLVERS if s.name != "reduced_gradient"], ids=lambda s: s.name)
def test_uniform_needs_one_svm_solve(solver):
    Ks, y = random_problem(9, n=20, M=3)
    loss = CountingLoss(C=1.0)
    problem = MKLProblem(stack=DenseStack(Ks), y=y, loss=loss, regularizer=Uniform(), inner_tol=1e-8)
    res = solver.solve(problem)
    assert res.converged and res.n_iter == 1 and len(loss.calls) == 1
    np.testing.assert_array_equal(res.weights, np.full(3, 1.0 / 3))


@pytest.mark.parametrize("solver", SOLVERS, ids=ids)
def test_every_inner_solve_after_the_first_is_warm_started(solver):
    Ks, y = random_problem(10, n=20, M=4)
    loss = CountingLoss(C=1.0)
    problem = MKLProblem(stack=DenseStack(Ks), y=y, loss=loss, regularizer=Simplex(), tol=1e-4, inner_tol=1e-3,
                         max_iter=500)
    assert solver.solve(problem).converged
    assert loss.calls[0][0] is None and len(loss.calls) > 2
    assert all(a is not None and a.shape == (20,) for a, _ in loss.calls[1:])
    # The outer loop's adaptive inner tolerance is passed on.
    assert loss.calls[0][1] == 1e-3 and min(t for _, t in loss.calls) < 1e-3


def test_a_third_party_solver_writes_only_its_step():
    # The example of docs/methods/solvers.md: the shared loop certifies, stops and interrupts it.
    from multikernel.solve.outer import OuterSolver

    class FrankWolfe(OuterSolver):
        name = "frank_wolfe"

        def step(self, evaluate, it):
            grad = evaluate.gradient(it)
            d = np.eye(len(it.mu))[np.argmin(grad)] - it.mu
            if grad @ d >= 0:
                return Stalled("no descent vertex at this inner precision")
            t = 2.0 / (evaluate.loop.n_iter + 2)
            return evaluate(it.mu + t * d, it.sol.alpha)

    Ks, y = random_problem(11, n=25, M=4)
    res = solve_mkl(Ks, y, Simplex(), FrankWolfe(), C=1.0, tol=1e-2, max_iter=500)
    ref = reference(Ks, y, Simplex())
    assert res.converged and res.dual_gap <= 1e-2 and ref.brackets(res)


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


# --------------------------------------------------------------------------------------------------
# Reduced-gradient defects, on the data that showed them
# --------------------------------------------------------------------------------------------------
_DUPLICATED = [("linear", {}), ("rbf", {"gamma": 0.005}), ("rbf", {"gamma": 0.005}), ("rbf", {"gamma": 0.005}),
               ("rbf", {"gamma": 0.05})]
ISSUE_CASES = {
    # Three identical kernels: the maximal step left 1e-17 residues, the line search then accepted
    # non-decreasing steps: 200 iterations, gap 0.118, objective 5.2 % above the optimum.
    "duplicates": (lambda: (*cancer_kernels(0, 30, _DUPLICATED), 1.0), "simplemkl", None),
    # C = 1000: stopped at the optimal vertex with gap 0.013 without re-solving the SVM more precisely.
    "large-C": (lambda: (*cancer_kernels(14, 50, [("rbf", {"gamma": 0.002}), ("rbf", {"gamma": 0.01}),
                                                   ("rbf", {"gamma": 0.03}), ("linear", {})]), 1000.0),
                "simplemkl", None),
    # SM2MKL by reduced gradient, duplicated kernels: 200 iterations, gap 0.062, 3.9 % above the optimum.
    "sm2mkl-duplicates": (lambda: (*cancer_kernels(0, 30, [("rbf", {"gamma": 0.006})] * 3 + _DUPLICATED[:1]
                                                   + _DUPLICATED[4:]), 1.0), "sm2mkl", ReducedGradient()),
    # ... and without duplicates (eight kernels, n = 54): 200 iterations, gap 0.029, 0.69 % above.
    "sm2mkl-eight-kernels": (lambda: _drawn(make_problem(
        n=54, positives=32, kinds=["low_rank", "linear", "poly", "rbf", "rbf", "rbf", "low_rank", "poly"],
        order=[6, 4, 2, 7, 1, 0, 5, 3], C=1.0, seed=9507)), "sm2mkl", ReducedGradient()),
    # Found by the thorough profile: kernels scaled from 10^-2.5 to 10^2, C = 2395.  With only the first
    # Armijo point (a tenth of the maximal step) SimpleMKL crawled: 200 iterations, gap 2.2e-3.
    "unnormalized": (lambda: _drawn(make_problem(
        n=37, positives=35, kinds=["low_rank", "flat_rbf", "rbf", "linear", "linear", "flat_rbf"],
        log10_scales=[2.0, -0.3796361469050229, -2.481012086312981, 0.0, -2.0507883660400585, 0.0],
        order=[4, 0, 5, 2, 3, 1], C=2395.224440008743, seed=72979)), "simplemkl", None),
    # ... and with the line minimum but steepest descent: a stiff weight (kernel scaled by 10) took every
    # step, 200 iterations, gap 1.9e-3 (conjugate directions: 20 iterations).
    "stiff": (lambda: _drawn(make_problem(
        n=14, positives=9, kinds=["linear", "low_rank", "low_rank"], log10_scales=[-2.78125, -1.4375, 1.0],
        C=10.0, seed=861570401)), "simplemkl", None),
}


def _drawn(problem):
    return problem.Ks, problem.y, problem.C


@pytest.mark.parametrize("case", list(ISSUE_CASES))
def test_reduced_gradient_reaches_the_gap_on_the_issue_reproductions(case):
    build, method, solver = ISSUE_CASES[case]
    Ks, y, C = build()
    kw = {} if solver is None else {"solver": solver}
    res, warned = solve_preset(method, Ks, y, C, **kw)
    assert res.converged and res.dual_gap <= 1e-3 and not warned, (res.n_iter, res.dual_gap, warned)
    preset = get_registry().get("method", method)
    ref = reference(Ks, y, get_registry().create("regularizer", preset.regularizer, **preset.regularizer_params), C)
    assert ref.brackets(res)
    assert res.objective - ref.value <= 1e-3 * abs(res.objective) + ref.error
    # No rounding residues: every weight is zero or a real share.
    assert np.all((res.weights == 0) | (res.weights > 1e-12))


def test_maximal_step_zeroes_every_weight_that_reaches_zero():
    # Tied weights with the same direction reach zero together; rounding left all but one at ~1e-17.
    mu = np.array([0.1, 0.3, 0.3, 0.3]) / 1.0000000000000002
    D = np.array([0.9, -0.3, -0.3, -0.3])
    gamma_max, end = ReducedGradient._maximal_step(mu, D, tiny=1e-12)
    assert gamma_max == pytest.approx(1.0)
    np.testing.assert_array_equal(end, [1.0, 0.0, 0.0, 0.0])
    # A weight that does not reach zero keeps its share, and the end point stays on the simplex.
    gamma_max, end = ReducedGradient._maximal_step(np.array([0.2, 0.3, 0.5]), np.array([0.2, -0.3, 0.1]), 1e-12)
    assert gamma_max == pytest.approx(1.0) and end[1] == 0.0 and end.sum() == pytest.approx(1.0)
    assert np.all(end >= 0)


class _FlatEvaluator:
    """An evaluator whose objective is the same everywhere (within the inner solver's precision)."""

    def __init__(self, problem: MKLProblem, inner_tol: float) -> None:
        self.problem = problem
        self.loop = OuterLoop(problem)
        self.loop.inner_tol = inner_tol
        self.n_solves = 0

    def __call__(self, mu, alpha0, with_q=True):
        self.n_solves += 1
        sol = InnerSolution(alpha=np.zeros(3), coef=np.zeros(3), bias=0.0, dual_objective=1.0,
                            primal_objective=1.0 + 1e-6)
        return Iterate(mu=mu, sol=sol, q=None if not with_q else np.ones(2), objective=1.0)

    def certify(self, it):
        return it


@pytest.mark.parametrize("inner_tol", [1e-3, INNER_TOL_FLOOR])
def test_line_search_accepts_only_a_strict_decrease(inner_tol):
    Ks, y = random_problem(0, n=3, M=2)
    problem = MKLProblem(stack=DenseStack(Ks), y=y, loss=CSVCLoss(), regularizer=Simplex())
    evaluate = _FlatEvaluator(problem, inner_tol)
    it = evaluate(np.array([0.5, 0.5]), None)
    solver = ReducedGradient(max_backtracks=5)
    step = solver._armijo(evaluate, it, np.array([1e-3, -1e-3]), slope=-1e-6)
    assert isinstance(step, Stalled)
    if inner_tol > INNER_TOL_FLOOR:
        # The possible decrease (1e-6) is below the two inner gaps: a tighter inner solve, not more trials.
        assert evaluate.n_solves == 2 and "precision" in step.reason
    else:
        assert evaluate.n_solves == 1 + 5 and "cannot decrease" in step.reason


def test_a_stall_re_solves_at_a_tighter_inner_tolerance_before_giving_up():
    # The large-C reproduction: the optimum is a vertex, where the reduced gradient vanishes at once.
    Ks, y, C = ISSUE_CASES["large-C"][0]()
    loss = CountingLoss(C=C)
    problem = MKLProblem(stack=DenseStack(Ks), y=y, loss=loss, regularizer=Simplex())
    res = ReducedGradient().solve(problem)
    assert res.converged and res.dual_gap <= 1e-3
    tols = [t for _, t in loss.calls]
    assert tols[0] == 1e-3 and tols[-1] < 1e-3 and not math.isinf(res.lower_bound)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_inner_tolerance_stops_tightening_at_the_stacks_precision(dtype):
    """A float32 stack is its float64 kernels rounded by up to 2^-24 relative: rank-deficient combinations are
    indefinite by about that much, and the SMO at a KKT tolerance of 1e-9 cycled there (10^7 iterations, 11 s, in
    one solve of the soft margin protocol).  An outer tolerance no inner precision can meet tightens the inner
    tolerance down to 1e-8 on float32 kernels, 1e-11 on float64 ones, and the warning says what gap that resolves."""
    Ks, y = random_problem(3, n=30, M=4)
    Ks = np.concatenate([Ks, Ks[:1] + Ks[1:2]])  # a linearly dependent kernel
    loss = CountingLoss(C=10.0)
    stack = DenseStack(Ks.astype(dtype))
    problem = MKLProblem(stack=stack, y=y, loss=loss, regularizer=Simplex(), tol=1e-14, max_iter=60)
    with pytest.warns(ConvergenceWarning) as record:
        ProjectedGradient().solve(problem)
    floor = FLOAT32_INNER_TOL_FLOOR if dtype == np.float32 else INNER_TOL_FLOOR
    assert inner_tol_floor(stack) == floor
    assert min(t for _, t in loss.calls) == pytest.approx(floor)
    resolvable = max(1e-8, 10 * floor)  # the gap inner solves at the floor resolve: 1e-8 in float64, 1e-7 in float32
    assert any(f"a certified gap below {resolvable:g} is beyond" in str(w.message) for w in record), record
