"""SMO-MKL (Vishwanathan et al. 2010): the pair step's Newton method, the certified optimum against cvxpy +
Clarabel and the other lp-MKL solvers, the paper's squared-norm parametrisation, warm starts, limits and bad
input."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from _mkl_testing import make_problem, random_problem, reference, solve_mkl
from scipy.optimize import minimize_scalar
from sklearn.exceptions import ConvergenceWarning

import multikernel
from multikernel._ext import _smo_mkl
from multikernel.core.capabilities import Capability, IncompatiblePartsError, check_compatible, compatible_solvers
from multikernel.core.interfaces import MKLProblem, MKLResult
from multikernel.core.registry import get_registry
from multikernel.errors import FitInterruptedWarning
from multikernel.plugins.losses import CSVCLoss, CSVCNoBiasLoss
from multikernel.plugins.regularizers import L2Ball, LpBall, Simplex, SimplexL2
from multikernel.plugins.smo_mkl import SMOMKL, lp_weights, solve_lp_dual
from multikernel.plugins.solvers import BlockCoordinateDescent, ProjectedGradient
from multikernel.stack.kernelset import KernelSet
from multikernel.stack.storage import DenseStack


# --------------------------------------------------------------------------------------------------
# the pair step: phi(t) = lin t - c ||q + 2 t g + t^2 h||_r^s on [0, tmax]
# --------------------------------------------------------------------------------------------------
def _phi(t, q, g, h, r, c, s, lin):
    qt = np.maximum(q + t * (2 * g + t * h), 0.0)
    N = float(np.sum(qt) if r == 1.0 else np.sum(qt**r) ** (1.0 / r))
    return lin * t - c * N**s


def test_newton_step_is_exact_for_one_kernel():
    # M = 1: phi is the quadratic lin t - c (q + 2 t g + t^2 h); its maximiser is (lin - 2 c g) / (2 c h).
    q, g, h = np.array([3.0]), np.array([0.4]), np.array([2.5])
    t, it = _smo_mkl.pair_step(10.0, q, g, h, 4.0, 0.5, 1, 2.0)
    assert t == pytest.approx((2.0 - 2 * 0.5 * 0.4) / (2 * 0.5 * 2.5), rel=1e-13)
    assert it <= 3  # Newton is exact on a quadratic (one step, then the stopping test)


@pytest.mark.parametrize("r", [1.0, 1.5, 2.0, 4.0303, 30.0])
@pytest.mark.parametrize("s", [1, 2])
@pytest.mark.parametrize("seed", range(4))
def test_newton_step_maximises_phi(r, s, seed):
    """Random pairs of kernels (q_m >= 0 with g_m^2 <= q_m h_m, as for real kernels): the step equals the
    bounded scalar maximiser of scipy."""
    rng = np.random.default_rng(seed)
    M = 2 + seed
    A = rng.normal(size=(M, 3, 2))  # kernel factors: q_m = |A_m a|^2 along a and the pair direction
    a, d = rng.normal(size=2), rng.normal(size=2)
    q = np.array([np.sum((Am @ a) ** 2) for Am in A])
    g = np.array([(Am @ a) @ (Am @ d) for Am in A])
    h = np.array([np.sum((Am @ d) ** 2) for Am in A])
    c, tmax = 0.5 if s == 1 else 0.1, 50.0
    # A linear term that makes phi'(0) > 0 and puts the maximiser inside (0, tmax).
    N, w = lp_weights(q, r / (r - 1.0) if r > 1 else math.inf)
    lin = (c * s * N ** (s - 1) * float(w @ (2 * g))) + 1.0 + seed
    t, _ = _smo_mkl.pair_step(tmax, q, g, h, r, c, s, lin)
    ref = minimize_scalar(lambda x: -_phi(x, q, g, h, r, c, s, lin), bounds=(0.0, tmax), method="bounded",
                          options={"xatol": 1e-12})
    assert _phi(t, q, g, h, r, c, s, lin) >= -ref.fun - 1e-10 * max(1.0, abs(ref.fun))
    assert t == pytest.approx(ref.x, rel=1e-5, abs=1e-8)


def test_newton_step_from_zero_forms_and_at_the_bound():
    # alpha = 0: q = g = 0, phi = lin t - c t^2 ||h||_r (s = 1) or lin t - c t^4 ||h||_r^2 (s = 2).
    q, g, h, r = np.zeros(2), np.zeros(2), np.array([1.0, 2.0]), 2.0
    hn = math.sqrt(5.0)
    assert _smo_mkl.pair_step(10.0, q, g, h, r, 0.5, 1, 2.0)[0] == pytest.approx(2.0 / hn, rel=1e-12)
    # s = 2 has no curvature at t = 0: the bisection fallback finds (lin / (4 c ||h||^2))^(1/3).
    t2, _ = _smo_mkl.pair_step(10.0, q, g, h, r, 0.1, 2, 2.0)
    assert t2 == pytest.approx((2.0 / (4 * 0.1 * 5.0)) ** (1.0 / 3.0), rel=1e-10)
    # The maximiser beyond the bound: the step stops at the bound.
    assert _smo_mkl.pair_step(0.1, q, g, h, r, 0.5, 1, 2.0)[0] == 0.1


@pytest.mark.parametrize("p", [1.33, 2.0, 3.0, math.inf])
@pytest.mark.parametrize("C", [0.01, 1.0, 1e4])
def test_two_points_closed_form(p, C):
    """Two points of opposite labels: alpha = (a, a), q_m = a^2 h_m, so the lp dual 2a - a^2 ||h||_p*/2 is
    maximised at a = min(C, 2 / ||h||_p*), and the paper's 2a - a^4 ||h||^2 / (8 lam) at (4 lam/||h||^2)^(1/3)."""
    Ks = np.array([[[2.0, 0.5], [0.5, 1.0]], [[1.0, -0.2], [-0.2, 3.0]], [[0.3, 0.1], [0.1, 0.2]]])
    y = np.array([1.0, -1.0])
    h = Ks[:, 0, 0] + Ks[:, 1, 1] - 2 * Ks[:, 0, 1]
    hn, mu = lp_weights(h, p)
    alpha, weights, _ = solve_lp_dual(Ks, y, C, p)
    assert alpha == pytest.approx(np.full(2, min(C, 2.0 / hn)), rel=1e-10)
    assert weights == pytest.approx(mu, rel=1e-10)
    lam = 0.7
    alpha, d, _ = solve_lp_dual(Ks, y, C, p, lam=lam)
    a = min(C, (4 * lam / hn**2) ** (1.0 / 3.0))
    assert alpha == pytest.approx(np.full(2, a), rel=1e-8)
    assert d == pytest.approx(a * a * hn * mu / (2 * lam), rel=1e-8)


