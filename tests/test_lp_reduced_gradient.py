"""SimpleMKL's reduced gradient on the lp sphere (``reduced_gradient_lp``): the certified optimum against
cvxpy + Clarabel and the other lp-MKL solvers, p = 1 against SimpleMKL on the simplex, and what it refuses."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _mkl_testing import make_problem, random_problem, reference, solve_mkl

from multikernel.core.capabilities import IncompatiblePartsError, check_compatible, compatible_solvers
from multikernel.core.interfaces import MKLProblem
from multikernel.core.registry import get_registry
from multikernel.plugins.losses import CSVCLoss
from multikernel.plugins.lp_reduced_gradient import SphereReducedGradient, _SphereEvaluator
from multikernel.plugins.regularizers import L2Ball, LpBall, Simplex
from multikernel.plugins.smo_mkl import SMOMKL
from multikernel.plugins.solvers import ReducedGradient
from multikernel.stack.storage import DenseStack


@pytest.mark.parametrize("p", [1.1, 4.0 / 3.0, 2.0, 3.0])
@pytest.mark.parametrize("case", [
    dict(n=25, positives=11, kinds=["linear", "rbf", "poly", "low_rank"], copies=[1, 1], C=1.0, seed=1),
    dict(n=22, positives=12, kinds=["poly", "rbf", "linear"], copies=[2], log10_scales=[-1.0, 0.0, 1.0],
         C=10.0, seed=3),
], ids=["duplicates", "unnormalized-C10"])
def test_optimum_equals_cvxpy_and_smo_mkl(p, case):
    # Scales three decades apart at C = 100 (test_smo_mkl's hardest case) stall it near gap 3e-2: the
    # reduced gradient in nu zig-zags when the optimum has weights near zero (a known limit, documented).
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


def test_p_one_is_simplemkl_on_the_simplex():
    Ks, y = random_problem(3, n=30, M=5)
    a = solve_mkl(Ks, y, LpBall(p=1.0), SphereReducedGradient(), C=10.0, tol=1e-6, max_iter=2000)
    b = solve_mkl(Ks, y, Simplex(), ReducedGradient(), C=10.0, tol=1e-6, max_iter=2000)
    assert a.converged and b.converged
    assert a.objective == pytest.approx(b.objective, rel=2e-6)


def test_gradient_is_the_chain_rule_and_finite_at_zero():
    """dG/dnu = dF/dmu * nu^{1/p - 1} / p, checked against a finite difference of the certified objective."""
    Ks, y = random_problem(4, n=25, M=4)
    problem = MKLProblem(stack=DenseStack(Ks), y=y, loss=CSVCLoss(C=1.0), regularizer=LpBall(p=2.0),
                         inner_tol=1e-10)
    from multikernel.solve.outer import Evaluator, OuterLoop

    sphere = _SphereEvaluator(Evaluator(problem, OuterLoop(problem)), 2.0)
    nu = np.array([0.4, 0.3, 0.2, 0.1])
    it = sphere(nu, None)
    g = sphere.gradient(it)
    d = np.array([1.0, -1.0, 0.5, -0.5]) * 1e-5
    up, down = sphere(nu + d, None), sphere(nu - d, None)
    assert float(g @ d) == pytest.approx((up.objective - down.objective) / 2, rel=1e-4)
    it0 = sphere(np.array([0.5, 0.5, 0.0, 0.0]), None)
    assert np.all(np.isfinite(sphere.gradient(it0)))


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
