"""The solver family of the Bucak thesis (spec chapter 2): SILP, entropic mirror descent, GMKL and the
group-lasso MKL preset, each against cvxpy + Clarabel and against the existing solvers.

Every solver is checked on every domain it declares, on drawn problems with duplicated, tied and unnormalized
kernels and ``C`` from 1e-2 to 1e4 (the structures of ``_mkl_testing.mkl_problems``), for the certified gap, warm
starts along a path, ``max_iter`` and Ctrl-C; an incompatible domain must fail before any work with the solvers
that would work.  The group-lasso preset must take the iterates of Xu et al.'s closed form (2.20), computed here
from scikit-learn's SVC.
"""

from __future__ import annotations

import math
import warnings

import attrs
import cvxpy as cp
import numpy as np
import pytest
from _mkl_testing import (
    CountingLoss,
    make_problem,
    mkl_problems,
    random_problem,
    reference,
    reference_value,
    scaled,
    solve_mkl,
)
from hypothesis import given
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import SVC

from multikernel.core.capabilities import IncompatiblePartsError
from multikernel.core.interfaces import MKLProblem
from multikernel.core.registry import get_registry
from multikernel.errors import FitInterruptedWarning
from multikernel.plugins.gmkl import GMKLL1, GMKLL2, GMKLElastic
from multikernel.plugins.mirror_descent import MirrorDescent, entropic_prox
from multikernel.plugins.regularizers import BoxSimplex, ElasticNet, LpBall, Simplex, SimplexL2, Uniform
from multikernel.plugins.silp import SILP
from multikernel.plugins.solvers import BlockCoordinateDescent, LevelMethod, ProjectedGradient, ReducedGradient
from multikernel.solve.fit import build_parts
from multikernel.solve.outer import OuterLoop, start_point
from multikernel.stack.storage import DenseStack

NEW_SOLVERS = [SILP(), MirrorDescent()]

# Every (regularizer, solver) pair the new pieces serve: the polyhedral domains for SILP and mirror descent, the
# GMKL regularizers with the two solvers their capabilities admit.
CASES = [
    (Simplex(), SILP()),
    (BoxSimplex(nu=0.6), SILP()),
    (SimplexL2(theta=0.5), SILP()),
    (Simplex(), SILP(stabilize=False)),  # Sonnenburg's plain SILP (the default smooths the query points)
    (BoxSimplex(nu=0.6), SILP(stabilize=False)),
    (Simplex(), MirrorDescent()),
    (BoxSimplex(nu=0.6), MirrorDescent()),
    (SimplexL2(theta=0.5), MirrorDescent()),
    (GMKLL2(c=1.0), ProjectedGradient()),
    (GMKLElastic(sigma=0.5, c=0.1), ProjectedGradient()),
    (GMKLElastic(sigma=1.0, c=1.0), BlockCoordinateDescent()),
]
CASE_IDS = [f"{r.name}-{s.name}" for r, s in CASES]


def _agrees(res, ref, tol):
    """``res`` certified to ``tol`` and its optimum the reference's (both bracket the optimum)."""
    return (res.converged and res.dual_gap <= tol and ref.brackets(res)
            and abs(res.objective - ref.value) <= 2 * tol * abs(res.objective) + ref.error)


def test_registered_parts_and_presets():
    registry = get_registry()
    assert {"silp", "mirror_descent"} <= set(registry.names("solver"))
    assert {"gmkl_l1", "gmkl_l2", "gmkl_elastic"} <= set(registry.names("regularizer"))
    presets = {m: registry.get("method", m) for m in ("mkl_silp", "mkl_md", "mkl_gl", "gmkl_l2", "gmkl_elastic")}
    assert [(p.regularizer, p.solver) for p in presets.values()] == [
        ("simplex", "silp"), ("simplex", "mirror_descent"), ("simplex", "bcd"),
        ("gmkl_l2", "projected_gradient"), ("gmkl_elastic", "projected_gradient")]
    # Each builds (the capability check passes) with its citation.
    for name, preset in presets.items():
        build_parts(name)
        assert preset.citation


