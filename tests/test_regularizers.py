"""Regularizers: dual bounds, weight steps and projections against cvxpy, and the box-simplex edge cases."""

from __future__ import annotations

import math

import cvxpy as cp
import numpy as np
import pytest
from _mkl_testing import CLARABEL_TIGHT, cvx_domain, cvx_penalty, scaled
from hypothesis import given
from hypothesis import strategies as st

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
from multikernel.solve.projections import (
    box_simplex_inverse,
    project_capped_simplex,
    project_lp_ball_nonneg,
    project_simplex,
)

# Clarabel's references: it flags tiny inverse weights as "inaccurate" (the checks allow for that), and
# cvxpy evaluates powers at slightly negative solver outputs (we read the solver's own optimal value).
pytestmark = pytest.mark.filterwarnings("ignore:Solution may be inaccurate:UserWarning",
                                        "ignore:invalid value encountered in power:RuntimeWarning")

FAST = scaled(1.5)
CVX = scaled(0.6)  # each example runs ~16 Clarabel solves
seeds = st.integers(0, 2**31 - 1)
sizes = st.integers(1, 6)


@st.composite
def vectors(draw, low: float = -3.0, high: float = 3.0, signed: bool = False, zeros: bool = False,
            size: int | None = None) -> np.ndarray:
    """A vector drawn with its structure: 1 to 6 entries (or ``size``) of magnitudes 10^[low, high], with
    exact ties (the entries repeat a few drawn values), and optionally zeros and both signs."""
    values = draw(st.lists(st.floats(low, high), min_size=1, max_size=4))
    M = size if size is not None else draw(sizes)
    v = 10.0 ** np.array(values)[draw(st.lists(st.integers(0, len(values) - 1), min_size=M, max_size=M))]
    if signed:
        v *= draw(st.lists(st.sampled_from([-1.0, 1.0]), min_size=M, max_size=M))
    if zeros:
        v[draw(st.lists(st.booleans(), min_size=M, max_size=M))] = 0.0
    return v


def _violation(reg, mu: np.ndarray, M: int) -> float:
    """How far ``mu`` is outside the domain of ``reg`` (0 when feasible)."""
    neg = float(np.max(np.maximum(-mu, 0.0)))
    if reg.name == "uniform":
        return float(np.max(np.abs(mu - 1.0 / M)))
    if reg.name in ("simplex", "simplex_l2", "simplex_power"):
        return max(neg, abs(mu.sum() - 1.0))
    if reg.name == "box_simplex":
        return max(neg, abs(mu.sum() - 1.0), float(np.max(mu)) - reg.cap(M))
    if reg.name in ("lp_ball", "l2_ball"):
        return max(neg, float(np.linalg.norm(mu, float(reg.p))) - 1.0)
    if reg.name == "elastic_net":
        return max(neg, float(reg.v * mu.sum() + (1 - reg.v) * mu @ mu) - 1.0)
    raise AssertionError(reg.name)


def _solve(prob: cp.Problem) -> tuple[float, float]:
    """Clarabel's optimal value, and the slack its accuracy needs (0 when it solved to its tolerances).

    Clarabel's defaults, then tight tolerances, then more static regularization (the projection of
    (1, 1, 1, 0) onto the l2 ball ended in a numerical error with the defaults); an "inaccurate" value (its
    box-simplex inverse was 6e-6 below the optimum, at a point 2e-7 off the simplex) is used only when no
    setting solves, with a slack of 1e-4.  ``prob.value`` re-evaluates powers at slightly infeasible points
    (nan), so the solver's own value is read.
    """
    inaccurate = None
    for opts in ({}, CLARABEL_TIGHT, {"static_regularization_constant": 1e-6}):
        try:
            prob.solve(solver=cp.CLARABEL, **opts)
        except cp.error.SolverError:
            continue
        value = float(prob.solution.opt_val)
        if prob.status == cp.OPTIMAL:
            return value, 0.0
        if prob.status == cp.OPTIMAL_INACCURATE and inaccurate is None:
            inaccurate = value
    assert inaccurate is not None, "Clarabel failed with every setting tried"
    return inaccurate, 1e-4 * max(1.0, abs(inaccurate))