# --------------------------------------------------------------------------------------------------
# the certified optimum
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("p", [1.1, 4.0 / 3.0, 2.0, 3.0], ids=["1.1", "4/3", "2", "3"])
@pytest.mark.parametrize("case", [
    dict(n=25, positives=11, kinds=["linear", "rbf", "poly", "low_rank"], copies=[1, 1], C=1.0, seed=1),
    dict(n=20, positives=6, kinds=["rbf", "flat_rbf", "linear"], copies=[0], log10_scales=[2.0, -1.5, 0.5],
         C=0.01, seed=2),
    dict(n=22, positives=12, kinds=["poly", "rbf", "linear"], copies=[2], log10_scales=[-2.0, 1.0, 3.0],
         C=1e4, seed=3),
    dict(n=18, positives=1, kinds=["rbf", "linear"], C=100.0, seed=4),
], ids=["duplicates", "unnormalized-C1e-2", "unnormalized-C1e4", "one-positive"])
@pytest.mark.parametrize("svm_bounds", [True, False], ids=["svm-bounds", "steps-only"])
def test_optimum_equals_cvxpy_and_bcd(p, case, svm_bounds):
    drawn = make_problem(**case)
    reg = LpBall(p=p)
    ref = reference(drawn.Ks, drawn.y, reg, drawn.C)
    res = solve_mkl(drawn.Ks, drawn.y, reg, SMOMKL(svm_bounds=svm_bounds), C=drawn.C, tol=1e-7, max_iter=1000)
    assert res.converged and res.dual_gap <= 1e-7
    assert ref.brackets(res), (res.lower_bound, res.objective, ref)
    bcd = solve_mkl(drawn.Ks, drawn.y, reg, BlockCoordinateDescent(), C=drawn.C, tol=1e-7, max_iter=3000)
    slack = 2e-7 * abs(ref.value)
    assert res.objective <= bcd.objective + slack and bcd.objective <= res.objective + slack
    # The weights lie on the unit sphere of the lp norm.  From the steps alone they are the closed form of
    # the returned alpha; with the SVM bounds the classifier may be the SVM's at those weights instead.
    assert np.sum(res.weights**p) ** (1 / p) == pytest.approx(1.0, rel=1e-9)
    if not svm_bounds:
        assert res.weights == pytest.approx(lp_weights(DenseStack(drawn.Ks).quad_forms(res.coef), p)[1], rel=1e-9)