# --------------------------------------------------------------------------------------------------
# Against cvxpy + Clarabel
# --------------------------------------------------------------------------------------------------
@scaled(0.5)
@given(problem=mkl_problems(n=(8, 30), kernels=(1, 5), log10_C=(-1.0, 2.0), log10_scale=1.0))
def test_every_pair_reaches_the_cvxpy_optimum_tightly(problem):
    # One drawn problem for every pair (the references are the cost).  Tight tolerance, moderate C and scales.
    refs = {}
    for reg, solver in CASES:
        key = repr(reg)
        if key not in refs:
            refs[key] = reference(problem.Ks, problem.y, reg, C=problem.C)
        res = solve_mkl(problem.Ks, problem.y, reg, solver, C=problem.C, tol=1e-6, max_iter=3000)
        assert _agrees(res, refs[key], 1e-6), (reg, solver.name, res.n_iter, res.dual_gap, res.objective, refs[key])


@scaled(0.5)
@given(problem=mkl_problems(n=(8, 30), kernels=(1, 5), log10_C=(-2.0, 4.0), log10_scale=3.0, max_copies=3))
def test_every_pair_reaches_the_cvxpy_optimum_on_hard_structures(problem):
    # C from 1e-2 to 1e4, kernels scaled by 1e-3 to 1e3, duplicates: where a solver of the past stalled.
    refs = {}
    for reg, solver in CASES:
        key = repr(reg)
        if key not in refs:
            refs[key] = reference(problem.Ks, problem.y, reg, C=problem.C)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            res = solve_mkl(problem.Ks, problem.y, reg, solver, C=problem.C, tol=1e-4, max_iter=3000)
        # The inner SMO may cycle to its iteration cap at C = 1e4 on rank-deficient kernels (the known inner
        # defect of test_mkl_reference.py; hypothesis found one where the first SVM, at the uniform weights, does
        # it under every outer solver, level and bcd included): not the outer solver's fault, and the result
        # must still be right.
        outer = [str(w.message) for w in caught if not str(w.message).startswith("SMO stopped at its iteration")]
        if outer:
            # One excuse: at C ~ 1e4 with kernels scaled by ~1e2 the inner SMO's own gap at its finest tolerance
            # can exceed 1e-4 of the objective, and then every outer solver stops there (level, projected
            # gradient and bcd alike, on the example hypothesis found).  The bounds must still hold.
            assert len(outer) == 1 and "keeps it above tol even at the finest inner tolerance" in outer[0], outer
            assert refs[key].brackets(res) and res.dual_gap <= 1e-2, (reg, solver.name, res.dual_gap)
            continue
        assert _agrees(res, refs[key], 1e-4), (reg, solver.name, res.n_iter, res.dual_gap, res.objective, refs[key])


@pytest.mark.parametrize("C", [1e-2, 1.0, 1e2, 1e4])
def test_agreement_with_the_existing_solvers_on_duplicated_tied_and_unnormalized_kernels(C):
    # Spec section 9, item 7: every L1 solver reaches the same optimum.  Kernels 0 and 3 are exact copies (tied
    # weights), the scales span 1e-2..1e2, so F is flat along some weights and steep along others.
    pr = make_problem(n=24, positives=9, kinds=["rbf", "linear", "poly"], copies=[0], log10_scales=[-2.0, 0.5, 2.0],
                      C=C, seed=17)
    for reg in (Simplex(), BoxSimplex(nu=0.5)):
        solvers = [SILP(), MirrorDescent(), LevelMethod(), BlockCoordinateDescent()]
        if reg.name == "simplex":
            solvers.append(ReducedGradient())
        # At C = 1e4 the inner solves at their finest tolerance resolve about 4e-6 of the objective.
        tol = 1e-5
        results = [solve_mkl(pr.Ks, pr.y, reg, s, C=C, tol=tol, max_iter=3000) for s in solvers]
        for s, res in zip(solvers, results, strict=True):
            assert res.converged and res.dual_gap <= tol, (reg.name, s.name, res.dual_gap)
        # Certified bounds: every solver's lower bound is below every other's objective.
        assert max(r.lower_bound for r in results) <= min(r.objective for r in results) * (1 + 1e-12)
        objectives = [r.objective for r in results]
        assert max(objectives) - min(objectives) <= 2 * tol * abs(objectives[0])
        # The tied copies share their weight: the split between them is free, the sum is not.
        sums = [r.weights[0] + r.weights[3] for r in results]
        if max(sums) > 1e-3:  # the kernel is selected at all
            assert max(sums) - min(sums) <= 0.05, sums


