"""The level method's cuts kept from one C to the next (``MKLProblem(keep_cuts=True)``): every kept cut is a lower
bound of the next problem's objective J(mu; C) (checked against cvxpy), and every fit of a walk over C that
starts from them still brackets the cvxpy optimum with its certified bounds."""

from __future__ import annotations

import warnings

import cvxpy as cp
import numpy as np
import pytest
from _mkl_testing import make_problem, mkl_problems, reference, scaled
from hypothesis import given
from hypothesis import strategies as st

from multikernel.core.interfaces import MKLProblem, MKLResult
from multikernel.plugins._kept_cuts import rescaled_cuts
from multikernel.plugins.losses import CSVCLoss, NuLoss, SquareHingeLoss
from multikernel.plugins.regularizers import BoxSimplex, Simplex, SimplexL2
from multikernel.plugins.solvers import LevelMethod
from multikernel.solve.svm import svm_problem
from multikernel.stack.storage import DenseStack

LOSSES = {"csvc": CSVCLoss, "square_hinge": SquareHingeLoss}


def _fit(stack: DenseStack, y: np.ndarray, loss, regularizer, warm: MKLResult | None = None,
         tol: float = 1e-3) -> tuple[MKLResult, MKLProblem]:
    problem = MKLProblem(stack=stack, y=y, loss=loss, regularizer=regularizer, tol=tol, inner_tol=1e-6, max_iter=500,
                         warm_start=warm, keep_cuts=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return LevelMethod().solve(problem), problem


def _cvx_J(Ks: np.ndarray, y: np.ndarray, mu: np.ndarray, loss: str, C: float) -> float:
    """``J(mu; C) = max_alpha L(alpha) - 1/2 (alpha y)' K(mu) (alpha y)`` by Clarabel."""
    w, V = np.linalg.eigh(np.tensordot(mu, Ks, axes=1))
    keep = w > 1e-12 * max(w.max(), 1e-300)
    factor = V[:, keep] * np.sqrt(w[keep])
    a = cp.Variable(len(y))
    objective = cp.sum(a) - 0.5 * cp.sum_squares(factor.T @ cp.multiply(y, a))
    constraints = [a >= 0, y @ a == 0]
    if loss == "csvc":
        constraints.append(a <= C)
    else:
        objective = objective - cp.sum_squares(a) / (2.0 * C)
    problem = cp.Problem(cp.Maximize(objective), constraints)
    problem.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    return float(problem.value)


@scaled(1.0)
@given(drawn=mkl_problems(n=(8, 30), kernels=(1, 4), log10_C=(-2.0, 3.0)),
       log10_C2=st.floats(-2.0, 3.0), loss=st.sampled_from(sorted(LOSSES)), seed=st.integers(0, 2**32 - 1))
def test_kept_cuts_are_lower_bounds_of_the_objective_at_another_C(drawn, log10_C2, loss, seed):
    # A cut made at C1 and rescaled into the problem at C2 (smaller or larger) lies below J(mu; C2) at every mu:
    # its alpha is feasible at C2 and its linear term is C2's.
    stack = DenseStack(drawn.Ks)
    first, _ = _fit(stack, drawn.y, LOSSES[loss](C=drawn.C), Simplex())
    assert first.cuts is not None and len(first.cuts.alphas)
    C2 = 10.0**log10_C2
    problem = MKLProblem(stack=stack, y=drawn.y, loss=LOSSES[loss](C=C2), regularizer=Simplex())
    cuts = rescaled_cuts(problem, first.cuts)
    assert len(cuts) == len(first.cuts.alphas)  # both losses can scale every alpha into the box
    qp = svm_problem(loss, drawn.y, C2)
    rng = np.random.default_rng(seed)
    M = len(drawn.Ks)
    for mu in [np.full(M, 1.0 / M), first.weights, *rng.dirichlet(np.ones(M), size=2)]:
        J = _cvx_J(drawn.Ks, drawn.y, mu, loss, C2)
        for L, q, alpha, coef, _ in cuts:
            assert np.all(alpha >= 0) and np.all(alpha <= qp.upper * (1 + 1e-12))
            np.testing.assert_allclose(coef, alpha * drawn.y)
            assert L - 0.5 * q @ mu <= J + 1e-7 * max(1.0, abs(J)), (mu, L - 0.5 * q @ mu, J)


@scaled(0.5)
@given(drawn=mkl_problems(n=(8, 25), kernels=(1, 4), log10_C=(-2.0, 3.0)),
       log10_Cs=st.lists(st.floats(-2.0, 3.0), min_size=2, max_size=4, unique=True),
       regularizer=st.sampled_from(["simplex", "box_simplex", "simplex_l2"]))
def test_every_fit_of_a_walk_over_C_with_kept_cuts_brackets_the_optimum(drawn, log10_Cs, regularizer):
    # C in the drawn order (up and down): each fit starts from the previous one's weights, alpha and cuts, and
    # its certified bounds still hold the optimum of its own problem.
    stack = DenseStack(drawn.Ks)
    reg = {"simplex": Simplex, "box_simplex": lambda: BoxSimplex(nu=0.5), "simplex_l2": SimplexL2}[regularizer]()
    previous = None
    for log10_C in log10_Cs:
        C = 10.0**log10_C
        res, _ = _fit(stack, drawn.y, CSVCLoss(C=C), reg, warm=previous, tol=1e-4)
        ref = reference(drawn.Ks, drawn.y, reg, C, certify=2.5e-4)
        assert ref.brackets(res), (C, res.lower_bound, res.objective, ref)
        assert res.dual_gap <= 1e-4
        previous = res


def test_cuts_are_kept_only_for_the_same_stack_and_targets():
    drawn = make_problem(n=20, positives=8, kinds=["rbf", "linear"], seed=3)
    stack = DenseStack(drawn.Ks)
    res, _ = _fit(stack, drawn.y, CSVCLoss(C=1.0), Simplex())
    same = MKLProblem(stack=stack, y=drawn.y, loss=CSVCLoss(C=10.0), regularizer=Simplex())
    assert rescaled_cuts(same, res.cuts)
    other_stack = MKLProblem(stack=DenseStack(drawn.Ks), y=drawn.y, loss=CSVCLoss(C=10.0), regularizer=Simplex())
    assert rescaled_cuts(other_stack, res.cuts) == []
    other_y = MKLProblem(stack=stack, y=-drawn.y, loss=CSVCLoss(C=10.0), regularizer=Simplex())
    assert rescaled_cuts(other_y, res.cuts) == []
    # without keep_cuts a fit holds none
    plain = MKLProblem(stack=stack, y=drawn.y, loss=CSVCLoss(C=1.0), regularizer=Simplex())
    assert LevelMethod().solve(plain).cuts is None


@pytest.mark.parametrize(("alpha", "C", "scale"), [
    ([0.5, 0.5, 0.2, 0.8], 1.0, 1.0),     # within the box
    ([2.0, 2.0, 1.0, 3.0], 1.5, 0.5),     # beyond it: scaled back to the largest entry's bound
    ([0.5, 0.4, 0.2, 0.8], 1.0, None),    # y'alpha != 0: no scale is feasible
])
def test_feasible_scale_of_the_hinge_box(alpha, C, scale):
    y = np.array([1.0, 1.0, -1.0, -1.0])
    got = CSVCLoss(C=C).feasible_scale(np.array(alpha), y)
    assert got == (None if scale is None else pytest.approx(scale))


def test_the_nu_form_keeps_only_feasible_alphas():
    # 1'alpha = 1 is not kept by scaling: an alpha beyond the smaller box is left out, not scaled
    y = np.array([1.0, 1.0, -1.0, -1.0])
    alpha = np.array([0.4, 0.1, 0.25, 0.25])
    assert NuLoss(C=1.0).feasible_scale(alpha, y) == 1.0
    assert NuLoss(C=0.3).feasible_scale(alpha, y) is None