def test_agrees_with_projected_gradient_on_l2_ball_float32():
    Ks, y = random_problem(5, n=40, M=6)
    res = solve_mkl(Ks.astype(np.float32), y, L2Ball(), SMOMKL(), C=10.0, tol=1e-6)
    pg = solve_mkl(Ks, y, L2Ball(), ProjectedGradient(), C=10.0, tol=1e-6, max_iter=2000)
    assert res.converged and abs(res.objective - pg.objective) <= 2e-6 * abs(pg.objective) + 1e-5


def test_paper_parametrisation_corresponds_to_the_lp_ball():
    """The paper's (C, lambda) optimum, rescaled by rho = ||d||_p, is the library's lp-MKL optimum at rho C:
    weights d / rho, alpha rho alpha, the same bias (checked against block coordinate descent)."""
    Ks, y = random_problem(7, n=30, M=4)
    p, C, lam = 1.5, 2.0, 0.3
    alpha, d, b = solve_lp_dual(Ks, y, C, p, lam=lam, eps=1e-10)
    rho = float(np.sum(d**p) ** (1 / p))
    bcd = solve_mkl(Ks, y, LpBall(p=p), BlockCoordinateDescent(), C=rho * C, tol=1e-9, max_iter=5000)
    assert d / rho == pytest.approx(bcd.weights, rel=1e-4, abs=1e-6)
    assert rho * alpha == pytest.approx(bcd.alpha, rel=1e-3, abs=1e-4 * rho * C)
    mu, a2, b2 = solve_lp_dual(Ks, y, rho * C, p, eps=1e-10)[1], *solve_lp_dual(Ks, y, rho * C, p, eps=1e-10)[::2]
    assert mu == pytest.approx(d / rho, rel=1e-6, abs=1e-9)
    assert a2 == pytest.approx(rho * alpha, rel=1e-6, abs=1e-8)
    assert b2 == pytest.approx(b, rel=1e-6, abs=1e-8)


# --------------------------------------------------------------------------------------------------
# warm starts, limits, interruption
# --------------------------------------------------------------------------------------------------
def _problem(Ks, y, reg=None, **kw) -> MKLProblem:
    return MKLProblem(stack=DenseStack(Ks), y=y, loss=CSVCLoss(C=kw.pop("C", 1.0)),
                      regularizer=reg or LpBall(p=2.0), **kw)