def test_identical_kernels_give_the_single_kernel_svm():
    # Spec section 9, item 2: with K_1 = ... = K_s the objective is constant on the simplex: the single-kernel SVM.
    Ks, y = random_problem(4, n=20, M=1)
    Ks = np.repeat(Ks, 4, axis=0)
    single = solve_mkl(Ks[:1], y, Simplex(), BlockCoordinateDescent(), C=10.0)
    for reg in (Simplex(), BoxSimplex(nu=0.5)):
        for solver in NEW_SOLVERS:
            res = solve_mkl(Ks, y, reg, solver, C=10.0)
            assert res.converged and res.n_iter <= 2
            assert res.objective == pytest.approx(single.objective, rel=1e-7)


@pytest.mark.parametrize("solver", NEW_SOLVERS, ids=lambda s: s.name)
def test_uniform_needs_one_svm_solve(solver):
    # The third polyhedral domain both declare: the single point 1/M.
    Ks, y = random_problem(9, n=20, M=3)
    loss = CountingLoss(C=1.0)
    res = solver.solve(MKLProblem(stack=DenseStack(Ks), y=y, loss=loss, regularizer=Uniform(), inner_tol=1e-8))
    assert res.converged and res.n_iter == 1 and len(loss.calls) == 1
    np.testing.assert_array_equal(res.weights, np.full(3, 1.0 / 3))


# --------------------------------------------------------------------------------------------------
# Group-lasso MKL is block coordinate descent
# --------------------------------------------------------------------------------------------------
def _bcd_iterates(preset: str, Ks, y, C, steps, solver_params=None, **reg_params):
    """The weights of the preset's solver, step by step through the shared loop's own pieces."""
    params = {"C": C, **{f"regularizer__{k}": v for k, v in reg_params.items()},
              **{f"solver__{k}": v for k, v in (solver_params or {}).items()}}
    parts = build_parts(preset, params=params)
    problem = MKLProblem(stack=DenseStack(Ks), y=y, loss=parts.loss, regularizer=parts.regularizer,
                         inner_tol=1e-9, tol=1e-14)
    loop = OuterLoop(problem)
    evaluate = parts.solver.evaluator(problem, loop)
    it = evaluate(*start_point(problem))
    out = [it.mu]
    for _ in range(steps):
        loop.record(it.mu, it.sol, it.q)
        it = parts.solver.step(evaluate, it)
        out.append(it.mu)
    return out


def _xu_group_lasso(Ks, y, C, steps, p=1.0):
    """Xu et al. (2010), (2.20) and its l_p version, with scikit-learn's SVC as the SVM (independent code)."""
    M = len(Ks)
    mu = np.full(M, M ** (-1.0 / p))
    out = [mu]
    for _ in range(steps):
        svc = SVC(C=C, kernel="precomputed", tol=1e-12).fit(np.tensordot(mu, Ks, axes=1), y)
        c = np.zeros(len(y))
        c[svc.support_] = svc.dual_coef_[0]
        norms = mu * np.sqrt(np.einsum("i,mij,j->m", c, Ks, c))  # ||f_m|| = mu_m sqrt(c'K_m c)
        mu = norms ** (2 / (p + 1)) / np.sum(norms ** (2 * p / (p + 1))) ** (1 / p)
        out.append(mu)
    return out


@pytest.mark.parametrize(("preset", "p"), [("mkl_gl", 1.0), ("lpmkl", 2.0), ("lpmkl", 4.0)])
def test_group_lasso_iterates_are_the_bcd_iterates(preset, p):
    # Full-rank Gaussian kernels: the SVM's classifier, hence each ||f_m||, is unique.  The presets
    # extrapolate the update; without it, their iterates are the papers'.
    pr = make_problem(n=25, positives=11, kinds=["rbf", "rbf", "rbf", "rbf"], seed=3, C=3.0)
    params = {} if preset == "mkl_gl" else {"p": p}
    ours = _bcd_iterates(preset, pr.Ks, pr.y, pr.C, steps=6, solver_params={"extrapolate": False}, **params)
    theirs = _xu_group_lasso(pr.Ks, pr.y, pr.C, steps=6, p=p)
    for k, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7, err_msg=f"iterate {k}")