def _regularizers(M: int) -> list:
    return [
        Uniform(), Simplex(), BoxSimplex(theta=min(1.0, 1.5 / M)), BoxSimplex(nu=0.5), BoxSimplex(nu=1.0),
        SimplexL2(theta=0.3), SimplexPower(theta=2.0, p=3.0), SimplexPower(theta=0.5, p=1.5),
        LpBall(p=1.0), LpBall(p=1.5), L2Ball(), LpBall(p=3.0), LpBall(p=math.inf),
        ElasticNet(v=0.0), ElasticNet(v=0.3), ElasticNet(v=1.0),
    ]


def test_registered_by_name():
    names = set(get_registry().names("regularizer"))
    assert {"uniform", "simplex", "box_simplex", "simplex_l2", "simplex_power", "lp_ball", "l2_ball",
            "elastic_net"} <= names
    assert get_registry().create("regularizer", "box_simplex", nu=0.5).cap(4) == pytest.approx(0.5)


@CVX
@given(g=vectors(low=-2.0, high=2.0, zeros=True))
def test_dual_bound_is_the_exact_conjugate(g):
    M = len(g)
    for reg in _regularizers(M):
        m = cp.Variable(M)
        ref, slack = _solve(cp.Problem(cp.Maximize(m @ g - cvx_penalty(reg, m)), cvx_domain(reg, m, M)))
        ours = reg.dual_bound(g)
        # Clarabel's accuracy is relative to the data and to the value (LpBall(p=3) at g = 100 * ones(5): 1.2e-5
        # above the closed form 100 * 5^(2/3), which ours is to the last digit)
        scale = max(float(np.max(g)), abs(ref), 1.0)
        # An over-estimate keeps the lower bound certified; it must still be tight.
        assert ours >= ref - 1e-7 * scale - slack, reg
        assert ours == pytest.approx(ref, rel=1e-6, abs=1e-7 * scale + slack), reg


@FAST
@given(g=vectors(signed=True, zeros=True), seed=seeds)
def test_dual_bound_dominates_every_feasible_point(g, seed):
    M, rng = len(g), np.random.default_rng(seed)
    for reg in _regularizers(M):
        reg.check(M)
        for mu in (reg.initial(M), reg.project(rng.normal(size=M))):
            assert mu @ g - reg.penalty(mu) <= reg.dual_bound(g) + 1e-9 * max(1.0, float(np.max(np.abs(g)))), reg


@CVX
@given(data=st.data())
def test_closed_form_update_is_the_exact_minimiser(data):
    mu = data.draw(vectors(low=-2.0, high=0.0))
    mu /= mu.sum()
    q = data.draw(vectors(low=-1.0, high=2.0, size=len(mu)))
    M = len(mu)
    a = 0.5 * mu**2 * q
    for reg in _regularizers(M):
        nu = reg.closed_form_update(mu, q)
        assert np.all(nu >= 0) and _violation(reg, nu, M) <= 1e-12, reg
        ours = float(np.sum(a / nu) + reg.penalty(nu))
        x = cp.Variable(M, pos=True)
        ref, slack = _solve(cp.Problem(cp.Minimize(cp.sum(cp.multiply(a, cp.inv_pos(x))) + cvx_penalty(reg, x)),
                                       cvx_domain(reg, x, M)))
        # Clarabel is the less accurate of the two here (tiny a_m): ours may only be a hair worse.
        assert ours <= ref * (1 + 2e-5) + 1e-10 + slack, reg


@CVX
@given(z=vectors(low=-2.0, high=0.7, signed=True, zeros=True))
def test_projection_matches_cvxpy(z):
    M = len(z)
    for reg in _regularizers(M):
        x = cp.Variable(M)
        # The distance as a second-order cone (its square as a quadratic ended in numerical errors).
        dist, dist_slack = _solve(cp.Problem(cp.Minimize(cp.norm(x - z)), cvx_domain(reg, x, M)))
        ref, slack = dist**2, dist_slack * (2.0 * dist + dist_slack)
        w = reg.project(z)
        assert _violation(reg, w, M) <= 1e-12, reg
        # The projection is unique; Clarabel's argmin is only accurate to ~1e-4 on the curved balls (even
        # with tight tolerances), so compare the distances (flat at the optimum, hence the tight tolerance),
        # and the points through strong convexity: ||x - w||^2 <= f(x) - f(w) for f = ||. - z||^2.
        ours = float(np.sum((w - z) ** 2))
        assert ours <= ref + 1e-7 * max(1.0, ref) + slack, reg
        assert float(np.sum((w - x.value) ** 2)) <= max(ref - ours, 0.0) + 1e-7 * max(1.0, ref) + slack, reg