def test_warm_start_from_alpha_and_from_weights():
    Ks, y = random_problem(8, n=40, M=5)
    cold = SMOMKL().solve(_problem(Ks, y, tol=1e-6))
    again = SMOMKL().solve(_problem(Ks, y, tol=1e-6, warm_start=cold))
    assert again.converged and again.n_iter <= 2 and again.objective == pytest.approx(cold.objective, rel=1e-6)
    # Weights only (a result of another solver without alpha of this shape): one SVM at those weights.
    weights_only = MKLResult(weights=cold.weights, alpha=np.zeros(3), coef=np.zeros(3), bias=0.0, objective=0.0,
                             lower_bound=0.0, dual_gap=0.0, n_iter=0, converged=True)
    from_weights = SMOMKL().solve(_problem(Ks, y, tol=1e-6, warm_start=weights_only))
    assert from_weights.converged and from_weights.objective == pytest.approx(cold.objective, rel=1e-5)
    # A neighbouring C: the warm alpha is clipped to the new box and still converges to the new optimum.
    path = SMOMKL().solve(_problem(Ks, y, C=0.3, tol=1e-6, warm_start=cold))
    fresh = SMOMKL().solve(_problem(Ks, y, C=0.3, tol=1e-6))
    assert path.converged and path.objective == pytest.approx(fresh.objective, rel=2e-6)


def test_max_iter_warns_with_the_gap_reached():
    Ks, y = random_problem(9, n=60, M=5)
    with pytest.warns(ConvergenceWarning, match=r"max_iter=2 with a relative duality gap of"):
        res = SMOMKL(steps_per_round=3).solve(_problem(Ks, y, C=100.0, tol=1e-9, max_iter=2))
    assert not res.converged and res.n_iter == 2 and math.isfinite(res.dual_gap)


def test_interrupt_returns_the_best_certified_iterate():
    Ks, y = random_problem(10, n=40, M=4)

    def stop(entry):
        if entry["iteration"] == 3:
            raise KeyboardInterrupt

    with pytest.warns(FitInterruptedWarning, match="interrupted after 3 outer iterations"):
        res = SMOMKL(steps_per_round=5).solve(_problem(Ks, y, tol=1e-12, callback=stop))
    assert res.interrupted and not res.converged
    assert res.objective <= min(h["upper"] for h in res.history)


def test_estimator_method_preset():
    X, y = multikernel_data()
    clf = multikernel.MKLClassifier(method="smo_mkl", C=1.0).fit(X, y)
    ref = multikernel.MKLClassifier(method="lpmkl", C=1.0, tol=1e-4).fit(X, y)
    assert clf.dual_gap_ <= 1e-3 and clf.dual_gap_ <= ref.dual_gap_ + 1e-3
    assert clf.objective_ == pytest.approx(ref.objective_, rel=2e-3)
    assert np.mean(clf.predict(X) == ref.predict(X)) >= 0.97


def multikernel_data():
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    rng = np.random.default_rng(0)
    idx = rng.choice(len(y), 120, replace=False)
    return X[idx], y[idx]


# --------------------------------------------------------------------------------------------------
# what it refuses
# --------------------------------------------------------------------------------------------------
def test_capability_and_compatibility():
    assert Capability.LP_BALL in SMOMKL.requires
    assert "smo_mkl" in compatible_solvers(LpBall(p=2.0)) and "smo_mkl" in compatible_solvers(L2Ball())
    check_compatible(LpBall(p=1.5), SMOMKL())
    for reg in (Simplex(), SimplexL2(theta=1.0)):
        assert "smo_mkl" not in compatible_solvers(reg)
        with pytest.raises(IncompatiblePartsError, match=r"lacks: lp_ball"):
            check_compatible(reg, SMOMKL())


@pytest.mark.parametrize("make, match", [
    (lambda Ks, y: _problem(Ks, y, reg=LpBall(p=1.0)), r"needs p > 1.*'level', 'reduced_gradient' or 'bcd'"),
    (lambda Ks, y: _problem(Ks, y, reg=Simplex()), r"cannot run with regularizer .*lacks: lp_ball"),
    (lambda Ks, y: MKLProblem(stack=DenseStack(Ks), y=y, loss=CSVCNoBiasLoss(), regularizer=LpBall()),
     r"solver 'smo_mkl' solves the csvc loss only; got loss 'csvc_nobias'"),
    (lambda Ks, y: MKLProblem(stack=DenseStack(Ks), y=np.array([y, -y]), loss=CSVCLoss(), regularizer=LpBall()),
     r"one binary problem"),
])
def test_refuses_what_it_cannot_solve(make, match):
    Ks, y = random_problem(11, n=12, M=2)
    with pytest.raises(ValueError, match=match):
        SMOMKL(p1_solver=None).solve(make(Ks, y))