# A tie drawn by the property test (two kernels whose forms nearly tie at the vertex optimum): the plain
# multiplicative update shrinks the losing weight by a factor close to 1 per iteration (gap 1.6e-3 after 200
# iterations); extrapolated, the preset certifies the same optimum as l1mkl in a few iterations.
TIE = dict(n=9, positives=5, kinds=["low_rank", "linear", "linear", "poly", "rbf", "poly"], copies=[],
           log10_scales=[-0.16785063731639926, 0.6485454181759103, 2.343429648121928, -0.7651211259151425,
                         0.0, 0.0], order=[0, 2, 3, 4, 1, 5], C=1.0, seed=0)


def test_group_lasso_extrapolation_ends_the_crawl_at_a_tie():
    pr = make_problem(**TIE)
    with pytest.warns(ConvergenceWarning, match="max_iter=60"):
        slow = solve_mkl(pr.Ks, pr.y, Simplex(), BlockCoordinateDescent(), C=pr.C, tol=1e-3, inner_tol=1e-6,
                         max_iter=60)
    assert not slow.converged and slow.dual_gap > 3e-3
    fast = solve_mkl(pr.Ks, pr.y, Simplex(), BlockCoordinateDescent(extrapolate=True), C=pr.C, tol=1e-5,
                     inner_tol=1e-8, max_iter=60)
    best = solve_mkl(pr.Ks, pr.y, Simplex(), LevelMethod(), C=pr.C, tol=1e-7, inner_tol=1e-10)
    assert fast.converged and fast.dual_gap <= 1e-5 and fast.n_iter < 40
    assert fast.objective == pytest.approx(best.objective, rel=2e-5)
    # never worse than the plain update: the upper bound falls at every iteration
    uppers = [h["upper"] for h in fast.history]
    assert all(b <= a * (1 + 1e-9) for a, b in zip(uppers, uppers[1:], strict=False))


# SimplexL2 (SM2MKL) has the simplex domain and a penalty: the accepted trials' guaranteed decrease counts it.
@pytest.mark.parametrize("reg", [LpBall(p=1.5), LpBall(p=2.0), LpBall(p=4.0), ElasticNet(v=0.3), ElasticNet(v=0.9),
                                 SimplexL2(theta=0.5)], ids=["p1.5", "p2", "p4", "enet0.3", "enet0.9", "simplex_l2"])
def test_group_lasso_extrapolation_reaches_the_reference_on_curved_domains(reg):
    Ks, y = random_problem(1, n=20, M=4)
    res = solve_mkl(Ks, y, reg, BlockCoordinateDescent(extrapolate=True), C=2.0, tol=1e-6)
    ref = reference_value(Ks, y, reg, C=2.0)
    assert res.converged and res.objective == pytest.approx(ref, rel=1e-5)
    mu = res.weights
    on_boundary = (np.linalg.norm(mu, ord=reg.p) if isinstance(reg, LpBall)
                   else mu.sum() if isinstance(reg, SimplexL2) else reg.v * mu.sum() + (1 - reg.v) * mu @ mu)
    assert on_boundary == pytest.approx(1.0, rel=1e-9)


@pytest.mark.parametrize("reg", [BoxSimplex(theta=0.5), GMKLL2()], ids=["box_simplex", "gmkl_l2"])
def test_group_lasso_extrapolation_needs_a_boundary_it_can_scale_onto(reg):
    Ks, y = random_problem(0, n=12, M=3)
    with pytest.raises(ValueError, match="extrapolate=True needs a regularizer that scales a point onto its"):
        solve_mkl(Ks, y, reg, BlockCoordinateDescent(extrapolate=True))
    with pytest.raises(ValueError, match="extrapolate must be True or False"):
        solve_mkl(Ks, y, Simplex(), BlockCoordinateDescent(extrapolate="yes"))


# --------------------------------------------------------------------------------------------------
# The shared loop's promises: max_iter, Ctrl-C, warm starts along a path
# --------------------------------------------------------------------------------------------------
ALL_NEW = [(Simplex(), SILP()), (Simplex(), MirrorDescent()), (GMKLL2(), ProjectedGradient())]