@FAST
@given(seed=seeds, M=st.integers(1, 12))
def test_duchi_projection_properties(seed, M):
    rng = np.random.default_rng(seed)
    v = rng.normal(size=M) * 3
    w = project_simplex(v)
    assert np.all(w >= 0) and w.sum() == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(project_simplex(w), w, atol=1e-12)  # idempotent
    np.testing.assert_allclose(project_simplex(v + 7.5), w, atol=1e-9)  # shift invariant
    order = np.argsort(v)
    assert np.all(np.diff(w[order]) >= -1e-12)  # order preserving
    # Optimality: <v - w, u - w> <= 0 for every u in the simplex (the vertices suffice).
    assert np.all((v - w) @ (np.eye(M) - w).T <= 1e-9)


@FAST
@given(seed=seeds, M=st.integers(1, 9), extra=st.floats(0.0, 1.5))
def test_box_simplex_inverse_is_feasible_and_optimal(seed, M, extra):
    rng = np.random.default_rng(seed)
    theta = 1.0 / M + extra
    a = rng.exponential(size=M) ** 3
    a[rng.random(M) < 0.2] = 0.0  # some zero terms
    if M > 2 and rng.random() < 0.5:
        a[1] = a[0]  # a tie
    mu = box_simplex_inverse(a, theta)
    assert np.all(mu >= 0) and np.all(mu <= theta + 1e-15)
    assert mu.sum() == pytest.approx(1.0, abs=1e-12)
    pos = a > 0
    if pos.any():
        x = cp.Variable(M, pos=True)
        ref, slack = _solve(cp.Problem(cp.Minimize(cp.sum(cp.multiply(a, cp.inv_pos(x)))),
                                       [cp.sum(x) == 1, x <= min(theta, 1.0)]))
        # Clarabel's value can lie up to about 1e-6 below the true minimum on badly scaled a (seed 285: 3e-5 beside
        # 4; ours was (sum sqrt a)^2, the exact minimum there, to the last digit)
        assert np.sum(a[pos] / mu[pos]) <= ref * (1 + 1e-5) + 1e-12 + slack
        # Lemma 3.1: a larger a_m is never capped less; uncapped weights are proportional to sqrt(a_m).
        order = np.argsort(-a, kind="stable")
        assert np.all(np.diff(mu[order][a[order] > 0]) <= 1e-12)
        free = pos & (mu < theta - 1e-12)
        if free.sum() >= 2:
            ratio = mu[free] / np.sqrt(a[free])
            np.testing.assert_allclose(ratio, ratio[0], rtol=1e-9)


def test_box_simplex_inverse_edge_cases():
    a = np.array([3.0, 1.0, 0.5, 2.0])
    # theta = 1/M: the only feasible point, exactly.
    assert np.array_equal(box_simplex_inverse(a, 0.25), np.full(4, 0.25))
    assert np.array_equal(BoxSimplex(nu=1.0).closed_form_update(np.full(4, 0.25), a), np.full(4, 0.25))
    # M = 1, theta = 1.
    assert np.array_equal(box_simplex_inverse(np.array([2.0]), 1.0), np.array([1.0]))
    # All ties: uniform.
    np.testing.assert_allclose(box_simplex_inverse(np.ones(5), 0.3), np.full(5, 0.2))
    # Ties at the cap: both largest capped.
    np.testing.assert_allclose(box_simplex_inverse(np.array([100.0, 100.0, 1.0, 1.0]), 0.3),
                               [0.3, 0.3, 0.2, 0.2])
    # Leftover mass with zero terms: the caps take what they can, the rest is spread over the zeros.
    mu = box_simplex_inverse(np.array([5.0, 0.0, 0.0, 0.0]), 0.4)
    np.testing.assert_allclose(mu, [0.4, 0.2, 0.2, 0.2])
    # All zero: every split is optimal; the result is feasible.
    mu = box_simplex_inverse(np.zeros(3), 0.5)
    assert mu.sum() == pytest.approx(1.0) and np.all(mu <= 0.5)
    # theta >= 1 is the simplex update mu ~ sqrt(a).
    np.testing.assert_allclose(box_simplex_inverse(a, 2.0), np.sqrt(a) / np.sqrt(a).sum())
    # A zero weight stays zero when mass is not left over (a_m ~ mu_m^2).
    assert BoxSimplex(theta=0.6).closed_form_update(np.array([0.5, 0.5, 0.0]), np.ones(3))[2] == 0.0


