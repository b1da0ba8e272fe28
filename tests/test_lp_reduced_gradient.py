"""SimpleMKL's reduced gradient on the lp sphere (``reduced_gradient_lp``): the certified optimum against
cvxpy + Clarabel and the other lp-MKL solvers, p = 1 against SimpleMKL on the simplex, and what it refuses."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _mkl_testing import make_problem, random_problem, reference, solve_mkl

from multikernel.core.capabilities import IncompatiblePartsError, check_compatible, compatible_solvers
from multikernel.core.registry import get_registry
from multikernel.plugins.lp_reduced_gradient import SphereReducedGradient
from multikernel.plugins.regularizers import L2Ball, LpBall, Simplex
from multikernel.plugins.smo_mkl import SMOMKL
from multikernel.plugins.solvers import ReducedGradient


@pytest.mark.parametrize("p", [4.0 / 3.0, 2.0, 3.0])
@pytest.mark.parametrize("case", [
    dict(n=25, positives=11, kinds=["linear", "rbf", "poly", "low_rank"], copies=[1, 1], C=1.0, seed=1),
    dict(n=22, positives=12, kinds=["poly", "rbf", "linear"], copies=[2], log10_scales=[-2.0, 1.0, 3.0],
         C=100.0, seed=3),
], ids=["duplicates", "unnormalized-C100"])
def test_optimum_equals_cvxpy_and_smo_mkl(p, case):
    drawn = make_problem(**case)
    reg = LpBall(p=p)
    ref = reference(drawn.Ks, drawn.y, reg, drawn.C)
    res = solve_mkl(drawn.Ks, drawn.y, reg, SphereReducedGradient(), C=drawn.C, tol=1e-6, max_iter=3000)
    assert res.converged and res.dual_gap <= 1e-6
    assert ref.brackets(res), (res.lower_bound, res.objective, ref)
    smo = solve_mkl(drawn.Ks, drawn.y, reg, SMOMKL(), C=drawn.C, tol=1e-7, max_iter=3000)
    assert res.objective == pytest.approx(smo.objective, rel=2e-6)
    # The weights stay on the unit sphere of the lp norm.
    assert np.sum(res.weights**p) ** (1 / p) == pytest.approx(1.0, rel=1e-9)


def test_near_l1_reaches_a_looser_gap():
    """p = 1.1: optimal weights down to 1e-8 of the largest, where the reduced gradient crawls as SimpleMKL
    does on L1 (3000 iterations leave a gap near 2e-5 on this problem): checked at tol 1e-4."""
    drawn = make_problem(n=25, positives=11, kinds=["linear", "rbf", "poly", "low_rank"], copies=[1, 1], C=1.0,
                         seed=1)
    reg = LpBall(p=1.1)
    ref = reference(drawn.Ks, drawn.y, reg, drawn.C)
    res = solve_mkl(drawn.Ks, drawn.y, reg, SphereReducedGradient(), C=drawn.C, tol=1e-4, max_iter=3000)
    assert res.converged and res.dual_gap <= 1e-4
    assert ref.brackets(res), (res.lower_bound, res.objective, ref)


def test_p_one_is_simplemkl_on_the_simplex():
    Ks, y = random_problem(3, n=30, M=5)
    a = solve_mkl(Ks, y, LpBall(p=1.0), SphereReducedGradient(), C=10.0, tol=1e-6, max_iter=2000)
    b = solve_mkl(Ks, y, Simplex(), ReducedGradient(), C=10.0, tol=1e-6, max_iter=2000)
    assert a.converged and b.converged
    assert a.objective == pytest.approx(b.objective, rel=2e-6)


@pytest.mark.parametrize("p", [1.0, 1.5, 3.0])
def test_direction_is_tangent_to_the_sphere_and_descends(p):
    """D_v makes D tangent to the sphere (the p-norm's derivative along D is zero), grad'D = -sum r_m D_m over
    the other weights (the reduced gradient's squared norm), and trial points are put back on the sphere."""
    rng = np.random.default_rng(int(10 * p))
    solver = SphereReducedGradient()
    solver.p = p
    mu = rng.uniform(0.1, 1.0, size=6)
    mu[2] = 0.0
    mu = solver._finish(mu)
    grad = -rng.uniform(0.5, 2.0, size=6)
    D = solver._direction(mu, grad)
    v = int(np.argmax(mu))
    assert float(np.sum(np.where(mu > 0, mu, 0.0) ** (p - 1) * D)) == pytest.approx(0.0, abs=1e-12)
    red = solver._reduced(mu, grad, v)
    moving = (np.arange(6) != v) & (D != 0)
    assert float(grad @ D) == pytest.approx(-float(red[moving] @ red[moving]), rel=1e-12)
    if p > 1:
        assert D[2] > 0  # (mu_2/mu_v)^{p-1} = 0: the zero weight's reduced gradient g_2 < 0 brings it back
    trial = solver._finish(mu + 0.01 * D)
    assert np.sum(trial**p) ** (1 / p) == pytest.approx(1.0, rel=1e-12) and np.all(trial >= 0)


def test_registered_capabilities_and_refusals():
    assert get_registry().get("solver", "reduced_gradient_lp") is SphereReducedGradient
    assert "reduced_gradient_lp" in compatible_solvers(LpBall(p=1.5))
    assert "reduced_gradient_lp" in compatible_solvers(L2Ball())
    assert "reduced_gradient_lp" not in compatible_solvers(Simplex())
    with pytest.raises(IncompatiblePartsError, match="lacks: lp_ball"):
        check_compatible(Simplex(), SphereReducedGradient())
    Ks, y = random_problem(5, n=12, M=2)
    with pytest.raises(ValueError, match="needs a finite p"):
        solve_mkl(Ks, y, LpBall(p=math.inf), SphereReducedGradient())
    with pytest.raises(ValueError, match="line_search_refinements must be a non-negative integer"):
        solve_mkl(Ks, y, LpBall(p=2.0), SphereReducedGradient(line_search_refinements=-1))