@pytest.mark.parametrize(("reg", "solver"), ALL_NEW, ids=[f"{r.name}-{s.name}" for r, s in ALL_NEW])
def test_max_iter_warns_with_the_gap(reg, solver):
    Ks, y = random_problem(1, n=20, M=4)
    with pytest.warns(ConvergenceWarning, match=r"max_iter=2 with a relative duality gap of [0-9.e-]+"):
        res = solve_mkl(Ks, y, reg, solver, tol=1e-12, max_iter=2)
    assert not res.converged and res.n_iter == 2 and 1e-12 < res.dual_gap < math.inf


@pytest.mark.parametrize(("reg", "solver"), ALL_NEW, ids=[f"{r.name}-{s.name}" for r, s in ALL_NEW])
def test_interrupt_returns_the_best_iterate(reg, solver):
    Ks, y = random_problem(3, n=20, M=4)

    def stop_after_three(entry):
        if entry["iteration"] == 3:
            raise KeyboardInterrupt

    with pytest.warns(FitInterruptedWarning, match="interrupted after 3 outer iterations"):
        res = solve_mkl(Ks, y, reg, solver, tol=1e-12, callback=stop_after_three)
    assert res.interrupted and not res.converged and res.n_iter == 3
    assert res.objective <= min(h["upper"] for h in res.history)


@pytest.mark.parametrize("solver", NEW_SOLVERS, ids=lambda s: s.name)
def test_warm_starts_along_a_box_path(solver):
    Ks, y = random_problem(4, n=20, M=4)
    # From a tightly solved solution: mirror descent's own alpha certifies it at once.  SILP's certificate is
    # the LP's convex combination of alphas (a single alpha is loose at the kink of the L1 optimum), and its
    # model starts again from the warm weights' cut, so it needs a few cuts, fewer than from the uniform start.
    cold = solve_mkl(Ks, y, Simplex(), solver, tol=1e-7)
    again = solve_mkl(Ks, y, Simplex(), solver, tol=1e-5, warm_start=cold)
    assert again.converged and again.n_iter <= (2 if solver.name == "mirror_descent" else cold.n_iter // 2)
    # Along a path of shrinking caps the warm weights are brought into the new domain (zeros revived for the
    # multiplicative steps of mirror descent) and each point is the cvxpy optimum.
    warm = attrs.evolve(cold, weights=np.eye(4)[int(np.argmax(cold.weights))])  # a vertex: the hardest start
    for theta in (0.6, 0.4, 0.3):
        reg = BoxSimplex(theta=theta)
        res = solve_mkl(Ks, y, reg, solver, tol=1e-6, warm_start=warm)
        assert res.converged and res.weights.max() <= theta * (1 + 1e-12)
        assert _agrees(res, reference(Ks, y, reg), 1e-6)
        warm = res


# --------------------------------------------------------------------------------------------------
# Domains a solver cannot handle
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("method", "regularizer", "alternatives"), [
    ("mkl_silp", "lp_ball", {"bcd", "projected_gradient"}),
    ("mkl_silp", "elastic_net", {"bcd", "projected_gradient"}),
    ("mkl_md", "l2_ball", {"bcd", "projected_gradient"}),
    ("mkl_md", "gmkl_elastic", {"bcd", "projected_gradient"}),
    ("gmkl_l2", None, None),
])
def test_incompatible_domain_names_the_alternatives(method, regularizer, alternatives):
    if regularizer is None:  # GMKL's domain mu >= 0 is not polyhedral in the solvers' sense
        for solver in ("silp", "mirror_descent", "level", "reduced_gradient"):
            with pytest.raises(IncompatiblePartsError, match=f"solver '{solver}' cannot run with regularizer "
                                                             f"'gmkl_l2'") as info:
                build_parts(method, solver=solver)
            assert {"bcd", "projected_gradient"} <= set(info.value.alternatives)
        return
    with pytest.raises(IncompatiblePartsError, match="polyhedral") as info:
        build_parts(method, regularizer=regularizer)
    assert alternatives <= set(info.value.alternatives)
    assert "silp" not in info.value.alternatives and "mirror_descent" not in info.value.alternatives
    for name in alternatives:
        assert name in str(info.value)


def test_solvers_check_the_domain_without_build_parts():
    Ks, y = random_problem(0, n=15, M=3)
    for solver in NEW_SOLVERS:
        for reg in (LpBall(p=2.0), ElasticNet(v=0.5), GMKLL2()):
            with pytest.raises(ValueError, match=f"'{solver.name}' cannot run with regularizer .*lacks: polyhedral"):
                solve_mkl(Ks, y, reg, solver)