def test_box_simplex_rejects_infeasible_caps_clearly():
    with pytest.raises(ValueError, match=r"theta=0\.2 < 1/M = 0\.25.*theta >= 1/M"):
        BoxSimplex(theta=0.2).check(4)
    with pytest.raises(ValueError, match="nu=1.5 > 1"):
        BoxSimplex(nu=1.5).check(4)
    with pytest.raises(ValueError, match="exactly one of theta"):
        BoxSimplex().check(4)
    with pytest.raises(ValueError, match="exactly one of theta"):
        BoxSimplex(theta=0.5, nu=0.5).check(4)
    with pytest.raises(ValueError, match="positive"):
        BoxSimplex(theta=-1.0).check(4)
    with pytest.raises(ValueError, match="box-simplex is empty"):
        box_simplex_inverse(np.ones(4), 0.2)
    # nu = 1/M computed in floating point is L1-MKL; nu = 1 snaps to exactly 1/M.
    assert BoxSimplex(nu=1.0 / 7).cap(7) == pytest.approx(1.0)
    assert BoxSimplex(nu=1.0).cap(3) == 1.0 / 3


def test_parameter_errors_name_the_allowed_range():
    with pytest.raises(ValueError, match=r"\[1, inf\]"):
        LpBall(p=0.5).check(3)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        ElasticNet(v=1.2).check(3)
    with pytest.raises(ValueError, match="> 1"):
        SimplexPower(p=1.0).check(3)
    with pytest.raises(ValueError, match="positive"):
        SimplexL2(theta=0.0).check(3)


@FAST
@given(data=st.data())
def test_closed_form_special_cases(data):
    mu = data.draw(vectors(low=-2.0, high=0.0))
    mu /= mu.sum()
    M = len(mu)
    q = data.draw(vectors(low=-2.0, high=2.0, size=M))
    l1 = Simplex().closed_form_update(mu, q)
    # Lp: p = 1 is the simplex update, p = inf gives ones, every p lands on the sphere sum mu^p = 1.
    np.testing.assert_allclose(LpBall(p=1.0).closed_form_update(mu, q), l1, rtol=1e-12)
    assert np.array_equal(LpBall(p=math.inf).closed_form_update(mu, q), np.ones(M))
    for p in (1.5, 2.0, 4.0, 64.0):
        assert np.sum(LpBall(p=p).closed_form_update(mu, q) ** p) == pytest.approx(1.0, rel=1e-10)
    # Elastic net: v = 1 is L1, v = 0 is L2.
    np.testing.assert_allclose(ElasticNet(v=1.0).closed_form_update(mu, q), l1, rtol=1e-9)
    np.testing.assert_allclose(ElasticNet(v=0.0).closed_form_update(mu, q),
                               L2Ball().closed_form_update(mu, q), rtol=1e-9)
    # Box-simplex: theta >= 1 is L1.
    np.testing.assert_allclose(BoxSimplex(theta=1.0).closed_form_update(mu, q), l1, rtol=1e-12)
    # The power penalty with p = 2 is SM2MKL.
    sp, sl2 = SimplexPower(theta=0.7, p=2.0), SimplexL2(theta=0.7)
    np.testing.assert_allclose(sp.closed_form_update(mu, q), sl2.closed_form_update(mu, q), rtol=1e-12)
    assert sp.penalty(mu) == pytest.approx(sl2.penalty(mu), rel=1e-12)
    np.testing.assert_allclose(sp.penalty_gradient(mu), sl2.penalty_gradient(mu), rtol=1e-12)
    assert sp.dual_bound(q) == pytest.approx(sl2.dual_bound(q), rel=1e-9)