def test_p_equal_1_is_handed_to_the_p1_solver_and_reaches_its_optimum():
    """A grid over p that includes 1 runs with one solver: SMO-MKL hands p = 1 to ``p1_solver`` (bcd by
    default), whose certified optimum it returns."""
    from multikernel.core.registry import get_registry

    Ks, y = random_problem(13, n=30, M=4)
    handed = SMOMKL().solve(_problem(Ks, y, reg=LpBall(p=1.0)))
    direct = get_registry().create("solver", "bcd").solve(_problem(Ks, y, reg=LpBall(p=1.0)))
    assert handed.dual_gap <= 1e-3
    np.testing.assert_array_equal(handed.weights, direct.weights)  # bcd's own (deterministic) solve
    assert handed.objective == direct.objective


def test_refuses_bad_parameters_and_lazy_stacks():
    Ks, y = random_problem(12, n=12, M=2)
    with pytest.raises(ValueError, match="steps_per_round must be a positive integer"):
        SMOMKL(steps_per_round=0).solve(_problem(Ks, y))
    with pytest.raises(ValueError, match="shrinking must be True or False"):
        SMOMKL(shrinking="yes").solve(_problem(Ks, y))
    with pytest.raises(ValueError, match="svm_bounds must be True or False"):
        SMOMKL(svm_bounds=1).solve(_problem(Ks, y))
    with pytest.raises(ValueError, match="lam must be a positive number"):
        solve_lp_dual(Ks, y, 1.0, 2.0, lam=-1.0)
    with pytest.raises(ValueError, match="both classes"):
        solve_lp_dual(Ks, np.ones(12), 1.0, 2.0)
    with pytest.raises(ValueError, match="C must be positive"):
        solve_lp_dual(Ks, y, 0.0, 2.0)
    with pytest.raises(ValueError, match=r"shape \(M, n, n\)"):
        solve_lp_dual(Ks[0], y, 1.0, 2.0)


def test_subset_stack_is_solved_like_its_copy():
    Ks, y = random_problem(13, n=30, M=3)
    rows = np.arange(0, 30, 2)
    view = DenseStack(Ks).subset(rows)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = SMOMKL().solve(MKLProblem(stack=view, y=y[rows], loss=CSVCLoss(), regularizer=LpBall(p=2.0)))
    b = SMOMKL().solve(_problem(Ks[:, rows][:, :, rows].copy(), y[rows]))
    assert a.objective == pytest.approx(b.objective, rel=1e-12)


# --------------------------------------------------------------------------------------------------
# shrinking and the row cache of stacks not held in memory
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("p, C", [(1.1, 10.0), (4.0 / 3.0, 1e3), (2.0, 0.1)])
def test_shrinking_reaches_the_same_certified_optimum(p, C):
    """Shrinking changes which indices the steps visit, not the problem: both runs stop at the same
    certified optimum, and the one with shrinking ends with every variable active and KKT-optimal."""
    Ks, y = random_problem(21, n=80, M=6)
    runs = {shrink: SMOMKL(shrinking=shrink).solve(_problem(Ks, y, reg=LpBall(p=p), C=C, tol=1e-7, max_iter=3000))
            for shrink in (True, False)}
    for res in runs.values():
        assert res.converged and res.dual_gap <= 1e-7
    assert runs[True].objective == pytest.approx(runs[False].objective, rel=3e-7)
    # The paper-form entry point: the same alpha with and without shrinking at a tight KKT tolerance.
    a1, w1, b1 = solve_lp_dual(Ks, y, C, p, eps=1e-10, shrinking=True)
    a0, w0, b0 = solve_lp_dual(Ks, y, C, p, eps=1e-10, shrinking=False)
    assert w1 == pytest.approx(w0, rel=1e-6, abs=1e-9)
    assert b1 == pytest.approx(b0, rel=1e-5, abs=1e-6)