def test_bad_parameters_are_rejected():
    Ks, y = random_problem(0, n=15, M=3)
    for solver, match in [(SILP(max_cuts=1), "max_cuts"), (SILP(lp_gap=0.0), "lp_gap"), (SILP(lp_gap=2), "lp_gap"),
                          (SILP(smoothing=1.0), "smoothing"), (SILP(smoothing=-0.1), "smoothing"),
                          (SILP(stabilize="yes"), "stabilize"),
                          (MirrorDescent(step_rule="nesterov"), "step_rule"), (MirrorDescent(eta=-1.0), "eta"),
                          (MirrorDescent(max_backtracks=0), "max_backtracks")]:
        with pytest.raises(ValueError, match=match):
            solve_mkl(Ks, y, Simplex(), solver)
    for reg, match in [(GMKLElastic(sigma=-1.0), "sigma"), (GMKLElastic(sigma=[1.0, 2.0]), "one per kernel"),
                       (GMKLElastic(c=-1.0), "c must"), (GMKLElastic(sigma=[1.0, 0.0, 1.0], c=0.0), "every sigma"),
                       (GMKLL2(c=0.0), "positive c")]:
        with pytest.raises(ValueError, match=match):
            solve_mkl(Ks, y, reg, ProjectedGradient())


# --------------------------------------------------------------------------------------------------
# SILP and mirror descent specifics
# --------------------------------------------------------------------------------------------------
def test_silp_authors_rule_stops_early_and_reports_the_certified_gap():
    Ks, y = random_problem(5, n=25, M=5)
    exact = solve_mkl(Ks, y, Simplex(), SILP(), C=10.0, tol=1e-7)
    early = solve_mkl(Ks, y, Simplex(), SILP(lp_gap=1e-2), C=10.0, tol=1e-7)
    assert early.converged and early.n_iter < exact.n_iter
    assert early.lower_bound <= exact.objective <= early.objective  # still certified bounds
    assert 0 < early.dual_gap < 0.05


def test_silp_lower_bound_never_decreases():
    # Spec section 9, item 8: the model value rises; the certified lower bound (from alpha_bar) with it.
    Ks, y = random_problem(6, n=25, M=6)
    res = solve_mkl(Ks, y, Simplex(), SILP(), C=10.0, tol=1e-7)
    lowers = np.maximum.accumulate([h["lower"] for h in res.history])
    assert res.converged and np.all(np.diff(lowers) >= 0)


@pytest.mark.parametrize("reg", [Simplex(), BoxSimplex(nu=0.3), SimplexL2(theta=0.5)], ids=lambda r: r.name)
def test_silp_stabilized_and_plain_reach_the_same_certified_optimum(reg):
    # The smoothing changes only the query points: the same LP model, the same certificate, the same optimum.
    # Twelve kernels on 40 points make the plain method zig-zag between vertices; both must bracket cvxpy's value.
    Ks, y = random_problem(8, n=40, M=12)
    ref = reference(Ks, y, reg, C=10.0)
    plain = solve_mkl(Ks, y, reg, SILP(stabilize=False), C=10.0, tol=1e-6, max_iter=3000)
    smooth = solve_mkl(Ks, y, reg, SILP(), C=10.0, tol=1e-6, max_iter=3000)
    for res in (plain, smooth):
        assert _agrees(res, ref, 1e-6), (res.n_iter, res.dual_gap, res.objective, ref)
        assert np.all(res.weights >= 0) and abs(res.weights.sum() - 1.0) <= 1e-12
    assert max(plain.lower_bound, smooth.lower_bound) <= min(plain.objective, smooth.objective) * (1 + 1e-12)
    if reg.name == "box_simplex":  # the sparsified queries keep the cap
        cap = reg.cap(12)
        assert all(h["n_selected"] >= 1 for h in smooth.history) and smooth.weights.max() <= cap * (1 + 1e-12)