def test_penalty_gradients_match_finite_differences():
    rng = np.random.default_rng(0)
    mu = rng.dirichlet(np.ones(4))
    for reg in (SimplexL2(theta=0.3), SimplexPower(theta=2.0, p=3.0), SimplexPower(theta=0.5, p=1.5)):
        eps = 1e-6
        fd = [(reg.penalty(mu + eps * e) - reg.penalty(mu - eps * e)) / (2 * eps) for e in np.eye(4)]
        np.testing.assert_allclose(reg.penalty_gradient(mu), fd, rtol=1e-6)


def test_initial_points_are_feasible():
    for M in (1, 2, 5):
        for reg in _regularizers(M):
            mu = reg.initial(M)
            np.testing.assert_allclose(reg.project(mu), mu, atol=1e-12, err_msg=reg.name)
    assert ElasticNet(v=0.3).initial(4) @ np.full(4, 0.3) + 0.7 * np.sum(ElasticNet(v=0.3).initial(4) ** 2) \
        == pytest.approx(1.0)


@FAST
@given(v=vectors(low=-2.0, high=1.0, signed=True, zeros=True), theta=st.floats(0.0, 1.0))
def test_capped_simplex_projection(v, theta):
    M = len(v)
    cap = 1.0 / M + theta * (1.0 - 1.0 / M)
    w = project_capped_simplex(v, cap)
    assert np.all(w >= 0) and np.all(w <= cap + 1e-15) and w.sum() == pytest.approx(1.0, abs=1e-12)
    # Optimality on the box-simplex: v - w = tau + (multipliers of the active bounds).
    inner = (w > 1e-12) & (w < cap - 1e-12)
    if inner.sum() >= 2:
        shift = (v - w)[inner]
        np.testing.assert_allclose(shift, shift[0], atol=1e-9)


def test_lp_projection_inside_the_ball_is_the_identity_on_the_orthant():
    v = np.array([0.2, -0.3, 0.1])
    np.testing.assert_allclose(project_lp_ball_nonneg(v, 1.5), [0.2, 0.0, 0.1])
    np.testing.assert_allclose(project_lp_ball_nonneg(np.array([3.0, 0.5]), math.inf), [1.0, 0.5])


def test_regularizers_clone_like_scikit_learn_estimators():
    from sklearn.base import clone

    for reg in _regularizers(4):
        twin = clone(reg)
        assert type(twin) is type(reg) and twin.get_params() == reg.get_params()
        assert twin.dual_bound(np.arange(4.0)) == reg.dual_bound(np.arange(4.0))
    assert BoxSimplex(nu=0.5).set_params(nu=None, theta=0.3).cap(4) == 0.3


@pytest.mark.parametrize("M", [1, 2, 6])
def test_degenerate_inputs_give_feasible_weights(M):
    # q = 0 (a classifier that uses no kernel), one kernel, and all-zero gradients must not break anything.
    for reg in _regularizers(M):
        for mu, q in ((reg.initial(M), np.zeros(M)), (reg.initial(M), np.ones(M))):
            nu = reg.closed_form_update(mu, q)
            assert np.all(np.isfinite(nu)) and _violation(reg, nu, M) <= 1e-12, reg
        # dual_bound(0) = -min_D Omega: 0 for the pure domains, -Omega(uniform) for the penalised simplex
        # (the penalty is symmetric and convex, so the uniform point minimises it there).
        expected = -reg.penalty(np.full(M, 1.0 / M)) if reg.domain == "simplex" else 0.0
        assert reg.dual_bound(np.zeros(M)) == pytest.approx(expected, abs=1e-12), reg


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_closed_form_update_with_a_vanishing_weight():
    # BCD shrinks unhelpful weights geometrically; at 1e-160 the term a_m ~ 1e-320 used to overflow a / nu^2.
    mu, q = np.array([0.5, 0.5 - 1e-160, 1e-160]), np.array([1.0, 2.0, 3.0])
    for reg in _regularizers(3):
        nu = reg.closed_form_update(mu, q)
        assert np.all(np.isfinite(nu)) and _violation(reg, nu, 3) <= 1e-12, reg
