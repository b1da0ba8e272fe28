"""Every MKL method against the same problem solved by cvxpy + Clarabel, and the special cases of the paper.

Xu, Tsang and Xu (2013) and spec section 7: SM1MKL with theta = 1/M is the average kernel and with theta >= 1
is L1-MKL; its optimum does not increase with theta; SM2MKL tends to L1-MKL (theta -> inf) and to the average
kernel (theta -> 0); Lp-MKL with p = 1 is L1-MKL and with p = inf the average kernel with C scaled by M;
SGMKL with v = 1 is L1-MKL and with v = 0 is L2-MKL.

The property tests draw the structure of the problems (``_mkl_testing.mkl_problems``): size, class balance,
duplicated, unnormalized and rank-deficient kernels, a single kernel, C on a log scale.  The ``ci`` profile
runs a few examples of each; run ``HYPOTHESIS_PROFILE=thorough`` before a release (CONTRIBUTING.md).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from _mkl_testing import (
    MKL_PRESETS,
    decision_values,
    kernel_slack_value,
    make_problem,
    mkl_problems,
    random_problem,
    reference,
    scaled,
    solve_mkl,
    solve_preset,
)
from hypothesis import given
from hypothesis import strategies as st

from multikernel.core.capabilities import replaced_objective
from multikernel.core.registry import get_registry
from multikernel.plugins.regularizers import (
    BoxSimplex,
    ElasticNet,
    L2Ball,
    LpBall,
    Simplex,
    SimplexL2,
    SimplexPower,
    Uniform,
)
from multikernel.plugins.smo_mkl import SMOMKL
from multikernel.plugins.solvers import BlockCoordinateDescent, LevelMethod, ProjectedGradient, ReducedGradient

PRESETS = MKL_PRESETS
# Tested in test_multilabel_mkl.py against the sum form and cvxpy: a stochastic solver of shared-weight problems
# whose certified gap has a long tail (on drawn binary structures it can stall near 1e-2 within 200 iterations).
OTHER_PRESETS = ["ml_mkl_sa"]


def _replacing_presets() -> set[str]:
    """Presets whose solver declares that it does not minimise the MKL objective (``replaces_objective``, e.g.
    EasyMKL's weights from one QP): they have no MKL optimum to reach; their own tests hold their references."""
    registry = get_registry()
    return {m for m in registry.names("method")
            if replaced_objective(registry.get("solver", registry.get("method", m).solver)) is not None}


def test_the_presets_are_all_tested():
    replacing = _replacing_presets()
    assert "easymkl" in replacing and not replacing & set(PRESETS)
    assert set(PRESETS) | set(OTHER_PRESETS) | replacing == set(get_registry().names("method"))


@pytest.mark.parametrize("method", PRESETS)
@scaled(1.5)
@given(problem=mkl_problems())
def test_every_preset_reaches_its_gap_on_drawn_structures(method, problem):
    # The preset at its default parameters and the estimator's default tol, inner_tol and max_iter.
    res, warned = solve_preset(method, problem.Ks, problem.y, problem.C)
    tol = 1e-3
    assert res.converged and res.dual_gap <= tol and not warned, (res.n_iter, res.dual_gap, warned)
    preset = get_registry().get("method", method)
    reg = get_registry().create("regularizer", preset.regularizer, **preset.regularizer_params)
    ref = reference(problem.Ks, problem.y, reg, C=problem.C, certify=0.25 * tol)
    # Our bounds are certified, so they hold the optimum; Clarabel's value is within its own gap of it
    # (for large C it is "inaccurate" with a visible gap: ref.error allows for exactly that).
    assert ref.brackets(res), (res.lower_bound, res.objective, ref)
    assert abs(res.objective - ref.value) <= tol * abs(res.objective) + ref.error


#: The C grid of the warm-started walks below (and of ``tests/sweep_presets.py --walk``).
WALK = [1e-2, 1e-1, 1.0, 1e1, 1e2, 1e3, 1e4]


def _walk(method: str, Ks: np.ndarray, y: np.ndarray, Cs: list[float]):
    """``method`` along ``Cs``, each fit warm-started from the previous one and certified to 1e-3 without a
    warning; the last fit."""
    warm = None
    for C in Cs:
        res, warned = solve_preset(method, Ks, y, C, warm_start=warm)
        assert res.converged and res.dual_gap <= 1e-3 and not warned, (C, res.n_iter, res.dual_gap, warned)
        warm = res
    return res


@pytest.mark.parametrize("method", PRESETS)
@scaled(2.0)
@given(problem=mkl_problems())
def test_every_preset_walks_a_grid_of_C_warm_started(method, problem):
    """The experiments' grid walks: each fit starts from the previous one's weights and alpha.  A warm start at
    sparse weights sits on a kink of J, where the gradient solvers' line searches stalled: before session 12,
    71 of 2100 drawn walks ended with a ConvergenceWarning (gmkl_l1 35 of 300, gmkl_elastic 30, simplemkl 4),
    at certified gaps up to 3.1 for a tolerance of 1e-3."""
    _walk(method, problem.Ks, problem.y, WALK)


#: Warm-started walks over WALK that the sweeps and the property tests drew (shrunk), each a stall that a fix
#: ended: the preset, the problem (``make_problem``'s arguments) and what went wrong.
FOUND_WALKS = {
    # gmkl_l1 with one kernel, whose warm weight 1e-16 is optimal but was certified only to a gap of
    # 0.1 by the SMO's arbitrary alpha (the closed-form fallback from revived weights breaks the tie)
    "gmkl_l1-one-kernel": ("gmkl_l1", dict(n=39, positives=1, kinds=["poly"], log10_scales=[0.0], order=[0])),
    # simplemkl on six kernels at C = 1e4, its search stalled on a kink
    "simplemkl-kink": ("simplemkl", dict(n=22, positives=2, kinds=["rbf", "linear", "low_rank", "poly", "low_rank",
                                                                  "rbf"], order=[2, 5, 3, 4, 0, 1], seed=2110453)),
    # all weight on three copies of a linear kernel up to C = 0.1; at C = 1 an rbf kernel needs 0.02
    # from 1e-17, the search stalled and the update from revived weights did not descend (gap 0.018 for tol 1e-3):
    # the fallback restarts from the revived weights (1.7e-4 two iterations later)
    "simplemkl-triplicate": ("simplemkl", dict(n=15, positives=5, kinds=["flat_rbf", "rbf", "linear", "rbf"],
                                               copies=[2, 2], order=[2, 1, 3, 4, 0, 5], seed=50052778)),
    # at C = 10 a kernel at 7e-13 needs 0.47; the fallback's own update lowered F by 2e-14 per step and
    # was taken instead of mirror steps (max_iter at gap 3.7e-3): a crawling update gives way to the revived weights
    "mkl_md-crawling-fallback": ("mkl_md", dict(n=27, positives=5, kinds=["poly", "rbf", "rbf", "poly", "rbf"],
                                                copies=[2], seed=23285)),
    # at C = 10 the best weights had 4.7e-4 on a kernel whose form is 55x the others'; every smoothed
    # query cleared it and was the current, worse point again (stall at gap 1.4e-3)
    "mkl_silp-cleared-weight-led-back": ("mkl_silp", dict(n=36, positives=3, kinds=["linear", "flat_rbf", "low_rank",
                                                                                   "low_rank"], copies=[0],
                                                          log10_scales=[2.0, 2.0, 2.0, 1.0], seed=4)),
    # at C = 1e4 clearing a centre's weight of 3.4e-6 raised F by 3.5 %; 150 such queries changed
    # nothing (max_iter at gap 1.2e-3): after a cleared query that does not become the centre, the next keeps them
    "mkl_silp-cleared-weight-mattered": ("mkl_silp", dict(n=36, positives=1, kinds=["linear", "flat_rbf", "low_rank",
                                                                                   "linear"], copies=[2],
                                                          log10_scales=[0.0, 1.0, 2.0, 0.0], seed=4)),
    # at C = 1e4 the optimum puts all weight on a kernel scaled by 1e3
    # (objective 4.5e-3); the SMO's margin errors times C gave an inner gap of 1.05e-3 at the old inner-tolerance
    # floor of 1e-9 (now 1e-11: gap 8.9e-5)
    "mkl_silp-large-C-scaled-kernel": ("mkl_silp", dict(n=8, positives=1, kinds=["linear", "linear", "linear", "poly",
                                                                                "rbf", "rbf"],
                                                        log10_scales=[0.0, 0.0, 0.0, 0.0, 0.0, 3.0])),
    # four linear kernels nearly tie at C = 100; the group-lasso update
    # reached the optimal value by iteration 61 but its own alpha certified only 3.9e-3 until max_iter: the preset
    # now switches to level steps on its cuts once a step crawls (19 iterations)
    "mkl_gl-near-tie": ("mkl_gl", dict(n=13, positives=3, kinds=["linear", "linear", "linear", "linear", "low_rank"])),
}


@pytest.mark.parametrize("case", list(FOUND_WALKS))
def test_walks_the_sweeps_found(case):
    method, structure = FOUND_WALKS[case]
    p = make_problem(**structure)
    res = _walk(method, p.Ks, p.y, WALK)
    preset = get_registry().get("method", method)
    ref = reference(p.Ks, p.y, get_registry().create("regularizer", preset.regularizer, **preset.regularizer_params),
                    C=WALK[-1])
    assert ref.brackets(res), (res.lower_bound, res.objective, ref)


def test_gmkl_takes_scaled_steps_where_the_weights_differ_in_size():
    """The structure the property test above drew in CI (shrunk by hypothesis): gmkl_l1 at C = 1000 with a
    nearly constant kernel whose weight grows to 1.2e3 next to one of 0.5.  Euclidean gradient steps crawled
    (186 iterations here, past the default max_iter of 200 on another machine); the presets take steps scaled
    by the weights (``metric="weights"``)."""
    p = make_problem(n=34, positives=8, kinds=["linear", "linear", "linear", "linear", "flat_rbf"], copies=[0, 0, 0],
                     log10_scales=None, order=list(range(8)), C=1000.0, seed=0)
    res, warned = solve_preset("gmkl_l1", p.Ks, p.y, p.C)
    assert res.converged and res.dual_gap <= 1e-3 and not warned, (res.n_iter, res.dual_gap, warned)
    assert res.n_iter <= 50, res.n_iter
    ref = reference(p.Ks, p.y, get_registry().create("regularizer", "gmkl_l1"), C=p.C)
    assert ref.brackets(res), (res.lower_bound, res.objective, ref)


@pytest.mark.parametrize("n", [33, 34])
def test_gmkl_line_searches_start_within_a_growth_bound(n):
    """Drawn in a full-suite run: C = 1e4, two positive points, a nearly flat kernel.  A Barzilai-Borwein step
    put that kernel's weight at 4e6 from 6e3, where the SMO ran into its iteration limit (a warning, 1.3 s)
    before the line search backtracked; trials now start where no weight exceeds 10x the largest one."""
    p = make_problem(n=n, positives=2, kinds=["linear", "linear", "linear", "linear", "flat_rbf"], copies=[0, 0, 0],
                     log10_scales=None, order=list(range(8)), C=1e4, seed=0)
    res, warned = solve_preset("gmkl_l1", p.Ks, p.y, p.C)
    assert res.converged and res.dual_gap <= 1e-3 and not warned, (res.n_iter, res.dual_gap, warned)
    ref = reference(p.Ks, p.y, get_registry().create("regularizer", "gmkl_l1"), C=p.C, certify=2.5e-4)
    assert ref.brackets(res), (res.lower_bound, res.objective, ref)


@pytest.mark.parametrize("method", ["gmkl_l1", "gmkl_l2", "gmkl_elastic"])
def test_gmkl_on_identical_kernels_takes_a_first_step_of_the_weights_size(method):
    """Identical kernels have gradients equal up to rounding; a first step of 1 / (their spread) took the
    weights of the unbounded GMKL domain from 0.2 to 4e13, where the SMO hit its iteration limit (a hypothesis
    draw: two equal polynomial kernels and three copies)."""
    p = make_problem(n=36, positives=23, kinds=["poly", "poly"], copies=[1, 0, 0], log10_scales=None,
                     order=[3, 0, 2, 4, 1], C=5.8617794574898685, seed=2625)
    res, warned = solve_preset(method, p.Ks, p.y, p.C)
    assert res.converged and res.dual_gap <= 1e-3 and not warned, (res.n_iter, res.dual_gap, warned)
    assert np.ptp(res.weights) <= 1e-9 * res.weights.max() and res.weights.max() < 10.0, res.weights
    preset = get_registry().get("method", method)
    ref = reference(p.Ks, p.y, get_registry().create("regularizer", preset.regularizer, **preset.regularizer_params),
                    C=p.C)
    assert ref.brackets(res), (res.lower_bound, res.objective, ref)


def test_the_weights_metric_is_only_for_the_separable_domain():
    Ks, y = random_problem(0)
    with pytest.raises(ValueError, match="separable domain mu >= 0"):
        solve_mkl(Ks, y, Simplex(), ProjectedGradient(metric="weights"))
    with pytest.raises(ValueError, match="metric must be"):
        solve_mkl(Ks, y, Simplex(), ProjectedGradient(metric="newton"))


CASES = [
    (Uniform(), BlockCoordinateDescent()),
    (Simplex(), BlockCoordinateDescent()),
    (Simplex(), ProjectedGradient()),
    (Simplex(), ReducedGradient()),
    (Simplex(), LevelMethod()),
    (BoxSimplex(nu=0.5), BlockCoordinateDescent()),
    (BoxSimplex(nu=0.7), ProjectedGradient()),
    (BoxSimplex(nu=0.6), LevelMethod()),
    (SimplexL2(theta=0.5), ProjectedGradient()),
    (SimplexL2(theta=2.0), BlockCoordinateDescent()),
    (SimplexL2(theta=0.5), ReducedGradient()),
    (SimplexL2(theta=1.0), LevelMethod()),
    (SimplexPower(theta=1.0, p=3.0), LevelMethod()),
    (SimplexPower(theta=1.0, p=3.0), ProjectedGradient()),
    (LpBall(p=1.5), BlockCoordinateDescent()),
    (LpBall(p=3.0), ProjectedGradient()),
    (L2Ball(), BlockCoordinateDescent()),
    (ElasticNet(v=0.5), BlockCoordinateDescent()),
    (ElasticNet(v=0.2), ProjectedGradient()),
    (LpBall(p=1.5), SMOMKL()),
    (L2Ball(), SMOMKL()),
]


@pytest.mark.parametrize(("reg", "solver"), CASES, ids=[f"{r.name}-{s.name}" for r, s in CASES])
@scaled(0.5)
@given(problem=mkl_problems(n=(8, 30), kernels=(1, 5), log10_C=(-1.0, 2.0), log10_scale=1.0))
def test_optimum_equals_the_cvxpy_reference(reg, solver, problem):
    # Every regularizer with every solver that serves it, to a tight gap.  Kernel scales times C spanning 1e4
    # and more (covered at the presets' tol by the test above) can make F so flat along the weights that the
    # first-order solvers cannot certify 1e-6 (SimpleMKL's reduced gradient zig-zagged at a gap of 3.7e-6 with
    # C = 97 and kernels scaled by 1e-2 and 4e2: the decrease left was below what the inner solves resolve).
    ref = reference(problem.Ks, problem.y, reg, C=problem.C)
    res = solve_mkl(problem.Ks, problem.y, reg, solver, C=problem.C, tol=1e-6, max_iter=3000)
    assert res.converged and res.dual_gap <= 1e-6
    # Our bounds are certified: the reference lies between them (up to Clarabel's accuracy).
    assert ref.brackets(res), (res.lower_bound, res.objective, ref)
    assert res.objective == pytest.approx(ref.value, rel=1e-5, abs=ref.error)


def test_theta_one_over_m_is_exactly_the_average_kernel():
    Ks, y = random_problem(3, n=25, M=4)
    avg = solve_mkl(Ks, y, Uniform(), BlockCoordinateDescent(), C=1.0)
    for solver in (BlockCoordinateDescent(), ProjectedGradient()):
        for reg in (BoxSimplex(nu=1.0), BoxSimplex(theta=0.25)):
            res = solve_mkl(Ks, y, reg, solver, C=1.0)
            assert np.array_equal(res.weights, np.full(4, 0.25))
            np.testing.assert_allclose(decision_values(Ks, res), decision_values(Ks, avg), atol=1e-9)
            assert np.array_equal(np.sign(decision_values(Ks, res)), np.sign(decision_values(Ks, avg)))


def test_theta_below_one_over_m_is_rejected():
    Ks, y = random_problem(0, n=15, M=4)
    for solver in (BlockCoordinateDescent(), ProjectedGradient()):
        with pytest.raises(ValueError, match=r"theta=0\.2 < 1/M"):
            solve_mkl(Ks, y, BoxSimplex(theta=0.2), solver)


@scaled(0.3)
@given(problem=st.builds(make_problem, n=st.integers(12, 30), positives=st.integers(4, 8),
                         kinds=st.lists(st.sampled_from(["linear", "poly", "rbf", "low_rank"]), min_size=5,
                                        max_size=5), seed=st.integers(0, 2**32 - 1)))
def test_theta_path_monotone_with_kernel_counts_and_l1_limit(problem):
    # The level method (the presets' solver for these domains): overlapping linear kernels make F so flat
    # along the weights that the gradient solvers crawl to a gap of 1e-6 (test_optimum_equals_the_cvxpy_reference
    # checks them on better conditioned problems).
    Ks, y = problem.Ks, problem.y
    l1 = solve_mkl(Ks, y, Simplex(), LevelMethod(), C=1.0)
    previous, warm = math.inf, None
    for nu in (1.0, 0.8, 0.6, 0.4, 0.2):  # theta = 1/(nu M) grows: the domain grows
        res = solve_mkl(Ks, y, BoxSimplex(nu=nu), LevelMethod(), C=1.0, warm_start=warm)
        assert res.converged
        # The certified optimum lies in [lower, objective], so monotonicity is checked with the gap.
        assert res.lower_bound <= previous + 1e-9 * abs(previous if math.isfinite(previous) else 1.0)
        previous = res.objective
        assert np.count_nonzero(res.weights > 0) >= math.ceil(nu * 5 - 1e-9)
        assert np.all(res.weights <= 1.0 / (nu * 5) + 1e-12)
        warm = res
    # nu = 1/M, i.e. theta = 1, is L1-MKL.
    for theta in (1.0, 3.0):
        res = solve_mkl(Ks, y, BoxSimplex(theta=theta), LevelMethod(), C=1.0)
        assert res.objective == pytest.approx(l1.objective, rel=1e-5)
    assert l1.objective <= previous * (1 + 1e-6)


def test_sm2mkl_objective_is_non_increasing_in_theta():
    Ks, y = random_problem(12, n=20, M=4)
    previous, warm = math.inf, None
    for theta in (1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0):
        res = solve_mkl(Ks, y, SimplexL2(theta=theta), ProjectedGradient(), C=1.0, warm_start=warm)
        assert res.converged
        assert res.lower_bound <= previous
        previous, warm = res.objective, res


def test_sm2mkl_limits():
    Ks, y = random_problem(5, n=25, M=4)
    l1 = solve_mkl(Ks, y, Simplex(), ReducedGradient(), C=1.0)
    avg = solve_mkl(Ks, y, Uniform(), BlockCoordinateDescent(), C=1.0)
    big = solve_mkl(Ks, y, SimplexL2(theta=1e6), ProjectedGradient(), C=1.0)
    assert big.objective == pytest.approx(l1.objective, rel=1e-5)
    small = solve_mkl(Ks, y, SimplexL2(theta=1e-6), ProjectedGradient(), C=1.0)
    np.testing.assert_allclose(small.weights, 0.25, atol=1e-3)
    # J at (nearly) the average kernel plus the penalty of the uniform weights, 1/(2 theta M).
    assert small.objective - 1.0 / (2e-6 * 4) == pytest.approx(avg.objective, rel=1e-4)


def test_lp_limits_and_elastic_net_ends():
    Ks, y = random_problem(7, n=25, M=4)
    C = 1.0
    l1 = solve_mkl(Ks, y, Simplex(), ReducedGradient(), C=C)
    assert solve_mkl(Ks, y, LpBall(p=1.0), BlockCoordinateDescent(), C=C, max_iter=3000).objective \
        == pytest.approx(l1.objective, rel=1e-5)
    assert solve_mkl(Ks, y, ElasticNet(v=1.0), BlockCoordinateDescent(), C=C, max_iter=3000).objective \
        == pytest.approx(l1.objective, rel=1e-5)
    l2 = solve_mkl(Ks, y, L2Ball(), BlockCoordinateDescent(), C=C)
    assert solve_mkl(Ks, y, ElasticNet(v=0.0), BlockCoordinateDescent(), C=C).objective \
        == pytest.approx(l2.objective, rel=1e-5)
    # p = inf: mu = 1, the sum kernel = M x the average kernel, i.e. the average kernel with C' = M C.
    inf = solve_mkl(Ks, y, LpBall(p=math.inf), BlockCoordinateDescent(), C=C)
    assert np.array_equal(inf.weights, np.ones(4))
    avg = solve_mkl(Ks, y, Uniform(), BlockCoordinateDescent(), C=4 * C)
    np.testing.assert_allclose(decision_values(Ks, inf), decision_values(Ks, avg), atol=1e-5)
    assert inf.objective == pytest.approx(avg.objective / 4, rel=1e-6)


@pytest.mark.parametrize(
    ("reg", "r"),
    [(BoxSimplex(theta=0.4), None), (SimplexL2(theta=0.7), 2.0), (SimplexPower(theta=0.7, p=3.0), 1.5),
     (SimplexPower(theta=2.0, p=1.5), 3.0)],
    ids=["hinge", "square-hinge", "p=3", "p=1.5"],
)
def test_mu_forms_equal_the_kernel_slack_forms(reg, r):
    # Propositions 3 and 4, and our derivation of kappa for the p/(p-1)-hinge: the slack form of the paper
    # and our weight-side form have the same optimum.
    Ks, y = random_problem(21, n=20, M=4)
    theta = reg.cap(4) if reg.name == "box_simplex" else reg.theta
    slack = kernel_slack_value(Ks, y, theta, r)
    ours = solve_mkl(Ks, y, reg, ProjectedGradient(), C=1.0)
    assert ours.converged
    assert ours.objective == pytest.approx(slack, rel=1e-5)