def test_silp_smoothing_moves_the_queries_towards_the_best_weights():
    # The first query of the plain method is a vertex of the model LP (one cut: a single kernel); the smoothed
    # one mixes it with the centre (the uniform start), so it keeps every kernel above the sparsity threshold.
    Ks, y = random_problem(9, n=30, M=6)
    with pytest.warns(ConvergenceWarning, match="max_iter=2"):
        plain = solve_mkl(Ks, y, Simplex(), SILP(stabilize=False), C=10.0, tol=1e-12, max_iter=2)
    with pytest.warns(ConvergenceWarning, match="max_iter=2"):
        smooth = solve_mkl(Ks, y, Simplex(), SILP(smoothing=0.5), C=10.0, tol=1e-12, max_iter=2)
    assert plain.history[1]["n_selected"] == 1 and smooth.history[1]["n_selected"] == 6


def test_silp_smoothing_keeps_the_small_weights_the_lp_chose():
    """A hypothesis draw: eight linear kernels, one of them scaled by 1e3, C = 1.  The LP put 1.6e-4 on the
    scaled kernel; clearing the smoothed query's weights below 1e-3 of the largest cleared it too, the query
    became the current weights and SILP stalled at a certified gap of 5e-3 (L1-MKL certified 8e-4)."""
    p = make_problem(n=22, positives=3, kinds=["linear"] * 5, copies=[0, 0, 0], log10_scales=[0.0, 3.0, 0.0, 0.0, 0.0],
                     order=list(range(8)), C=1.0, seed=1494)
    res = solve_mkl(p.Ks, p.y, Simplex(), SILP(), C=p.C, tol=1e-3, inner_tol=1e-3, max_iter=200)
    assert res.converged and res.dual_gap <= 1e-3 and res.weights[1] > 0
    ref = reference(p.Ks, p.y, Simplex(), C=p.C)
    assert ref.brackets(res)


@pytest.mark.parametrize("rule", ["diminishing", "fixed"])
def test_mirror_descent_thesis_step_rules_certify_their_bounds(rule):
    Ks, y = random_problem(2, n=20, M=4)
    ref = reference(Ks, y, Simplex())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # the O(1/sqrt(T)) rules may stop at max_iter
        res = solve_mkl(Ks, y, Simplex(), MirrorDescent(step_rule=rule), tol=1e-4, max_iter=300)
    assert ref.brackets(res) and res.dual_gap <= 1e-2


@scaled(2.0)
@given(data=st.data(), M=st.integers(1, 7))
def test_entropic_prox_is_the_kl_prox_on_the_box_simplex(data, M):
    floats = st.floats(-3.0, 3.0)
    mu = np.exp(np.array(data.draw(st.lists(floats, min_size=M, max_size=M))))
    cap = data.draw(st.sampled_from([1.0, 0.9, 0.5, 0.34])) if M > 1 else 1.0
    cap = max(cap, 1.0 / M)
    mu = np.asarray(BoxSimplex(theta=cap).project(mu / mu.sum()))
    if np.any(mu <= 1e-9):
        mu = 0.5 * mu + 0.5 / M  # strictly inside, as the solver's iterates are
    g = np.array(data.draw(st.lists(st.floats(-50.0, 50.0), min_size=M, max_size=M)))
    eta = data.draw(st.floats(1e-3, 10.0))
    x = entropic_prox(mu, g, eta, cap)
    assert x.sum() == pytest.approx(1.0, abs=1e-12) and np.all(x >= 0) and np.all(x <= cap * (1 + 1e-12))
    # The same prox by Clarabel (exponential cone): eta g'z + KL(z || mu) over the box-simplex.
    z = cp.Variable(M)
    prob = cp.Problem(cp.Minimize(eta * g @ z + cp.sum(cp.kl_div(z, mu))), [cp.sum(z) == 1, z >= 0, z <= cap])
    prob.solve(solver=cp.CLARABEL)

    def value(v):
        pos = v > 0
        return float(eta * g @ v + np.sum(v[pos] * np.log(v[pos] / mu[pos])))

    assert value(x) <= value(np.clip(z.value, 0, None)) + 1e-7 * max(1.0, abs(value(x)))


# --------------------------------------------------------------------------------------------------
# GMKL regularizers
# --------------------------------------------------------------------------------------------------
@scaled(2.0)
@given(g=st.lists(st.floats(-5.0, 5.0), min_size=1, max_size=6), sigma=st.floats(0.0, 3.0), c=st.floats(0.01, 5.0),
       seed=st.integers(0, 2**16))
