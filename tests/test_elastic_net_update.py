"""The elastic-net weight step (SGMKL's closed-form update): against an independent root find, cvxpy, and its KKT
conditions, over kernel counts of the benchmark (up to 455) and norms spread over many decades."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
from _mkl_testing import scaled
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import brentq

from multikernel.plugins.regularizers import ElasticNet

V_VALUES = [0.0, 1e-6, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0 - 1e-6, 1.0]


def _reference(a: np.ndarray, v: float) -> np.ndarray:
    """``argmin sum a/nu`` s.t. ``v sum nu + (1-v) sum nu^2 <= 1`` by plain nested bisection-type root finds:
    each weight the positive real root of its cubic (numpy's companion-matrix roots), ``t`` by Brent's method
    in ``log t`` on ``h(nu(t)) = 1``."""
    pos = a > 0
    c = 1.0 - v

    def weights(log_t: float) -> np.ndarray:
        nu = np.zeros(len(a))
        for m in np.flatnonzero(pos):
            r = np.roots([2.0 * c, v, 0.0, -np.exp(log_t) * a[m]])
            nu[m] = max(float(z.real) for z in r if abs(z.imag) <= 1e-9 * max(abs(z), 1e-300))
        return nu

    def excess(log_t: float) -> float:
        nu = weights(log_t)
        return v * nu.sum() + c * nu @ nu - 1.0

    log_t = brentq(excess, -200.0, 200.0, xtol=1e-14)
    return weights(log_t)


def _draw(rng: np.random.Generator, M: int, decades: float) -> tuple[np.ndarray, np.ndarray]:
    mu = rng.dirichlet(np.full(M, 0.5))
    mu[rng.random(M) < 0.2] = 0.0
    mu[0] = max(mu[0], 1e-3)
    q = 10.0 ** rng.uniform(-decades / 2, min(decades / 2, 300.0), M)  # 10^308 is the largest double
    return mu, q


@pytest.mark.parametrize("v", V_VALUES)
@pytest.mark.parametrize("M", [2, 7, 40])
def test_matches_an_independent_root_find(v, M):
    rng = np.random.default_rng(M * 100 + int(v * 1000))
    for _ in range(3):
        mu, q = _draw(rng, M, decades=8.0)
        nu = ElasticNet(v).closed_form_update(mu, q)
        ref = _reference(0.5 * mu**2 * q, v)
        np.testing.assert_allclose(nu, ref, rtol=1e-8, atol=1e-12 * ref.max())


@scaled(1.0)
@pytest.mark.filterwarnings("error::RuntimeWarning")
@given(seed=st.integers(0, 2**31 - 1), v=st.sampled_from(V_VALUES), M=st.sampled_from([3, 50, 455]),
       decades=st.sampled_from([0.0, 4.0, 12.0, 40.0, 640.0]))
def test_feasible_and_stationary(seed, v, M, decades):
    # On the boundary h = 1, and the KKT multiplier a_m / (nu_m^2 (v + 2 (1-v) nu_m)) is the same for every kernel.
    # 640 decades reach subnormal norms (an unused kernel's), whose root underflows to 0: no warning, no NaN.
    mu, q = _draw(np.random.default_rng(seed), M, decades)
    a = 0.5 * mu**2 * q
    nu = ElasticNet(v).closed_form_update(mu, q)
    assert np.all(np.isfinite(nu)) and np.all(nu >= 0)
    assert v * nu.sum() + (1 - v) * nu @ nu == pytest.approx(1.0, abs=1e-12)
    assert not np.any((nu > 0) & (a <= 0))
    assert np.all(nu[a > 1e-250 * a.max()] > 0) or np.count_nonzero(a) == 1
    big = a > 1e-200 * a.max()  # the multiplier of an underflowing weight is not representable
    if np.count_nonzero(big) > 1:
        lam = a[big] / (nu[big] ** 2 * (v + 2 * (1 - v) * nu[big]))
        assert np.ptp(lam) <= 1e-9 * lam.mean()


@pytest.mark.filterwarnings("ignore:Solution may be inaccurate:UserWarning")
@pytest.mark.parametrize("v", [0.0, 0.2, 0.5, 0.8, 1.0])
def test_matches_cvxpy(v):
    rng = np.random.default_rng(int(v * 10))
    mu, q = _draw(rng, 30, decades=4.0)
    a = 0.5 * mu**2 * q
    nu = ElasticNet(v).closed_form_update(mu, q)
    x = cp.Variable(30, pos=True)
    # a_m / x_m as quad_over_lin(sqrt(a_m), x_m): a second-order cone, which Clarabel solves more accurately
    prob = cp.Problem(cp.Minimize(sum(cp.quad_over_lin(np.sqrt(a[m]), x[m]) for m in range(30))),
                      [v * cp.sum(x) + (1 - v) * cp.sum_squares(x) <= 1])
    prob.solve(solver=cp.CLARABEL)
    assert prob.status == cp.OPTIMAL
    ref = float(prob.solution.opt_val)  # prob.value re-evaluates at the (slightly infeasible) solution: nan
    ours = float(np.sum(a[a > 0] / nu[a > 0]))
    # Ours is the exact minimiser: never worse than Clarabel's optimum, which is the less accurate of the two
    # (tiny weights; the weights themselves are checked against the root find above).
    assert ours <= ref * (1 + 1e-7)
    assert ours == pytest.approx(ref, rel=1e-5)


@pytest.mark.filterwarnings("error::RuntimeWarning")
@pytest.mark.parametrize("v", [0.1, 0.5, 0.9])
def test_subnormal_norm_gets_weight_zero_without_warnings(v):
    """A kernel whose norm is subnormal next to the others' (found on heart at v = 0.9): its cubic's right-hand
    side underflows to 0, and Newton's step there was 0/0 (a RuntimeWarning in every such fit)."""
    a = np.array([1.0] * 150 + [5e-324])
    nu = ElasticNet(v).closed_form_update(np.ones(151), 2.0 * a)
    assert np.all(np.isfinite(nu)) and nu[-1] == 0.0
    np.testing.assert_allclose(nu[:-1], nu[0])
    assert v * nu.sum() + (1 - v) * nu @ nu == pytest.approx(1.0, abs=1e-12)