def test_shrinking_state_is_exact_after_each_call():
    """After every call U equals K_m (y*alpha) on every index (the shrunk ones rebuilt), Ubar the part of
    the variables at C, and the outputs q and F match them."""
    from multikernel.plugins.smo_mkl import _DenseRows, _State

    Ks, y = random_problem(22, n=120, M=5)
    C = np.full(len(y), 5.0)
    state = _State(_DenseRows(Ks), y, C, np.zeros(len(y)), 1.5, None, shrinking=True)
    for _ in range(8):
        state.run(1e-6, 150)
        coef = y * state.alpha
        U = np.einsum("mkl,l->mk", Ks, coef)
        assert np.allclose(state.U, U, rtol=1e-9, atol=1e-9)
        assert np.allclose(state.Ubar, np.einsum("mkl,l->mk", Ks, np.where(state.alpha >= C, coef, 0.0)),
                           rtol=1e-9, atol=1e-9)
        assert state.q == pytest.approx(U @ coef, rel=1e-9, abs=1e-12)
        _, mu = lp_weights(state.q, 1.5)
        assert state.F == pytest.approx(mu @ U, rel=1e-8, abs=1e-10)  # theta = mu for the lp ball (s = 1)
    assert not state.active.all()  # something was shrunk on the way (the test exercises the rebuild)


def _lazy_problem(n=60, seed=23, cache_size=200.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    registry = get_registry()
    builders = [registry.create("kernel", "rbf", gamma=g) for g in (0.1, 0.5, 2.0)] + [
        registry.create("kernel", "linear"), registry.create("kernel", "poly", degree=2)]
    lazy = KernelSet(builders, backend="lazy", cache_size=cache_size).fit_stack(X)
    dense = KernelSet(builders, backend="dense").fit_stack(X)
    return lazy, dense, y


@pytest.mark.parametrize("cache_size", [200.0, 1e-6])
def test_lazy_stack_through_the_row_cache_equals_dense(cache_size):
    """A lazy stack is read through the row cache (1e-6 MB: two rows, evicted at almost every step) and
    reaches the optimum of the same kernels held in memory."""
    lazy, dense, y = _lazy_problem(cache_size=cache_size)
    assert np.allclose(lazy.kernel_rows([3, 7]), dense.to_array()[:, [3, 7], :], rtol=1e-12, atol=1e-12)
    kw = dict(y=y, loss=CSVCLoss(C=10.0), regularizer=LpBall(p=4.0 / 3.0), tol=1e-6, max_iter=2000)
    a = SMOMKL().solve(MKLProblem(stack=lazy, **kw))
    # The same steps on the dense stack (its default adds the SVM bounds, which a lazy stack never uses).
    b = SMOMKL(svm_bounds=False).solve(MKLProblem(stack=dense, **kw))
    c = SMOMKL().solve(MKLProblem(stack=dense, **kw))
    assert a.converged and b.converged and c.converged
    assert a.objective == pytest.approx(b.objective, rel=2e-6)
    assert a.weights == pytest.approx(b.weights, rel=1e-3, abs=1e-5)
    assert c.objective == pytest.approx(b.objective, rel=2e-6)


def test_row_cache_errors_and_interrupts_propagate():
    from multikernel.plugins.smo_mkl import _CachedRows, _State

    lazy, _, y = _lazy_problem(n=30, cache_size=1e-6)
    rows = _CachedRows(lazy)
    assert rows.buffer.shape[0] == 2
    state = _State(rows, y, np.full(len(y), 1.0), np.zeros(len(y)), 2.0, None)

    def broken(index):
        raise RuntimeError("feature store unavailable")

    lazy.kernel_rows = broken
    with pytest.raises(RuntimeError, match="feature store unavailable"):
        state.run(1e-6, 100)

    def interrupt(index):
        raise KeyboardInterrupt

    lazy.kernel_rows = interrupt
    problem = MKLProblem(stack=lazy, y=y, loss=CSVCLoss(), regularizer=LpBall(p=2.0), tol=1e-9)
    with pytest.warns(FitInterruptedWarning):
        res = SMOMKL().solve(problem)
    assert res.interrupted