def test_gmkl_dual_bound_is_the_conjugate(g, sigma, c, seed):
    g = np.array(g)
    reg = GMKLElastic(sigma=sigma, c=c)
    bound = reg.dual_bound(g)
    nu_star = np.maximum(g - sigma, 0.0) / c  # the maximiser
    assert bound == pytest.approx(nu_star @ g - reg.penalty(nu_star), rel=1e-12, abs=1e-12)
    for nu in np.abs(np.random.default_rng(seed).normal(size=(20, len(g)))) * 3:
        assert nu @ g - reg.penalty(nu) <= bound + 1e-12
    # Its closed-form step minimises sum a/nu + r(nu) coordinate-wise: the derivative vanishes.
    mu, q = np.abs(g) + 0.1, np.abs(g[::-1]) + 0.2
    nu = reg.closed_form_update(mu, q)
    a = 0.5 * mu * mu * q
    np.testing.assert_allclose(-a / nu**2 + sigma + c * nu, 0.0, atol=1e-9 * max(1.0, float(np.max(a / nu**2))))


def test_gmkl_l1_bound_is_finite_only_when_feasible():
    reg = GMKLL1(sigma=[1.0, 2.0])
    assert reg.dual_bound(np.array([0.5, 2.0])) == 0.0
    assert reg.dual_bound(np.array([1.0 + 1e-9, 0.0])) == math.inf
    Ks, y = random_problem(3, n=20, M=3)
    ref = reference(Ks, y, GMKLL1(sigma=1.0), C=1.0)
    # (the certified gap is finite through the ray s * alpha: tests/test_ray_certificate.py)
    res = solve_mkl(Ks, y, GMKLL1(sigma=1.0), BlockCoordinateDescent(), C=1.0, tol=1e-8,
                    stopping="relative_change", max_iter=2000)
    # The authors' rule: the objective is close to the optimum, and whatever bounds are reported are certified.
    assert res.converged and ref.brackets(res)
    assert res.objective == pytest.approx(ref.value, rel=1e-4)


def test_gmkl_l2_is_gmkl_elastic_without_l1():
    Ks, y = random_problem(8, n=20, M=4)
    a = solve_mkl(Ks, y, GMKLL2(c=0.5), ProjectedGradient(), C=5.0)
    b = solve_mkl(Ks, y, GMKLElastic(sigma=0.0, c=0.5), BlockCoordinateDescent(), C=5.0)
    assert a.converged and b.converged and a.objective == pytest.approx(b.objective, rel=2e-6)
    assert not np.allclose(a.weights.sum(), 1.0)  # not a simplex: the scale of the weights is learnt


def test_presets_fit_through_the_estimator():
    from multikernel import MKLClassifier

    X = np.random.default_rng(0).normal(size=(40, 3))
    y = (X[:, 0] + 0.3 * X[:, 1] > 0).astype(int)
    Ks = np.stack([np.exp(-0.5 * g * ((X[:, None] - X[None]) ** 2).sum(-1)) for g in (0.1, 1.0, 10.0)])
    for method in ("mkl_silp", "mkl_md", "mkl_gl", "gmkl_l2", "gmkl_elastic"):
        clf = MKLClassifier(method=method, kernels="precomputed", C=10.0).fit(Ks, y)
        assert clf.score(Ks, y) > 0.9


def test_shared_weights_across_classes_agree():
    # The task seam: T = 3 one-vs-rest blocks sharing one weight vector (their objectives summed).
    from sklearn.datasets import load_iris

    from multikernel import MKLClassifier

    X, y = load_iris(return_X_y=True)
    X, y = X[::3], y[::3]
    Ks = np.stack([np.exp(-g * ((X[:, None] - X[None]) ** 2).sum(-1)) for g in (0.01, 0.1, 1.0, 10.0)])
    fits = {m: MKLClassifier(method=m, kernels="precomputed", C=10.0, multiclass="shared", tol=1e-6, max_iter=1000,
                             inner_tol=1e-8).fit(Ks, y).results_[0] for m in ("l1mkl", "mkl_silp", "mkl_md")}
    for res in fits.values():
        assert res.converged and res.dual_gap <= 1e-6
    assert max(r.lower_bound for r in fits.values()) <= min(r.objective for r in fits.values()) * (1 + 1e-12)
